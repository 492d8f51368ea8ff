#include "ops/gemm_launch.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/integer_math.h"
#include "core/parallel.h"
#include "kernels/wgsl_library.h"
#include "ops/fused_residual.h"
#include "ops/gemm_tuning.h"
#include "ops/kernel_interface.h"
#include "ops/normalization.h"

namespace wgi::ops {

namespace {

constexpr uint32_t kSeedTile = 32;        // output tile of the seeds' kernels
constexpr uint32_t kWideWorkgroup = 256;  // invocations of the fast kernels and GEMV
constexpr uint32_t kGemvMaxRows = 8;

// Fast128 does 4x the work per thread of Fast64 with twice the reuse per loaded value; it pays once it has
// enough tiles to keep a large GPU busy: about two workgroups per SM of the H200 (132 SMs; 256 invocations
// of ~128 registers each allow two per SM). Tall products pay with fewer: `wgi tune` chose it, split or not,
// over Fast64 for every DaViT product with M >= 2304 and N >= 256, with as few as 72 tiles
// (docs/performance.md, "Measurements behind the planner's rules").
constexpr uint64_t kFast128MinWorkgroups = 256;
constexpr uint32_t kFast128TallRows = 2048;
constexpr uint32_t kFast128TallMinColumns = 256;
// From 512 rows, 72 tiles of 128 do too: two later tuning rounds took the 128 tile for DaViT's 576x3072x1024
// and 576x4096x1024 (120 and 160 tiles; docs/performance.md, "Measurements behind the planner's rules");
// SigLIP-B's batch-8 attention output, 1576x768x768 (78 tiles), ran 0.090 ms on it against 0.137 on the 64
// (H100; "ResNet-50 at batch 8 conv by conv; SigLIP's batch-8 products"), and its MLP-down, 1576x768x3072,
// 0.272 split in 3 against 0.300-0.303 on the split 64 tile (twice; "The wave tail").
constexpr uint32_t kFast128MidRows = 512;
constexpr uint64_t kFast128MidMinWorkgroups = 72;
// Fast64 down to 16 rows or columns: the same tuning run found it faster than the seeds' 32x32 tiles on
// DaViT's channel attention products (32x32x36864 in 4 batches, split; 32x36864x32), although half of each
// tile is padding there (docs/performance.md, "Measurements behind the planner's rules").
constexpr uint32_t kFastMinExtent = 16;
// The fast kernels split K when a product has fewer output tiles than this (about one wave on the H200).
constexpr uint64_t kFastSplitMaxTiles = 132;
// A wave of 128 tiles: two workgroups (256 invocations of ~128 registers) on each of the H200's 132 SMs.
constexpr uint64_t kWave128 = 2 * kFastSplitMaxTiles;
// Split rules fitted to the target models' products on the H200 (docs/performance.md, "GEMM split rules from
// the models' products", 2026-11-30: every product on both tiles with 1..8 chunks forced).
// The 64 tile: several of its workgroups share an SM, so a split pays up to about 864 workgroups in all, with
// chunks down to ~96 deep, and chunks of at most 512 keep it on one buffer. Over K < 2048 only up to 192
// tiles: beyond that a split lost to the unsplit product (docs/performance.md, "Measurements behind the
// planner's rules").
constexpr uint64_t kFast64SplitMaxTiles = 432;
constexpr uint64_t kFast64ShortKMaxTiles = 192;
constexpr uint64_t kFast64ShortK = 2048;
constexpr uint64_t kFast64SplitWorkgroups = 864;
constexpr uint64_t kFast64OneBufferChunk = 512;
constexpr uint64_t kFast64MinChunk = 96;
constexpr uint64_t kFast64MaxSplits = 8;
// The 128 tile: unsplit K up to 1024 runs its K-slab-8, two-buffer configuration, which no split beat on
// DaViT's products (72-160 tiles). From K = 2048 chunks of ~700 pay (docs/performance.md, "Measurements
// behind the planner's rules"). Below a third of a wave of tiles, chunks of 256 pay from K = 768: SigLIP-B's
// batch-8 attention output (1576x768x768, 78 tiles, with its residual) 0.114 ms unsplit, 0.085 in 3 chunks
// (H100, "The wave tail; ...").
constexpr uint64_t kFast128SplitMinK = 2048;
constexpr uint64_t kFast128SplitChunk = 768;
constexpr uint64_t kFast128FewTiles = 96;
constexpr uint64_t kFast128FewTilesMinK = 768;
constexpr uint64_t kFast128FewTilesChunk = 256;
// The wave tail: SigLIP-B's batch-8 MLP-up (1576x3072x768, 312 tiles) took 0.302-0.305 ms against 0.156
// for its 234-tile attention input (1576x2304x768): the 48 tiles past the first wave (kWave128) cost a
// second wave's time (H100, docs/performance.md, "The wave tail"). Only a tail of at most a third of a wave
// after exactly one wave is peeled: the measured case.
constexpr uint64_t kWaveTailMaxTiles = kWave128 / 3;
// GEMV: fewest threads per column (fewer reduction steps, longer contiguous runs per thread) that still give
// this many workgroups.
constexpr uint64_t kGemvMinWorkgroups = 256;

bool strides_multiple_of_4(const std::array<uint32_t, 4>& strides) {
  return std::all_of(strides.begin(), strides.end(), [](uint32_t s) { return s % 4 == 0; });
}

// vec4 loads read four elements along an operand's contiguous extent, so that extent, its row stride, its
// offset and every batch offset must be multiples of 4.
bool a_vec4_possible(const GemmLaunchSpec& s) {
  return (s.a_km ? s.m % 4 == 0 : s.k % 4 == 0) && gemm_a_row_stride(s) % 4 == 0 && s.a_offset % 4 == 0 &&
         strides_multiple_of_4(s.a_batch_strides) &&
         (!s.a_row_map || strides_multiple_of_4(s.a_row_map->strides));
}
bool b_vec4_possible(const GemmLaunchSpec& s) {
  return (s.b_nk ? s.k % 4 == 0 : s.n % 4 == 0) && gemm_b_row_stride(s) % 4 == 0 && s.b_offset % 4 == 0 &&
         strides_multiple_of_4(s.b_batch_strides);
}

// Why the seeds' kernels and GEMV cannot run `spec` ("" if they can): they read and write packed float
// matrices.
std::string views_problem(const GemmLaunchSpec& spec, GemmKernel kernel) {
  if (spec.b_quantized) {
    return std::string("the ") + gemm_kernel_name(kernel) +
           " GEMM kernel reads float B only; a weight-only quantized B runs on fast64 or fast128";
  }
  if (!gemm_has_views(spec)) return "";
  return std::string("the ") + gemm_kernel_name(kernel) +
         " GEMM kernel reads and writes packed matrices only; this product has strided operand or output "
         "views or row maps (run it on fast64 or fast128)";
}

// Empty if the device can run a 256-invocation workgroup; else why not.
std::string wide_workgroup_problem(const gpu::Limits& limits, const std::string& what) {
  if (limits.max_compute_invocations_per_workgroup < kWideWorkgroup ||
      limits.max_compute_workgroup_size_x < kWideWorkgroup) {
    return "the " + what + " kernel needs 256 invocations per workgroup; the device allows " +
           std::to_string(
               std::min(limits.max_compute_invocations_per_workgroup, limits.max_compute_workgroup_size_x));
  }
  return "";
}

uint32_t fast_storage_bytes(uint32_t tile_m, uint32_t tile_n, uint32_t tile_k, uint32_t stages) {
  // A and B slabs, vec4s, one vec4 of padding per k row
  return stages * tile_k * ((tile_m / 4 + 1) + (tile_n / 4 + 1)) * 16;
}

// The fast `kernel` (its output tile: fast_gemm_tile) in the first (K slab, stages) configuration that the
// device holds, in order of preference (or the forced one); nullopt with `why` set if none fits.
std::optional<GemmConfig> fast_config(const GemmLaunchSpec& spec, const gpu::Limits& limits,
                                      GemmKernel kernel, std::string& why) {
  const auto [tile_m, tile_n] = fast_gemm_tile(kernel);
  const std::string name = gemm_kernel_name(kernel);
  why = wide_workgroup_problem(limits, name);
  if (!why.empty()) return std::nullopt;
  // Double buffering removes a barrier per slab; a 16-deep slab halves the barriers again. Both cost
  // workgroup memory: 128x128 takes 33 KiB with both, 16.5 KiB with one, 8.3 KiB with neither. On the H200
  // the 128 tile runs faster with one buffer (33 KiB of workgroup memory leaves room for one workgroup per SM
  // instead of two or three); the 64 tile gains from two (docs/performance.md, "Measurements behind the
  // planner's rules"). A 32-deep slab only when forced (tuning).
  const bool forced = spec.tile_k != 0 || spec.stages != 0;
  std::vector<std::pair<uint32_t, uint32_t>> candidates = {{16, 2}, {16, 1}, {8, 2}, {8, 1}};
  if (tile_m == 128 && tile_n == 128) candidates = {{16, 1}, {8, 1}};
  if (forced) candidates = {{8, 1}, {8, 2}, {16, 1}, {16, 2}, {32, 1}, {32, 2}};
  uint32_t smallest = UINT32_MAX;
  for (const auto& [tile_k, stages] : candidates) {
    if (spec.tile_k != 0 && spec.tile_k != tile_k) continue;
    if (spec.stages != 0 && spec.stages != stages) continue;
    // Each of 256 threads loads whole vec4s of each operand.
    if ((tile_m * tile_k) % 1024 != 0 || (tile_n * tile_k) % 1024 != 0) continue;
    const uint32_t bytes = fast_storage_bytes(tile_m, tile_n, tile_k, stages);
    if (bytes > limits.max_compute_workgroup_storage_size) {
      smallest = std::min(smallest, bytes);
      continue;
    }
    GemmConfig c;
    c.kernel = kernel;
    c.tile_m = tile_m;
    c.tile_n = tile_n;
    c.tile_k = tile_k;
    c.stages = stages;
    c.a_vec4 = a_vec4_possible(spec);
    c.b_vec4 = b_vec4_possible(spec);
    c.workgroup_storage_bytes = bytes;
    return c;
  }
  std::string knobs;
  if (spec.tile_k != 0) knobs += " with a K slab of " + std::to_string(spec.tile_k);
  if (spec.stages != 0)
    knobs += (knobs.empty() ? " with " : " and ") + std::to_string(spec.stages) + " buffer(s)";
  if (smallest == UINT32_MAX) {
    why = "the " + name + " GEMM kernel has no configuration" + knobs + " (its K slab times " +
          std::to_string(std::min(tile_m, tile_n)) +
          " must be a multiple of 1024; slabs 8, 16, 32; 1 or 2 buffers)";
  } else {
    why = "the " + name + " GEMM kernel" + knobs + " needs " + std::to_string(smallest) +
          " bytes of workgroup memory; the device allows " +
          std::to_string(limits.max_compute_workgroup_storage_size);
  }
  return std::nullopt;
}

std::optional<GemmConfig> gemv_config(const GemmLaunchSpec& spec, const gpu::Limits& limits,
                                      std::string& why) {
  if (spec.a_km || !spec.b_nk) {
    why =
        "the gemv kernel needs A as [M, K] and B as [N, K] (a constant B is prepacked so); this product has ";
    why += std::string(spec.a_km ? "A as [K, M]" : "") + (spec.a_km && !spec.b_nk ? " and " : "") +
           (spec.b_nk ? "" : "B as [K, N]");
    return std::nullopt;
  }
  if (spec.m > kGemvMaxRows) {
    why = "the gemv kernel handles M <= 8; this product has M = " + std::to_string(spec.m);
    return std::nullopt;
  }
  why = wide_workgroup_problem(limits, "gemv");
  if (!why.empty()) return std::nullopt;
  GemmConfig c;
  c.kernel = GemmKernel::Gemv;
  c.gemv_rows = 1;
  while (c.gemv_rows < spec.m) c.gemv_rows *= 2;
  c.workgroup_storage_bytes = c.gemv_rows * kWideWorkgroup * 4;
  if (c.workgroup_storage_bytes > limits.max_compute_workgroup_storage_size) {
    why = "the gemv kernel needs " + std::to_string(c.workgroup_storage_bytes) +
          " bytes of workgroup memory; the device allows " +
          std::to_string(limits.max_compute_workgroup_storage_size);
    return std::nullopt;
  }
  if (spec.gemv_lanes != 0) {
    c.gemv_lanes = spec.gemv_lanes;
  } else {
    c.gemv_lanes = 64;
    for (uint32_t lanes : {8u, 16u, 32u}) {
      if (uint64_t{ceil_div(spec.n, kWideWorkgroup / lanes)} * spec.batch >= kGemvMinWorkgroups) {
        c.gemv_lanes = lanes;
        break;
      }
    }
    // Threads past K's vec4 count would only add zeros.
    const uint32_t k_quads = ceil_div(spec.k, 4);
    while (c.gemv_lanes > 4 && c.gemv_lanes / 2 >= k_quads) c.gemv_lanes /= 2;
  }
  c.tile_m = kGemvMaxRows;
  c.tile_n = kWideWorkgroup / c.gemv_lanes;
  c.tile_k = 0;
  c.a_vec4 = spec.k % 4 == 0 && strides_multiple_of_4(spec.a_batch_strides);
  c.b_vec4 = spec.k % 4 == 0 && strides_multiple_of_4(spec.b_batch_strides);
  return c;
}

GemmConfig seed_config(GemmKernel kernel) {
  GemmConfig c;
  c.kernel = kernel;
  c.tile_m = c.tile_n = c.tile_k = kSeedTile;
  c.a_vec4 = c.b_vec4 = kernel == GemmKernel::Vec4;
  c.workgroup_storage_bytes = 2 * kSeedTile * kSeedTile * 4;
  return c;
}

bool vec4_seed_possible(const GemmLaunchSpec& spec) {
  return !spec.a_km && spec.b_nk && spec.k % 4 == 0 && spec.k > 0;
}

std::string label_for(const GemmLaunchSpec& spec, const GemmConfig& c) {
  std::string label;
  switch (c.kernel) {
    case GemmKernel::Tiled:
    case GemmKernel::Vec4:
    case GemmKernel::Auto:
      label = std::string(c.kernel == GemmKernel::Vec4 ? "gemm_vec4" : "gemm_tiled") +
              (spec.a_km ? "_akm" : "") + (spec.b_nk ? "_bnk" : "_bkn");
      break;
    case GemmKernel::Fast128:
    case GemmKernel::Fast64:
    case GemmKernel::Fast128x64:
      label = "gemm_" + std::string(gemm_kernel_name(c.kernel)) + "_k" + std::to_string(c.tile_k) + "s" +
              std::to_string(c.stages) + (spec.a_km ? "_akm" : "") + (spec.b_nk ? "_bnk" : "_bkn") +
              (spec.a_row_map ? "_amap" : "") + (spec.out_row_map ? "_outmap" : "");
      break;
    case GemmKernel::Gemv:
      label = "gemv_r" + std::to_string(c.gemv_rows) + "_l" + std::to_string(c.gemv_lanes);
      break;
  }
  if (is_fast_gemm_kernel(c.kernel) || c.kernel == GemmKernel::Gemv) {
    if (!c.a_vec4) label += "_ascalar";
    if (!c.b_vec4) label += "_bscalar";
  }
  if (spec.b_f16) label += "_bf16";
  if (spec.a_layer_norm) label += "_ln";
  if (spec.b_quantized) {
    label += spec.b_quantized->code_table ? std::string("_") + spec.b_quantized->code_table
                                          : "_q" + std::to_string(spec.b_quantized->bits);
  }
  return label + residual_label_suffix(spec.residual.has_value()) + spec.activation.label_suffix();
}

}  // namespace

bool is_fast_gemm_kernel(GemmKernel kernel) {
  return kernel == GemmKernel::Fast128 || kernel == GemmKernel::Fast64 || kernel == GemmKernel::Fast128x64;
}

std::pair<uint32_t, uint32_t> fast_gemm_tile(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::Fast128:
      return {128, 128};
    case GemmKernel::Fast64:
      return {64, 64};
    case GemmKernel::Fast128x64:
      return {128, 64};
    default:
      throw Error(std::string("fast_gemm_tile: ") + gemm_kernel_name(kernel) +
                  " is not a fast kernel (internal)");
  }
}

