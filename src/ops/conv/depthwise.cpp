// Depthwise convs (group == in channels, one input channel per group, any channel multiplier), two kernels
// that read the weight in ONNX's layout:
//   depthwise_rows  conv/depthwise_rows.wgsl  strides 1 or 2, kernels up to 7x7, dilations up to 4: each
//                   invocation keeps the input rows of a 4-column x ROWS-row output block in registers; no
//                   workgroup memory, no barrier.
//   depthwise       conv/depthwise.wgsl       any stride and kernel size: a workgroup-memory window per
//                   output tile of one plane.
// (The channels-last form that vision transformers' position encodings export is its own op,
// src/ops/conv_channels_last.cpp.)
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "gpu/dispatch_grid.h"
#include "kernels/wgsl_library.h"
#include "ops/conv/conv.h"
#include "ops/fused_residual.h"

namespace wgi::ops {

namespace {

using conv::u32;

// Depthwise: threads per workgroup wanted; fewer where the device or the output plane is smaller.
constexpr uint32_t kDepthwiseThreads = 256;
// The register-window depthwise kernel: output rows per invocation by default (4: each input row is loaded
// for (4 + KH - 1) / 4 output rows' worth of work at stride 1), and the geometry it is compiled for (its
// per-invocation arrays grow with the kernel: a 7x7 kernel at stride 2 holds 49 weights and 16 row values).
constexpr uint32_t kDepthwiseRows = 4;
constexpr int64_t kDepthwiseRowsMaxKernel = 7;
constexpr int64_t kDepthwiseRowsMaxStride = 2;
constexpr int64_t kDepthwiseRowsMaxDilation = 4;

uint64_t next_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// Both depthwise kernels bind input, weight (ONNX's layout [out_channels, 1, KH, KW]), bias (or the zero
// buffer), output of `element`s, the uniform (the planes' sizes and the channel multiplier, then `params`)
// [, residual].
KernelInterface depthwise_interface(const char* element, bool has_bias, bool residual,
                                    const std::vector<UniformMember>& params) {
  std::vector<UniformMember> members = {{"in_channels", UniformType::U32}, {"in_h", UniformType::U32},
                                        {"in_w", UniformType::U32},        {"out_channels", UniformType::U32},
                                        {"out_h", UniformType::U32},       {"out_w", UniformType::U32},
                                        {"multiplier", UniformType::U32}};  // out_channels / in_channels
  members.insert(members.end(), params.begin(), params.end());
  KernelInterface iface;
  iface.read("input", element, TensorRef::input(0))
      .read("weight", "f32", TensorRef::input(1))
      // The device's zero buffer when the node has no bias: reads are gated on params.has_bias.
      .read("bias", "f32", has_bias ? TensorRef::input(2) : TensorRef::zero())
      .read_write("output", element, TensorRef::output(0))
      .uniforms(std::move(members));
  // A fused residual of the output's shape (ops/fused_residual.h), added before the activation.
  if (residual) add_residual_binding(iface, TensorRef::input(kFusedResidualInput), element);
  return iface;
}

KernelLaunch depthwise_launch(std::string label, const KernelInterface& iface, gpu::ShaderText wgsl) {
  KernelLaunch launch;
  launch.program.label = std::move(label);
  launch.program.wgsl = std::move(wgsl);
  iface.bind(launch);
  return launch;
}

// The depthwise kernels' first uniform members.
UniformValues depthwise_uniform_head(const KernelInterface& iface, const ConvGeometry& g) {
  UniformValues u = iface.values();
  u.u32("in_channels", u32(g.in_channels))
      .u32("in_h", u32(g.height.input))
      .u32("in_w", u32(g.width.input))
      .u32("out_channels", u32(g.out_channels))
      .u32("out_h", u32(g.height.output))
      .u32("out_w", u32(g.width.output))
      .u32("multiplier", u32(g.out_channels / g.in_channels));
  return u;
}

}  // namespace

std::optional<DepthwiseConfig> choose_depthwise_config(const ConvGeometry& g, const gpu::Limits& limits,
                                                       std::string& why) {
  const uint32_t threads = std::min(kDepthwiseThreads, limits.max_compute_invocations_per_workgroup);
  // Columns: the fewest threads whose 4 columns each cover the output width, at most 16 (64 columns).
  uint32_t tx = 1;
  while (tx < 16 && 4 * tx < g.width.output) tx *= 2;
  tx = std::min({tx, threads, limits.max_compute_workgroup_size_x});
  // Rows: the rest of the workgroup, no more than the output has.
  uint32_t ty = static_cast<uint32_t>(
      std::min<uint64_t>({threads / tx, next_pow2(static_cast<uint64_t>(g.height.output)),
                          limits.max_compute_workgroup_size_y}));
  ty = std::max<uint32_t>(1, ty);
  auto fit = [&](uint32_t x, uint32_t y) {
    DepthwiseConfig c;
    c.threads_x = x;
    c.threads_y = y;
    c.window_h = u32((y - 1) * g.height.stride + (g.height.kernel - 1) * g.height.dilation + 1);
    c.window_w = u32((4 * x - 1) * g.width.stride + (g.width.kernel - 1) * g.width.dilation + 1);
    // Capped so that the narrowing is exact; a window that large fits no device and is refused below.
    c.tile_elements = static_cast<uint32_t>(std::min<uint64_t>(
        uint64_t{1} << 31, std::max<uint64_t>(64, next_pow2(uint64_t{c.window_h} * c.window_w))));
    return c;
  };
  // Halve the rows, then the columns, until the window fits the workgroup memory.
  DepthwiseConfig c = fit(tx, ty);
  while (uint64_t{c.tile_elements} * 4 > limits.max_compute_workgroup_storage_size &&
         (c.threads_y > 1 || c.threads_x > 1)) {
    if (c.threads_y > 1) {
      c = fit(c.threads_x, c.threads_y / 2);
    } else {
      c = fit(c.threads_x / 2, 1);
    }
  }
  if (uint64_t{c.tile_elements} * 4 > limits.max_compute_workgroup_storage_size) {
    why = "the depthwise kernel's input window for one output row of 4 columns (" +
          std::to_string(c.window_h) + " x " + std::to_string(c.window_w) + " elements, kernel " +
          std::to_string(g.height.kernel) + "x" + std::to_string(g.width.kernel) + ", dilation " +
          std::to_string(g.height.dilation) + "x" + std::to_string(g.width.dilation) + ") needs " +
          std::to_string(uint64_t{c.tile_elements} * 4) + " bytes of workgroup memory; the device allows " +
          std::to_string(limits.max_compute_workgroup_storage_size);
    return std::nullopt;
  }
  return c;
}

void add_depthwise_launch(const PlanContext& ctx, const ConvGeometry& g, const DepthwiseConfig& config,
                          const ConvEpilogue& epilogue, OpPlan& plan) {
  const FusedActivation& activation = epilogue.activation;
  const bool has_bias = epilogue.has_bias;
  const bool residual = epilogue.residual;
  const uint64_t tiles_x = ceil_div(static_cast<uint64_t>(g.width.output), 4 * config.threads_x);
  const uint64_t tiles_y = ceil_div(static_cast<uint64_t>(g.height.output), config.threads_y);
  const uint64_t planes = static_cast<uint64_t>(g.batch * g.out_channels);

  kernels::Defines defines;
  activation.add_defines(defines);
  defines["TX"] = std::to_string(config.threads_x);
  defines["TY"] = std::to_string(config.threads_y);
  defines["TILE_ELEMS"] = std::to_string(config.tile_elements);
  defines["RESIDUAL"] = residual ? "1" : "0";
  const KernelInterface iface =
      depthwise_interface("f32", has_bias, residual,
                          {{"kernel_h", UniformType::U32},
                           {"kernel_w", UniformType::U32},
                           {"stride_h", UniformType::U32},
                           {"stride_w", UniformType::U32},
                           {"dilation_h", UniformType::U32},
                           {"dilation_w", UniformType::U32},
                           {"pad_top", UniformType::I32},
                           {"pad_left", UniformType::I32},
                           // input rows a tile reads: (TY - 1) * stride_h + (kernel_h - 1) * dilation_h + 1
                           {"window_h", UniformType::U32},
                           // input columns: (4 * TX - 1) * stride_w + (kernel_w - 1) * dilation_w + 1
                           {"window_w", UniformType::U32},
                           {"tiles_x", UniformType::U32},
                           {"tiles_y", UniformType::U32},
                           {"planes", UniformType::U32},  // batch * out_channels
                           {"has_bias", UniformType::U32},
                           {"lo", UniformType::F32},  // fused activation clamp bounds
                           {"hi", UniformType::F32},
                           {"_pad0", UniformType::Pad}});
  KernelLaunch launch = depthwise_launch("conv_depthwise_t" + std::to_string(config.threads_x) + "x" +
                                             std::to_string(config.threads_y) +
                                             residual_label_suffix(residual) + activation.label_suffix(),
                                         iface, iface.load_wgsl("conv/depthwise.wgsl", defines));
  launch.uniform = depthwise_uniform_head(iface, g)
                       .u32("kernel_h", u32(g.height.kernel))
                       .u32("kernel_w", u32(g.width.kernel))
                       .u32("stride_h", u32(g.height.stride))
                       .u32("stride_w", u32(g.width.stride))
                       .u32("dilation_h", u32(g.height.dilation))
                       .u32("dilation_w", u32(g.width.dilation))
                       .i32("pad_top", static_cast<int32_t>(g.height.pad_begin))
                       .i32("pad_left", static_cast<int32_t>(g.width.pad_begin))
                       .u32("window_h", config.window_h)
                       .u32("window_w", config.window_w)
                       .u32("tiles_x", u32(static_cast<int64_t>(tiles_x)))
                       .u32("tiles_y", u32(static_cast<int64_t>(tiles_y)))
                       .u32("planes", u32(static_cast<int64_t>(planes)))
                       .u32("has_bias", has_bias ? 1 : 0)
                       .f32("lo", activation.min)
                       .f32("hi", activation.max)
                       .bytes();
  launch.groups =
      gpu::fold_workgroups(tiles_x * tiles_y * planes, ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
}

std::optional<DepthwiseRowsConfig> choose_depthwise_rows_config(const ConvGeometry& g,
                                                                const gpu::Limits& limits,
                                                                uint32_t forced_rows, std::string& why) {
  const auto axis_fits = [](const ConvAxis& a) {
    return a.kernel <= kDepthwiseRowsMaxKernel && a.stride <= kDepthwiseRowsMaxStride &&
           a.dilation <= kDepthwiseRowsMaxDilation;
  };
  if (!axis_fits(g.height) || !axis_fits(g.width)) {
    why = "the depthwise_rows kernel runs strides up to " + std::to_string(kDepthwiseRowsMaxStride) +
          ", kernels up to " + std::to_string(kDepthwiseRowsMaxKernel) + "x" +
          std::to_string(kDepthwiseRowsMaxKernel) + " and dilations up to " +
          std::to_string(kDepthwiseRowsMaxDilation) + "; this conv has kernel " +
          std::to_string(g.height.kernel) + "x" + std::to_string(g.width.kernel) + ", stride " +
          std::to_string(g.height.stride) + "x" + std::to_string(g.width.stride) + ", dilation " +
          std::to_string(g.height.dilation) + "x" + std::to_string(g.width.dilation);
    return std::nullopt;
  }
  // Indices are u32 in the kernel; the padding arithmetic is i32.
  const int64_t input_elements = g.batch * g.in_channels * g.height.input * g.width.input;
  const int64_t output_elements = g.batch * g.out_channels * g.height.output * g.width.output;
  if (std::max(input_elements, output_elements) > std::numeric_limits<int32_t>::max()) {
    why = "the depthwise_rows kernel addresses tensors with 32-bit indices; this conv has " +
          std::to_string(std::max(input_elements, output_elements)) + " elements";
    return std::nullopt;
  }
  DepthwiseRowsConfig c;
  if (forced_rows != 0) {
    c.rows = forced_rows;
  } else {
    c.rows = kDepthwiseRows;
    while (c.rows > 1 && c.rows / 2 >= g.height.output) c.rows /= 2;  // no block mostly past the last row
  }
  c.vec4 = g.width.input % 4 == 0 && g.width.output % 4 == 0;
  c.workgroup = std::min(
      {kDepthwiseThreads, limits.max_compute_invocations_per_workgroup, limits.max_compute_workgroup_size_x});
  return c;
}

void add_depthwise_rows_launch(const PlanContext& ctx, const ConvGeometry& g,
                               const DepthwiseRowsConfig& config, const ConvEpilogue& epilogue,
                               OpPlan& plan) {
  const FusedActivation& activation = epilogue.activation;
  const bool has_bias = epilogue.has_bias;
  const bool residual = epilogue.residual;
  const uint64_t groups_x = ceil_div(static_cast<uint64_t>(g.width.output), 4);
  const uint64_t blocks_y = ceil_div(static_cast<uint64_t>(g.height.output), config.rows);
  const uint64_t planes = static_cast<uint64_t>(g.batch * g.out_channels);

  kernels::Defines defines;
  activation.add_defines(defines);
  defines["WG"] = std::to_string(config.workgroup);
  defines["KH"] = std::to_string(g.height.kernel);
  defines["KW"] = std::to_string(g.width.kernel);
  defines["SH"] = std::to_string(g.height.stride);
  defines["SW"] = std::to_string(g.width.stride);
  defines["DH"] = std::to_string(g.height.dilation);
  defines["DW"] = std::to_string(g.width.dilation);
  defines["ROWS"] = std::to_string(config.rows);
  defines["VEC4"] = config.vec4 ? "1" : "0";
  defines["RESIDUAL"] = residual ? "1" : "0";
  if (config.vec4) {
    // Rows are loaded from LEFT columns before the first output's first tap: the left padding rounded up to
    // a multiple of 4, so that every vec4 is aligned and lies wholly inside or outside the image.
    const int64_t left = (g.width.pad_begin + 3) / 4 * 4;
    const int64_t shift = left - g.width.pad_begin;
    const int64_t span = 3 * g.width.stride + (g.width.kernel - 1) * g.width.dilation + 1;
    defines["LEFT"] = std::to_string(left);
    defines["SHIFT"] = std::to_string(shift);
    defines["VECS"] = std::to_string((shift + span + 3) / 4);
  }
  const KernelInterface iface = depthwise_interface(
      config.vec4 ? "vec4<f32>" : "f32", has_bias, residual,
      {{"pad_top", UniformType::I32},
       {"pad_left", UniformType::I32},
       {"groups_x", UniformType::U32},  // column groups of 4 per output row: ceil(out_w / 4)
       {"blocks_y", UniformType::U32},  // row blocks per plane: ceil(out_h / ROWS)
       {"planes", UniformType::U32},    // batch * out_channels
       {"has_bias", UniformType::U32},
       {"lo", UniformType::F32},  // fused activation clamp bounds
       {"hi", UniformType::F32},
       {"_pad0", UniformType::Pad}});
  KernelLaunch launch =
      depthwise_launch("conv_depthwise_rows" + std::to_string(config.rows) + (config.vec4 ? "_v4" : "") +
                           "_k" + std::to_string(g.height.kernel) + "x" + std::to_string(g.width.kernel) +
                           "_s" + std::to_string(g.height.stride) + "x" + std::to_string(g.width.stride) +
                           residual_label_suffix(residual) + activation.label_suffix(),
                       iface, iface.load_wgsl("conv/depthwise_rows.wgsl", defines));
  launch.uniform = depthwise_uniform_head(iface, g)
                       .i32("pad_top", static_cast<int32_t>(g.height.pad_begin))
                       .i32("pad_left", static_cast<int32_t>(g.width.pad_begin))
                       .u32("groups_x", u32(static_cast<int64_t>(groups_x)))
                       .u32("blocks_y", u32(static_cast<int64_t>(blocks_y)))
                       .u32("planes", u32(static_cast<int64_t>(planes)))
                       .u32("has_bias", has_bias ? 1 : 0)
                       .f32("lo", activation.min)
                       .f32("hi", activation.max)
                       .bytes();
  launch.groups = gpu::fold_workgroups(ceil_div(groups_x * blocks_y * planes, config.workgroup),
                                       ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
}

}  // namespace wgi::ops
