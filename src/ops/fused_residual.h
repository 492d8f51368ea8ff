// A residual addition applied in a GEMM or conv kernel's epilogue instead of as a separate Add over memory
// (a transformer block's x + proj(...), a ResNet bottleneck's identity shortcut): graph::fuse_residual_adds
// turns Add(P, R), P made by MatMul / Gemm / Conv, into P's node with R as an extra input:
//   "wgi.residual"  int: 1 = input 3 (kFusedResidualInput) is R, added after alpha * acc + beta * bias and
//                   before the fused activation: y = act(alpha * acc + beta * bias + R)
// Inputs 0-2 keep their meaning (input 2, the bias / C, may then be absent: an empty optional input).
//
// R must have the node's output shape exactly: the kernels read it at the output element's index (the GEMM
// family through linear/gemm_common.wgsl's epilogue, the conv kernels through theirs). The pass fuses where
// the graph's shapes do not say otherwise, which for exported models (no value_info) is usually before any
// shape is known; so when the planned shapes differ (R broadcasts), plan_residual_fallback keeps the Add's
// numpy semantics: the op's own plan, without residual and activation, writes a scratch buffer, and one
// elementwise launch (elementwise/broadcast.wgsl) computes act(scratch + R) into the output.
#pragma once

#include <functional>

#include "ops/fused_activation.h"
#include "ops/internal_ops.h"
#include "ops/kernel_interface.h"
#include "ops/op.h"

namespace wgi::ops {

// Whether the node has a fused residual (its attribute set); throws via ctx.fail when the attribute is set
// but input 3 is absent or not float32. `input`: where the op takes R (MatMulNBits, whose inputs 3-5 are
// taken: kNBitsResidualInput).
bool has_fused_residual(const PlanContext& ctx, size_t input = kFusedResidualInput);

// The Add's output shape: numpy broadcasting of the op's output `out_shape` and the residual's; throws via
// ctx.fail when they do not broadcast.
Shape residual_sum_shape(const PlanContext& ctx, const Shape& out_shape, size_t input = kFusedResidualInput);

// For an op whose planned output shape `out_shape` differs from its residual's: the plan described above.
// `plan` is the op's plan function, called with the node stripped of the residual input and attribute and of
// the fused activation.
OpPlan plan_residual_fallback(const PlanContext& ctx, const Shape& out_shape,
                              const std::function<OpPlan(const PlanContext&)>& plan,
                              size_t input = kFusedResidualInput);

// The residual binding of a kernel compiled with the define RESIDUAL = 1: a read-only storage binding
// appended to the program's bindings (after the uniform, so the kernels' other bindings keep their numbers)
// and `residual` to the launch's.
void append_residual_binding(KernelLaunch& launch,
                             TensorRef residual = TensorRef::input(kFusedResidualInput));
// The same for a kernel whose interface ops::KernelInterface declares: `residual: array<element>`, declared
// after the uniform block.
void add_residual_binding(KernelInterface& iface, TensorRef residual = TensorRef::input(kFusedResidualInput),
                          const char* element = "f32");
// The kernels' label suffix for a fused residual: "_res".
inline const char* residual_label_suffix(bool residual) {
  return residual ? "_res" : "";
}

}  // namespace wgi::ops