std::optional<GemmKernel> gemm_kernel_from_name(std::string_view name) {
  for (GemmKernel k : {GemmKernel::Auto, GemmKernel::Tiled, GemmKernel::Vec4, GemmKernel::Fast128,
                       GemmKernel::Fast64, GemmKernel::Fast128x64, GemmKernel::Gemv}) {
    if (name == gemm_kernel_name(k)) return k;
  }
  return std::nullopt;
}

const char* gemm_kernel_name(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::Auto:
      return "auto";
    case GemmKernel::Tiled:
      return "tiled";
    case GemmKernel::Vec4:
      return "vec4";
    case GemmKernel::Fast128:
      return "fast128";
    case GemmKernel::Fast64:
      return "fast64";
    case GemmKernel::Fast128x64:
      return "fast128x64";
    case GemmKernel::Gemv:
      return "gemv";
  }
  return "?";
}

std::string gemm_kernel_names() {
  return "tiled, vec4, fast128, fast64, fast128x64 or gemv";
}

uint32_t gemm_a_row_stride(const GemmLaunchSpec& spec) {
  return spec.a_row_stride != 0 ? spec.a_row_stride : spec.a_km ? spec.m : spec.k;
}
uint32_t gemm_b_row_stride(const GemmLaunchSpec& spec) {
  return spec.b_row_stride != 0 ? spec.b_row_stride : spec.b_nk ? spec.k : spec.n;
}
uint32_t gemm_out_row_stride(const GemmLaunchSpec& spec) {
  return spec.out_row_stride != 0 ? spec.out_row_stride : spec.n;
}
std::array<uint32_t, 4> gemm_out_batch_strides(const GemmLaunchSpec& spec) {
  if (std::any_of(spec.out_batch_strides.begin(), spec.out_batch_strides.end(), [](uint32_t v) { return v; }))
    return spec.out_batch_strides;
  std::array<uint32_t, 4> strides = {0, 0, 0, 0};
  uint32_t stride = spec.m * gemm_out_row_stride(spec);
  for (int d = 3; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = stride;
    stride *= spec.batch_dims[static_cast<size_t>(d)];
  }
  return strides;
}

