// Float64 CPU references for the pooling family: MaxPool / AveragePool (1-3 spatial axes, explicit pads),
// and Resize following ONNX's Python reference literally (nested 1-D interpolations, neighbours found in an
// edge-padded copy of the data), independent of the GPU path's per-axis tap tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

struct PoolReference {
  Shape shape;
  std::vector<double> values;
  std::vector<int64_t> indices;  // MaxPool: flat input index of each maximum (row-major)
};

struct PoolReferenceParams {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;    // default 1s
  std::vector<int64_t> dilations;  // default 1s
  std::vector<int64_t> pads;       // begins then ends; default 0s
  bool ceil_mode = false;
  bool count_include_pad = false;
};

// x [N, C, spatial...] (float32, int8 or uint8 values). Output size per axis: floor (or ceil, dropping a
// window that would start in the end padding) of (in + pads - dilated kernel) / stride, plus 1.
PoolReference pool_reference(const Tensor& x, bool is_max, const PoolReferenceParams& p);

struct ResizeReferenceParams {
  std::string mode = "nearest";  // nearest, linear, cubic
  std::string coordinate_transformation_mode = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0;
  std::vector<double> scales;  // per axis: the scale used by the coordinate transformation
  Shape output;                // per axis
  std::vector<double> roi;     // starts then ends, for tf_crop_and_resize
};

std::vector<double> resize_reference(const Tensor& x, const ResizeReferenceParams& p);

}  // namespace wgi::test
