#include "ocr.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>

namespace ocr {

namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// HWC RGB bytes -> NCHW float in BGR channel order (PaddleOCR's models were trained on OpenCV's BGR images),
// normalised as (x / 255 - mean) / std, into a zero-padded tensor of `padded_width`.
wgi::Tensor to_tensor(const Image& img, const std::array<float, 3>& mean, const std::array<float, 3>& std_dev,
                      int padded_width) {
  wgi::Tensor t(wgi::DType::Float32, {1, 3, img.height, padded_width});
  auto data = t.data<float>();
  const size_t plane = static_cast<size_t>(img.height) * padded_width;
  for (int c = 0; c < 3; ++c) {
    const int source = 2 - c;  // BGR
    for (int y = 0; y < img.height; ++y) {
      for (int x = 0; x < img.width; ++x) {
        const float v = img.at(x, y)[source] / 255.0f;
        data[c * plane + static_cast<size_t>(y) * padded_width + x] =
            (v - mean[static_cast<size_t>(c)]) / std_dev[static_cast<size_t>(c)];
      }
    }
  }
  return t;
}

float distance(const Point& a, const Point& b) {
  return std::hypot(a.x - b.x, a.y - b.y);
}

}  // namespace

ModelFiles ModelFiles::in_folder(const std::filesystem::path& folder) {
  return {folder / "ch_PP-OCRv4_det_infer.onnx", folder / "ch_ppocr_mobile_v2.0_cls_infer.onnx",
          folder / "ch_PP-OCRv4_rec_infer.onnx", folder / "ppocr_keys_v1.txt"};
}

Reader::Reader(const ModelFiles& files, const wgi::SessionOptions& options)
    : detection_(wgi::Session::from_file(files.detection, options)),
      recognition_(wgi::Session::from_file(files.recognition, options)) {
  if (!files.classification.empty())
    classification_.push_back(wgi::Session::from_file(files.classification, options));
  std::ifstream in(files.dictionary);
  if (!in) throw wgi::Error("cannot open the OCR dictionary '" + files.dictionary.string() + "'");
  alphabet_.push_back("");  // blank
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    alphabet_.push_back(line);
  }
  alphabet_.push_back(" ");  // PP-OCR's recognisers append the space character
}