namespace {

// Whether the output of `spec` is not written packed (batch strides count only over batch dims above 1).
bool output_view(const GemmLaunchSpec& spec) {
  if (gemm_out_row_stride(spec) != spec.n) return true;
  GemmLaunchSpec packed = spec;
  packed.out_batch_strides = {0, 0, 0, 0};
  const std::array<uint32_t, 4> given = gemm_out_batch_strides(spec), dense = gemm_out_batch_strides(packed);
  for (size_t d = 0; d < 4; ++d) {
    if (spec.batch_dims[d] > 1 && given[d] != dense[d]) return true;
  }
  return false;
}

}  // namespace

bool gemm_has_strided_views(const GemmLaunchSpec& spec) {
  return spec.a_offset != 0 || spec.b_offset != 0 ||
         gemm_a_row_stride(spec) != (spec.a_km ? spec.m : spec.k) ||
         gemm_b_row_stride(spec) != (spec.b_nk ? spec.k : spec.n) || output_view(spec);
}

bool gemm_has_views(const GemmLaunchSpec& spec) {
  return spec.a_row_map || spec.out_row_map || gemm_has_strided_views(spec);
}

std::string gemm_row_map_problem(const GemmLaunchSpec& spec) {
  auto check = [&](const std::optional<GemmRowMap>& map, const char* what,
                   uint32_t row_stride) -> std::string {
    if (!map) return "";
    uint64_t rows = 1;
    for (uint32_t e : map->extents) rows *= e;
    if (rows != spec.m) {
      return std::string(what) + "'s row map has extents (" + std::to_string(map->extents[0]) + ", " +
             std::to_string(map->extents[1]) + ", " + std::to_string(map->extents[2]) + ", " +
             std::to_string(map->extents[3]) + "), " + std::to_string(rows) +
             " rows; the product has M = " + std::to_string(spec.m);
    }
    if (row_stride != 0)
      return std::string(what) + " has both a row map and a row stride (" + std::to_string(row_stride) + ")";
    return "";
  };
  std::string why = check(spec.a_row_map, "A", spec.a_row_stride);
  if (why.empty() && spec.a_row_map && spec.a_km) why = "A's row map needs A stored as [M, K], not [K, M]";
  if (why.empty()) why = check(spec.out_row_map, "the output", spec.out_row_stride);
  return why;
}

bool gemm_views_supported(const gpu::Capabilities& caps) {
  GemmLaunchSpec probe;
  probe.m = probe.n = probe.k = 64;
  std::string why;
  return fast_config(probe, caps.limits, GemmKernel::Fast64, why).has_value();
}

GemmConfig choose_gemm_config(const GemmLaunchSpec& spec, const gpu::Capabilities& caps) {
  const gpu::Limits& limits = caps.limits;
  std::string why;
  // Strided views and a quantized B run on the fast kernels only.
  const bool views = gemm_has_views(spec) || spec.b_quantized.has_value();
  if (spec.b_quantized && (!spec.b_nk || spec.batch != 1 || spec.a_km))
    throw Error("a weight-only quantized B is read as [N, K] against one A [M, K]");
  if (std::string why_map = gemm_row_map_problem(spec); !why_map.empty()) throw Error(why_map);
  if (spec.residual && output_view(spec)) {
    throw Error(
        "a fused residual is read at the output's packed index; this product writes a strided output "
        "view (row stride " +
        std::to_string(gemm_out_row_stride(spec)) + ", N = " + std::to_string(spec.n) + ")");
  }
  if (views && spec.kernel != GemmKernel::Auto && !is_fast_gemm_kernel(spec.kernel)) {
    throw Error(views_problem(spec, spec.kernel));
  }
  switch (spec.kernel) {
    case GemmKernel::Tiled:
      return seed_config(GemmKernel::Tiled);
    case GemmKernel::Vec4:
      if (!vec4_seed_possible(spec)) {
        throw Error(
            "the vec4 GEMM kernel needs K % 4 == 0, A as [M, K] and B as [N, K]; this product has K = " +
            std::to_string(spec.k) + (spec.a_km ? ", A as [K, M]" : "") + (spec.b_nk ? "" : ", B as [K, N]"));
      }
      return seed_config(GemmKernel::Vec4);
    case GemmKernel::Fast128:
    case GemmKernel::Fast64:
    case GemmKernel::Fast128x64: {
      auto c = fast_config(spec, limits, spec.kernel, why);
      if (!c) throw Error(why);
      return *c;
    }
    case GemmKernel::Gemv: {
      auto c = gemv_config(spec, limits, why);
      if (!c) throw Error(why);
      return *c;
    }
    case GemmKernel::Auto:
      break;
  }

  // Forced tuning knobs that no fast configuration can honour are an error even when the kernel is the
  // planner's choice: they were asked for.
  const bool knobs_forced = spec.tile_k != 0 || spec.stages != 0;
  // Where barriers are costly (gpu::Capabilities::costly_barriers) the seeds' kernels are the fast ones: on
  // SwiftShader vec4 beat fast128 and GEMV several times over (docs/performance.md, "Measurements behind
  // the planner's rules").
  // Views run on the fast kernels whatever the device's barriers cost: the seeds' kernels cannot read them.
  if (caps.costly_barriers && !knobs_forced && !views) {
    return seed_config(vec4_seed_possible(spec) ? GemmKernel::Vec4 : GemmKernel::Tiled);
  }
  // A few rows against a [N, K] weight: stream the weight once.
  if (spec.m <= kGemvMaxRows && !views) {
    if (auto c = gemv_config(spec, limits, why)) return *c;
  }
  if (views || (spec.m >= kFastMinExtent && spec.n >= kFastMinExtent)) {
    const uint64_t tiles128 = uint64_t{ceil_div(spec.m, 128)} * ceil_div(spec.n, 128) * spec.batch;
    std::string why128, why64;
    std::optional<GemmConfig> c128 = fast_config(spec, limits, GemmKernel::Fast128, why128);
    const bool tall = spec.m >= kFast128TallRows && spec.n >= kFast128TallMinColumns;
    // Fewer than 128 rows or columns leave most of a 128 tile padding: DaViT's 32x36864x32 (4 batches) ran
    // faster on the 64 tile (docs/performance.md, "Measurements behind the planner's rules").
    const bool fills_128 = spec.m >= 128 && spec.n >= 128;
    const bool mid = spec.m >= kFast128MidRows && tiles128 >= kFast128MidMinWorkgroups;
    if (c128 && fills_128 && (tiles128 >= kFast128MinWorkgroups || tall || mid)) return *c128;
    if (auto c64 = fast_config(spec, limits, GemmKernel::Fast64, why64)) return *c64;
    if (c128) return *c128;
    if (knobs_forced || views)
      throw Error(views ? why64 + (spec.b_quantized ? " (a weight-only quantized B needs it)"
                                                    : " (a product with strided views needs it)")
                        : why64);
  }
  return seed_config(vec4_seed_possible(spec) ? GemmKernel::Vec4 : GemmKernel::Tiled);
}

