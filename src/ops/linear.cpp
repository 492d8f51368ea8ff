// Linear algebra: ONNX MatMul and Gemm (and so the seeds' linear, which is Gemm with transB = 1 and a bias)
// through one planner and one GEMM kernel family (src/kernels/linear/, chosen in gemm_launch.cpp: GEMV for
// M <= 8, 128x128 and 64x64 tiles for large products, the seeds' 32x32 kernels for the rest).
//
// A constant B (a weight) is prepacked once into [batch..., N, K], K contiguous: the layout GEMV streams
// (each column's K run is contiguous), the seeds' vec4 kernel needs, and the 64x64 fast kernel reads with
// vec4 loads along K. The 128x128 kernel gets [batch..., K, N] instead (N % 4 == 0): stored as read, no
// transposing scalar stores into workgroup memory, which ran faster than [N, K] on the H200
// (docs/performance.md, "Measurements behind the planner's rules"). A constant already stored in the wanted
// layout (nn.Linear's [N, K] weight read in place) is bound as it is, without a copy. A runtime B is read as
// it is ([K, N] or transposed).
//
// The internal attribute "wgi.kernel" = "tiled" | "vec4" | "fast128" | "fast64" | "fast128x64" | "gemv"
// forces a kernel (tests, tuning); a forced kernel that cannot run the problem is an error, never a silent
// fallback. The GEMM family's tuning attributes (gemm_launch.h) apply too.
//
// A residual fused by graph::fuse_residual_adds (input 3, ops/fused_residual.h) is added in the epilogue of
// every kernel (the split-K reduction's for split products).
//
// Window attention's partition and reverse (graph::read_windows_in_place / write_windows_in_place;
// kMatMulWindowsInAttribute / kMatMulWindowsOutAttribute in gemm_launch.h): the qkv MatMul reads its rows
// from the image [B, H, W, C] through a GemmRowMap, and the proj MatMul writes its rows into the image
// through one, the Transposes of the export never run. The shapes come from the exports' Reshape targets and
// the crop's ends, known only when planned; the plan checks that the windows tile the image exactly.
#include <algorithm>
#include <cstring>

#include "gpu/uniform.h"
#include "kernels/wgsl_library.h"
#include "ops/data_movement_internal.h"
#include "ops/elementwise_binary.h"
#include "ops/families.h"
#include "ops/float16.h"
#include "ops/fused_activation.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"
#include "ops/gemm_matrix_f16.h"
#include "ops/normalization.h"
#include "ops/registry.h"
#include "ops/reshape.h"

namespace wgi::ops {

namespace {

constexpr size_t kMaxBatchDims = 4;

// An image [B, nh * wh, nw * ww, C] cut into nh x nw windows of wh x ww tokens, taken in the order
// [B, nh, nw, wh, ww, C] (a window's tokens consecutive).
struct WindowGeometry {
  int64_t b = 0, nh = 0, wh = 0, nw = 0, ww = 0, c = 0;
  Shape image() const { return {b, nh * wh, nw * ww, c}; }
  Shape windows() const { return {b, nh, nw, wh, ww, c}; }
  // Where each dim of windows() steps in the image, in elements.
  std::vector<int64_t> image_strides() const {
    const int64_t w = nw * ww;
    return {nh * wh * w * c, wh * w * c, ww * c, w * c, c, 1};
  }
};

struct GemmSpec {
  size_t a_input = 0;
  size_t b_input = 1;
  std::optional<size_t> c_input;  // bias / C
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 1.0f;
  bool matmul_semantics = false;  // numpy-style ranks and batch broadcasting (MatMul) vs 2-D only (Gemm)
  // Window attention (file comment): A's logical shape and windows where input a_input is the image, and
  // whether the output is the product reversed into the image.
  std::optional<Shape> a_shape;
  std::optional<WindowGeometry> a_windows;
  bool out_windows = false;
  GemmKernel kernel = GemmKernel::Auto;     // wgi.kernel forces one
  std::vector<int64_t> split_columns;       // wgi.split_columns: the output's column blocks, one output each
  std::optional<float> layer_norm_epsilon;  // wgi.layer_norm_epsilon: A is normalised first (plan_gemm)
};

uint32_t checked_u32(const PlanContext& ctx, int64_t v, const char* what) {
  if (v < 0 || v > static_cast<int64_t>(UINT32_MAX)) {
    ctx.fail(std::string(what) + " = " + std::to_string(v) + " does not fit the GPU's 32-bit indices");
  }
  return static_cast<uint32_t>(v);
}

// The output's batch dims as the kernel decodes them: adjacent dims with the same broadcast pattern merged
// (so at most kMaxBatchDims remain), with A's and B's element strides per dim (0 where that operand
// broadcasts).
struct BatchLayout {
  std::vector<int64_t> extents;
  std::vector<uint64_t> a_strides;
  std::vector<uint64_t> b_strides;
};

BatchLayout broadcast_batch(const PlanContext& ctx, const Shape& a_batch, const Shape& b_batch,
                            uint64_t a_matrix, uint64_t b_matrix) {
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  auto dim_at = [rank](const Shape& s, size_t i) -> int64_t {
    size_t pad = rank - s.size();
    return i < pad ? 1 : s[i - pad];
  };
  struct Dim {
    int64_t extent;
    bool a_present;
    bool b_present;
  };
  std::vector<Dim> dims;
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = dim_at(a_batch, i), db = dim_at(b_batch, i);
    if (da != db && da != 1 && db != 1) {
      ctx.fail("batch dimensions do not broadcast: A has " + shape_to_string(a_batch) + ", B has " +
               shape_to_string(b_batch));
    }
    dims.push_back({std::max(da, db), da != 1, db != 1});
  }
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (d.extent == 1) continue;
    if (!merged.empty() && merged.back().a_present == d.a_present && merged.back().b_present == d.b_present) {
      merged.back().extent *= d.extent;
    } else {
      merged.push_back(d);
    }
  }
  if (merged.size() > kMaxBatchDims) {
    ctx.fail("batch broadcasting of A " + shape_to_string(a_batch) + " and B " + shape_to_string(b_batch) +
             " needs more than 4 independent batch dimensions");
  }
  // Strides from the innermost batch dim outwards.
  BatchLayout out;
  uint64_t a_stride = a_matrix, b_stride = b_matrix;
  out.extents.resize(merged.size());
  out.a_strides.assign(merged.size(), 0);
  out.b_strides.assign(merged.size(), 0);
  for (size_t i = merged.size(); i-- > 0;) {
    out.extents[i] = merged[i].extent;
    if (merged[i].a_present) {
      out.a_strides[i] = a_stride;
      a_stride *= static_cast<uint64_t>(merged[i].extent);
    }
    if (merged[i].b_present) {
      out.b_strides[i] = b_stride;
      b_stride *= static_cast<uint64_t>(merged[i].extent);
    }
  }
  return out;
}

