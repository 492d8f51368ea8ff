// A 1x1 convolution with unit stride and no padding (group 1) is a matrix product per image:
// Y[n] (OC x HW) = W (OC x IC) * X[n] (IC x HW), run by the GEMM family (ops/gemm_launch.h) with its fused
// epilogue (bias per row, residual, activation). The GEMM planner picks and tunes the kernel.
#include <cstdint>

#include "ops/conv/conv.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"

namespace wgi::ops {

void add_pointwise_gemm_launch(const PlanContext& ctx, const ConvGeometry& g, const ConvEpilogue& epilogue,
                               OpPlan& plan) {
  const int64_t pixels = g.height.input * g.width.input;
  GemmLaunchSpec mm;
  mm.m = static_cast<uint32_t>(g.out_channels);
  mm.n = static_cast<uint32_t>(pixels);
  mm.k = static_cast<uint32_t>(g.in_channels);
  mm.batch = static_cast<uint32_t>(g.batch);
  mm.batch_dims = {1, 1, 1, static_cast<uint32_t>(g.batch)};
  mm.b_batch_strides = {0, 0, 0, static_cast<uint32_t>(g.in_channels * pixels)};
  mm.a = TensorRef::input(1);
  mm.b = TensorRef::input(0);
  mm.out = TensorRef::output(0);
  if (epilogue.has_bias) mm.bias = TensorRef::input(2);
  mm.bias_stride_m = 1;
  if (epilogue.residual) mm.residual = TensorRef::input(kFusedResidualInput);  // NCHW: [batch][OC][pixels]
  mm.activation = epilogue.activation;
  // Splittable like MatMul's products: at small planes (ResNet-50's stage 4: 49 pixels a image) the images'
  // few tiles leave most of a large GPU idle unless K is split.
  const size_t first = plan.launches.size();
  append_gemm_launches(ctx, mm, plan);
  plan.launches[first].program.label = "conv1x1_" + plan.launches[first].program.label;
}

}  // namespace wgi::ops
