// What the Conv / ConvTranspose planner's files share (src/ops/conv.cpp routes, one file per algorithm here):
//   geometry.cpp        parse and validate: ONNX's attributes and shapes -> ConvGeometry
//   choose.cpp          choose: which algorithm, and its tile / split (pure: geometry, hints, device)
//   pointwise_gemm.cpp  1x1, stride 1, no padding, group 1: the GEMM family (ops/gemm_launch.h)
//   depthwise.cpp       conv/depthwise_rows.wgsl and conv/depthwise.wgsl
//   implicit_gemm.cpp   conv/implicit_gemm.wgsl
//   matrix_f16.cpp      float16 compute: the subgroup-matrix GEMM (linear/gemm_matrix_f16.wgsl, A_CONV)
//   direct.cpp          conv/conv2d.wgsl and conv/conv2d_vec4.wgsl
//   transposed.cpp      conv/conv_transpose2d.wgsl
// Each algorithm's choose_* is a pure function of the geometry and the device limits that returns nullopt
// with the reason when the device cannot run it, so that the router can fall back (auto) or fail naming why
// (forced); its add_*_launch builds the launches into the plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/integer_math.h"
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

// What every conv kernel applies after the sum: the bias (input 2, or the zero buffer), a fused residual
// (ctx's input 3, of the output's shape: ops/fused_residual.h), then the fused activation.
struct ConvEpilogue {
  FusedActivation activation;
  bool has_bias = false;
  bool residual = false;
};

// Arithmetic the algorithms' files share.
namespace conv {
// A value that geometry.cpp bounded to u32 (element counts, positions), narrowed.
inline uint32_t u32(int64_t v) {
  return static_cast<uint32_t>(v);
}
}  // namespace conv

// ---- parse and validate (geometry.cpp) ----

// conv's attribute helpers, shared with ConvInteger / QLinearConv (integer_linear.cpp).
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

// A Conv / ConvTranspose node's ONNX attributes, each checked on its own and against W's kernel dims.
struct ConvAttributes {
  size_t spatial = 2;  // 1 or 2
  int64_t groups = 1;
  AutoPad auto_pad = AutoPad::NotSet;
  std::vector<int64_t> kernel;  // W's spatial dims (kernel_shape, where given, equals them)
  std::vector<int64_t> strides, dilations;
  std::vector<int64_t> pads;            // begins, then ends
  std::vector<int64_t> output_padding;  // ConvTranspose; zeros for Conv
  std::vector<int64_t> output_shape;    // ConvTranspose's spatial output_shape; empty when not given
};

// Checks X, W and B's types and ranks, then parses the attributes.
ConvAttributes parse_conv_attributes(const PlanContext& ctx, bool transposed);
// Checks the channel counts and the bias against the attributes and resolves every axis (ONNX's output-size
// formulas); `y_shape` receives the output's shape.
ConvGeometry resolve_conv_geometry(const PlanContext& ctx, const ConvAttributes& attributes, bool transposed,
                                   Shape& y_shape);

// ---- the algorithms' configurations (their files) ----

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

// ---- choose (choose.cpp) ----

enum class ConvAlgorithm {
  MatrixF16,
  PointwiseGemm,
  DepthwiseRows,
  Depthwise,
  ImplicitGemm,
  DirectVec4,
  Direct,
  Transposed
};

// The GEMM's tuning attributes (read_gemm_attributes, ops/gemm_launch.h), which the implicit GEMM obeys too:
// 0 for the planner's choice.
struct ConvGemmKnobs {
  uint32_t tile_k = 0, stages = 0, split_k = 0;
};

// Everything the choice depends on besides the device.
struct ConvRequest {
  ConvGeometry geometry;
  bool transposed = false;
  bool weight_known = false;        // W is a plan-time constant (the prepacking kernels need it)
  std::string weight_name;          // W as messages name it (PlanContext::input_name)
  std::string forced_kernel;        // wgi.kernel, "" for the planner's choice
  int64_t forced_rows = 0;          // wgi.depthwise_rows, 0 for the planner's choice
  bool gemm_kernel_forced = false;  // wgi.gemm_kernel is set: it asks for the GEMM route too
  // Unset until the choice needs them (choose_conv_algorithm then says so): the router reads the attributes
  // only for a conv that may take the implicit GEMM, so that they are checked where they apply.
  std::optional<ConvGemmKnobs> gemm_knobs;
};

