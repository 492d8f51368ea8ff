// The fast convolution kernels' planners (src/ops/conv_kernels.cpp), used by conv.cpp's router:
//   implicit GEMM  conv/implicit_gemm.wgsl  regular and grouped convs with a constant weight: a GEMM of
//                  M = out channels per group, N = batch * output pixels, K = in channels per group * KH *
//                  KW, the activations gathered while loading the workgroup tile (no im2col buffer), the
//                  weight prepacked to [group][K][M rounded up to 4]. 256 invocations, 128x128 or 64x64
//                  tiles.
//   depthwise_rows conv/depthwise_rows.wgsl group == in channels with one input channel per group (any
//                  channel multiplier), stride 1 or 2, kernels up to 7x7: each invocation keeps the input
//                  rows of a 4-column x ROWS-row output block in registers; no workgroup memory, no barrier.
//   depthwise      conv/depthwise.wgsl      the same convs at any stride and kernel size: a workgroup-memory
//                  window per output tile of one plane.
// Both are pure functions of the geometry and the device limits; each returns nullopt with the reason when
// the device cannot run it, so the router can fall back (auto) or fail naming why (forced).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/fused_activation.h"
#include "ops/op.h"

namespace wgi::ops {

// One spatial axis of a conv, after padding and output size have been resolved.
struct ConvAxis {
  int64_t input = 1;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t pad_begin = 0;
  int64_t output = 1;
};

// A conv normalised to 2-D: a 1-D conv is a 2-D one whose height axis is all ones.
struct ConvGeometry {
  int64_t batch = 0;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t groups = 1;
  ConvAxis height;
  ConvAxis width;
};

struct ImplicitGemmConfig {
  // Output tile: tile_m (channels) x tile_n (pixels), 16 x 16 threads of (tile_m / 16) x (tile_n / 16) each:
  // 128x128 (8x8 per thread), 64x64 (4x4), or the rectangles 128x64 / 64x128.
  uint32_t tile_m = 128, tile_n = 128;
  uint32_t tile_k = 16;  // K slab
  uint32_t stages = 1;   // workgroup buffers
  uint32_t workgroup_storage_bytes = 0;
  uint32_t splits = 1;  // K chunks (split-K: partial sums, then linear/gemm_split_reduce.wgsl)
};

// A forced tile, as "implicit_gemm<M>" / "implicit_gemm<M>x<N>" name it: {0, 0} for the planner's choice.
struct ImplicitGemmTile {
  uint32_t m = 0, n = 0;
};

// `forced_tile` {0, 0} (the planner's choice by problem size) or one of the tiles above; `forced_tile_k` 0,
// 8, 16 or 32; `forced_stages` 0, 1 or 2; `forced_splits` 0 (the planner's: split K when the tiles are fewer
// than a wave of a large GPU over K >= 512) or the number of K chunks.
std::optional<ImplicitGemmConfig> choose_implicit_gemm_config(const ConvGeometry& g,
                                                              const gpu::Limits& limits,
                                                              ImplicitGemmTile forced_tile,
                                                              uint32_t forced_tile_k, uint32_t forced_stages,
                                                              std::string& why, uint32_t forced_splits = 0);

// Adds the implicit-GEMM launch and its two plan constants (packed weight, tap table) to `plan`, and with
// config.splits > 1 a scratch buffer for the partial sums and the reduction's launch. The weight must be
// ctx's constant input 1. `residual`: every add_*_launch below adds ctx's input 3, of the output's shape, in
// the epilogue (ops/fused_residual.h).
void add_implicit_gemm_launch(const PlanContext& ctx, const ConvGeometry& g, const ImplicitGemmConfig& config,
                              const FusedActivation& activation, bool has_bias, bool residual, OpPlan& plan);

struct DepthwiseConfig {
  uint32_t threads_x = 16;  // each thread computes 4 output columns
  uint32_t threads_y = 16;  // each thread computes 1 output row
  uint32_t window_h = 0, window_w = 0;
  uint32_t tile_elements = 0;  // workgroup floats (window_h * window_w rounded up to a power of two)
};

std::optional<DepthwiseConfig> choose_depthwise_config(const ConvGeometry& g, const gpu::Limits& limits,
                                                       std::string& why);

struct DepthwiseRowsConfig {
  uint32_t rows = 4;         // output rows per invocation (each also computes 4 adjacent columns)
  bool vec4 = false;         // input and output widths multiples of 4: vec4 loads and stores
  uint32_t workgroup = 256;  // invocations per workgroup
};

// `forced_rows` 0 (the planner's choice) or 1, 2, 4, 8. nullopt with the reason when the conv is outside the
// kernel's reach (stride above 2, a kernel larger than 7x7, dilation above 4, indices beyond u32).
std::optional<DepthwiseRowsConfig> choose_depthwise_rows_config(const ConvGeometry& g,
                                                                const gpu::Limits& limits,
                                                                uint32_t forced_rows, std::string& why);

// Adds the register-window depthwise launch to `plan` (weight read in ONNX's layout).
void add_depthwise_rows_launch(const PlanContext& ctx, const ConvGeometry& g,
                               const DepthwiseRowsConfig& config, const FusedActivation& activation,
                               bool has_bias, bool residual, OpPlan& plan);

// Adds the depthwise launch to `plan` (weight read in ONNX's layout, so it may be a runtime tensor).
void add_depthwise_launch(const PlanContext& ctx, const ConvGeometry& g, const DepthwiseConfig& config,
                          const FusedActivation& activation, bool has_bias, bool residual, OpPlan& plan);

// conv.cpp's attribute helpers, shared with ConvInteger / QLinearConv (integer_linear.cpp).
enum class AutoPad { NotSet, SameUpper, SameLower, Valid };
AutoPad parse_auto_pad(const PlanContext& ctx);
// An ints attribute with `per_axis` values per spatial axis (2 for pads), each at least `min_value` and at
// most i32's maximum.
std::vector<int64_t> spatial_ints(const PlanContext& ctx, const std::string& name, size_t spatial,
                                  size_t per_axis, int64_t fallback, int64_t min_value);
// Fails unless a 32-bit-per-element tensor of `shape` is indexable with u32 and fits one storage binding.
void require_fits_u32(const PlanContext& ctx, const std::string& what, const Shape& shape);
// Conv output size and leading padding along one axis (a.input, kernel, stride, dilation, pad_begin given).
void resolve_conv_axis(const PlanContext& ctx, const char* axis_name, AutoPad auto_pad, int64_t pad_end,
                       ConvAxis& a);

}  // namespace wgi::ops
