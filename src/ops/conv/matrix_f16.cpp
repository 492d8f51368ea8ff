// Float16 compute (SessionOptions::precision "f16"): a group-1 2-D convolution as the subgroup-matrix product
// (ops/gemm_matrix_f16.h, linear/gemm_matrix_f16.wgsl with A_CONV). Rows are the output pixels of every image
// (m = (image, oh, ow)), columns the output channels, K the weight's own (c, kh, kw) order, so B is the ONNX
// weight [OC, IC * KH * KW] read as [N, K] and converted to float16 once. The product gathers A from the
// float32 NCHW input as it stages each K slab (zeros in the padding) and writes element (m, n) to the NCHW
// output through its epilogue (bias per output channel, fused residual, activation).
#include <cstdint>

#include "ops/conv/conv.h"
#include "ops/fused_residual.h"
#include "ops/gemm_matrix_f16.h"

namespace wgi::ops {

void add_matrix_f16_conv_launch(const PlanContext& ctx, const ConvGeometry& g, const ConvEpilogue& epilogue,
                                OpPlan& plan) {
  using conv::u32;
  const Tensor* weight = ctx.constant(1);
  if (!weight) ctx.fail("the float16 matrix convolution needs a constant weight");  // choose.cpp checks it
  const int64_t taps = g.height.kernel * g.width.kernel;
  const int64_t plane = g.height.output * g.width.output;
  GemmLaunchSpec spec;
  spec.m = u32(g.batch * plane);
  spec.n = u32(g.out_channels);
  spec.k = u32(g.in_channels * taps);
  spec.a = TensorRef::input(0);
  spec.out = TensorRef::output(0);
  if (epilogue.has_bias) spec.bias = TensorRef::input(2);
  spec.bias_stride_m = 0;
  spec.bias_stride_n = 1;
  if (epilogue.residual) spec.residual = TensorRef::input(kFusedResidualInput);  // NCHW, as the output
  spec.activation = epilogue.activation;
  // Row m = (image, pixel) starts at image * OC * plane + pixel; each column adds a plane (out_col_stride).
  spec.out_row_map = GemmRowMap{{1, 1, u32(g.batch), u32(plane)}, {0, 0, u32(g.out_channels * plane), 1}};

  MatrixF16Conv conv;
  conv.input = {u32(g.in_channels), u32(g.height.input), u32(g.width.input),
                u32(g.height.input * g.width.input)};
  conv.kernel = {u32(g.height.kernel), u32(g.width.kernel), u32(g.height.dilation), u32(g.width.dilation)};
  conv.step = {u32(g.height.stride), u32(g.width.stride), u32(g.height.pad_begin), u32(g.width.pad_begin)};
  conv.output = {u32(g.height.output), u32(g.width.output), u32(plane), u32(taps)};
  conv.out_col_stride = u32(plane);
  append_matrix_f16_gemm(ctx, spec, *weight, /*b_nk=*/true, nullptr, plan, &conv);
}

}  // namespace wgi::ops