struct ConvChoice {
  ConvAlgorithm algorithm = ConvAlgorithm::Direct;
  ImplicitGemmConfig implicit_gemm;    // with ConvAlgorithm::ImplicitGemm
  DepthwiseConfig depthwise;           // with ConvAlgorithm::Depthwise
  DepthwiseRowsConfig depthwise_rows;  // with ConvAlgorithm::DepthwiseRows
  std::string error;                   // non-empty: the node cannot run as asked (ctx.fail's message)
  bool needs_gemm_knobs = false;       // choose again with request.gemm_knobs set
};

// The routing rules (choose.cpp's comment lists them); a pure function of the request and the device.
ConvChoice choose_conv_algorithm(const ConvRequest& request, const gpu::Capabilities& caps);

// ---- build (the algorithms' files) ----

// The GEMM family's launch for a pointwise conv: Y[n] (OC x HW) = W (OC x IC) * X[n] (IC x HW).
void add_pointwise_gemm_launch(const PlanContext& ctx, const ConvGeometry& g, const ConvEpilogue& epilogue,
                               OpPlan& plan);

// The register-window depthwise launch (weight read in ONNX's layout).
void add_depthwise_rows_launch(const PlanContext& ctx, const ConvGeometry& g,
                               const DepthwiseRowsConfig& config, const ConvEpilogue& epilogue, OpPlan& plan);

// The workgroup-window depthwise launch (weight read in ONNX's layout, so it may be a runtime tensor).
void add_depthwise_launch(const PlanContext& ctx, const ConvGeometry& g, const DepthwiseConfig& config,
                          const ConvEpilogue& epilogue, OpPlan& plan);

// The implicit-GEMM launch and its two plan constants (packed weight, tap table), and with config.splits > 1
// a scratch buffer for the partial sums and the reduction's launch. The weight must be ctx's constant
// input 1.
void add_implicit_gemm_launch(const PlanContext& ctx, const ConvGeometry& g, const ImplicitGemmConfig& config,
                              const ConvEpilogue& epilogue, OpPlan& plan);

// Float16 compute (gpu::Capabilities::f16_compute): the conv as the subgroup-matrix product, its weight
// converted to float16 once (a plan constant); ctx's input 1 must be a constant.
void add_matrix_f16_conv_launch(const PlanContext& ctx, const ConvGeometry& g, const ConvEpilogue& epilogue,
                                OpPlan& plan);
// Its first launch where the input channels are a multiple of 8: `input` (float32 NCHW, `images` x `channels`
// x `plane` pixels) written to `output` as float16 NHWC (conv/nchw_to_nhwc_f16.wgsl), rounded and saturated.
KernelLaunch nchw_to_nhwc_f16_launch(const PlanContext& ctx, TensorRef input, TensorRef output,
                                     uint32_t images, uint32_t channels, uint32_t plane);

// The direct kernels: conv2d_vec4.wgsl (`vec4`: W prepacked, so a constant) or conv2d.wgsl (any W).
void add_direct_launch(const PlanContext& ctx, const ConvGeometry& g, bool vec4, const ConvEpilogue& epilogue,
                       OpPlan& plan);

// ConvTranspose, in gather form.
void add_conv_transpose_launch(const PlanContext& ctx, const ConvGeometry& g, const ConvEpilogue& epilogue,
                               OpPlan& plan);

// The launch of a kernel that includes conv/conv_common.wgsl (the direct and transposed kernels share its
// bindings and parameter block): `weight` is what binding 1 reads.
void add_conv_common_launch(const PlanContext& ctx, const ConvGeometry& g, const char* file,
                            const std::string& label, TensorRef weight, const ConvEpilogue& epilogue,
                            OpPlan& plan);

}  // namespace wgi::ops