// The rows of the windows in the image as a GemmRowMap: digits (B * nh, nw, wh, ww) (the batch merges into
// the outermost digit, as B * H = B * nh * wh).
GemmRowMap window_row_map(const PlanContext& ctx, const WindowGeometry& w) {
  const std::vector<int64_t> st = w.image_strides();
  GemmRowMap map;
  map.extents = {checked_u32(ctx, w.b * w.nh, "windows"), checked_u32(ctx, w.nw, "windows"),
                 checked_u32(ctx, w.wh, "window rows"), checked_u32(ctx, w.ww, "window columns")};
  map.strides = {checked_u32(ctx, st[1], "window stride"), checked_u32(ctx, st[2], "window stride"),
                 checked_u32(ctx, st[3], "window row stride"),
                 checked_u32(ctx, st[4], "window column stride")};
  return map;
}

// The copy between the image (strided) and the windows packed in partition order; `to_windows` picks the
// direction. Used where the GEMM cannot read or write through a row map.
data_movement::StridedCopy window_copy(const WindowGeometry& w, TensorRef image, TensorRef packed,
                                       bool to_windows) {
  data_movement::StridedCopy copy;
  copy.shape = w.windows();
  const std::vector<int64_t> image_strides = w.image_strides(),
                             packed_strides = data_movement::row_major_strides(copy.shape);
  copy.src_strides = to_windows ? image_strides : packed_strides;
  copy.dst_strides = to_windows ? packed_strides : image_strides;
  copy.src = to_windows ? image : packed;
  copy.dst = to_windows ? packed : image;
  return copy;
}

// wgi.windows_in: the image's windows and A's logical shape (Reshape(Reshape(windows, kWindows), kTokens)).
WindowGeometry resolve_windows_in(const PlanContext& ctx, Shape& a_shape) {
  const Shape& xs = ctx.input(0).shape;
  const std::string attr = kMatMulWindowsInAttribute;
  if (xs.size() != 4)
    ctx.fail(attr + ": the image " + ctx.input_name(0) + " must be [B, H, W, C], got " + shape_to_string(xs));
  for (size_t i : {WindowsInInput::kPartition, WindowsInInput::kWindows, WindowsInInput::kTokens}) {
    if (!ctx.has_input(i)) ctx.fail(attr + " needs input " + std::to_string(i) + ", a Reshape target");
  }
  const std::vector<int64_t> t3 =
      data_movement::known_ints(ctx, WindowsInInput::kPartition, "the window partition's shape");
  const std::optional<Shape> s3 = reshape_result(xs, t3);
  if (!s3 || s3->size() != 6 || (*s3)[0] != xs[0] || (*s3)[1] * (*s3)[2] != xs[1] ||
      (*s3)[3] * (*s3)[4] != xs[2] || (*s3)[5] != xs[3]) {
    ctx.fail(attr + ": the image " + shape_to_string(xs) + " reshaped to " + shape_to_string(t3) +
             " is not [B, H / wh, wh, W / ww, ww, C]: the windows must tile the image exactly");
  }
  const WindowGeometry w{(*s3)[0], (*s3)[1], (*s3)[2], (*s3)[3], (*s3)[4], (*s3)[5]};
  const std::vector<int64_t> t4 =
      data_movement::known_ints(ctx, WindowsInInput::kWindows, "the windows' shape");
  const std::vector<int64_t> t5 =
      data_movement::known_ints(ctx, WindowsInInput::kTokens, "the tokens' shape");
  // The graph's Shape readers of the old A read the Reshapes without the Transpose
  // (graph::read_windows_in_place): the same shape unless a 0 copies a dim the Transpose moved.
  const Shape windows = w.windows();
  for (size_t i : {size_t{2}, size_t{3}}) {
    if (i < t4.size() && t4[i] == 0 && windows[i] != (*s3)[i]) {
      ctx.fail(attr + ": the windows' shape " + shape_to_string(t4) + " copies dim " + std::to_string(i) +
               " with a 0, which the partition's Transpose moved");
    }
  }
  const std::optional<Shape> s4 = reshape_result(windows, t4);
  const std::optional<Shape> s5 = s4 ? reshape_result(*s4, t5) : std::nullopt;
  if (!s5 || s5->size() < 2 || s5->back() != w.c) {
    ctx.fail(attr + ": the windows " + shape_to_string(windows) + " reshaped to " + shape_to_string(t4) +
             " and " + shape_to_string(t5) + " are not rows of C = " + std::to_string(w.c) + " channels");
  }
  a_shape = *s5;
  return w;
}