bool valid_gemm_tile_k(int64_t v) {
  return v == 8 || v == 16 || v == 32;
}
bool valid_gemm_stages(int64_t v) {
  return v == 1 || v == 2;
}
bool valid_gemm_split_k(int64_t v) {
  return v >= 1 && v <= 65535;
}
bool valid_gemm_head_rows(int64_t v) {
  return v >= 1 && v <= int64_t{UINT32_MAX};
}

bool valid_gemv_lanes(int64_t v) {
  return v >= 4 && v <= 256 && (v & (v - 1)) == 0;
}

void read_gemm_attributes(const PlanContext& ctx, GemmLaunchSpec& spec) {
  const GemmTuningAttributes tuning = read_gemm_tuning_attributes(ctx.node);
  if (spec.kernel == GemmKernel::Auto && tuning.kernel) {
    auto kernel = gemm_kernel_from_name(*tuning.kernel);
    if (!kernel) {
      ctx.fail("unknown " + std::string(kGemmKernelAttribute) + " '" + *tuning.kernel + "' (expected " +
               gemm_kernel_names() + ")");
    }
    spec.kernel = *kernel;
  }
  auto read_int = [&](const char* name, const std::optional<int64_t>& given, uint32_t& into,
                      bool (*valid)(int64_t), const char* expected) {
    if (into != 0 || !given) return;
    if (!valid(*given)) {
      ctx.fail(std::string(name) + " = " + std::to_string(*given) + " (expected " + expected + ")");
    }
    into = static_cast<uint32_t>(*given);
  };
  read_int(kGemmTileKAttribute, tuning.tile_k, spec.tile_k, valid_gemm_tile_k, "8, 16 or 32");
  read_int(kGemmStagesAttribute, tuning.stages, spec.stages, valid_gemm_stages, "1 or 2");
  read_int(kGemmSplitKAttribute, tuning.split_k, spec.split_k, valid_gemm_split_k, "1 to 65535");
  read_int(kGemmHeadRowsAttribute, tuning.head_rows, spec.head_rows, valid_gemm_head_rows, "1 to 2^32 - 1");
  read_int(kGemvLanesAttribute, tuning.gemv_lanes, spec.gemv_lanes, valid_gemv_lanes,
           "a power of two from 4 to 256");
}

std::vector<UniformMember> gemm_params_members(bool row_maps, bool quantized) {
  using enum UniformType;
  std::vector<UniformMember> members = {
      {"M", U32},
      {"N", U32},
      {"K", U32},
      {"batch", U32},  // number of output matrices
      {"tiles_n", U32},
      {"tiles_m", U32},
      {"has_bias", U32},
      {"k_splits", U32},  // with SPLIT_K: K chunks, one partial product each
      {"alpha", F32},
      {"beta", F32},
      {"act_lo", F32},
      {"act_hi", F32},
      {"batch_dims", Vec4U},       // output batch shape, outermost first, padded with 1s in front
      {"a_batch_strides", Vec4U},  // element stride of A per batch dim; 0 where A broadcasts
      {"b_batch_strides", Vec4U},
      {"bias_strides", Vec4U},       // x: stride of C over m, y: over n (0 where C broadcasts)
      {"out_batch_strides", Vec4U},  // element stride of the output per batch dim
      {"a_row_stride", U32},
      {"b_row_stride", U32},
      {"out_row_stride", U32},
      {"a_offset", U32},
      {"b_offset", U32}};
  if (row_maps) {
    // GemmRowMap (gemm_launch.h): with A_ROW_MAP / OUT_ROW_MAP, row m of A / of the output starts
    // mixed_radix_offset(extents, strides, m) elements after its matrix's start instead of m row strides.
    for (const char* name : {"a_row_extents", "a_row_strides", "out_row_extents", "out_row_strides"})
      members.push_back({name, Vec4U});
  }
  if (quantized) {
    for (const char* name : {"block_size", "col_words", "scale_col_stride", "zp_col_bits", "blocks_per_col"})
      members.push_back({name, U32});
    members.push_back({"default_zero", F32});
  }
  return members;
}

namespace {

bool has_row_maps(const GemmLaunchSpec& spec) {
  return spec.a_row_map || spec.out_row_map;
}

}  // namespace

std::vector<std::byte> gemm_params_bytes(const KernelInterface& iface, const GemmLaunchSpec& spec,
                                         uint32_t tiles_m, uint32_t tiles_n, uint32_t splits,
                                         bool quantized) {
  return gemm_params_values(iface, spec, tiles_m, tiles_n, splits, quantized).bytes();
}

UniformValues gemm_params_values(const KernelInterface& iface, const GemmLaunchSpec& spec, uint32_t tiles_m,
                                 uint32_t tiles_n, uint32_t splits, bool quantized) {
  UniformValues params = iface.values();
  params.u32("M", spec.m)
      .u32("N", spec.n)
      .u32("K", spec.k)
      .u32("batch", spec.batch)
      .u32("tiles_n", tiles_n)
      .u32("tiles_m", tiles_m)
      .u32("has_bias", spec.bias ? 1 : 0)
      .u32("k_splits", splits)
      .f32("alpha", spec.alpha)
      .f32("beta", spec.beta)
      .f32("act_lo", spec.activation.min)
      .f32("act_hi", spec.activation.max)
      .vec4u("batch_dims", spec.batch_dims)
      .vec4u("a_batch_strides", spec.a_batch_strides)
      .vec4u("b_batch_strides", spec.b_batch_strides)
      .vec4u("bias_strides", {spec.bias_stride_m, spec.bias_stride_n, 0, 0})
      .vec4u("out_batch_strides", gemm_out_batch_strides(spec))
      .u32("a_row_stride", gemm_a_row_stride(spec))
      .u32("b_row_stride", gemm_b_row_stride(spec))
      .u32("out_row_stride", gemm_out_row_stride(spec))
      .u32("a_offset", spec.a_offset)
      .u32("b_offset", spec.b_offset);
  if (has_row_maps(spec)) {
    const GemmRowMap a = spec.a_row_map.value_or(GemmRowMap{}), out = spec.out_row_map.value_or(GemmRowMap{});
    params.vec4u("a_row_extents", a.extents)
        .vec4u("a_row_strides", a.strides)
        .vec4u("out_row_extents", out.extents)
        .vec4u("out_row_strides", out.strides);
  }
  if (quantized) {
    const GemmLaunchSpec::QuantizedB& q = *spec.b_quantized;
    params.u32("block_size", q.block_size)
        .u32("col_words", q.col_words)
        .u32("scale_col_stride", q.scale_col_stride)
        .u32("zp_col_bits", q.zp_col_bits)
        .u32("blocks_per_col", q.blocks_per_col)
        .f32("default_zero", q.default_zero);
  }
  if (spec.column_split) add_column_split_values(*spec.column_split, params);
  if (const auto& ln = spec.a_layer_norm) set_layer_norm_a_values(ln->epsilon, spec.k, params);
  return params;
}

