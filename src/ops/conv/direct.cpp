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
#include "ops/conv/conv.h"
#include "ops/float16.h"
#include "ops/fused_residual.h"
#include "ops/kernel_interface.h"

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

// The interface of conv_common.wgsl: input, weight, bias, output, the parameters, then a fused residual.
KernelInterface conv_common_interface(TensorRef weight, const ConvEpilogue& epilogue) {
  KernelInterface iface;
  iface.read("input", "f32", TensorRef::input(0))
      .read("weight", "WEIGHT_T", weight)
      // The device's zero buffer when the node has no bias: reads are gated on params.has_bias, since that
      // buffer is shorter than out_channels.
      .read("bias", "f32", epilogue.has_bias ? TensorRef::input(2) : TensorRef::zero())
      .read_write("output", "f32", TensorRef::output(0))
      .uniforms(
          {{"batch", UniformType::U32},
           {"in_channels", UniformType::U32},
           {"in_h", UniformType::U32},
           {"in_w", UniformType::U32},
           {"out_channels", UniformType::U32},
           {"out_h", UniformType::U32},
           {"out_w", UniformType::U32},
           {"groups", UniformType::U32},
           {"kernel_h", UniformType::U32},
           {"kernel_w", UniformType::U32},
           {"stride_h", UniformType::U32},
           {"stride_w", UniformType::U32},
           // Signed because the kernels subtract them from output positions in i32 (the first taps fall
           // into padding).
           {"pad_top", UniformType::I32},
           {"pad_left", UniformType::I32},
           {"dilation_h", UniformType::U32},
           {"dilation_w", UniformType::U32},
           {"in_channels_per_group", UniformType::U32},
           {"out_channels_per_group", UniformType::U32},
           {"total", UniformType::U32},  // output elements; invocations at or past it have nothing to do
           {"has_bias", UniformType::U32},
           {"lo", UniformType::F32},  // fused activation clamp bounds
           {"hi", UniformType::F32},
           {"_pad0", UniformType::Pad},
           {"_pad1", UniformType::Pad}});
  // A fused residual of the output's shape (ops/fused_residual.h), added before the activation.
  if (epilogue.residual) add_residual_binding(iface);
  return iface;
}

// conv_common.wgsl's Params. Every value was bounded by geometry.cpp (u32 element counts, i32 positions), so
// the narrowing is exact.
std::vector<std::byte> conv_common_uniform(const KernelInterface& iface, const ConvGeometry& g,
                                           uint64_t total, const ConvEpilogue& epilogue) {
  auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
  return iface.values()
      .u32("batch", u(g.batch))
      .u32("in_channels", u(g.in_channels))
      .u32("in_h", u(g.height.input))
      .u32("in_w", u(g.width.input))
      .u32("out_channels", u(g.out_channels))
      .u32("out_h", u(g.height.output))
      .u32("out_w", u(g.width.output))
      .u32("groups", u(g.groups))
      .u32("kernel_h", u(g.height.kernel))
      .u32("kernel_w", u(g.width.kernel))
      .u32("stride_h", u(g.height.stride))
      .u32("stride_w", u(g.width.stride))
      .i32("pad_top", static_cast<int32_t>(g.height.pad_begin))
      .i32("pad_left", static_cast<int32_t>(g.width.pad_begin))
      .u32("dilation_h", u(g.height.dilation))
      .u32("dilation_w", u(g.width.dilation))
      .u32("in_channels_per_group", u(g.in_channels / g.groups))
      .u32("out_channels_per_group", u(g.out_channels / g.groups))
      .u32("total", static_cast<uint32_t>(total))
      .u32("has_bias", epilogue.has_bias ? 1 : 0)
      .f32("lo", epilogue.activation.min)
      .f32("hi", epilogue.activation.max)
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
  const KernelInterface iface = conv_common_interface(weight, epilogue);
  launch.program.wgsl = iface.load_wgsl(file, defines);
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = conv_common_uniform(iface, g, total, epilogue);
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