// wgi.windows_out: the reversed image's windows, the crop and the node's output shape.
struct WindowOutput {
  WindowGeometry windows;
  Shape cropped;  // [B, H', W', C] with H' <= H, W' <= W
  Shape shape;    // the node's output: Reshape(cropped, WindowsOutInput::kOutput)
  bool crop_empty() const { return cropped == windows.image(); }
};

WindowOutput resolve_windows_out(const PlanContext& ctx, const Shape& product) {
  const std::string attr = kMatMulWindowsOutAttribute;
  // The crop's ends are empty where the export has no crop.
  using In = WindowsOutInput;
  for (size_t i : {In::kWindows, In::kWindowsImage, In::kImage, In::kOutput}) {
    if (!ctx.has_input(i)) ctx.fail(attr + " needs input " + std::to_string(i) + ", a Reshape target");
  }
  auto ints = [&](size_t i, const char* what) {
    return ctx.has_input(i) ? data_movement::known_ints(ctx, i, what) : std::vector<int64_t>{};
  };
  const std::vector<int64_t> t8 = ints(In::kWindows, "the windows' shape"),
                             t9 = ints(In::kWindowsImage, "the windows' image shape"),
                             t10 = ints(In::kImage, "the image's shape"),
                             end_h = ints(In::kCropEndH, "the crop's end in H"),
                             end_w = ints(In::kCropEndW, "the crop's end in W"),
                             t11 = ints(In::kOutput, "the output's shape");
  const std::optional<Shape> s8 = reshape_result(product, t8);
  const std::optional<Shape> s9 = s8 ? reshape_result(*s8, t9) : std::nullopt;
  if (!s9 || s9->size() != 6 || s9->back() != product.back()) {
    ctx.fail(attr + ": the product " + shape_to_string(product) + " reshaped to " + shape_to_string(t8) +
             " and " + shape_to_string(t9) + " is not the windows [B, H / wh, W / ww, wh, ww, N]");
  }
  WindowOutput out;
  out.windows = {(*s9)[0], (*s9)[1], (*s9)[3], (*s9)[2], (*s9)[4], (*s9)[5]};
  const WindowGeometry& w = out.windows;
  const std::optional<Shape> s10 = reshape_result({w.b, w.nh, w.wh, w.nw, w.ww, w.c}, t10);
  if (!s10 || *s10 != w.image()) {
    ctx.fail(attr + ": the reversed windows reshaped to " + shape_to_string(t10) + " are not the image " +
             shape_to_string(w.image()) + ": the windows must tile the image exactly");
  }
  // Slice's end: negative from the end, clamped to the dim.
  auto crop = [&](const std::vector<int64_t>& end, int64_t dim, const char* what) {
    if (end.empty()) return dim;  // no crop
    if (end.size() != 1) ctx.fail(attr + ": the crop's end in " + what + " must be one value");
    const int64_t e = end[0] < 0 ? end[0] + dim : end[0];
    return std::clamp<int64_t>(e, 0, dim);
  };
  out.cropped = {w.b, crop(end_h, w.nh * w.wh, "H"), crop(end_w, w.nw * w.ww, "W"), w.c};
  const std::optional<Shape> s11 = reshape_result(out.cropped, t11);
  if (!s11) {
    ctx.fail(attr + ": the cropped image " + shape_to_string(out.cropped) + " cannot be reshaped to " +
             shape_to_string(t11));
  }
  out.shape = *s11;
  return out;
}

// ---- validate ----

