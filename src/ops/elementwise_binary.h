// What other op families use of the elementwise broadcast kernel (elementwise_binary.cpp).
#pragma once

#include "ops/fused_activation.h"
#include "ops/op.h"

namespace wgi::ops {

// out = act(a + b), numpy broadcasting of a and b to `out_shape`, written to the node's output 0: the Add of
// a fused residual that broadcasts (fused_residual.h's plan_residual_fallback) and the residual of a
// MatMul that writes window-reversed rows through a crop (linear.cpp).
KernelLaunch broadcast_add_launch(const PlanContext& ctx, const Shape& out_shape, const Shape& a_shape,
                                  TensorRef a, const Shape& b_shape, TensorRef b,
                                  const FusedActivation& activation);

}  // namespace wgi::ops