namespace {

// The main launch's bindings, their element types from the same defines the kernel text tests (vec4 A / B /
// output, a float16 or quantized B), then GemmParams, the residual and a quantized B's scales and zero
// points. The vec4 kernel (gemm_vec4.wgsl) reads A and B in fours always.
KernelInterface gemm_interface(const GemmLaunchSpec& spec, const kernels::Defines& defines, bool vec4_kernel,
                               bool residual) {
  auto on = [&](const char* name) {
    const auto it = defines.find(name);
    return it != defines.end() && it->second == "1";
  };
  const bool a_vec4 = vec4_kernel || on("A_VEC4"), b_vec4 = vec4_kernel || on("B_VEC4");
  const char* out_element = on("OUT_VEC4") ? "vec4<f32>" : "f32";
  const char* b_element = on("B_QUANT") ? "u32"
                          : on("B_F16") ? (b_vec4 ? "vec2<u32>" : "u32")
                                        : (b_vec4 ? "vec4<f32>" : "f32");
  const auto& q = spec.b_quantized;
  KernelInterface iface;
  iface.read("a", a_vec4 ? "vec4<f32>" : "f32", spec.a)
      .read("b", b_element, spec.b)
      .read("bias", "f32", spec.bias.value_or(TensorRef::zero()))
      .read_write("output", out_element, spec.column_split ? spec.column_split->outputs[0] : spec.out);
  std::vector<UniformMember> members = gemm_params_members(has_row_maps(spec), q.has_value());
  if (const auto& split = spec.column_split) bind_column_split_outputs(*split, out_element, iface, members);
  if (const auto& ln = spec.a_layer_norm) bind_layer_norm_a(ln->params, ln->normalized, iface, members);
  iface.uniforms(std::move(members), "GemmParams");
  if (residual) add_residual_binding(iface, *spec.residual, out_element);
  if (q) {
    iface.read("scales", q->scales_f16 ? "u32" : "f32", q->scales)
        .read("zero_points", q->zero_points_float && !q->zero_points_f16 ? "f32" : "u32", q->zero_points);
  }
  return iface;
}

}  // namespace

// Every name the GEMM kernels' #if lines test, off: the launches below turn on what they use (the
// preprocessor wants each one defined, in the branches not taken too).
kernels::Defines gemm_defines_off() {
  kernels::Defines defines;
  for (const char* name :
       {"A_CONV",      "A_KM",           "A_LAYER_NORM",      "A_ROW_MAP",     "A_VEC4",
        "B_F16",       "B_NK",           "B_QUADS",           "B_QUANT",       "B_VEC4",
        "CODE_TABLE",  "DOUBLE_BUFFER",  "IN_PLACE_EPILOGUE", "NF4",           "OUT_COL_STRIDE",
        "OUT_ROW_MAP", "OUT_VEC4",       "OUT_VIEW",          "RESIDUAL",      "ROW_MAPS",
        "SCALES_F16",  "SCALE_PER_CODE", "SPLIT_K",           "SPLIT_OUTPUTS", "SPLIT_THIRD",
        "ZP_F16",      "ZP_FLOAT",       "ZP_PACKED"}) {
    defines[name] = "0";
  }
  return defines;
}

// ROW_MAPS (GemmParams declares the maps) where `spec` has any; A_ROW_MAP / OUT_ROW_MAP for the maps the
// launch applies (`out_map`: false for a split's packed partial sums). Other products compile as without.
void row_map_defines(const GemmLaunchSpec& spec, bool a_map, bool out_map, kernels::Defines& defines) {
  if (!spec.a_row_map && !spec.out_row_map) return;
  defines["ROW_MAPS"] = "1";
  defines["A_ROW_MAP"] = a_map && spec.a_row_map ? "1" : "0";
  defines["OUT_ROW_MAP"] = out_map && spec.out_row_map ? "1" : "0";
}