// The product's sizes: C [batch..., M, N] = A [batch..., M, K] B [batch..., K, N], the batch broadcast.
struct GemmShapes {
  int64_t m = 0, n = 0, k = 0;
  BatchLayout batch;
  Shape out_shape;  // MatMul's numpy shape (rank-1 operands' dims dropped); Gemm's [M, N]
};

GemmShapes gemm_shapes(const PlanContext& ctx, const GemmSpec& spec) {
  const TensorDesc& a = ctx.input(spec.a_input);
  const TensorDesc& b = ctx.input(spec.b_input);
  for (size_t i : {spec.a_input, spec.b_input}) {
    // A constant float16 B is read packed by the kernels (b_f16; register_linear_ops); any other float16
    // operand arrives here as float32 (ops/float16.h).
    const bool packed_b = i == spec.b_input && ctx.input(i).dtype == DType::Float16 && ctx.constant(i);
    if (ctx.input(i).dtype != DType::Float32 && !packed_b) {
      ctx.fail(ctx.input_name(i) + " has type " + std::string(dtype_name(ctx.input(i).dtype)) +
               "; wgi runs " + ctx.node.op_type + " on float32 and float16");
    }
  }
  Shape a_shape = spec.a_shape.value_or(a.shape), b_shape = b.shape;
  bool drop_m = false, drop_n = false;
  if (spec.matmul_semantics) {
    if (a_shape.empty() || b_shape.empty()) ctx.fail("MatMul inputs must have rank >= 1");
    if (a_shape.size() == 1) {
      a_shape.insert(a_shape.begin(), 1);
      drop_m = true;
    }
    if (b_shape.size() == 1) {
      b_shape.push_back(1);
      drop_n = true;
    }
  } else if (a_shape.size() != 2 || b_shape.size() != 2) {
    ctx.fail("Gemm needs rank-2 A and B, got A " + shape_to_string(a_shape) + " and B " +
             shape_to_string(b_shape));
  }
  const size_t ar = a_shape.size(), br = b_shape.size();
  const int64_t M = spec.trans_a ? a_shape[ar - 1] : a_shape[ar - 2];
  const int64_t K = spec.trans_a ? a_shape[ar - 2] : a_shape[ar - 1];
  const int64_t Kb = spec.trans_b ? b_shape[br - 1] : b_shape[br - 2];
  const int64_t N = spec.trans_b ? b_shape[br - 2] : b_shape[br - 1];
  if (K != Kb) {
    ctx.fail("inner dimensions differ: A " + shape_to_string(a.shape) +
             (spec.trans_a ? " (transposed)" : "") + " has K = " + std::to_string(K) + ", B " +
             shape_to_string(b.shape) + (spec.trans_b ? " (transposed)" : "") +
             " has K = " + std::to_string(Kb));
  }
  Shape a_batch(a_shape.begin(), a_shape.end() - 2), b_batch(b_shape.begin(), b_shape.end() - 2);
  GemmShapes g;
  g.m = M;
  g.n = N;
  g.k = K;
  g.batch =
      broadcast_batch(ctx, a_batch, b_batch, static_cast<uint64_t>(M * K), static_cast<uint64_t>(K * N));
  Shape& out_shape = g.out_shape;
  if (spec.matmul_semantics) {
    // The numpy output shape, from the unmerged broadcast of the batch dims.
    const size_t rank = std::max(a_batch.size(), b_batch.size());
    for (size_t i = 0; i < rank; ++i) {
      auto at = [rank, i](const Shape& s) { return i < rank - s.size() ? 1 : s[i - (rank - s.size())]; };
      out_shape.push_back(std::max(at(a_batch), at(b_batch)));
    }
    if (!drop_m) out_shape.push_back(M);
    if (!drop_n) out_shape.push_back(N);
  } else {
    out_shape = {M, N};
  }
  return g;
}

// ---- choose ----

// A weight-like B (no batch of its own) with a plain A: A's batch folded into M, one large GEMM.
bool fold_batch_into_m(const GemmSpec& spec, const BatchLayout& batch) {
  int64_t batch_count = 1;
  for (int64_t d : batch.extents) batch_count *= d;
  const bool b_has_batch =
      std::any_of(batch.b_strides.begin(), batch.b_strides.end(), [](uint64_t s) { return s; });
  return !spec.trans_a && !b_has_batch && batch_count > 1;
}

// C / bias, broadcast to [M, N] (`batch_folded`: A's batch is folded into M, fold_batch_into_m).
struct GemmBias {
  bool present = false;
  uint32_t stride_m = 0, stride_n = 0;
};

