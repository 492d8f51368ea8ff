// ocr: read the text in an image with PaddleOCR's PP-OCR models running on wgi.
//   ocr [IMAGE] [--models DIR] [--backend vulkan|swiftshader|gles] [--no-orientation]
// Without IMAGE it reads the bundled examples/ocr/sample.png. Prints each line with its confidence and box,
// the adapter used and the time of each stage.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "ocr.h"

#ifndef WGI_OCR_MODELS_DIR
#define WGI_OCR_MODELS_DIR "third_party/ocr-models"
#endif
#ifndef WGI_OCR_SAMPLE
#define WGI_OCR_SAMPLE "examples/ocr/sample.png"
#endif

int main(int argc, char** argv) {
  std::string image_path = WGI_OCR_SAMPLE, models = WGI_OCR_MODELS_DIR;
  wgi::SessionOptions options;
  bool orientation = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--models" && i + 1 < argc) {
      models = argv[++i];
    } else if (a == "--backend" && i + 1 < argc) {
      options.backend = argv[++i];
    } else if (a == "--no-orientation") {
      orientation = false;
    } else if (a == "-h" || a == "--help") {
      std::cout
          << "usage: ocr [IMAGE] [--models DIR] [--backend vulkan|swiftshader|gles] [--no-orientation]\n"
             "Reads the text in IMAGE (PNG, JPEG, BMP, ...; default: the bundled sample) with PP-OCRv4.\n";
      return 0;
    } else if (!a.empty() && a[0] != '-') {
      image_path = a;
    } else {
      std::cerr << "ocr: unknown option '" << a << "' (see --help)\n";
      return 2;
    }
  }
  try {
    ocr::ModelFiles files = ocr::ModelFiles::in_folder(models);
    if (!orientation) files.classification.clear();
    auto t0 = std::chrono::steady_clock::now();
    ocr::Reader reader(files, options);
    double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    reader.on_progress([](const std::string& step) { std::cerr << "  ... " << step << "\n"; });
    ocr::Image image = ocr::load_image(image_path);
    std::cout << "image:   " << image_path << " (" << image.width << "x" << image.height << ")\n";
    std::cout << "adapter: " << reader.adapter() << "\n";
    auto lines = reader.read(image);
    const ocr::Timings first = reader.last_timings();
    reader.read(image);  // again, now that every shape is planned
    const ocr::Timings again = reader.last_timings();
    std::cout << "found " << lines.size() << " line(s):\n";
    for (const auto& l : lines) {
      std::printf("  %-40s (confidence %.3f, box (%.0f,%.0f)-(%.0f,%.0f))\n", l.text.c_str(), l.confidence,
                  l.box.corners[0].x, l.box.corners[0].y, l.box.corners[2].x, l.box.corners[2].y);
    }
    std::printf(
        "load %.0f ms; first read %.0f ms (detection %.0f, orientation %.0f, recognition %.0f, incl. "
        "planning);"
        " second read %.0f ms (detection %.0f, orientation %.0f, recognition %.0f)\n",
        load_ms, first.total_ms, first.detection_ms, first.classification_ms, first.recognition_ms,
        again.total_ms, again.detection_ms, again.classification_ms, again.recognition_ms);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "ocr: error: " << e.what() << "\n";
    return 1;
  }
}
