// CPU references for the quantization and integer ops, written from the ONNX spec: integer results exact
// (int64 accumulation, wrapped to int32 as ONNX Runtime's int32 accumulators wrap), float32 steps where the
// spec computes in float32 (x / scale, then round half to even; scale and zero point of
// DynamicQuantizeLinear), so the GPU's results must equal them exactly on adapters that divide correctly
// rounded.
#pragma once

#include <cstdint>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

// Where element i of a tensor of `shape` finds its scale / zero point: per tensor (axis < 0), per axis
// (block 0) or blocked (opset 21, scale with the tensor's rank and ceil(dim / block) along the axis).
struct QuantAxis {
  int64_t axis = -1;
  int64_t block = 0;
};
size_t quant_param_index(const Shape& shape, const QuantAxis& q, int64_t element);

// QuantizeLinear: clamp(rint(x / scale) + zp) into uint8 or int8 (the zero point's type).
Tensor quantize_linear_reference(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                                 const QuantAxis& q);
// DequantizeLinear: float32((x - zp) * scale).
Tensor dequantize_linear_reference(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                                   const QuantAxis& q);

struct DynamicQuantized {
  Tensor y;  // uint8
  float scale = 0;
  uint8_t zero_point = 0;
};
DynamicQuantized dynamic_quantize_reference(const Tensor& x);

// The values of an 8-bit or int32 tensor as int64.
std::vector<int64_t> integer_values(const Tensor& t);

// MatMulInteger with numpy batching: A [..., M, K], B [..., K, N]; zero points empty (0), one value, A's
// per row (M values) or B's per column (N values). int32 result.
Tensor matmul_integer_reference(const Tensor& a, const Tensor& b, const std::vector<int64_t>& a_zp,
                                const std::vector<int64_t>& b_zp);

struct ConvIntegerParams {
  int64_t group = 1;
  std::vector<int64_t> strides{1, 1}, dilations{1, 1},
      pads{0, 0, 0, 0};  // 2-D: [h, w], pads [hb, wb, he, we]
};
// ConvInteger, 2-D NCHW: int32 [N, M, OH, OW]; padding contributes 0 (zero points subtracted first).
Tensor conv_integer_reference(const Tensor& x, const Tensor& w, int64_t x_zp,
                              const std::vector<int64_t>& w_zp, const ConvIntegerParams& p);

// QLinear*'s last step on an int32 result, per element
// clamp(rint(float32(acc) * multiplier[c]) + zp), multiplier = float32(float32(sa * sb[c]) / sy), with the
// channel c = (i / channel_stride) % channels.
Tensor requantize_reference(const Tensor& acc, float sa, const std::vector<float>& sb, float sy, int64_t y_zp,
                            DType out_type, int64_t channel_stride, int64_t channels);

}  // namespace wgi::test
