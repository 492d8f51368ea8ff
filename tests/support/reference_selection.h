// CPU references for the ops whose output size depends on the data (docs/dynamic_shapes.md), written from
// the ONNX definitions with plain loops: NonZero, Compress, Unique (as numpy.unique with return_index,
// return_inverse, return_counts; first-occurrence order when not sorted) and NonMaxSuppression (the greedy
// selection of the ONNX reference, IoU in float64). Exact: they return indices and copies of elements.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

// The element as a double (float16 decoded, bool as 0 / 1).
double element_value(const Tensor& t, int64_t i);

Tensor nonzero_reference(const Tensor& x);
Tensor compress_reference(const Tensor& x, const std::vector<bool>& condition, std::optional<int64_t> axis);

struct UniqueOutputs {
  Tensor y, indices, inverse_indices, counts;
};
UniqueOutputs unique_reference(const Tensor& x, std::optional<int64_t> axis, bool sorted);

struct NmsOutputs {
  Tensor selected;  // [count, 3] int64: batch, class, box
  // Pairs of boxes whose IoU lies within 1e-5 of the threshold, where float32 and float64 might disagree (a
  // float32 IoU of coordinates below ~200 is off by ~1e-6 at most): a test must choose inputs without any,
  // so that the comparison is exact by construction.
  int64_t near_threshold_pairs = 0;
};
NmsOutputs nms_reference(const Tensor& boxes, const Tensor& scores, int64_t max_per_class,
                         double iou_threshold, std::optional<double> score_threshold, bool center_point_box);

}  // namespace wgi::test
