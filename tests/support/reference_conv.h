// Float64 CPU references for ONNX Conv and ConvTranspose (NCHW, 1-D or 2-D), written as plainly as possible:
// Conv as the textbook sum over input channels and taps, ConvTranspose in scatter form (each input element
// adds its contribution to the outputs it reaches), the opposite of the GPU kernel's gather form.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

struct ConvReference {
  Shape shape;
  std::vector<double> values;
};

// Resolved parameters, always per 2-D axis (height, width). For a 1-D conv (rank-3 tensors) leave the height
// entries at their defaults. Padding is explicit: tests work auto_pad and output_shape out by hand.
struct ConvReferenceParams {
  int64_t groups = 1;
  std::array<int64_t, 2> strides = {1, 1};
  std::array<int64_t, 2> dilations = {1, 1};
  std::array<int64_t, 4> pads = {0, 0, 0, 0};      // top, left, bottom, right; ConvTranspose may have end < 0
  std::array<int64_t, 2> output_padding = {0, 0};  // ConvTranspose only
  double lo = -INFINITY;                           // fused activation clamp
  double hi = INFINITY;
};

// x [N, C, (H,) W], w [M, C/group, (kH,) kW], b [M] or null.
ConvReference conv_reference(const Tensor& x, const Tensor& w, const Tensor* b, const ConvReferenceParams& p);

// x [N, C, (H,) W], w [C, M/group, (kH,) kW], b [M] or null. Output size per axis:
// stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end.
ConvReference conv_transpose_reference(const Tensor& x, const Tensor& w, const Tensor* b,
                                       const ConvReferenceParams& p);

}  // namespace wgi::test
