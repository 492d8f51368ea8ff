// The direct conv kernels: one invocation per output element, the ONNX formula as it is.
//   conv/conv2d_vec4.wgsl  input channels per group % 4 == 0 and a constant weight, prepacked here to OHWI so
//                          that the input-channel loop reads four channels' weights as one vec4
//   conv/conv2d.wgsl       every other Conv; reads the ONNX weight layout, so the weight may be computed
// Both (and conv/conv_transpose2d.wgsl, transposed.cpp) include conv/conv_common.wgsl: shapes and scalars
// travel in its uniform block, so the shader text depends only on the kernel, the fused activation and
// whether a residual is fused (ops/fused_residual.h: added in the epilogue).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpu/dispatch_grid.h"
#include "gpu/uniform.h"
#include "kernels/wgsl_library.h"
#include "ops/conv/conv.h"
#include "ops/float16.h"
#include "ops/fused_residual.h"

namespace wgi::ops {

namespace {

constexpr uint32_t kWorkgroupSize = 64;

// [OC, ICg, KH, KW] -> [OC, KH, KW, ICg], so that conv2d_vec4.wgsl reads the weights of four consecutive
// input channels at one tap as one vec4.
// A float16 weight is widened here (docs/float16.md: the direct kernels read float32).
Tensor prepack_weight_ohwi(const Tensor& weight_as_given, const ConvGeometry& g) {
  const int64_t oc_count = g.out_channels;
  const int64_t icpg = g.in_channels / g.groups;
  const int64_t kh_count = g.height.kernel;
  const int64_t kw_count = g.width.kernel;
  const Tensor weight =
      weight_as_given.dtype() == DType::Float16 ? widen_float16(weight_as_given) : weight_as_given;
  Tensor packed(DType::Float32, {oc_count, kh_count, kw_count, icpg});
  auto src = weight.data<float>();
  auto dst = packed.data<float>();
  for (int64_t oc = 0; oc < oc_count; ++oc) {
    for (int64_t ic = 0; ic < icpg; ++ic) {
      for (int64_t kh = 0; kh < kh_count; ++kh) {
        for (int64_t kw = 0; kw < kw_count; ++kw) {
          const int64_t from = ((oc * icpg + ic) * kh_count + kh) * kw_count + kw;
          const int64_t to = ((oc * kh_count + kh) * kw_count + kw) * icpg + ic;
          dst[static_cast<size_t>(to)] = src[static_cast<size_t>(from)];
        }
      }
    }
  }
  return packed;
}

// conv_common.wgsl's Params, field for field. Every value was bounded by geometry.cpp (u32 element counts,
// i32 positions), so the narrowing is exact.
std::vector<std::byte> conv_common_uniform(const ConvGeometry& g, uint64_t total,
                                           const ConvEpilogue& epilogue) {
  auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
  return gpu::UniformBuilder()
      .u32(u(g.batch))
      .u32(u(g.in_channels))
      .u32(u(g.height.input))
      .u32(u(g.width.input))
      .u32(u(g.out_channels))
      .u32(u(g.height.output))
      .u32(u(g.width.output))
      .u32(u(g.groups))
      .u32(u(g.height.kernel))
      .u32(u(g.width.kernel))
      .u32(u(g.height.stride))
      .u32(u(g.width.stride))
      .i32(static_cast<int32_t>(g.height.pad_begin))
      .i32(static_cast<int32_t>(g.width.pad_begin))
      .u32(u(g.height.dilation))
      .u32(u(g.width.dilation))
      .u32(u(g.in_channels / g.groups))
      .u32(u(g.out_channels / g.groups))
      .u32(static_cast<uint32_t>(total))
      .u32(epilogue.has_bias ? 1 : 0)
      .f32(epilogue.activation.min)
      .f32(epilogue.activation.max)
      .bytes();
}

}  // namespace

void add_conv_common_launch(const PlanContext& ctx, const ConvGeometry& g, const char* file,
                            const std::string& label, TensorRef weight, const ConvEpilogue& epilogue,
                            OpPlan& plan) {
  const uint64_t total = static_cast<uint64_t>(g.batch * g.out_channels * g.height.output * g.width.output);
  kernels::Defines defines;
  epilogue.activation.add_defines(defines);
  defines["RESIDUAL"] = epilogue.residual ? "1" : "0";
  const gpu::DispatchGrid grid = gpu::compute_dispatch_grid(total, kWorkgroupSize, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label =
      label + residual_label_suffix(epilogue.residual) + epilogue.activation.label_suffix();
  launch.program.wgsl = kernels::load_wgsl(file, defines);
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  launch.program.bindings = {gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::ReadOnlyStorage,
                             gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::Storage,
                             gpu::BindingKind::Uniform};
  launch.bindings = {TensorRef::input(0), weight, epilogue.has_bias ? TensorRef::input(2) : TensorRef::zero(),
                     TensorRef::output(0)};
  if (epilogue.residual) append_residual_binding(launch);
  launch.uniform = conv_common_uniform(g, total, epilogue);
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
}

void add_direct_launch(const PlanContext& ctx, const ConvGeometry& g, bool vec4, const ConvEpilogue& epilogue,
                       OpPlan& plan) {
  if (!vec4) {
    add_conv_common_launch(ctx, g, "conv/conv2d.wgsl", "conv2d", TensorRef::input(1), epilogue, plan);
    return;
  }
  const uint32_t packed = static_cast<uint32_t>(plan.constants.size());
  plan.constants.push_back(prepack_weight_ohwi(*ctx.constant(1), g));
  add_conv_common_launch(ctx, g, "conv/conv2d_vec4.wgsl", "conv2d_vec4", TensorRef::constant(packed),
                         epilogue, plan);
}

}  // namespace wgi::ops