namespace {

// The main launch of `spec` run with `config`, its K split into `splits` chunks (1: none).
KernelLaunch gemm_launch(const PlanContext& ctx, const GemmLaunchSpec& spec, const GemmConfig& config,
                         uint32_t splits) {
  uint32_t tiles_m = 1, tiles_n = 1;
  KernelLaunch launch;
  const char* kernel_file = nullptr;
  kernels::Defines defines = gemm_defines_off();
  defines["A_KM"] = spec.a_km ? "1" : "0";
  defines["B_NK"] = spec.b_nk ? "1" : "0";
  spec.activation.add_defines(defines);
  // The partial products of a split leave the epilogue (and so the residual) to the reduction.
  const bool residual = spec.residual.has_value() && splits <= 1;
  if (residual) defines["RESIDUAL"] = "1";
  if (spec.b_f16) defines["B_F16"] = "1";  // only then: float32 products compile as without
  if (const auto& q = spec.b_quantized) {
    defines["B_QUANT"] = "1";
    defines["BITS"] = std::to_string(q->bits);
    defines["SCALES_F16"] = q->scales_f16 ? "1" : "0";
    defines["ZP_PACKED"] = q->zero_points_packed ? "1" : "0";
    defines["ZP_FLOAT"] = q->zero_points_float ? "1" : "0";
    defines["ZP_F16"] = q->zero_points_f16 ? "1" : "0";
    defines["SCALE_PER_CODE"] = q->scale_per_code ? "1" : "0";
    defines["CODE_TABLE"] = q->code_table ? "1" : "0";
    defines["NF4"] = q->code_table && std::string(q->code_table) == "NF4" ? "1" : "0";
  }
  switch (config.kernel) {
    case GemmKernel::Tiled:
    case GemmKernel::Vec4:
    case GemmKernel::Auto:
      tiles_m = ceil_div(spec.m, kSeedTile);
      tiles_n = ceil_div(spec.n, kSeedTile);
      defines["SPLIT_K"] = splits > 1 ? "1" : "0";
      // The vec4 kernel reads B in fours: its float16 B is bound as vec2<u32>s (gemm_b_f16.wgsl).
      if (spec.b_f16 && config.kernel == GemmKernel::Vec4) defines["B_VEC4"] = "1";
      kernel_file = config.kernel == GemmKernel::Vec4 ? "linear/gemm_vec4.wgsl" : "linear/gemm_tiled.wgsl";
      break;
    case GemmKernel::Fast128:
    case GemmKernel::Fast64:
    case GemmKernel::Fast128x64: {
      tiles_m = ceil_div(spec.m, config.tile_m);
      tiles_n = ceil_div(spec.n, config.tile_n);
      const std::string per_thread = std::to_string(config.tile_m / 16);
      defines["TM"] = per_thread;
      defines["TN"] = std::to_string(config.tile_n / 16);
      defines["BK"] = std::to_string(config.tile_k);
      defines["STAGES"] = std::to_string(config.stages);
      defines["DOUBLE_BUFFER"] = config.stages == 2 ? "1" : "0";
      defines["SPLIT_K"] = splits > 1 ? "1" : "0";
      defines["A_VEC4"] = config.a_vec4 ? "1" : "0";
      defines["B_VEC4"] = config.b_vec4 ? "1" : "0";
      // A Gelu or a residual: the epilogue's second, in-place pass (gemm_fast.wgsl says why).
      defines["IN_PLACE_EPILOGUE"] = splits <= 1 && (residual || spec.activation.uses_math()) ? "1" : "0";
      // The view's batch decoding only where the output is one (a split's partial sums are packed).
      defines["OUT_VIEW"] = splits <= 1 && output_view(spec) ? "1" : "0";
      // vec4 stores: N, and for a view (not the packed partial sums of a split) its row and batch strides,
      // multiples of 4.
      defines["OUT_VEC4"] =
          spec.n % 4 == 0 &&
                  (splits > 1 || (gemm_out_row_stride(spec) % 4 == 0 &&
                                  strides_multiple_of_4(gemm_out_batch_strides(spec)) &&
                                  (!spec.out_row_map || strides_multiple_of_4(spec.out_row_map->strides))))
              ? "1"
              : "0";
      row_map_defines(spec, true, splits <= 1, defines);
      kernel_file = "linear/gemm_fast.wgsl";
      break;
    }
    case GemmKernel::Gemv:
      tiles_n = ceil_div(spec.n, config.tile_n);
      defines["ROWS"] = std::to_string(config.gemv_rows);
      defines["LANES"] = std::to_string(config.gemv_lanes);
      defines["A_VEC4"] = config.a_vec4 ? "1" : "0";
      defines["B_VEC4"] = config.b_vec4 ? "1" : "0";
      defines["A_LAYER_NORM"] = spec.a_layer_norm ? "1" : "0";
      if (spec.column_split) {
        defines["SPLIT_OUTPUTS"] = "1";
        defines["SPLIT_THIRD"] = spec.column_split->widths.size() > 2 ? "1" : "0";
      }
      kernel_file = "linear/gemv.wgsl";
      break;
  }
  const KernelInterface iface = gemm_interface(spec, defines, config.kernel == GemmKernel::Vec4, residual);
  launch.program.wgsl = iface.load_wgsl(kernel_file, defines);
  launch.program.label = label_for(spec, config) + (splits > 1 ? "_splitk" : "");
  iface.bind(launch);
  launch.uniform = gemm_params_bytes(iface, spec, tiles_m, tiles_n, splits, spec.b_quantized.has_value());
  launch.groups = gpu::fold_workgroups(uint64_t{tiles_m} * tiles_n * spec.batch * splits,
                                       ctx.caps.limits.max_compute_workgroups_per_dimension);
  return launch;
}

bool nothing_forced(const GemmLaunchSpec& spec) {
  return spec.kernel == GemmKernel::Auto && spec.tile_k == 0 && spec.stages == 0 && spec.gemv_lanes == 0 &&
         spec.split_k == 0 && (spec.head_rows == 0 || spec.head_rows >= spec.m);
}

// Why `spec` cannot run its first `head_rows` rows as a launch of their own ("" if it can): the later rows
// are bound further into A, the output, the residual and a per-row bias, so those must be packed float32
// matrices of one batch entry, and the bytes skipped a multiple of the device's binding alignment.
std::string wave_tail_problem(const GemmLaunchSpec& spec, const GemmConfig& config, uint32_t splits,
                              uint32_t head_rows, const gpu::Limits& limits) {
  const std::string what = "a product run as two launches (" + std::string(kGemmHeadRowsAttribute) + " = " +
                           std::to_string(head_rows) + ") ";
  if (!is_fast_gemm_kernel(config.kernel))
    return what + "runs on the fast kernels only, not " + gemm_kernel_name(config.kernel);
  if (head_rows % config.tile_m != 0)
    return what + "needs a multiple of the " + gemm_kernel_name(config.kernel) + " kernel's " +
           std::to_string(config.tile_m) + " rows";
  if (splits > 1) return what + "is not also split into K chunks (" + std::to_string(splits) + ")";
  if (spec.batch != 1 || spec.a_km || gemm_has_views(spec) || spec.column_split)
    return what + "needs one packed A [M, K] and output (no batch, views, row maps or column blocks)";
  const uint64_t align = std::max<uint32_t>(1, limits.min_storage_buffer_offset_alignment);
  const uint64_t bias_rows_bytes = spec.bias ? uint64_t{spec.bias_stride_m} * sizeof(float) : 0;
  for (uint64_t row_bytes :
       {uint64_t{spec.k} * sizeof(float), uint64_t{spec.n} * sizeof(float), bias_rows_bytes}) {
    if (row_bytes * head_rows % align != 0)
      return what + "binds its later rows " + std::to_string(row_bytes * head_rows) +
             " bytes in, not a multiple of the device's " + std::to_string(align);
  }
  return "";
}

// The GEMM of `requested` as it will run: node attributes first (forcing), else ctx's tuned entry for the
// problem if the device can run it, else the rules. With `report`, the observer of ctx's tuning hook hears of
// it (prepack_b_as_nk's probe of the same GEMM does not report).
GemmPlanned resolve_gemm(const PlanContext& ctx, const GemmLaunchSpec& requested, bool splittable,
                         bool report) {
  GemmLaunchSpec spec = requested;
  read_gemm_attributes(ctx, spec);
  const GemmTuning* tuning = ctx.gemm_tuning;
  GemmProblemUse use;
  use.node = &ctx.node;
  use.forced = !nothing_forced(spec);
  std::optional<GemmPlanned> planned;
  if (tuning) {
    use.problem = gemm_problem_key(spec, splittable);
    if (tuning->table && !use.forced && !spec.b_quantized) {
      if (const GemmChoice* choice = tuning->table->find(use.problem)) {
        std::string why;
        planned = plan_gemm_choice(spec, *choice, ctx.caps, splittable, why);
        use.from_table = planned.has_value();
        if (!planned) use.ignored = why;
      }
    }
  }
  if (!planned) {
    try {
      planned = plan_gemm_rules(spec, ctx.caps, splittable);
    } catch (const Error& e) {
      ctx.fail(e.what());
    }
  }
  if (report && tuning && tuning->observe && !spec.b_quantized) {  // the tuner measures float operands
    use.planned = gemm_choice_of(*planned);
    tuning->observe(use);
  }
  return *planned;
}

// The fast tiles' K slab and buffers by how deep each workgroup's share of K is, from GEMM tuning on the
// H200 (2026-11-30, the same winners in three tuning rounds; docs/performance.md, "GEMM split rules from the
// models' products" and "The sixth round"; the numbers in docs/performance.md, "Measurements behind the
// planner's rules"). Double buffering pays only over many slabs, so the 64 tile keeps one buffer for chunks
// of at most 512, except on a single mostly-padding tile (32x32xK attention products split into many chunks
// ran slower with one). The 128 tile runs every chunk of at least 256 in slabs of 8 with two buffers: the
// same workgroup memory as 16 with one, one barrier per slab instead of two. Slabs of 16 with two buffers
// (33 KB) leave room for one workgroup per SM instead of two on the H200's driver.
GemmConfig choose_fast_buffers(const GemmLaunchSpec& spec, const GemmConfig& config, uint32_t splits,
                               const gpu::Limits& limits) {
  GemmLaunchSpec probe = spec;
  const uint32_t chunk_k = ceil_div(spec.k, std::max<uint32_t>(1, splits));
  const bool padding_tile = spec.m < 64 && spec.n < 64;
  if (config.kernel == GemmKernel::Fast64 && config.stages == 2 && chunk_k <= 512 && !padding_tile) {
    probe.tile_k = config.tile_k;
    probe.stages = 1;
  } else if (config.kernel == GemmKernel::Fast128 && chunk_k >= 256) {
    probe.tile_k = 8;
    probe.stages = 2;
  } else {
    return config;
  }
  std::string why;
  std::optional<GemmConfig> c = fast_config(probe, limits, config.kernel, why);
  return c ? *c : config;
}

}  // namespace

uint32_t wave_split_count(uint64_t tiles, uint64_t k) {
  if (tiles >= kFastSplitMaxTiles || k < 512) return 1;
  const uint64_t wanted = (2 * kFastSplitMaxTiles + tiles - 1) / tiles;
  return static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(wanted, k / 256)));
}

uint32_t fast_split_count(uint32_t tile, uint64_t tiles, uint64_t k) {
  const uint64_t wave = wave_split_count(tiles, k);
  if (tile == 128) {
    // At most one wave of workgroups: SigLIP-B's 78-tile MLP-down ran 0.272 ms in 3 chunks (234
    // workgroups) and 0.37-0.39 in 4 (312: a second wave for 48 of them).
    uint64_t chunks = 1;
    if (tiles < kFast128FewTiles && k >= kFast128FewTilesMinK && k < kFast128SplitMinK) {
      chunks = k / kFast128FewTilesChunk;
    } else if (tiles < kFastSplitMaxTiles && k >= kFast128SplitMinK) {
      chunks = ceil_div<uint64_t>(k, kFast128SplitChunk);
    }
    return static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(kWave128 / tiles, chunks)));
  }
  if (tiles >= kFast64SplitMaxTiles || k < kFast64OneBufferChunk ||
      (tiles > kFast64ShortKMaxTiles && k < kFast64ShortK))
    return static_cast<uint32_t>(wave);
  const uint64_t wanted = std::max(ceil_div<uint64_t>(kFast64SplitWorkgroups, tiles),
                                   ceil_div<uint64_t>(k, kFast64OneBufferChunk));
  const uint64_t capped = std::min({wanted, k / kFast64MinChunk, kFast64MaxSplits});
  // Few tiles over a very long K (DaViT's channel attention: 4 tiles over 36864) keep the wave rule's chunks.
  return static_cast<uint32_t>(std::max<uint64_t>({1, wave, capped}));
}

uint32_t wave_tail_head_rows(uint32_t m, uint32_t tiles_n) {
  const uint64_t tiles = uint64_t{ceil_div(m, 128)} * tiles_n;
  if (tiles <= kWave128 || tiles > kWave128 + kWaveTailMaxTiles) return 0;
  const uint64_t head_tiles_m = kWave128 / tiles_n;
  if (head_tiles_m == 0 || tiles - head_tiles_m * tiles_n > kWaveTailMaxTiles) return 0;
  return static_cast<uint32_t>(head_tiles_m * 128);
}

