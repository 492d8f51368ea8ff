// The implicit-GEMM conv, conv/implicit_gemm.wgsl: regular and grouped convs with a constant weight as a GEMM
// of M = out channels per group, N = batch * output pixels, K = in channels per group * KH * KW, the
// activations gathered while loading the workgroup tile (no im2col buffer), the weight prepacked to
// [group][K][M rounded up to 4]. 256 invocations; 128x128, 128x64, 64x128 or 64x64 tiles; K split into
// chunks (partial sums, then the GEMM's split reduction) where the tiles are too few for the device.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/dispatch_grid.h"
#include "kernels/wgsl_library.h"
#include "ops/conv/conv.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"

namespace wgi::ops {

namespace {

using conv::u32;

constexpr uint32_t kWideWorkgroup = 256;  // invocations of the implicit-GEMM kernel
// The 128x128 tile does 4x the work per thread of 64x64 with twice the reuse per loaded value, but it pays
// only with many workgroups: with a few waves of one per SM the 64 tile's many more workgroups win. The
// 128x64 rectangle (8x4 per thread: 1.5x the 64 tile's reuse per workgroup-memory read) splits the difference
// and wins once it has enough workgroups (on the H200: docs/performance.md, "Measurements behind the
// planner's rules").
constexpr uint64_t kTile128MinWorkgroups = 1024;
constexpr uint64_t kTile128x64MinWorkgroups = 256;
// Splitting K where the wave rule would not (wave_split_count: from 132 tiles on, never): DaViT's later
// downsampling convs, deep in K on a few hundred tiles of 64, ran faster split, and so did ResNet-50's
// batch-8 stage-2 3x3 convs (K = 1152 on 196 tiles) and stage-4 downsample (K = 1024 on 224 tiles) in two
// chunks of about 512, not in three or more (docs/performance.md, "ResNet-50 at batch 8 conv by conv").
// Up to this many workgroups in all, each chunk at least kConvSplitMinChunk long; K below
// kConvSplitLongK only up to kConvSplitShortKMaxTiles tiles (DaViT's first downsampling conv, K = 1152 on
// 288 tiles, was measured unsplit only, as the GEMM's short-K rule found splits losing from ~200 tiles).
constexpr uint64_t kConvSplitTargetWorkgroups = 864;
constexpr uint64_t kConvSplitMinK = 1024;
constexpr uint64_t kConvSplitLongK = 2048;
constexpr uint64_t kConvSplitShortKMaxTiles = 256;
constexpr uint64_t kConvSplitMinChunk = 512;

// "128" for a square tile, "128x64" for a rectangle: labels and messages name tiles alike.
std::string implicit_gemm_tile_name(uint32_t tile_m, uint32_t tile_n) {
  return tile_m == tile_n ? std::to_string(tile_m) : std::to_string(tile_m) + "x" + std::to_string(tile_n);
}

uint32_t implicit_gemm_storage(uint32_t tile_m, uint32_t tile_n, uint32_t tile_k, uint32_t stages) {
  return stages * tile_k * ((tile_m + tile_n) / 4) * 16;  // both operands' slabs as vec4s
}

// K chunks for a conv, split as the GEMM's fast kernels split (wave_split_count): ResNet-50's 3x3 convs of
// its last two stages had 8 and 16 tiles of 64x64 over K = 4608 and 2304 on the H200 and took most of its
// time (docs/performance.md). Long K on a few hundred tiles splits too (kConvSplitTargetWorkgroups).
uint32_t implicit_gemm_splits(const ConvGeometry& g, ImplicitGemmTile tile) {
  const uint64_t m = static_cast<uint64_t>(g.out_channels / g.groups);
  const uint64_t n = static_cast<uint64_t>(g.batch * g.height.output * g.width.output);
  const uint64_t k = static_cast<uint64_t>(g.in_channels / g.groups * g.height.kernel * g.width.kernel);
  const uint64_t tiles = ceil_div(m, tile.m) * ceil_div(n, tile.n) * static_cast<uint64_t>(g.groups);
  const uint32_t splits = wave_split_count(tiles, k);
  if (splits > 1 || k < kConvSplitMinK || tiles * 2 > kConvSplitTargetWorkgroups ||
      (k < kConvSplitLongK && tiles > kConvSplitShortKMaxTiles))
    return splits;
  return static_cast<uint32_t>(
      std::max<uint64_t>(1, std::min(ceil_div(kConvSplitTargetWorkgroups, tiles), k / kConvSplitMinChunk)));
}

// The GEMM's sizes per group.
struct ImplicitGemmShape {
  int64_t m = 0;   // output channels per group
  int64_t m4 = 0;  // m rounded up to 4: the packed weight's rows
  int64_t n = 0;   // output pixels of the batch
  int64_t k = 0;   // input channels per group * KH * KW
};

ImplicitGemmShape implicit_gemm_shape(const ConvGeometry& g) {
  ImplicitGemmShape s;
  s.m = g.out_channels / g.groups;
  s.m4 = (s.m + 3) / 4 * 4;
  s.n = g.batch * g.height.output * g.width.output;
  s.k = g.in_channels / g.groups * g.height.kernel * g.width.kernel;
  return s;
}

// [OC, ICg, KH, KW] = [group][m][k] -> [group][k][m4]: the kernel reads four output channels of one k as a
// vec4 and stores it into workgroup memory as it is. Rows m..m4 stay zero.
// A float16 weight stays float16 (its 16-bit elements moved, never widened; W_F16 reads it packed).
Tensor pack_implicit_gemm_weight(const Tensor& weight, const ConvGeometry& g) {
  const int64_t groups = g.groups;
  const ImplicitGemmShape s = implicit_gemm_shape(g);
  const int64_t m = s.m, m4 = s.m4, k = s.k;
  Tensor packed(weight.dtype(), {groups, k, m4});
  auto pack = [&](auto zero) {
    using Element = decltype(zero);
    const Element* src = reinterpret_cast<const Element*>(weight.bytes().data());
    Element* dst = reinterpret_cast<Element*>(packed.bytes().data());
    std::fill(dst, dst + packed.element_count(), zero);
    for (int64_t gi = 0; gi < groups; ++gi)
      for (int64_t mi = 0; mi < m; ++mi)
        for (int64_t ki = 0; ki < k; ++ki)
          dst[static_cast<size_t>((gi * k + ki) * m4 + mi)] =
              src[static_cast<size_t>((gi * m + mi) * k + ki)];
  };
  if (weight.dtype() == DType::Float16) {
    pack(uint16_t{0});
  } else {
    pack(0.0f);
  }
  return packed;
}

// Per k = (ic, kh, kw): its input offset from the pixel's first tap and its row / column shift. Shapes are
// fixed per plan, so this is a constant like the packed weight; every pixel shares it.
Tensor implicit_gemm_taps(const ConvGeometry& g) {
  const int64_t kh_n = g.height.kernel, kw_n = g.width.kernel;
  const int64_t k = implicit_gemm_shape(g).k;
  const int64_t in_plane = g.height.input * g.width.input;
  Tensor taps(DType::Int32, {k, 4});
  auto t = taps.data<int32_t>();
  for (int64_t ki = 0; ki < k; ++ki) {
    const int64_t ic = ki / (kh_n * kw_n);
    const int64_t kh = ki / kw_n % kh_n;
    const int64_t kw = ki % kw_n;
    const int64_t dy = kh * g.height.dilation, dx = kw * g.width.dilation;
    // Bounded by the input's element count (i32, checked by the config) and the i32 positions checked in
    // geometry.cpp.
    t[static_cast<size_t>(4 * ki)] = static_cast<int32_t>(ic * in_plane + dy * g.width.input + dx);
    t[static_cast<size_t>(4 * ki + 1)] = static_cast<int32_t>(dy);
    t[static_cast<size_t>(4 * ki + 2)] = static_cast<int32_t>(dx);
    t[static_cast<size_t>(4 * ki + 3)] = 0;
  }
  return taps;
}

// The kernel's program: its tile, slab and stages, and the epilogue it applies (none but raw sums when K is
// split: the reduction applies it).
gpu::ProgramSource implicit_gemm_program(const KernelInterface& iface, const ImplicitGemmConfig& config,
                                         const ConvEpilogue& epilogue, bool half_weight) {
  const FusedActivation& activation = epilogue.activation;
  const bool residual = epilogue.residual;
  const bool split = config.splits > 1;
  kernels::Defines defines;
  activation.add_defines(defines);
  defines["TM"] = std::to_string(config.tile_m / 16);
  defines["TN"] = std::to_string(config.tile_n / 16);
  defines["BK"] = std::to_string(config.tile_k);
  defines["STAGES"] = std::to_string(config.stages);
  defines["SPLIT_K"] = split ? "1" : "0";
  defines["W_F16"] = half_weight ? "1" : "0";
  // A split's partial sums leave the residual to the reduction.
  defines["RESIDUAL"] = residual && !split ? "1" : "0";
  // A Gelu or a residual: the epilogue's second, in-place pass (implicit_gemm.wgsl says why).
  defines["IN_PLACE_EPILOGUE"] = !split && (residual || activation.uses_math()) ? "1" : "0";
  gpu::ProgramSource program;
  program.label =
      "conv_igemm" + implicit_gemm_tile_name(config.tile_m, config.tile_n) + "_k" +
      std::to_string(config.tile_k) + "s" + std::to_string(config.stages) + (half_weight ? "_wf16" : "") +
      (split ? "_splitk" : std::string(residual_label_suffix(residual)) + activation.label_suffix());
  program.wgsl = iface.load_wgsl("conv/implicit_gemm.wgsl", defines);
  return program;
}

// implicit_gemm.wgsl's bindings and Params: input, the packed weight (float16: four halves per vec2<u32>)
// and its taps, bias (or the zero buffer), the output (or a split's partial sums) [, residual after the
// uniform].
KernelInterface implicit_gemm_interface(bool half_weight, TensorRef weight, TensorRef taps, TensorRef bias,
                                        TensorRef written, bool residual) {
  KernelInterface iface;
  iface.read("input", "f32", TensorRef::input(0))
      .read("weight", half_weight ? "vec2<u32>" : "vec4<f32>", weight)
      // Per k: (offset of (ic, kh * dilation_h, kw * dilation_w) from the pixel's first tap, kh * dilation_h,
      // kw * dilation_w, unused).
      .read("taps", "vec4<i32>", taps)
      // The device's zero buffer when the node has no bias: reads are gated on params.has_bias.
      .read("bias", "f32", bias)
      .read_write("output", "f32", written)
      .uniforms({{"M", UniformType::U32},  // output channels per group
                 {"N", UniformType::U32},  // batch * out_h * out_w
                 {"K", UniformType::U32},  // input channels per group * kernel_h * kernel_w
                 {"groups", UniformType::U32},
                 {"tiles_m", UniformType::U32},
                 {"tiles_n", UniformType::U32},
                 {"out_channels", UniformType::U32},
                 {"out_plane", UniformType::U32},  // out_h * out_w
                 {"out_w", UniformType::U32},
                 {"in_h", UniformType::U32},
                 {"in_w", UniformType::U32},
                 {"stride_h", UniformType::U32},
                 {"stride_w", UniformType::U32},
                 {"pad_top", UniformType::I32},
                 {"pad_left", UniformType::I32},
                 {"in_image", UniformType::U32},  // in_channels * in_h * in_w
                 {"in_group", UniformType::U32},  // in_channels_per_group * in_h * in_w
                 {"a_row", UniformType::U32},     // vec4s per k row of the packed weight: ceil(M / 4)
                 {"has_bias", UniformType::U32},
                 {"lo", UniformType::F32},  // fused activation clamp bounds
                 {"hi", UniformType::F32},
                 {"k_splits", UniformType::U32},  // SPLIT_K: K chunks, one partial sum each
                 {"_pad1", UniformType::Pad},
                 {"_pad2", UniformType::Pad}});
  if (residual) add_residual_binding(iface);
  return iface;
}

std::vector<std::byte> implicit_gemm_uniform(const KernelInterface& iface, const ConvGeometry& g,
                                             const ImplicitGemmConfig& config, const ConvEpilogue& epilogue,
                                             uint64_t tiles_m, uint64_t tiles_n) {
  const ImplicitGemmShape s = implicit_gemm_shape(g);
  const int64_t m = s.m, m4 = s.m4, n = s.n, k = s.k, groups = g.groups;
  const int64_t icpg = g.in_channels / groups;
  const int64_t in_plane = g.height.input * g.width.input;
  const bool has_bias = epilogue.has_bias;
  const FusedActivation& activation = epilogue.activation;
  return iface.values()
      .u32("M", u32(m))
      .u32("N", u32(n))
      .u32("K", u32(k))
      .u32("groups", u32(groups))
      .u32("tiles_m", u32(static_cast<int64_t>(tiles_m)))
      .u32("tiles_n", u32(static_cast<int64_t>(tiles_n)))
      .u32("out_channels", u32(g.out_channels))
      .u32("out_plane", u32(g.height.output * g.width.output))
      .u32("out_w", u32(g.width.output))
      .u32("in_h", u32(g.height.input))
      .u32("in_w", u32(g.width.input))
      .u32("stride_h", u32(g.height.stride))
      .u32("stride_w", u32(g.width.stride))
      .i32("pad_top", static_cast<int32_t>(g.height.pad_begin))
      .i32("pad_left", static_cast<int32_t>(g.width.pad_begin))
      .u32("in_image", u32(g.in_channels * in_plane))
      .u32("in_group", u32(icpg * in_plane))
      .u32("a_row", u32(m4 / 4))
      .u32("has_bias", has_bias ? 1 : 0)
      .f32("lo", activation.min)
      .f32("hi", activation.max)
      .u32("k_splits", config.splits)
      .bytes();
}

// The GEMM's split reduction: the NCHW output is its [batch][M][N] with M = all output channels and N =
// the output plane, the bias one per channel (strides 1 over m, 0 over n), alpha = beta = 1.
KernelLaunch implicit_gemm_reduce_launch(const PlanContext& ctx, const ConvGeometry& g,
                                         const ImplicitGemmConfig& config, const ConvEpilogue& epilogue,
                                         TensorRef partial_sums) {
  GemmLaunchSpec reduced;
  reduced.m = u32(g.out_channels);
  reduced.n = u32(g.height.output * g.width.output);
  reduced.k = u32(implicit_gemm_shape(g).k);
  reduced.batch = u32(g.batch);
  reduced.batch_dims = {1, 1, 1, reduced.batch};  // the reduction decodes the output's matrices from these
  if (epilogue.has_bias) reduced.bias = TensorRef::input(2);
  reduced.bias_stride_m = 1;
  reduced.bias_stride_n = 0;
  reduced.activation = epilogue.activation;
  if (epilogue.residual)
    reduced.residual = TensorRef::input(kFusedResidualInput);  // NCHW is [batch][M][N] too
  reduced.out = TensorRef::output(0);
  return gemm_split_reduce_launch(ctx, reduced, config.splits, partial_sums);
}

}  // namespace

std::optional<ImplicitGemmConfig> choose_implicit_gemm_config(const ConvGeometry& g,
                                                              const gpu::Limits& limits,
                                                              ImplicitGemmTile forced_tile,
                                                              uint32_t forced_tile_k, uint32_t forced_stages,
                                                              std::string& why, uint32_t forced_splits) {
  if (limits.max_compute_invocations_per_workgroup < kWideWorkgroup ||
      limits.max_compute_workgroup_size_x < kWideWorkgroup) {
    why = "the implicit_gemm kernel needs 256 invocations per workgroup; the device allows " +
          std::to_string(
              std::min(limits.max_compute_invocations_per_workgroup, limits.max_compute_workgroup_size_x));
    return std::nullopt;
  }
  // The gather addresses the input with i32 (positions before the image are negative on the way).
  const int64_t input_elements = g.batch * g.in_channels * g.height.input * g.width.input;
  if (input_elements > std::numeric_limits<int32_t>::max()) {
    why = "the implicit_gemm kernel addresses the input with i32; it has " + std::to_string(input_elements) +
          " elements";
    return std::nullopt;
  }
  const uint64_t m = static_cast<uint64_t>(g.out_channels / g.groups);
  const uint64_t n = static_cast<uint64_t>(g.batch * g.height.output * g.width.output);
  ImplicitGemmTile tile = forced_tile;
  if (tile.m == 0) {
    const uint64_t groups = static_cast<uint64_t>(g.groups);
    const uint64_t tiles128 = ceil_div(m, 128) * ceil_div(n, 128) * groups;
    const uint64_t tiles128x64 = ceil_div(m, 128) * ceil_div(n, 64) * groups;
    tile = m <= 64                                   ? ImplicitGemmTile{64, 64}
           : tiles128 >= kTile128MinWorkgroups       ? ImplicitGemmTile{128, 128}
           : tiles128x64 >= kTile128x64MinWorkgroups ? ImplicitGemmTile{128, 64}
                                                     : ImplicitGemmTile{64, 64};
  }
  const std::string tile_name = implicit_gemm_tile_name(tile.m, tile.n);
  // One buffer: on the H200 the 64 tile ran every benchmark shape as fast or faster with one (unlike the
  // plain GEMM's 64 tile, which prefers two). K slab: 16 for the 64 tile, 8 for the tiles 128 rows tall,
  // which were faster with it on every benchmark shape (docs/performance.md, "Measurements behind the
  // planner's rules"). The rest for devices with less workgroup memory, or when forced.
  std::vector<std::pair<uint32_t, uint32_t>> candidates = {{8, 1},  {8, 2},  {16, 1},
                                                           {16, 2}, {32, 1}, {32, 2}};
  if (tile.m == 64) candidates = {{16, 1}, {16, 2}, {32, 1}, {32, 2}};
  const bool knobs_forced = forced_tile_k != 0 || forced_stages != 0;
  uint32_t smallest = UINT32_MAX;
  for (const auto& [tile_k, stages] : candidates) {
    if (forced_tile_k != 0 && forced_tile_k != tile_k) continue;
    if (forced_stages != 0 && forced_stages != stages) continue;
    if (!knobs_forced && tile_k == 32) continue;  // only when asked for
    // Each of 256 threads loads whole vec4s of the weight and the same number of activations per slab.
    if ((tile.m * tile_k) % 1024 != 0 || (tile.n * tile_k) % 256 != 0) continue;
    const uint32_t bytes = implicit_gemm_storage(tile.m, tile.n, tile_k, stages);
    if (bytes > limits.max_compute_workgroup_storage_size) {
      smallest = std::min(smallest, bytes);
      continue;
    }
    ImplicitGemmConfig config{tile.m, tile.n, tile_k, stages, bytes, 1};
    config.splits = forced_splits != 0 ? forced_splits : implicit_gemm_splits(g, tile);
    return config;
  }
  if (smallest == UINT32_MAX) {
    why = "the implicit_gemm kernel has no configuration with tile " + tile_name + ", K slab " +
          std::to_string(forced_tile_k) + " and " + std::to_string(forced_stages) +
          " buffer(s) (the tile's rows times the K slab must be a multiple of 1024)";
  } else {
    why = "the implicit_gemm kernel with tile " + tile_name + " needs " + std::to_string(smallest) +
          " bytes of workgroup memory; the device allows " +
          std::to_string(limits.max_compute_workgroup_storage_size);
  }
  return std::nullopt;
}

void add_implicit_gemm_launch(const PlanContext& ctx, const ConvGeometry& g, const ImplicitGemmConfig& config,
                              const ConvEpilogue& epilogue, OpPlan& plan) {
  const Tensor& weight = *ctx.constant(1);
  const uint32_t weight_index = static_cast<uint32_t>(plan.constants.size());
  plan.constants.push_back(pack_implicit_gemm_weight(weight, g));
  plan.constants.push_back(implicit_gemm_taps(g));

  const ImplicitGemmShape s = implicit_gemm_shape(g);
  const uint64_t tiles_m = ceil_div(static_cast<uint64_t>(s.m), config.tile_m);
  const uint64_t tiles_n = ceil_div(static_cast<uint64_t>(s.n), config.tile_n);
  const bool split = config.splits > 1;
  // With a split, the partial sums go to a scratch buffer (one copy of the output per K chunk), else the
  // kernel writes the output.
  const uint64_t outputs = static_cast<uint64_t>(g.batch * g.out_channels * g.height.output * g.width.output);
  const TensorRef written =
      split ? plan.add_scratch(outputs * config.splits * sizeof(float)) : TensorRef::output(0);
  const bool half_weight = weight.dtype() == DType::Float16;
  const KernelInterface iface = implicit_gemm_interface(
      half_weight, TensorRef::constant(weight_index), TensorRef::constant(weight_index + 1),
      epilogue.has_bias ? TensorRef::input(2) : TensorRef::zero(), written, epilogue.residual && !split);
  KernelLaunch launch;
  launch.program = implicit_gemm_program(iface, config, epilogue, half_weight);
  iface.bind(launch);
  launch.uniform = implicit_gemm_uniform(iface, g, config, epilogue, tiles_m, tiles_n);
  launch.groups = gpu::fold_workgroups(tiles_m * tiles_n * static_cast<uint64_t>(g.groups) * config.splits,
                                       ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
  if (split) plan.launches.push_back(implicit_gemm_reduce_launch(ctx, g, config, epilogue, written));
}

}  // namespace wgi::ops
