// ocr_render: renders lines of text into a PNG with a TrueType font (how examples/ocr/sample.png was made).
//   ocr_render OUT.png [--font FILE.ttf] [--size PIXELS] LINE...
#include <iostream>

#include "image.h"

int main(int argc, char** argv) {
  std::string out, font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  float size = 32;
  std::vector<std::string> lines;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--font" && i + 1 < argc) {
      font = argv[++i];
    } else if (a == "--size" && i + 1 < argc) {
      size = std::stof(argv[++i]);
    } else if (out.empty()) {
      out = a;
    } else {
      lines.push_back(a);
    }
  }
  if (out.empty() || lines.empty()) {
    std::cerr << "usage: ocr_render OUT.png [--font FILE.ttf] [--size PIXELS] LINE...\n";
    return 2;
  }
  try {
    ocr::save_png(ocr::render_text(lines, font, size), out);
  } catch (const std::exception& e) {
    std::cerr << "ocr_render: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