GemmBias gemm_bias(const PlanContext& ctx, const GemmSpec& spec, int64_t M, int64_t N, bool batch_folded) {
  GemmBias bias;
  bias.present = spec.c_input && ctx.has_input(*spec.c_input);
  if (!bias.present) return bias;
  const TensorDesc& c = ctx.input(*spec.c_input);
  if (c.dtype != DType::Float32)
    ctx.fail("C has type " + std::string(dtype_name(c.dtype)) + "; expected float32");
  const Shape& cs = c.shape;
  if (cs.size() > 2)
    ctx.fail("C " + shape_to_string(cs) + " must broadcast to [M, N] = [" + std::to_string(M) + ", " +
             std::to_string(N) + "]");
  int64_t c_rows = cs.size() == 2 ? cs[0] : 1;
  int64_t c_cols = cs.empty() ? 1 : cs.back();
  if ((c_rows != 1 && c_rows != M) || (c_cols != 1 && c_cols != N)) {
    ctx.fail("C " + shape_to_string(cs) + " does not broadcast to [M, N] = [" + std::to_string(M) + ", " +
             std::to_string(N) + "]");
  }
  if (batch_folded && c_rows != 1) ctx.fail("a per-row C cannot be combined with batched A");
  bias.stride_m = c_rows == 1 ? 0 : checked_u32(ctx, c_cols, "C columns");
  bias.stride_n = c_cols == 1 ? 0 : 1;
  return bias;
}

// ---- build ----

// The GEMM's rows and batches: A's batch folded into M where fold_batch_into_m allows (the batch layout is
// then cleared).
struct GemmRows {
  int64_t m = 0;
  int64_t batch_count = 1;
};

GemmRows fold_rows(const GemmSpec& spec, GemmShapes& shapes) {
  BatchLayout& batch = shapes.batch;
  GemmRows rows{.m = shapes.m, .batch_count = 1};
  for (int64_t d : batch.extents) rows.batch_count *= d;
  if (fold_batch_into_m(spec, batch)) {
    rows.m = shapes.m * rows.batch_count;
    rows.batch_count = 1;
    batch.extents.clear();
    batch.a_strides.clear();
    batch.b_strides.clear();
  }
  return rows;
}

// The launch's sizes, operands, batch strides and epilogue; B as planned before the kernel is known (a
// constant as [N, K], prepack_constant_b then lays it out for the kernel).
GemmLaunchSpec gemm_launch_spec(const PlanContext& ctx, const GemmSpec& spec, const GemmShapes& shapes,
                                const GemmRows& rows, bool residual) {
  const TensorDesc& a = ctx.input(spec.a_input);
  const TensorDesc& b = ctx.input(spec.b_input);
  const int64_t M = shapes.m, N = shapes.n, K = shapes.k;
  const BatchLayout& batch = shapes.batch;
  const Shape& out_shape = shapes.out_shape;
  // B: a constant is prepacked (below, once the kernel is known; planned as [N, K]); a runtime B is read as
  // it is.
  const Tensor* b_constant = ctx.constant(spec.b_input);
  const bool b_nk = b_constant ? true : spec.trans_b;
  const TensorRef b_ref =
      b_constant ? TensorRef::constant(0) : TensorRef::input(static_cast<uint32_t>(spec.b_input));

  const GemmBias bias = gemm_bias(ctx, spec, M, N, rows.m != M);

  FusedActivation activation = FusedActivation::from_node(ctx.node);
  const uint32_t m32 = checked_u32(ctx, rows.m, "M");
  const uint32_t n32 = checked_u32(ctx, N, "N");
  const uint32_t k32 = checked_u32(ctx, K, "K");
  checked_u32(ctx, element_count(out_shape), "output elements");
  checked_u32(ctx, element_count(a.shape), "A elements");
  checked_u32(ctx, element_count(b.shape), "B elements");

  std::array<uint32_t, 4> dims = {1, 1, 1, 1}, a_strides = {0, 0, 0, 0}, b_strides = {0, 0, 0, 0};
  const size_t nb = batch.extents.size();
  for (size_t i = 0; i < nb; ++i) {
    dims[4 - nb + i] = checked_u32(ctx, batch.extents[i], "batch extent");
    a_strides[4 - nb + i] = checked_u32(ctx, static_cast<int64_t>(batch.a_strides[i]), "A batch stride");
    b_strides[4 - nb + i] = checked_u32(ctx, static_cast<int64_t>(batch.b_strides[i]), "B batch stride");
  }

  GemmLaunchSpec g;
  g.m = m32;
  g.n = n32;
  g.k = k32;
  g.batch = static_cast<uint32_t>(rows.batch_count);
  g.batch_dims = dims;
  g.a_batch_strides = a_strides;
  g.b_batch_strides = b_strides;
  g.a_km = spec.trans_a;
  g.b_nk = b_nk;
  g.kernel = spec.kernel;  // make_gemm_launch says why if a forced one cannot run this product
  g.a = TensorRef::input(static_cast<uint32_t>(spec.a_input));
  g.b = b_ref;
  g.b_f16 = b.dtype == DType::Float16;
  g.out = TensorRef::output(0);
  if (bias.present) g.bias = TensorRef::input(static_cast<uint32_t>(*spec.c_input));
  // R has the output's shape, so its row-major index is the kernels' [batch][M][N] (batch folded into M or
  // not, rank-1 operands' dropped dims included).
  if (residual) g.residual = TensorRef::input(kFusedResidualInput);
  g.bias_stride_m = bias.stride_m;
  g.bias_stride_n = bias.stride_n;
  g.alpha = spec.alpha;
  g.beta = spec.beta;
  g.activation = activation;
  return g;
}

