// Building a launch of the GEMM kernel family (src/kernels/linear/), shared by the ops that reduce to a
// matrix product: MatMul and Gemm (linear.cpp) and 1x1 convolutions (conv.cpp).
//   out[b, m, n] = act(alpha * sum_k A[b, m, k] * B[b, k, n] + beta * C[m * bias_stride_m + n *
//   bias_stride_n] + R[b, m, n])   (R: an optional fused residual of the output's shape)
//
// Kernels (all accumulate in f32, all take the same uniform block and fused epilogue):
//   Tiled    gemm_tiled.wgsl  the seeds' 32x32 tile, 64 invocations, scalar loads; any layout, any K. The
//                             correctness baseline and the fallback of last resort.
//   Vec4     gemm_vec4.wgsl   the seeds' 32x32 tile with vec4 loads along K; K % 4 == 0, A [M,K], B [N,K].
//   Fast128  gemm_fast.wgsl   128x128 tile, 256 invocations, 8x8 per thread; any layout, any K (vec4 loads
//                             where the contiguous extent allows, scalar loads otherwise).
//   Fast64   gemm_fast.wgsl   64x64 tile, 256 invocations, 4x4 per thread; same reach as Fast128.
//   Fast128x64  gemm_fast.wgsl  128 rows x 64 columns, 8x4 per thread (K slabs of 16 or 32): twice the
//                             128 tile's workgroups for a grid whose last wave of 128 tiles is mostly empty.
//   Gemv     gemv.wgsl        M <= 8 with A [M,K] and B [N,K]: K split over the threads of a column, reduced
//                             in workgroup memory; any K.
// Split-K (append_gemm_launches only): when a product has few output tiles over a long K (a [32, 32] product
// of 36864-long rows: DaViT's channel attention on the seeds' tiles; SigLIP-B's 196x768x3072 on the fast
// tiles), the tiled or fast kernel also splits K into chunks that write partial products to a scratch
// buffer, and gemm_split_reduce.wgsl adds them and applies the epilogue: two launches.
// Wave tail (append_gemm_launches only): a 128-tile product a little over one wave of the GPU (SigLIP-B's
// batch-8 MLP-up, 1576x3072x768: 312 tiles where 264 run at once) spends its second wave on a few tiles
// while most SMs idle. The planner then runs its first head_rows rows as one launch (whole waves) and plans
// the remaining rows as a product of their own (a split K over the idle SMs), bound further into A, the
// output and the residual: two or three launches.
// Strided views (GemmLaunchSpec's row strides, offsets and output strides: the attention op's Q, K, V read in
// a packed projection and its output written transposed) run on the fast kernels only.
// The fast kernels and GEMV need 256 invocations per workgroup and their workgroup memory (which depends on
// the K slab and on double buffering) within the device's limits; the planner picks a configuration that fits
// ctx.caps.limits and otherwise falls back to the seeds' kernels. Where workgroup barriers are costly
// (SwiftShader) the seeds' kernels are faster and the planner takes them unless a kernel or knob is forced.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ops/fused_activation.h"
#include "ops/internal_ops.h"
#include "ops/kernel_interface.h"
#include "ops/op.h"