wgi::Tensor Reader::detection_input(const Image& image, int max_side, float& scale_x, float& scale_y) {
  // PaddleOCR's DetResizeForTest: longest side at most max_side, both sides multiples of 32.
  const float ratio = std::min(1.0f, static_cast<float>(max_side) / std::max(image.width, image.height));
  const int w = std::max(32, static_cast<int>(std::lround(image.width * ratio / 32.0f)) * 32);
  const int h = std::max(32, static_cast<int>(std::lround(image.height * ratio / 32.0f)) * 32);
  scale_x = static_cast<float>(image.width) / w;
  scale_y = static_cast<float>(image.height) / h;
  return to_tensor(resize_bilinear(image, w, h), {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, w);
}

wgi::Tensor Reader::recognition_input(const Image& crop) {
  // PaddleOCR's resize_norm_img for PP-OCRv4: height 48, width by aspect ratio, padded to at least 320.
  const int h = 48;
  const int w = std::max(1, static_cast<int>(std::ceil(h * static_cast<float>(crop.width) / crop.height)));
  const int padded = std::max(320, w);
  return to_tensor(resize_bilinear(crop, w, h), {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, padded);
}

wgi::Tensor Reader::classification_input(const Image& crop) {
  // PaddleOCR's orientation classifier input is 48 x 192, width by aspect ratio, zero-padded.
  const int w = std::min(192, std::max(1, static_cast<int>(std::ceil(48.0f * crop.width / crop.height))));
  return to_tensor(resize_bilinear(crop, w, 48), {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, 192);
}

std::string Reader::decode(const wgi::Tensor& probabilities, float& confidence) const {
  // Greedy CTC: the most likely class per time step; drop blanks and repeats.
  const auto& shape = probabilities.shape();
  const int64_t steps = shape.at(1), classes = shape.at(2);
  if (static_cast<size_t>(classes) != alphabet_.size()) {
    throw wgi::Error("recognition model has " + std::to_string(classes) + " classes; the dictionary gives " +
                     std::to_string(alphabet_.size()));
  }
  auto p = probabilities.data<float>();
  std::string text;
  double sum = 0;
  int count = 0;
  int64_t previous = 0;
  for (int64_t t = 0; t < steps; ++t) {
    const float* row = p.data() + t * classes;
    const int64_t best = std::max_element(row, row + classes) - row;
    if (best != 0 && best != previous) {
      text += alphabet_[static_cast<size_t>(best)];
      sum += row[best];
      ++count;
    }
    previous = best;
  }
  confidence = count ? static_cast<float>(sum / count) : 0.0f;
  return text;
}

std::vector<TextLine> Reader::read(const Image& image) {
  timings_ = {};
  const auto start = std::chrono::steady_clock::now();
  float sx = 1, sy = 1;
  wgi::Tensor det_in = detection_input(image, 960, sx, sy);
  if (progress_)
    progress_("detecting text in " + std::to_string(image.width) + "x" + std::to_string(image.height));
  auto t = std::chrono::steady_clock::now();
  auto det_out = detection_.run({{detection_.inputs().at(0).name, det_in}});
  timings_.detection_ms = ms_since(t);
  const wgi::Tensor& map = det_out.at(detection_.outputs().at(0).name);
  const int mh = static_cast<int>(map.shape().at(2)), mw = static_cast<int>(map.shape().at(3));
  std::vector<TextBox> boxes = find_text_boxes(map.data<float>().data(), mw, mh, DetectionParams{});

  std::vector<TextLine> lines;
  for (size_t i = 0; i < boxes.size(); ++i) {
    if (progress_) progress_("reading line " + std::to_string(i + 1) + " of " + std::to_string(boxes.size()));
    TextBox box = boxes[i];
    for (Point& p : box.corners) {
      p.x = std::clamp(p.x * sx, 0.0f, static_cast<float>(image.width));
      p.y = std::clamp(p.y * sy, 0.0f, static_cast<float>(image.height));
    }
    const int cw =
        std::max(1, static_cast<int>(std::lround(std::max(distance(box.corners[0], box.corners[1]),
                                                          distance(box.corners[3], box.corners[2])))));
    const int ch =
        std::max(1, static_cast<int>(std::lround(std::max(distance(box.corners[0], box.corners[3]),
                                                          distance(box.corners[1], box.corners[2])))));
    Image crop = warp_quad(image, box.corners, cw, ch);
    if (!classification_.empty()) {
      // Orientation: PaddleOCR's classifier input is 48 x 192; class 1 means upside down.
      const int w = std::min(192, std::max(1, static_cast<int>(std::ceil(48.0f * crop.width / crop.height))));
      wgi::Tensor cls_in =
          to_tensor(resize_bilinear(crop, w, 48), {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, 192);
      t = std::chrono::steady_clock::now();
      wgi::Session& cls = classification_.front();
      auto out = cls.run({{cls.inputs().at(0).name, cls_in}});
      timings_.classification_ms += ms_since(t);
      auto probs = out.at(cls.outputs().at(0).name).data<float>();
      if (probs.size() >= 2 && probs[1] > probs[0] && probs[1] > 0.9f) crop = rotate_180(crop);
    }
    t = std::chrono::steady_clock::now();
    auto rec_out = recognition_.run({{recognition_.inputs().at(0).name, recognition_input(crop)}});
    timings_.recognition_ms += ms_since(t);
    TextLine line;
    line.box = box;
    line.text = decode(rec_out.at(recognition_.outputs().at(0).name), line.confidence);
    if (!line.text.empty()) lines.push_back(std::move(line));
  }
  timings_.total_ms = ms_since(start);
  return lines;
}

}  // namespace ocr