// Window partition (A) and reverse (output) through row maps: the fast kernels' views, set before B's
// layout is chosen for the kernel that runs them. The row maps address the whole product's rows, so A's
// batch must be folded into M (a weight B, as the exports' qkv and proj). Device-capability fallback:
// where the device cannot run the fast kernels (gemm_views_supported), the plan copies the windows packed
// and back itself, as the export's Transposes did; likewise around a crop that is not empty (a padded
// image) or a residual that broadcasts.
void set_window_row_maps(const PlanContext& ctx, const GemmSpec& spec, const GemmRows& rows,
                         const std::optional<WindowOutput>& windows_out, bool residual, GemmLaunchSpec& g) {
  const bool window_maps = gemm_views_supported(ctx.caps) && rows.batch_count == 1 && !spec.trans_a;
  if (spec.a_windows && window_maps) g.a_row_map = window_row_map(ctx, *spec.a_windows);
  if (windows_out && window_maps && windows_out->crop_empty() &&
      (!residual || ctx.input(kFusedResidualInput).shape == windows_out->shape)) {
    // The reversed image is the output (the final Reshape moves nothing); R, of its shape, is read where
    // each element is written.
    g.out_row_map = window_row_map(ctx, windows_out->windows);
  }
}

// A constant B laid out as the chosen kernel reads it: [K, N] for the 128x128 kernel (file comment), else
// [N, K]. A session computing in float16 (gpu::Capabilities::f16_compute) gives the kernels the matrix path
// leaves (the GEMV of M <= 8: decoder steps' products, which stream their weights) a float32 weight as
// float16, converted once here and read packed (B_F16): half the bytes, the rounding the matrix path's
// weights get too.
void prepack_constant_b(const PlanContext& ctx, const GemmSpec& spec, const GemmShapes& shapes,
                        GemmLaunchSpec& g, OpPlan& plan) {
  const Tensor* b_constant = ctx.constant(spec.b_input);
  const bool to_half = ctx.caps.f16_compute && b_constant->dtype() == DType::Float32;
  if (to_half) g.b_f16 = true;
  // Errors of a forced choice are left to append_gemm_launches, which reports them with the node.
  g.b_prepacked = true;
  const bool want_nk = prepack_b_as_nk(ctx, g);
  if (want_nk == spec.trans_b && !to_half) {
    // Stored as the kernel wants it (nn.Linear's [N, K] weight read in place,
    // graph::read_transposed_weights): bound as the weight itself, no prepacked copy on the host or on the
    // device.
    g.b = TensorRef::input(static_cast<uint32_t>(spec.b_input));
  } else {
    Tensor packed = prepack_b(*b_constant, shapes.k, shapes.n, spec.trans_b, want_nk);
    plan.constants.push_back(to_half ? narrow_to_float16(packed) : std::move(packed));
  }
  g.b_nk = want_nk;
}

// The window reverse without an output row map: the product packed in a scratch buffer, reversed into the
// image, cropped, then R added.
void append_reversed_windows(const PlanContext& ctx, const WindowOutput& windows_out, const Shape& out_shape,
                             const Shape& sum_shape, bool residual, GemmLaunchSpec& g, OpPlan& plan) {
  const FusedActivation activation = g.activation;
  const WindowGeometry& w = windows_out.windows;
  auto scratch = [&plan](const Shape& shape) {
    return plan.add_scratch(static_cast<uint64_t>(std::max<int64_t>(1, element_count(shape))) *
                            sizeof(float));
  };
  const TensorRef product = scratch(out_shape);
  g.out = product;
  if (residual) {
    g.residual.reset();
    g.activation = FusedActivation();  // after the residual, in the add
  }
  append_gemm_launches(ctx, g, plan);
  const bool crop = !windows_out.crop_empty();
  const TensorRef image = crop || residual ? scratch(w.image()) : TensorRef::output(0);
  data_movement::add_copy_launches(ctx, plan, window_copy(w, image, product, false));
  TensorRef cropped = image;
  if (crop) {
    cropped = residual ? scratch(windows_out.cropped) : TensorRef::output(0);
    data_movement::StridedCopy copy = data_movement::gather_view(
        windows_out.cropped, {w.nh * w.wh * w.nw * w.ww * w.c, w.nw * w.ww * w.c, w.c, 1});
    copy.src = image;
    copy.dst = cropped;
    data_movement::add_copy_launches(ctx, plan, std::move(copy));
  }
  if (residual) {
    plan.launches.push_back(broadcast_add_launch(ctx, sum_shape, windows_out.shape, cropped,
                                                 ctx.input(kFusedResidualInput).shape,
                                                 TensorRef::input(kFusedResidualInput), activation));
  }
}

