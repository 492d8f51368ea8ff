// Float16 compute (SessionOptions::precision "f16"): a group-1 2-D convolution as the subgroup-matrix product
// (ops/gemm_matrix_f16.h, linear/gemm_matrix_f16.wgsl with A_CONV). Rows are the output pixels of every image
// (m = (image, oh, ow)), columns the output channels, and B the weight read as [N, K], converted to float16
// once. The product gathers A as it stages each K slab (zeros in the padding) and writes element (m, n) to
// the NCHW output through its epilogue (bias per output channel, fused residual, activation). Where the input
// channels are a multiple of 8, a launch first writes the input as float16 NHWC
// (conv/nchw_to_nhwc_f16.wgsl) and K runs (kh, kw, c), channels fastest, so each 8-value chunk the product
// stages is one 16-byte load (the weight permuted to [OC, KH, KW, IC] once to match); otherwise A is
// gathered value by value from the float32 NCHW input, K in the weight's own (c, kh, kw) order.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gpu/dispatch_grid.h"
#include "ops/conv/conv.h"
#include "ops/fused_residual.h"
#include "ops/gemm_matrix_f16.h"
#include "ops/kernel_interface.h"

namespace wgi::ops {

namespace {

// The weight [OC, IC, taps...] (a 1-D conv's has one tap axis) as [OC, taps, IC], in its own type (float32
// or float16: elements moved).
Tensor weight_channels_last(const Tensor& w, int64_t oc, int64_t ic, int64_t taps) {
  const size_t size = dtype_size(w.dtype());
  Tensor out(w.dtype(), {oc, taps, ic});
  const std::byte* src = w.bytes().data();
  std::byte* dst = out.bytes().data();
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t c = 0; c < ic; ++c)
      for (int64_t t = 0; t < taps; ++t)
        std::memcpy(dst + ((o * taps + t) * ic + c) * size, src + ((o * ic + c) * taps + t) * size, size);
  return out;
}

}  // namespace

KernelLaunch nchw_to_nhwc_f16_launch(const PlanContext& ctx, TensorRef input, TensorRef output,
                                     uint32_t images, uint32_t channels, uint32_t plane) {
  KernelInterface iface;
  iface.read("input", "f32", input)
      .read_write("output", "vec4<u32>", output)
      .uniforms({{"images", UniformType::U32}, {"channels", UniformType::U32}, {"plane", UniformType::U32}});
  KernelLaunch launch;
  launch.program.wgsl = iface.load_wgsl("conv/nchw_to_nhwc_f16.wgsl", {});
  launch.program.label = "conv_nchw_to_nhwc_f16";
  iface.bind(launch);
  UniformValues values = iface.values();
  values.u32("images", images).u32("channels", channels).u32("plane", plane);
  launch.uniform = values.bytes();
  launch.groups = gpu::fold_workgroups(ceil_div(uint64_t{images} * (channels / 8) * plane, uint64_t{256}),
                                       ctx.caps.limits.max_compute_workgroups_per_dimension);
  return launch;
}

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
  conv.nhwc_f16 = g.in_channels % 8 == 0;
  if (!conv.nhwc_f16) {
    append_matrix_f16_gemm(ctx, spec, *weight, /*b_nk=*/true, nullptr, plan, &conv);
    return;
  }
  spec.a = plan.add_scratch(uint64_t(g.batch * g.in_channels * g.height.input * g.width.input) * 2);
  plan.launches.push_back(nchw_to_nhwc_f16_launch(ctx, TensorRef::input(0), spec.a, u32(g.batch),
                                                  u32(g.in_channels), u32(g.height.input * g.width.input)));
  append_matrix_f16_gemm(ctx, spec, weight_channels_last(*weight, g.out_channels, g.in_channels, taps),
                         /*b_nk=*/true, nullptr, plan, &conv);
}

}  // namespace wgi::ops