uint32_t choose_split_k(const GemmLaunchSpec& spec, const GemmConfig& config) {
  const bool seed_kernel = config.kernel == GemmKernel::Tiled || config.kernel == GemmKernel::Vec4;
  const bool fast_kernel = is_fast_gemm_kernel(config.kernel);
  if (spec.split_k > 1 && config.kernel != GemmKernel::Tiled && !fast_kernel) {
    throw Error("split-K (" + std::string(kGemmSplitKAttribute) + " = " + std::to_string(spec.split_k) +
                ") runs on the tiled and fast kernels only; this product was planned on " +
                gemm_kernel_name(config.kernel));
  }
  if (spec.split_k != 0) return spec.split_k;
  if (fast_kernel) {
    return fast_split_count(
        config.tile_m,
        uint64_t{ceil_div(spec.m, config.tile_m)} * ceil_div(spec.n, config.tile_n) * spec.batch, spec.k);
  }
  if (!seed_kernel || spec.k < 2048) return 1;
  const uint64_t tiles = uint64_t{ceil_div(spec.m, kSeedTile)} * ceil_div(spec.n, kSeedTile) * spec.batch;
  if (tiles >= 128) return 1;
  const uint64_t wanted = ceil_div(static_cast<uint32_t>(256), static_cast<uint32_t>(tiles));
  return static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(wanted, spec.k / 512)));
}

GemmPlanned plan_gemm_rules(GemmLaunchSpec spec, const gpu::Capabilities& caps, bool splittable) {
  // A split runs on the tiled kernel: a forced split forces it unless another kernel was asked for (or the
  // product has views, which only the fast kernels read).
  if (splittable && spec.split_k > 1 && spec.kernel == GemmKernel::Auto && !gemm_has_views(spec) &&
      !spec.b_quantized)
    spec.kernel = GemmKernel::Tiled;
  GemmConfig config = choose_gemm_config(spec, caps);
  uint32_t splits = 1;
  // A forced head runs unsplit (its tail plans its own split); only a forced split beside it is an error.
  const bool forced_head = splittable && spec.head_rows != 0 && spec.head_rows < spec.m;
  if (splittable && !(forced_head && spec.split_k == 0)) {
    splits = choose_split_k(spec, config);
    if (splits > 1 && config.kernel == GemmKernel::Vec4) {
      spec.kernel = GemmKernel::Tiled;  // the seeds' split runs on the tiled kernel
      config = choose_gemm_config(spec, caps);
    }
  }
  if (spec.tile_k == 0 && spec.stages == 0) config = choose_fast_buffers(spec, config, splits, caps.limits);
  uint32_t head_rows = 0;
  if (forced_head) {
    head_rows = spec.head_rows;  // it runs or it is an error
    if (std::string why = wave_tail_problem(spec, config, splits, head_rows, caps.limits); !why.empty())
      throw Error(why);
  } else if (splittable && spec.head_rows == 0 && nothing_forced(spec) &&
             config.kernel == GemmKernel::Fast128 && splits == 1) {
    head_rows = wave_tail_head_rows(spec.m, ceil_div(spec.n, config.tile_n));
    if (head_rows && !wave_tail_problem(spec, config, splits, head_rows, caps.limits).empty()) head_rows = 0;
  }
  return {spec, config, splits, head_rows};
}

namespace {

template <typename Element>
void prepack_b_elements(const Tensor& b, Tensor& packed, int64_t k, int64_t n, bool stored_nk, bool want_nk) {
  const int64_t matrices = b.element_count() / std::max<int64_t>(1, k * n);
  const Element* src = reinterpret_cast<const Element*>(b.bytes().data());
  Element* dst = reinterpret_cast<Element*>(packed.bytes().data());
  for (int64_t m = 0; m < matrices; ++m) {
    const Element* s = src + m * k * n;
    Element* d = dst + m * k * n;
    if (stored_nk == want_nk) {
      if (k * n > 0) std::memcpy(d, s, static_cast<size_t>(k * n) * sizeof(Element));
    } else {
      // Transpose an R x C matrix into C x R in 32 x 32 blocks, so that both sides stay in cache (a
      // row-by-row transpose of SigLIP-B's 340 MB of weights took most of its load time), block rows spread
      // over the host's cores (DaViT-base's 128-tile weights took 0.5-0.8 s of its first plan on one).
      constexpr int64_t kBlock = 32;
      const int64_t rows = stored_nk ? n : k, cols = stored_nk ? k : n;
      const int64_t block_rows = (rows + kBlock - 1) / kBlock;
      parallel_for_ranges(
          block_rows, std::max<int64_t>(1, (1 << 18) / (kBlock * std::max<int64_t>(1, cols))),
          [&](int64_t first, int64_t last) {
            for (int64_t r0 = first * kBlock; r0 < std::min(rows, last * kBlock); r0 += kBlock) {
              for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
                const int64_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
                for (int64_t r = r0; r < r1; ++r) {
                  for (int64_t c = c0; c < c1; ++c) d[c * rows + r] = s[r * cols + c];
                }
              }
            }
          });
    }
  }
}

}  // namespace

Tensor prepack_b(const Tensor& b, int64_t k, int64_t n, bool stored_nk, bool want_nk) {
  const int64_t matrices = b.element_count() / std::max<int64_t>(1, k * n);
  Tensor packed(b.dtype(), want_nk ? Shape{matrices, n, k} : Shape{matrices, k, n});
  if (b.dtype() == DType::Float16) {
    prepack_b_elements<uint16_t>(b, packed, k, n, stored_nk, want_nk);
  } else {
    prepack_b_elements<float>(b, packed, k, n, stored_nk, want_nk);
  }
  return packed;
}

bool prepack_b_as_nk(const PlanContext& ctx, const GemmLaunchSpec& spec) {
  if (spec.n % 4 != 0) return true;
  GemmLaunchSpec probe = spec;
  probe.b_nk = true;
  try {
    // The 128x128 kernel's choice does not depend on B's layout, so the probe as [N, K] decides. A forced
    // or tuned split keeps [N, K]: the rule for forced splits from before tuning existed. The tuner prepacks
    // through this same function, so it measures the layout the plan will get.
    const GemmPlanned planned = resolve_gemm(ctx, probe, true, false);
    return planned.config.kernel != GemmKernel::Fast128 || planned.spec.split_k > 1;
  } catch (const Error&) {
    return true;  // a forced choice that cannot run: append_gemm_launches reports it with the node
  }
}

std::string column_split_problem(const GemmLaunchSpec::ColumnSplit& split, uint64_t n) {
  if (split.outputs.size() != split.widths.size())
    return std::to_string(split.widths.size()) + " column blocks need as many outputs, not " +
           std::to_string(split.outputs.size());
  uint64_t sum = 0;
  for (uint32_t w : split.widths) {
    if (w == 0) return "has a block of width 0";
    sum += w;
  }
  if (sum != n || split.widths.size() < 2 || split.widths.size() > kMaxSplitOutputs)
    return "splits " + std::to_string(sum) + " columns into " + std::to_string(split.widths.size()) +
           " blocks; the product has N = " + std::to_string(n) + " (2 to " +
           std::to_string(kMaxSplitOutputs) + " blocks)";
  return "";
}

std::optional<GemmLaunchSpec::ColumnSplit> plan_column_split(const PlanContext& ctx,
                                                             const std::vector<int64_t>& widths,
                                                             const Shape& out_shape, bool residual,
                                                             std::vector<TensorDesc>& outputs,
                                                             size_t later_outputs) {
  if (widths.empty()) {
    outputs.push_back({DType::Float32, out_shape});
    return std::nullopt;
  }
  const std::string attribute = std::string("attribute ") + kSplitColumnsAttribute + " ";
  if (residual) ctx.fail(attribute + "with a fused residual: a split product takes none");
  if (!ctx.node.output_names.empty() && ctx.node.output_names.size() != widths.size() + later_outputs)
    ctx.fail(attribute + "has " + std::to_string(widths.size()) + " column blocks for the node's " +
             std::to_string(ctx.node.output_names.size()) + " outputs" +
             (later_outputs ? " (" + std::to_string(later_outputs) + " of them after the blocks)" : ""));
  GemmLaunchSpec::ColumnSplit split;
  for (int64_t width : widths) {
    if (width <= 0 || width > int64_t{UINT32_MAX})
      ctx.fail(attribute + "has a block of width " + std::to_string(width));
    split.widths.push_back(static_cast<uint32_t>(width));
    split.outputs.push_back(TensorRef::output(static_cast<uint32_t>(split.outputs.size())));
    Shape shape = out_shape;
    shape.back() = width;
    outputs.push_back({DType::Float32, shape});
  }
  const int64_t n = out_shape.empty() ? 0 : out_shape.back();
  if (std::string why = column_split_problem(split, static_cast<uint64_t>(std::max<int64_t>(0, n)));
      !why.empty())
    ctx.fail(attribute + why);
  return split;
}