// The fused LayerNormalization as a launch of its own into `normalized`, which the product then reads as A.
void normalize_a_first(const PlanContext& ctx, const FusedLayerNorm& ln, TensorRef normalized,
                       GemmLaunchSpec& g, OpPlan& plan) {
  append_fused_layer_norm(ctx, ln, element_count(ctx.input(0).shape) / std::max<int64_t>(1, g.k), g.k, g.a,
                          normalized, plan);
  g.a = normalized;
  g.a_layer_norm.reset();
}

OpPlan plan_gemm(const PlanContext& ctx, const GemmSpec& spec) {
  GemmShapes shapes = gemm_shapes(ctx, spec);
  const Shape& out_shape = shapes.out_shape;

  const bool residual = has_fused_residual(ctx);
  // The window reverse: the node's output is the product reversed into the image, cropped and reshaped.
  std::optional<WindowOutput> windows_out;
  if (spec.out_windows) windows_out = resolve_windows_out(ctx, out_shape);
  if (residual && !windows_out && ctx.input(kFusedResidualInput).shape != out_shape) {
    return plan_residual_fallback(ctx, out_shape,
                                  [spec](const PlanContext& c) { return plan_gemm(c, spec); });
  }

  const GemmRows rows = fold_rows(spec, shapes);

  OpPlan plan;
  if (!spec.split_columns.empty() && (windows_out || spec.a_windows))
    ctx.fail(std::string(kSplitColumnsAttribute) + " does not go with the window attributes");
  const std::optional<GemmLaunchSpec::ColumnSplit> split =
      plan_column_split(ctx, spec.split_columns, windows_out ? windows_out->shape : out_shape, residual,
                        plan.outputs, spec.layer_norm_epsilon ? 1 : 0);
  // With a residual, the window reverse's output is the Add's: R may broadcast to a larger shape.
  Shape sum_shape = split ? out_shape : plan.outputs[0].shape;
  if (windows_out && residual) {
    sum_shape = residual_sum_shape(ctx, sum_shape);
    plan.outputs[0].shape = sum_shape;
  }
  // A fused LayerNormalization's output (its other readers'): the last output.
  std::optional<uint32_t> normalized_output;
  if (spec.layer_norm_epsilon) {
    normalized_output = static_cast<uint32_t>(plan.outputs.size());
    plan.outputs.push_back({DType::Float32, ctx.input(spec.a_input).shape});
  }
  if (element_count(out_shape) == 0 || element_count(sum_shape) == 0) return plan;

  GemmLaunchSpec g = gemm_launch_spec(ctx, spec, shapes, rows, residual);
  std::optional<FusedLayerNorm> layer_norm;
  TensorRef normalized;
  if (normalized_output) {
    layer_norm = read_fused_layer_norm(ctx, shapes.k, *spec.layer_norm_epsilon, LayerNormInput::kScale,
                                       LayerNormInput::kBias);
    normalized = TensorRef::output(*normalized_output);
    g.a_layer_norm =
        GemmLaunchSpec::LayerNormA{.epsilon = layer_norm->epsilon, .normalized = normalized, .params = {}};
  }
  g.column_split = split;
  set_window_row_maps(ctx, spec, rows, windows_out, residual, g);
  // Computing in float16 (SessionOptions::precision): a constant B's product on subgroup matrices.
  // Window partitions and reverses only through row maps (A read through the partition, the output written
  // through the reverse), not the copies of their fallback.
  if (const Tensor* b = ctx.constant(spec.b_input); b && (!windows_out || g.out_row_map) &&
                                                    (!spec.a_windows || g.a_row_map) &&
                                                    matrix_f16_gemm_problem(g, ctx.caps).empty()) {
    GemmLaunchSpec whole = g;  // a split product written whole, then copied into its blocks
    whole.column_split.reset();
    const uint64_t rows_total = uint64_t{g.m} * g.batch;
    if (split) whole.out = plan.add_scratch(rows_total * g.n * sizeof(float));
    if (layer_norm) normalize_a_first(ctx, *layer_norm, normalized, whole, plan);
    append_matrix_f16_gemm(ctx, whole, *b, spec.trans_b, spec.c_input ? ctx.constant(*spec.c_input) : nullptr,
                           plan);
    if (split)
      plan.launches.push_back(
          split_columns_launch(ctx, *split, static_cast<uint32_t>(rows_total), whole.out));
    return plan;
  }
  if (ctx.constant(spec.b_input)) prepack_constant_b(ctx, spec, shapes, g, plan);
  if (layer_norm) {
    if (gemv_normalizes_a(ctx, g)) {
      // Scales and biases as one constant: a binding fewer (a merged q, k, v product with its bias and three
      // outputs uses the eight a shader may have).
      g.a_layer_norm->params = TensorRef::constant(static_cast<uint32_t>(plan.constants.size()));
      plan.constants.push_back(fused_layer_norm_params(ctx, *layer_norm, shapes.k));
    } else {
      normalize_a_first(ctx, *layer_norm, normalized, g, plan);
    }
  }

  if (spec.a_windows && !g.a_row_map) {
    // The partition copied packed (set_window_row_maps' fallback).
    const WindowGeometry& w = *spec.a_windows;
    const TensorRef packed =
        plan.add_scratch(static_cast<uint64_t>(element_count(w.windows())) * sizeof(float));
    data_movement::add_copy_launches(ctx, plan, window_copy(w, g.a, packed, true));
    g.a = packed;
  }
  if (!windows_out || g.out_row_map) {
    append_gemm_launches(ctx, g, plan);
    return plan;
  }
  append_reversed_windows(ctx, *windows_out, out_shape, sum_shape, residual, g, plan);
  return plan;
}

