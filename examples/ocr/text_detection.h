// Turning the DB (Differentiable Binarization) text detector's probability map into text boxes, as
// PaddleOCR's DBPostProcess does: threshold, connected regions, the minimum-area rectangle of each region, a
// score filter, and "unclipping" (growing the shrunk text kernel back to the text's extent).
#pragma once

#include <array>
#include <vector>

#include "image.h"

namespace ocr {

struct TextBox {
  std::array<Point, 4> corners;  // top-left, top-right, bottom-right, bottom-left, in map pixels
  float score = 0;               // mean probability inside the region
};

struct DetectionParams {
  float threshold = 0.3f;      // pixel probability that counts as text
  float box_threshold = 0.6f;  // minimum mean probability of a region
  float unclip_ratio = 1.5f;
  float min_size = 3.0f;  // shorter rectangle side, in map pixels
};

// `probability` is height x width, row-major. Boxes are sorted top to bottom, then left to right.
std::vector<TextBox> find_text_boxes(const float* probability, int width, int height,
                                     const DetectionParams& params);

}  // namespace ocr
