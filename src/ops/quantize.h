// What quantize.cpp gives other op families: DynamicQuantizeLinear's launches over tensors given by
// reference, for a product that quantizes its own A where its kernel cannot (integer_linear.cpp,
// wgi.quantize_a).
#pragma once

#include <cstdint>

#include "ops/op.h"

namespace wgi::ops {

// DynamicQuantizeLinear of the `n` float32 values of `x`: y (uint8, widened to 32 bits as the device stores
// it), its scale (one float32) and zero point (one uint8), exactly as ONNX's reference computes them.
void append_dynamic_quantize_linear(const PlanContext& ctx, uint64_t n, TensorRef x, TensorRef y,
                                    TensorRef scale, TensorRef zero_point, OpPlan& plan);

}  // namespace wgi::ops