// The kernel wgi.kernel forces, Auto where none is.
GemmKernel forced_kernel(const PlanContext& ctx, const LinearAttributes& internal) {
  if (internal.kernel.empty()) return GemmKernel::Auto;
  const std::optional<GemmKernel> named = gemm_kernel_from_name(internal.kernel);
  if (!named) {
    ctx.fail("unknown " + std::string(kForcedKernelAttribute) + " '" + internal.kernel + "' (expected " +
             gemm_kernel_names() + ")");
  }
  return *named;
}

OpPlan plan_matmul(const PlanContext& ctx) {
  const LinearAttributes internal = read_linear_attributes(ctx.node);
  GemmSpec spec;
  spec.matmul_semantics = true;
  spec.kernel = forced_kernel(ctx, internal);
  // A third input is the bias of a fused MatMul + Add (graph fusion pass), broadcast over rows; it may be
  // absent when a fourth, a fused residual, is given.
  if (ctx.input_count() > LinearInput::kBias) spec.c_input = LinearInput::kBias;
  spec.trans_b = internal.trans_b;
  if (spec.trans_b && ctx.input(LinearInput::kB).shape.size() < 2)
    ctx.fail(std::string(kMatMulTransBAttribute) + " needs B of rank >= 2");
  const bool windows_in = internal.windows_in;
  spec.out_windows = internal.windows_out;
  spec.split_columns = internal.split_columns;
  spec.layer_norm_epsilon = internal.layer_norm_epsilon;
  if (spec.layer_norm_epsilon && (windows_in || spec.out_windows)) {
    ctx.fail(std::string(kMatMulLayerNormEpsilonAttribute) + " does not go with the window attributes");
  }
  if (windows_in && spec.out_windows) {
    ctx.fail(std::string(kMatMulWindowsInAttribute) + " and " + kMatMulWindowsOutAttribute +
             " share their inputs; a MatMul takes one");
  }
  if (windows_in) {
    Shape a_shape;
    spec.a_windows = resolve_windows_in(ctx, a_shape);
    spec.a_shape = a_shape;
  }
  return plan_gemm(ctx, spec);
}

OpPlan plan_onnx_gemm(const PlanContext& ctx) {
  const LinearAttributes internal = read_linear_attributes(ctx.node);
  if (internal.trans_b || internal.windows_in || internal.windows_out || !internal.split_columns.empty()) {
    ctx.fail(std::string(kMatMulTransBAttribute) + ", " + kMatMulWindowsInAttribute + ", " +
             kMatMulWindowsOutAttribute + " and " + kSplitColumnsAttribute +
             " apply to MatMul only (Gemm has transA and transB)");
  }
  GemmSpec spec;
  spec.kernel = forced_kernel(ctx, internal);
  const auto& attrs = ctx.node.attributes;
  spec.trans_a = attrs.get_int("transA", 0) != 0;
  spec.trans_b = attrs.get_int("transB", 0) != 0;
  spec.alpha = attrs.get_float("alpha", 1.0f);
  spec.beta = attrs.get_float("beta", 1.0f);
  if (ctx.node.opset < 11 && !ctx.has_input(2)) ctx.fail("input C is required before opset 11");
  spec.c_input = LinearInput::kBias;
  return plan_gemm(ctx, spec);
}

// float16: a constant B (a weight) stays float16, prepacked and read packed by the GEMM kernels (half the
// bytes of float32 on the device, unpacked while loading, f32 accumulation); A, C and a runtime B go through
// float32 scratch buffers, and a float16 output is packed from float32 (ops/float16.h).
OpHandler linear_handler(OpPlan (*plan)(const PlanContext&)) {
  OpHandler handler;
  handler.plan = [plan](const PlanContext& ctx) {
    const bool packed_b = ctx.has_input(1) && ctx.input(1).dtype == DType::Float16 && ctx.constant(1);
    return plan_with_float16(ctx, plan, packed_b ? 1u << 1 : 0u);
  };
  handler.plans_float16 = true;
  return handler;
}

}  // namespace

void register_linear_ops(OpRegistry& registry) {
  registry.add("", "MatMul", 1, kLatestOpset, linear_handler(plan_matmul));
  // Gemm 6 and older had a `broadcast` attribute; 7+ broadcasts C unidirectionally, which is what we
  // implement.
  registry.add("", "Gemm", 7, kLatestOpset, linear_handler(plan_onnx_gemm));
}

}  // namespace wgi::ops
