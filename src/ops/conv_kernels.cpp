#include "ops/conv_kernels.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gpu/dispatch_grid.h"
#include "gpu/uniform.h"
#include "kernels/wgsl_library.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"

namespace wgi::ops {

namespace {

constexpr uint32_t kWideWorkgroup = 256;  // invocations of the implicit-GEMM kernel
// The 128x128 tile does 4x the work per thread of 64x64 with twice the reuse per loaded value, but it pays
// only with many workgroups: on the H200 (docs/performance.md, 2026-11-29) 3x3 256->256 on 8x56x56 gives the
// 128 tile 392 workgroups (three waves of one per SM) at 18.4 TFLOP/s and the 64 tile 1568 at 24.2. The
// 128x64 rectangle (8x4 per thread: 1.5x the 64 tile's reuse per workgroup-memory read) splits the difference
// and wins there once it has enough workgroups: 784 of them, 29.7 TFLOP/s (2026-11-30); with 196 (3x3 s2
// 128->256 on 8x56x56) the 64 tile's 392 still win, with 288 (DaViT's first downsampling conv, 3x3 s2
// 128->256 on 192x192) it takes 0.25 ms against the 64 tile's 0.41 (2026-11-30, fourth round).
constexpr uint64_t kTile128MinWorkgroups = 1024;
constexpr uint64_t kTile128x64MinWorkgroups = 256;
// Splitting K where the wave rule would not (wave_split_count: from 132 tiles on, never): DaViT's later
// downsampling convs, 3x3 s2 over K = 2304 and 4608 on 288 and 144 tiles of 64, ran 0.35 -> 0.30 ms and
// 0.55 -> 0.28 ms split into 3 and 6 chunks (2026-11-30, fourth round; 1x1-like K below 2048 gained less).
// Up to this many workgroups in all, each chunk at least kConvSplitMinChunk long.
constexpr uint64_t kConvSplitTargetWorkgroups = 864;
constexpr uint64_t kConvSplitMinK = 2048;
constexpr uint64_t kConvSplitMinChunk = 768;
// Depthwise: threads per workgroup wanted; fewer where the device or the output plane is smaller.
constexpr uint32_t kDepthwiseThreads = 256;
// The register-window depthwise kernel: output rows per invocation by default (4: each input row is loaded
// for (4 + KH - 1) / 4 output rows' worth of work at stride 1), and the geometry it is compiled for (its
// per-invocation arrays grow with the kernel: a 7x7 kernel at stride 2 holds 49 weights and 16 row values).
constexpr uint32_t kDepthwiseRows = 4;
constexpr int64_t kDepthwiseRowsMaxKernel = 7;
constexpr int64_t kDepthwiseRowsMaxStride = 2;
constexpr int64_t kDepthwiseRowsMaxDilation = 4;

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

uint32_t u32(int64_t v) {
  return static_cast<uint32_t>(v);
}

uint64_t next_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// Both depthwise kernels bind input, weight (ONNX's layout), bias (or the zero buffer), output, uniform
// [, residual].
KernelLaunch depthwise_launch(std::string label, gpu::ShaderText wgsl, bool has_bias, bool residual) {
  KernelLaunch launch;
  launch.program.label = std::move(label);
  launch.program.wgsl = std::move(wgsl);
  launch.program.bindings = {gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::ReadOnlyStorage,
                             gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::Storage,
                             gpu::BindingKind::Uniform};
  launch.bindings = {TensorRef::input(0), TensorRef::input(1),
                     has_bias ? TensorRef::input(2) : TensorRef::zero(), TensorRef::output(0)};
  if (residual) append_residual_binding(launch);
  return launch;
}

// The first members of both depthwise kernels' Params: the planes' sizes and the channel multiplier.
gpu::UniformBuilder depthwise_uniform_head(const ConvGeometry& g) {
  gpu::UniformBuilder u;
  u.u32(u32(g.in_channels))
      .u32(u32(g.height.input))
      .u32(u32(g.width.input))
      .u32(u32(g.out_channels))
      .u32(u32(g.height.output))
      .u32(u32(g.width.output))
      .u32(u32(g.out_channels / g.in_channels));
  return u;
}

// "128" for a square tile, "128x64" for a rectangle: labels and messages name tiles alike.
std::string implicit_gemm_tile_name(uint32_t tile_m, uint32_t tile_n) {
  return tile_m == tile_n ? std::to_string(tile_m) : std::to_string(tile_m) + "x" + std::to_string(tile_n);
}

uint32_t implicit_gemm_storage(uint32_t tile_m, uint32_t tile_n, uint32_t tile_k, uint32_t stages) {
  return stages * tile_k * ((tile_m + tile_n) / 4) * 16;  // both operands' slabs as vec4s
}

}  // namespace

// K chunks for a conv, split as the GEMM's fast kernels split (wave_split_count): ResNet-50's 3x3 convs of
// its last two stages had 8 and 16 tiles of 64x64 over K = 4608 and 2304 on the H200 and took most of its
// time (docs/performance.md). Long K on a few hundred tiles splits too (kConvSplitTargetWorkgroups).
uint32_t implicit_gemm_splits(const ConvGeometry& g, ImplicitGemmTile tile) {
  const uint64_t m = static_cast<uint64_t>(g.out_channels / g.groups);
  const uint64_t n = static_cast<uint64_t>(g.batch * g.height.output * g.width.output);
  const uint64_t k = static_cast<uint64_t>(g.in_channels / g.groups * g.height.kernel * g.width.kernel);
  const uint64_t tiles = ceil_div(m, tile.m) * ceil_div(n, tile.n) * static_cast<uint64_t>(g.groups);
  const uint32_t splits = wave_split_count(tiles, k);
  if (splits > 1 || k < kConvSplitMinK || tiles * 2 > kConvSplitTargetWorkgroups) return splits;
  return static_cast<uint32_t>(
      std::max<uint64_t>(1, std::min(ceil_div(kConvSplitTargetWorkgroups, tiles), k / kConvSplitMinChunk)));
}

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
  // One buffer, as measured on the H200 (docs/performance.md): the 64 tile ran 3x3 256->256 at 24.2 TFLOP/s
  // with one buffer and 21.5 with two, the other benchmark shapes equal or better with one (unlike the plain
  // GEMM's 64 tile, which prefers two). K slab: 16 for the 64 tile, 8 for the tiles 128 rows tall, which were
  // 10-20% faster with it on every benchmark shape (2026-11-30; 3x3 256->256: 128x64 at 29.7 TFLOP/s with 8,
  // 26.0 with 16). The rest for devices with less workgroup memory, or when forced.
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
                              const FusedActivation& activation, bool has_bias, bool residual, OpPlan& plan) {
  const int64_t groups = g.groups;
  const int64_t m = g.out_channels / groups;
  const int64_t icpg = g.in_channels / groups;
  const int64_t kh_n = g.height.kernel, kw_n = g.width.kernel;
  const int64_t k = icpg * kh_n * kw_n;
  const int64_t m4 = (m + 3) / 4 * 4;
  const int64_t in_plane = g.height.input * g.width.input;

  // [OC, ICg, KH, KW] = [group][m][k] -> [group][k][m4]: the kernel reads four output channels of one k as a
  // vec4 and stores it into workgroup memory as it is. Rows m..m4 stay zero.
  // A float16 weight stays float16 (its 16-bit elements moved, never widened; W_F16 reads it packed).
  const Tensor& weight = *ctx.constant(1);
  const bool half_weight = weight.dtype() == DType::Float16;
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
  if (half_weight) {
    pack(uint16_t{0});
  } else {
    pack(0.0f);
  }
  // Per k = (ic, kh, kw): its input offset from the pixel's first tap and its row / column shift. Shapes are
  // fixed per plan, so this is a constant like the packed weight; every pixel shares it.
  Tensor taps(DType::Int32, {k, 4});
  {
    auto t = taps.data<int32_t>();
    for (int64_t ki = 0; ki < k; ++ki) {
      const int64_t ic = ki / (kh_n * kw_n);
      const int64_t kh = ki / kw_n % kh_n;
      const int64_t kw = ki % kw_n;
      const int64_t dy = kh * g.height.dilation, dx = kw * g.width.dilation;
      // Bounded by the input's element count (i32, checked by the config) and the i32 positions checked in
      // conv.cpp.
      t[static_cast<size_t>(4 * ki)] = static_cast<int32_t>(ic * in_plane + dy * g.width.input + dx);
      t[static_cast<size_t>(4 * ki + 1)] = static_cast<int32_t>(dy);
      t[static_cast<size_t>(4 * ki + 2)] = static_cast<int32_t>(dx);
      t[static_cast<size_t>(4 * ki + 3)] = 0;
    }
  }
  const uint32_t weight_index = static_cast<uint32_t>(plan.constants.size());
  plan.constants.push_back(std::move(packed));
  plan.constants.push_back(std::move(taps));

  const int64_t n = g.batch * g.height.output * g.width.output;
  const uint64_t tiles_m = ceil_div(static_cast<uint64_t>(m), config.tile_m);
  const uint64_t tiles_n = ceil_div(static_cast<uint64_t>(n), config.tile_n);

  const bool split = config.splits > 1;
  kernels::Defines defines;
  activation.add_defines(defines);
  defines["TM"] = std::to_string(config.tile_m / 16);
  defines["TN"] = std::to_string(config.tile_n / 16);
  defines["BK"] = std::to_string(config.tile_k);
  defines["STAGES"] = std::to_string(config.stages);
  defines["SPLIT_K"] = split ? "1" : "0";
  if (half_weight) defines["W_F16"] = "1";  // only then: float32 convs compile as without
  // A split's partial sums leave the residual to the reduction.
  defines["RESIDUAL"] = residual && !split ? "1" : "0";
  // A Gelu or a residual: the epilogue's second, in-place pass (implicit_gemm.wgsl says why).
  defines["IN_PLACE_EPILOGUE"] = !split && (residual || activation.uses_math()) ? "1" : "0";
  KernelLaunch launch;
  launch.program.label =
      "conv_igemm" + implicit_gemm_tile_name(config.tile_m, config.tile_n) + "_k" +
      std::to_string(config.tile_k) + "s" + std::to_string(config.stages) + (half_weight ? "_wf16" : "") +
      (split ? "_splitk" : std::string(residual_label_suffix(residual)) + activation.label_suffix());
  launch.program.wgsl = kernels::load_wgsl("conv/implicit_gemm.wgsl", defines);
  launch.program.bindings = {gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::ReadOnlyStorage,
                             gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::ReadOnlyStorage,
                             gpu::BindingKind::Storage,         gpu::BindingKind::Uniform};
  // With a split, the partial sums go to a scratch buffer (one copy of the output per K chunk), else the
  // kernel writes the output.
  const uint64_t outputs = static_cast<uint64_t>(g.batch * g.out_channels * g.height.output * g.width.output);
  const TensorRef written =
      split ? plan.add_scratch(outputs * config.splits * sizeof(float)) : TensorRef::output(0);
  launch.bindings = {TensorRef::input(0), TensorRef::constant(weight_index),
                     TensorRef::constant(weight_index + 1),
                     has_bias ? TensorRef::input(2) : TensorRef::zero(), written};
  if (residual && !split) append_residual_binding(launch);
  launch.uniform = gpu::UniformBuilder()
                       .u32(u32(m))
                       .u32(u32(n))
                       .u32(u32(k))
                       .u32(u32(groups))
                       .u32(u32(static_cast<int64_t>(tiles_m)))
                       .u32(u32(static_cast<int64_t>(tiles_n)))
                       .u32(u32(g.out_channels))
                       .u32(u32(g.height.output * g.width.output))
                       .u32(u32(g.width.output))
                       .u32(u32(g.height.input))
                       .u32(u32(g.width.input))
                       .u32(u32(g.height.stride))
                       .u32(u32(g.width.stride))
                       .i32(static_cast<int32_t>(g.height.pad_begin))
                       .i32(static_cast<int32_t>(g.width.pad_begin))
                       .u32(u32(g.in_channels * in_plane))
                       .u32(u32(icpg * in_plane))
                       .u32(u32(m4 / 4))
                       .u32(has_bias ? 1 : 0)
                       .f32(activation.min)
                       .f32(activation.max)
                       .u32(config.splits)
                       .u32(0)
                       .u32(0)
                       .bytes();
  launch.groups = gpu::fold_workgroups(tiles_m * tiles_n * static_cast<uint64_t>(groups) * config.splits,
                                       ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
  if (!split) return;

  // The GEMM's split reduction: the NCHW output is its [batch][M][N] with M = all output channels and N =
  // the output plane, the bias one per channel (strides 1 over m, 0 over n), alpha = beta = 1.
  GemmLaunchSpec reduced;
  reduced.m = u32(g.out_channels);
  reduced.n = u32(g.height.output * g.width.output);
  reduced.k = u32(k);
  reduced.batch = u32(g.batch);
  reduced.batch_dims = {1, 1, 1, reduced.batch};  // the reduction decodes the output's matrices from these
  if (has_bias) reduced.bias = TensorRef::input(2);
  reduced.bias_stride_m = 1;
  reduced.bias_stride_n = 0;
  reduced.activation = activation;
  if (residual) reduced.residual = TensorRef::input(kFusedResidualInput);  // NCHW is [batch][M][N] too
  reduced.out = TensorRef::output(0);
  plan.launches.push_back(gemm_split_reduce_launch(ctx, reduced, config.splits, written));
}

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
                          const FusedActivation& activation, bool has_bias, bool residual, OpPlan& plan) {
  const uint64_t tiles_x = ceil_div(static_cast<uint64_t>(g.width.output), 4 * config.threads_x);
  const uint64_t tiles_y = ceil_div(static_cast<uint64_t>(g.height.output), config.threads_y);
  const uint64_t planes = static_cast<uint64_t>(g.batch * g.out_channels);

  kernels::Defines defines;
  activation.add_defines(defines);
  defines["TX"] = std::to_string(config.threads_x);
  defines["TY"] = std::to_string(config.threads_y);
  defines["TILE_ELEMS"] = std::to_string(config.tile_elements);
  defines["RESIDUAL"] = residual ? "1" : "0";
  KernelLaunch launch = depthwise_launch(
      "conv_depthwise_t" + std::to_string(config.threads_x) + "x" + std::to_string(config.threads_y) +
          residual_label_suffix(residual) + activation.label_suffix(),
      kernels::load_wgsl("conv/depthwise.wgsl", defines), has_bias, residual);
  launch.uniform = depthwise_uniform_head(g)
                       .u32(u32(g.height.kernel))
                       .u32(u32(g.width.kernel))
                       .u32(u32(g.height.stride))
                       .u32(u32(g.width.stride))
                       .u32(u32(g.height.dilation))
                       .u32(u32(g.width.dilation))
                       .i32(static_cast<int32_t>(g.height.pad_begin))
                       .i32(static_cast<int32_t>(g.width.pad_begin))
                       .u32(config.window_h)
                       .u32(config.window_w)
                       .u32(u32(static_cast<int64_t>(tiles_x)))
                       .u32(u32(static_cast<int64_t>(tiles_y)))
                       .u32(u32(static_cast<int64_t>(planes)))
                       .u32(has_bias ? 1 : 0)
                       .f32(activation.min)
                       .f32(activation.max)
                       .u32(0)
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
                               const DepthwiseRowsConfig& config, const FusedActivation& activation,
                               bool has_bias, bool residual, OpPlan& plan) {
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
  KernelLaunch launch =
      depthwise_launch("conv_depthwise_rows" + std::to_string(config.rows) + (config.vec4 ? "_v4" : "") +
                           "_k" + std::to_string(g.height.kernel) + "x" + std::to_string(g.width.kernel) +
                           "_s" + std::to_string(g.height.stride) + "x" + std::to_string(g.width.stride) +
                           residual_label_suffix(residual) + activation.label_suffix(),
                       kernels::load_wgsl("conv/depthwise_rows.wgsl", defines), has_bias, residual);
  launch.uniform = depthwise_uniform_head(g)
                       .i32(static_cast<int32_t>(g.height.pad_begin))
                       .i32(static_cast<int32_t>(g.width.pad_begin))
                       .u32(u32(static_cast<int64_t>(groups_x)))
                       .u32(u32(static_cast<int64_t>(blocks_y)))
                       .u32(u32(static_cast<int64_t>(planes)))
                       .u32(has_bias ? 1 : 0)
                       .f32(activation.min)
                       .f32(activation.max)
                       .u32(0)
                       .bytes();
  launch.groups = gpu::fold_workgroups(ceil_div(groups_x * blocks_y * planes, config.workgroup),
                                       ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
}

}  // namespace wgi::ops
