// float16 tensors on adapters without shader-f16 (docs/float16.md).
//
// The device stores float16 packed, two halves per u32 word (runtime/device_tensor.h), and computes in f32.
// The registry wraps every handler (OpRegistry::add) so that an op written for float32 also takes float16:
// each float16 input the plan's kernels read is unpacked into a float32 scratch buffer, the op is planned and
// runs in float32, and each float32 output that takes the float16 type is packed at the end (rounded once,
// as numpy rounds float16 arithmetic). Host folding (evaluate_on_host) is widened and narrowed likewise.
//
// A handler with OpHandler::plans_float16 takes float16 itself: Cast converts it; MatMul and Gemm call
// plan_with_float16 with their constant float16 B left to the GEMM kernels, which read it packed (it stays
// at half size on the device).
//
// Which outputs are float16: those the float32 plan gives as float32, when the node's first floating-point
// input is float16 (ONNX's type constraints tie an op's float outputs to its float inputs; e.g. Where's
// first float input is X, Pow's is the base, DequantizeLinear's the scale).
#pragma once

#include <cstdint>
#include <functional>

#include "ops/op.h"

namespace wgi::ops {

// IEEE half <-> float: exact decoding; encoding rounds to nearest even, overflows to inf, keeps NaN.
float half_to_float(uint16_t half);
uint16_t float_to_half(float value);

// A float16 tensor as float32 (exact), and a float32 tensor rounded to float16.
Tensor widen_float16(const Tensor& halves);
Tensor narrow_to_float16(const Tensor& floats);

// The launch casting `x` (of x.dtype) to `to` where one side is float16 (cast_f16.wgsl; defined in
// elementwise_binary.cpp beside the other casts).
KernelLaunch cast_f16_launch(const PlanContext& ctx, const TensorDesc& x, DType to, TensorRef in,
                             TensorRef out);

// Plans `plan_f32` for a node whose inputs may be float16, as described above; inputs whose bit is set in
// `native_inputs` reach `plan_f32` as float16 (desc and constant value unchanged). A float16 constant is
// widened for `plan_f32` when small (values a plan reads: shapes, bounds, scales), or whatever its size when
// its bit is set in `widened_inputs` (a weight the op prepacks; else the plan sees a computed input).
OpPlan plan_with_float16(const PlanContext& ctx, const std::function<OpPlan(const PlanContext&)>& plan_f32,
                         uint32_t native_inputs = 0, uint32_t widened_inputs = 0);

// `handler` made to take float16 as above, unless it plans float16 itself (plans_float16).
OpHandler with_float16(OpHandler handler);

}  // namespace wgi::ops