namespace wgi::ops {

enum class GemmKernel { Auto, Tiled, Vec4, Fast128, Fast64, Fast128x64, Gemv };
// The large-tile kernels of gemm_fast.wgsl (Fast128, Fast64, Fast128x64): their configurations have a K
// slab and buffers, and they read strided views.
bool is_fast_gemm_kernel(GemmKernel kernel);
// A fast kernel's output tile, (rows, columns); throws wgi::Error for any other kernel.
std::pair<uint32_t, uint32_t> fast_gemm_tile(GemmKernel kernel);

// Node attributes that steer the GEMM planner on any node whose plan ends in a GEMM launch (tests, tuning;
// their names in internal_ops.h, read with read_gemm_tuning_attributes). A forced choice that cannot run the
// problem on the device is an error, never a silent fallback.
//   wgi.gemm_kernel   string, a kernel name below; used when the op itself does not force a kernel (MatMul
//                     and Gemm force through their wgi.kernel attribute, which takes the same names)
//   wgi.gemm_tile_k   int, the fast kernels' K slab (8, 16 or 32; the tile times it must be a multiple of
//   1024) wgi.gemm_stages   int, 1 (one workgroup buffer, two barriers per slab) or 2 (double buffered)
//   wgi.gemv_lanes    int, GEMV threads per column (4 to 256, a power of two)
//   wgi.gemm_split_k  int >= 1, K chunks of a split-K product (1: none); the tiled and fast kernels
//   wgi.gemm_head_rows  int >= 1, rows of the first launch of a product run in two (the wave tail: a
//                     multiple of the kernel's tile rows below M, on a fast kernel); M or more: one launch
// MatMul's internal attributes (LinearAttributes, internal_ops.h, with their input positions):
//   wgi.trans_b      int, 1 = B is given as [..., N, K] (set by graph::read_transposed_weights).
//   wgi.windows_in   int, 1 = input 0 is the image X [B, H, W, C] and A is
//                    Reshape(Reshape(Transpose(Reshape(X, kPartition), perm [0, 1, 3, 2, 4, 5]), kWindows),
//                    kTokens) (WindowsInInput), kPartition giving [B, H / wh, wh, W / ww, ww, C]: A's rows
//                    are read from X through a GemmRowMap (no partition copy). Set by
//                    graph::read_windows_in_place (window attention's partition, DaViT / Swin).
//   wgi.windows_out  int, 1 = the output is the product P reversed into the image and cropped
//   (WindowsOutInput):
//                    Reshape(Slice(Slice(Reshape(Transpose(Reshape(Reshape(P, kWindows), kWindowsImage),
//                    perm [0, 1, 3, 2, 4, 5]), kImage), ends kCropEndH on axis 1), ends kCropEndW on axis 2),
//                    kOutput), kWindowsImage giving [B, H / wh, W / ww, wh, ww, N] (the crop's ends empty: no
//                    crop); written through a GemmRowMap when the crop is empty (a fused residual then added
//                    in the epilogue). Set by graph::write_windows_in_place (the window reverse).
// Inputs 2 (bias) and 3 (fused residual) keep their meaning and may be empty.

// "tiled", "vec4", "fast128", "fast64", "fast128x64", "gemv" (and "auto"); nullopt for any other name.
std::optional<GemmKernel> gemm_kernel_from_name(std::string_view name);
const char* gemm_kernel_name(GemmKernel kernel);
// For error messages: "tiled, vec4, fast128, fast64, fast128x64 or gemv".
std::string gemm_kernel_names();

// Where a matrix's rows lie when they are not a constant stride apart: row m (< M) starts
//   sum_d digit_d(m) * strides[d]
// elements after the matrix's start, where digit_0..digit_3 are m written in the mixed radix `extents`
// (outermost first, padded with 1s in front; their product is M). DaViT's window partition of x [H, W, C]
// into windows of ws x ws tokens: extents (H/ws, W/ws, ws, ws), strides (ws*W*C, ws*C, W*C, C) (an image
// batch folded into M merges into the outermost digit: H*W*C = (H/ws) * ws*W*C).
struct GemmRowMap {
  std::array<uint32_t, 4> extents = {1, 1, 1, 1};
  std::array<uint32_t, 4> strides = {0, 0, 0, 0};
};

// GemmLaunchSpec::head_rows that runs any product as one launch.
inline constexpr uint32_t kGemmOneLaunch = UINT32_MAX;

struct GemmLaunchSpec {
  uint32_t m = 0, n = 0, k = 0;
  uint32_t batch = 1;                                 // output matrices, decoded from batch_dims
  std::array<uint32_t, 4> batch_dims = {1, 1, 1, 1};  // outermost first, padded with 1s in front
  std::array<uint32_t, 4> a_batch_strides = {0, 0, 0, 0};
  std::array<uint32_t, 4> b_batch_strides = {0, 0, 0, 0};
  bool a_km = false;                     // A stored [K, M] instead of [M, K]
  bool b_nk = false;                     // B stored [N, K] instead of [K, N]
  GemmKernel kernel = GemmKernel::Auto;  // Auto: the planner chooses (see choose_gemm_config)
  uint32_t tile_k = 0;                   // fast kernels' K slab; 0: the planner's choice
  uint32_t stages = 0;                   // fast kernels' workgroup buffers (1 or 2); 0: the planner's choice
  uint32_t gemv_lanes = 0;               // GEMV threads per column; 0: the planner's choice
  uint32_t split_k = 0;                  // K chunks (append_gemm_launches); 0: the planner's choice, 1: none
  // Rows of the first of two launches (the wave tail; append_gemm_launches); 0: the planner's choice, M or
  // more (kGemmOneLaunch): one launch.
  uint32_t head_rows = 0;
  // B is a constant that the op prepacks in the layout prepack_b_as_nk asks for (b_nk says which it was
  // given): one problem for tuning whichever layout the chosen kernel gets.
  bool b_prepacked = false;
  // B is float16, packed two per word as the device stores it (a constant float16 weight kept at half size,
  // docs/float16.md): every kernel reads it through B_F16 (linear/gemm_b_f16.wgsl), unpacking as it loads.
  bool b_f16 = false;
  // A LayerNormalization taken in (graph::fuse_layer_norm_into_products): A is its X, each row normalised
  // over K before the product. Only the GEMV takes it (A_LAYER_NORM, linear/gemv.wgsl: gemv_normalizes_a says
  // where), normalising A as it reads it and writing the normalised rows to `normalized`; for every other
  // kernel the op first launches the LayerNormalization into `normalized` and multiplies that.
  struct LayerNormA {
    float epsilon = 1e-5f;
    TensorRef normalized;
    TensorRef params;  // the K scales, then the K biases (zeros without one): ops::fused_layer_norm_params
  };
  std::optional<LayerNormA> a_layer_norm;
  // B is a weight-only quantized [N, K] matrix (MatMulNBits / MatMulBnb4, matmul_nbits.cpp; b_nk must be
  // set, batch 1): the fast kernels dequantise its codes as they load B's slab into workgroup memory
  // (B_QUANT, linear/quantized_dequant.wgsl). Only the fast kernels read it: the planner never picks another
  // kernel, a forced one is an error, and it is never tuned (the tuner measures float operands).
  struct QuantizedB {
    uint32_t bits = 4, block_size = 32;
    uint32_t col_words = 0, scale_col_stride = 0, zp_col_bits = 0, blocks_per_col = 0;
    float default_zero = 8;
    bool scales_f16 = false, zero_points_packed = false, zero_points_float = false, zero_points_f16 = false;
    bool scale_per_code = false;
    const char* code_table = nullptr;  // "NF4", "FP4", or none
    TensorRef scales, zero_points = TensorRef::zero();
  };
  std::optional<QuantizedB> b_quantized;
  // Strided views (attention's Q, K, V read in place from a packed projection, its output written
  // transposed; 0 = the packed layout). Row strides are in elements between consecutive rows of a matrix as
  // stored: A's M rows (K rows with a_km), B's K rows (N rows with b_nk), the output's M rows; offsets are
  // the elements before A's and B's first element. out_batch_strides: the output's element stride per batch
  // dim, outermost first (all 0: packed matrices of M * the output's row stride). Only the fast kernels read
  // views: the planner never picks another kernel for them, and a forced one is an error (gemm_has_views).
  // A split product keeps its partial sums packed; gemm_split_reduce.wgsl writes the output view.
  uint32_t a_row_stride = 0, b_row_stride = 0, out_row_stride = 0;
  uint32_t a_offset = 0, b_offset = 0;
  std::array<uint32_t, 4> out_batch_strides = {0, 0, 0, 0};
  // Row maps (window attention's partition and reverse read and written in place): A's rows and the
  // output's rows scattered over a tensor instead of a row stride apart (GemmRowMap). Only the fast kernels
  // run them (gemm_has_views); a map replaces the row stride (a_row_stride / out_row_stride must stay 0) and
  // A's needs A as [M, K]. A split product keeps its partial sums packed; the reduction writes through the
  // output's map. A fused residual of a row-mapped output is laid out like the output (read where the
  // element is written), which is what the window reverse's residual Add sees.
  std::optional<GemmRowMap> a_row_map, out_row_map;
  TensorRef a, b, out;
  // The output's columns split over several tensors (a MatMul merged from sibling products of one A,
  // graph::merge_sibling_products): column block i, widths[i] wide, is outputs[i], stored [batch][M][width];
  // `out` is ignored. The GEMV writes the blocks itself (SPLIT_OUTPUTS); the other kernels write the product
  // whole to a scratch buffer that split_columns.wgsl copies out (append_gemm_launches). 2 or
  // kMaxSplitOutputs blocks; not with views, row maps or a residual (an error).
  struct ColumnSplit {
    std::vector<uint32_t> widths;
    std::vector<TensorRef> outputs;
  };
  std::optional<ColumnSplit> column_split;
  std::optional<TensorRef> bias;
  uint32_t bias_stride_m = 0, bias_stride_n = 0;
  // A tensor of the output's shape added in the epilogue before the activation (ops/fused_residual.h), read
  // at the output element's index [batch][M][N]; split products add it in gemm_split_reduce.wgsl. Not with a
  // strided output (the planner rejects the combination: the residual would be read at the view's index).
  std::optional<TensorRef> residual;
  float alpha = 1.0f, beta = 1.0f;
  FusedActivation activation;
};

// The strides that `spec`'s views resolve to (its 0s replaced by the packed layout's values).
uint32_t gemm_a_row_stride(const GemmLaunchSpec& spec);
uint32_t gemm_b_row_stride(const GemmLaunchSpec& spec);
uint32_t gemm_out_row_stride(const GemmLaunchSpec& spec);
std::array<uint32_t, 4> gemm_out_batch_strides(const GemmLaunchSpec& spec);
// Whether any operand or the output of `spec` is not in the packed layout (only the fast kernels run it);
// row maps count.
bool gemm_has_views(const GemmLaunchSpec& spec);
// Whether the product runs as one GEMV over A's rows as stored, which can then normalise them itself
// (a_layer_norm); false where a forced choice cannot run (append_gemm_launches reports it with the node).
bool gemv_normalizes_a(const PlanContext& ctx, const GemmLaunchSpec& spec);
// The same without the row maps: offsets, row strides and output views.
bool gemm_has_strided_views(const GemmLaunchSpec& spec);
// Every name the GEMM kernels' #if lines test, off (the preprocessor wants each defined); a launch turns on
// what it uses.
kernels::Defines gemm_defines_off();
// ROW_MAPS (GemmParams declares the maps) where `spec` has any; A_ROW_MAP / OUT_ROW_MAP for the maps a launch
// applies (`out_map`: false for a split's packed partial sums).
void row_map_defines(const GemmLaunchSpec& spec, bool a_map, bool out_map, kernels::Defines& defines);
// Why `spec`'s row maps are malformed ("" if they are not): extents whose product is not M, a map next to a
// row stride, A's map with A as [K, M].
std::string gemm_row_map_problem(const GemmLaunchSpec& spec);
// Whether the device can run a product with views (a fast kernel fits its limits): where not (compat
// devices allow 128 invocations per workgroup by default), callers copy their operands packed first.
bool gemm_views_supported(const gpu::Capabilities& caps);

// A kernel and its configuration, as chosen for one problem on one device.
struct GemmConfig {
  GemmKernel kernel = GemmKernel::Tiled;
  uint32_t tile_m = 32, tile_n = 32;    // output tile (GEMV: tile_m = 8 rows at most, tile_n = columns)
  uint32_t tile_k = 32;                 // K slab (fast kernels)
  uint32_t stages = 1;                  // workgroup buffers (fast kernels)
  uint32_t gemv_rows = 0;               // GEMV: compile-time bound on M (1, 2, 4, 8)
  uint32_t gemv_lanes = 0;              // GEMV: threads per column
  bool a_vec4 = false, b_vec4 = false;  // vec4 loads of A / B
  uint32_t workgroup_storage_bytes = 0;
};

// The planner, pure (no GPU): the forced kernel and configuration of `spec` if it has one, else the kernel
// that suits the problem's size and layout among those the device `caps` can run. Throws wgi::Error (message
// without node prefix) when a forced choice is impossible.
GemmConfig choose_gemm_config(const GemmLaunchSpec& spec, const gpu::Capabilities& caps);

// The values the knobs above accept (attributes and tuned entries alike).
bool valid_gemm_tile_k(int64_t v);     // 8, 16, 32
bool valid_gemm_stages(int64_t v);     // 1, 2
bool valid_gemm_split_k(int64_t v);    // 1 to 65535
bool valid_gemm_head_rows(int64_t v);  // 1 to 2^32 - 1
bool valid_gemv_lanes(int64_t v);      // a power of two from 4 to 256

// Reads the tuning attributes above from ctx.node into `spec` (those `spec` leaves at 0 / Auto); throws via
// ctx.fail for an unknown kernel name or a malformed value.
void read_gemm_attributes(const PlanContext& ctx, GemmLaunchSpec& spec);

// K chunks for `spec` run with `config`: the forced spec.split_k, else more than one only where the kernel
// would leave most of the device idle: the seeds' kernels with fewer than 128 output tiles and K >= 2048
// (chunks for about 256 workgroups, each at least 512 deep), the fast kernels as fast_split_count says.
// Throws wgi::Error for a forced split the chosen kernel cannot do (GEMV, vec4).
uint32_t choose_split_k(const GemmLaunchSpec& spec, const GemmConfig& config);
// K chunks for `tiles` output tiles over `k` (the implicit-GEMM conv's base rule): none from about
// a wave of a large GPU (132 SMs on the H200) or below K = 512; else about two workgroups per SM, chunks of
// at least 256.
uint32_t wave_split_count(uint64_t tiles, uint64_t k);
// K chunks of a product planned on the fast `tile` (128 or 64) with `tiles` output tiles over `k`: the 128
// tile from K = 2048 (chunks of ~768), or from K = 768 in chunks of 256 on fewer than 96 tiles, at most two
// workgroups per SM (one wave); the 64 tile up to about
// 864 workgroups with chunks of 96..512 (over K < 2048 on at most 192 tiles), never fewer than
// wave_split_count (the rules' measurements are in gemm_launch.cpp).
uint32_t fast_split_count(uint32_t tile, uint64_t tiles, uint64_t k);
// The wave tail's head rows for a product of `m` rows in `tiles_n` columns of 128 tiles, unsplit: the rows
// of whole waves of 128 tiles (two workgroups on each of the H200's 132 SMs) when that leaves a tail of at
// most a third of a wave after one such wave; 0 (one launch) otherwise.
uint32_t wave_tail_head_rows(uint32_t m, uint32_t tiles_n);

// What the planner's rules make of `spec` as given (its forced kernel and knobs honoured, nothing read from
// attributes or a tuning table): the spec as launched (a split moves the seeds' kernels to the tiled one),
// its configuration, K chunks and wave tail. `splittable`: the caller can run a split and a wave tail
// (append_gemm_launches); otherwise K is never split and the product runs as one launch. Pure; throws
// wgi::Error like choose_gemm_config / choose_split_k.
struct GemmPlanned {
  GemmLaunchSpec spec;
  GemmConfig config;
  uint32_t splits = 1;
  // 0: one product. Else the first head_rows rows run on `config` unsplit and the rest as a product planned
  // on its own (the wave tail).
  uint32_t head_rows = 0;
};
GemmPlanned plan_gemm_rules(GemmLaunchSpec spec, const gpu::Capabilities& caps, bool splittable);

// For a constant B that the op prepacks (spec.b_prepacked): whether to store it [N, K] (else [K, N]), from
// the kernel that append_gemm_launches will run (attributes and ctx's tuning table included). [K, N] only for
// the 128x128 kernel without a split, with N % 4 == 0 (linear.cpp says why).
bool prepack_b_as_nk(const PlanContext& ctx, const GemmLaunchSpec& spec);
// B's host copy in that layout: each batch matrix of `b` ([K, N], or [N, K] when `stored_nk`) into
// [matrices, N, K] when `want_nk`, else [matrices, K, N] (blocked transpose where the layouts differ). A
// float16 `b` stays float16 (its bits moved, never widened).
Tensor prepack_b(const Tensor& b, int64_t k, int64_t n, bool stored_nk, bool want_nk);

// GemmParams, the uniform block linear/gemm_common.wgsl and the GEMM kernels read. `row_maps`: the row maps'
// fields (ROW_MAPS); `quantized`: a weight-only quantized B's (B_QUANT; linear/quantized_dequant.wgsl).
std::vector<UniformMember> gemm_params_members(bool row_maps, bool quantized);
// Its values for `spec` on a grid of tiles_m x tiles_n tiles per matrix and `splits` K chunks (the values,
// for a launch whose block adds members of its own; the bytes otherwise).
UniformValues gemm_params_values(const KernelInterface& iface, const GemmLaunchSpec& spec, uint32_t tiles_m,
                                 uint32_t tiles_n, uint32_t splits, bool quantized);
std::vector<std::byte> gemm_params_bytes(const KernelInterface& iface, const GemmLaunchSpec& spec,
                                         uint32_t tiles_m, uint32_t tiles_n, uint32_t splits, bool quantized);

// The launch for `spec` on ctx's device (applies read_gemm_attributes first, then ctx's tuning table), never
// split. Throws wgi::Error (via ctx.fail) if a forced kernel cannot run the problem.
KernelLaunch make_gemm_launch(const PlanContext& ctx, const GemmLaunchSpec& spec);

// The second launch of a split product: linear/gemm_split_reduce.wgsl adds the `splits` partial sums in
// `partials` ([split][batch][M][N]) and writes spec.out ([batch][M][N]) through spec's epilogue (alpha,
// beta * bias with its strides, the residual, activation). The implicit-GEMM conv's split uses it too (M =
// output channels, N = output pixels, batch = images).
KernelLaunch gemm_split_reduce_launch(const PlanContext& ctx, const GemmLaunchSpec& spec, uint32_t splits,
                                      const TensorRef& partials);

// The outputs of a product of `out_shape` (N its last dim) whose node carries wgi.split_columns `widths`,
// appended to `outputs`: one per column block (their split returned), or the one output where `widths` is
// empty (nullopt). Fails naming the node where the widths do not split N into 2 to kMaxSplitOutputs blocks,
// their count is not the node's outputs' less `later_outputs` (outputs after the blocks: a fused
// LayerNormalization's), or the product has a fused residual.
std::optional<GemmLaunchSpec::ColumnSplit> plan_column_split(const PlanContext& ctx,
                                                             const std::vector<int64_t>& widths,
                                                             const Shape& out_shape, bool residual,
                                                             std::vector<TensorDesc>& outputs,
                                                             size_t later_outputs = 0);
// Why `split` cannot split an output of `n` columns ("" if it can): an output per block, 2 to
// kMaxSplitOutputs blocks none of width 0, widths summing to n. plan_column_split checks with it too.
std::string column_split_problem(const GemmLaunchSpec::ColumnSplit& split, uint64_t n);
// One launch of linear/split_columns.wgsl: `product` ([rows][N], N the widths' sum) copied into the split's
// outputs, each [rows][its width].
KernelLaunch split_columns_launch(const PlanContext& ctx, const GemmLaunchSpec::ColumnSplit& split,
                                  uint32_t rows, const TensorRef& product);
// The uniform members of a split GEMV (split_end_0, split_end_1: where the second and third blocks start,
// the last one's end N), and their values.
std::vector<UniformMember> column_split_members();
void add_column_split_values(const GemmLaunchSpec::ColumnSplit& split, UniformValues& values);
// The blocks after the first (output_1, output_2; the first is the kernel's `output`) bound read-write as
// `element`, and column_split_members appended to `members`: what linear/column_split.wgsl's includers bind.
void bind_column_split_outputs(const GemmLaunchSpec::ColumnSplit& split, const std::string& element,
                               KernelInterface& iface, std::vector<UniformMember>& members);

// The launches for `spec` appended to `plan`: one, or two with a scratch buffer (appended to
// plan.scratch_bytes) when choose_split_k splits K. Node attributes force; otherwise an entry of ctx's tuning
// table for this problem is run if the device can run it (checked as if forced), else the planner's rules.
void append_gemm_launches(const PlanContext& ctx, const GemmLaunchSpec& spec, OpPlan& plan);

}  // namespace wgi::ops