std::vector<UniformMember> column_split_members() {
  return {{"split_end_0", UniformType::U32}, {"split_end_1", UniformType::U32}};
}

void bind_column_split_outputs(const GemmLaunchSpec::ColumnSplit& split, const std::string& element,
                               KernelInterface& iface, std::vector<UniformMember>& members) {
  for (size_t i = 1; i < split.outputs.size(); ++i)
    iface.read_write("output_" + std::to_string(i), element, split.outputs[i]);
  const std::vector<UniformMember> ends = column_split_members();
  members.insert(members.end(), ends.begin(), ends.end());
}

void add_column_split_values(const GemmLaunchSpec::ColumnSplit& split, UniformValues& values) {
  const uint32_t end_0 = split.widths[0];
  const uint32_t end_1 = end_0 + split.widths[1];
  values.u32("split_end_0", end_0).u32("split_end_1", end_1);
}

KernelLaunch split_columns_launch(const PlanContext& ctx, const GemmLaunchSpec::ColumnSplit& split,
                                  uint32_t rows, const TensorRef& product) {
  uint32_t n = 0;
  for (uint32_t w : split.widths) n += w;
  kernels::Defines defines = {{"SPLIT_THIRD", split.widths.size() > 2 ? "1" : "0"}};
  KernelInterface iface;
  iface.read("product", "f32", product).read_write("output", "f32", split.outputs[0]);
  std::vector<UniformMember> members = {{"N", UniformType::U32}, {"count", UniformType::U32}};
  bind_column_split_outputs(split, "f32", iface, members);
  iface.uniforms(std::move(members));
  KernelLaunch launch;
  launch.program.wgsl = iface.load_wgsl("linear/split_columns.wgsl", defines);
  launch.program.label = "split_columns_" + std::to_string(split.widths.size());
  iface.bind(launch);
  const uint64_t count = uint64_t{rows} * n;
  if (count > UINT32_MAX)
    ctx.fail("the split product's " + std::to_string(count) + " elements exceed 32-bit indices");
  UniformValues values = iface.values();
  values.u32("N", n).u32("count", static_cast<uint32_t>(count));
  add_column_split_values(split, values);
  launch.uniform = values.bytes();
  launch.groups =
      gpu::fold_workgroups((count + 255) / 256, ctx.caps.limits.max_compute_workgroups_per_dimension);
  return launch;
}

KernelLaunch make_gemm_launch(const PlanContext& ctx, const GemmLaunchSpec& requested) {
  if (requested.column_split) ctx.fail("a split output needs append_gemm_launches (internal)");
  const GemmPlanned planned = resolve_gemm(ctx, requested, false, true);
  return gemm_launch(ctx, planned.spec, planned.config, 1);
}

bool gemv_normalizes_a(const PlanContext& ctx, const GemmLaunchSpec& spec) {
  if (spec.batch != 1 || spec.a_km || gemm_has_views(spec) || spec.a_row_map) return false;
  try {
    return resolve_gemm(ctx, spec, true, false).config.kernel == GemmKernel::Gemv;
  } catch (const Error&) {
    return false;
  }
}

void append_gemm_launches(const PlanContext& ctx, const GemmLaunchSpec& requested, OpPlan& plan) {
  if (const auto& split = requested.column_split) {
    if (std::string why = column_split_problem(*split, requested.n); !why.empty()) ctx.fail(why);
    if (requested.residual || gemm_has_views(requested))
      ctx.fail("a product whose output is split into column blocks takes no residual and no views");
  }
  if (requested.column_split && resolve_gemm(ctx, requested, true, false).config.kernel != GemmKernel::Gemv) {
    // Only the GEMV writes the blocks itself: the others write the product whole, then one copy splits it.
    GemmLaunchSpec whole = requested;
    whole.column_split.reset();
    const uint64_t rows = uint64_t{requested.m} * requested.batch;
    whole.out = plan.add_scratch(rows * requested.n * sizeof(float));
    append_gemm_launches(ctx, whole, plan);
    plan.launches.push_back(
        split_columns_launch(ctx, *requested.column_split, static_cast<uint32_t>(rows), whole.out));
    return;
  }
  const GemmPlanned planned = resolve_gemm(ctx, requested, true, true);
  const GemmLaunchSpec& spec = planned.spec;
  const GemmConfig& config = planned.config;
  const uint32_t splits = planned.splits;
  if (const uint32_t head_rows = planned.head_rows) {
    // The wave tail: whole waves of tiles first, then the later rows planned as a product of their own.
    GemmLaunchSpec head = spec;
    head.m = head_rows;
    KernelLaunch head_launch = gemm_launch(ctx, head, config, 1);
    head_launch.program.label += "_head";
    plan.launches.push_back(std::move(head_launch));
    GemmLaunchSpec tail = spec;
    tail.m = spec.m - head_rows;
    tail.head_rows = kGemmOneLaunch;
    tail.a = spec.a.advanced(uint64_t{head_rows} * spec.k * sizeof(float));
    tail.out = spec.out.advanced(uint64_t{head_rows} * spec.n * sizeof(float));
    if (spec.residual) tail.residual = spec.residual->advanced(uint64_t{head_rows} * spec.n * sizeof(float));
    if (spec.bias && spec.bias_stride_m != 0)
      tail.bias = spec.bias->advanced(uint64_t{head_rows} * spec.bias_stride_m * sizeof(float));
    append_gemm_launches(ctx, tail, plan);
    return;
  }
  if (splits <= 1) {
    plan.launches.push_back(gemm_launch(ctx, spec, config, 1));
    return;
  }
  const uint64_t outputs = uint64_t{spec.m} * spec.n * spec.batch;
  const TensorRef partials = plan.add_scratch(outputs * splits * sizeof(float));
  GemmLaunchSpec partial = spec;
  partial.out = partials;
  partial.residual.reset();  // added by the reduction
  plan.launches.push_back(gemm_launch(ctx, partial, config, splits));

  plan.launches.push_back(gemm_split_reduce_launch(ctx, spec, splits, partials));
}

KernelLaunch gemm_split_reduce_launch(const PlanContext& ctx, const GemmLaunchSpec& spec, uint32_t splits,
                                      const TensorRef& partials) {
  KernelLaunch reduce;
  kernels::Defines defines = gemm_defines_off();
  spec.activation.add_defines(defines);
  if (spec.residual) defines["RESIDUAL"] = "1";
  defines["OUT_VIEW"] = output_view(spec) ? "1" : "0";
  row_map_defines(spec, false, true, defines);
  KernelInterface iface;
  iface.read("partials", "f32", partials)
      .read("bias", "f32", spec.bias.value_or(TensorRef::zero()))
      .read_write("output", "f32", spec.out)
      .uniforms(gemm_params_members(has_row_maps(spec), false), "GemmParams");
  if (spec.residual) add_residual_binding(iface, *spec.residual);
  reduce.program.wgsl = iface.load_wgsl("linear/gemm_split_reduce.wgsl", defines);
  reduce.program.label = std::string("gemm_split_reduce") + residual_label_suffix(spec.residual.has_value());
  iface.bind(reduce);
  // The reduction reads sizes, splits and the epilogue's fields.
  reduce.uniform = gemm_params_bytes(iface, spec, 1, 1, splits, false);
  const uint64_t outputs = uint64_t{spec.m} * spec.n * spec.batch;
  reduce.groups =
      gpu::fold_workgroups((outputs + 63) / 64, ctx.caps.limits.max_compute_workgroups_per_dimension);
  return reduce;
}

}  // namespace wgi::ops
