// Linear algebra: ONNX MatMul and Gemm (and so the seeds' linear, which is Gemm with transB = 1 and a bias)
// through one planner and one GEMM kernel family (src/kernels/linear/, chosen in gemm_launch.cpp: GEMV for
// M <= 8, 128x128 and 64x64 tiles for large products, the seeds' 32x32 kernels for the rest).
//
// A constant B (a weight) is prepacked once into [batch..., N, K], K contiguous: the layout GEMV streams
// (each column's K run is contiguous), the seeds' vec4 kernel needs, and the 64x64 fast kernel reads with
// vec4 loads along K. The 128x128 kernel gets [batch..., K, N] instead (N % 4 == 0): stored as read, no
// transposing scalar stores into workgroup memory; measured on the H200, 4096^3 at 35.0 TFLOP/s against
// 32.8 from [N, K] (docs/performance.md). A constant already stored in the wanted layout (nn.Linear's [N, K]
// weight read in place) is bound as it is, without a copy. A runtime B is read as it is ([K, N] or
// transposed).
//
// The internal attribute "wgi.kernel" = "tiled" | "vec4" | "fast128" | "fast64" | "gemv" forces a kernel
// (tests, tuning); a forced kernel that cannot run the problem is an error, never a silent fallback. The
// GEMM family's tuning attributes (gemm_launch.h) apply too.
//
// A residual fused by graph::fuse_residual_adds (input 3, ops/fused_residual.h) is added in the epilogue of
// every kernel (the split-K reduction's for split products).
#include <algorithm>

#include "gpu/uniform.h"
#include "kernels/wgsl_library.h"
#include "ops/families.h"
#include "ops/fused_activation.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

constexpr size_t kMaxBatchDims = 4;

struct GemmSpec {
  size_t a_input = 0;
  size_t b_input = 1;
  std::optional<size_t> c_input;  // bias / C
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 1.0f;
  bool matmul_semantics = false;  // numpy-style ranks and batch broadcasting (MatMul) vs 2-D only (Gemm)
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

OpPlan plan_gemm(const PlanContext& ctx, const GemmSpec& spec) {
  const TensorDesc& a = ctx.input(spec.a_input);
  const TensorDesc& b = ctx.input(spec.b_input);
  for (size_t i : {spec.a_input, spec.b_input}) {
    if (ctx.input(i).dtype != DType::Float32) {
      ctx.fail(ctx.input_name(i) + " has type " + std::string(dtype_name(ctx.input(i).dtype)) +
               "; wgi runs " + ctx.node.op_type + " on float32");
    }
  }
  Shape a_shape = a.shape, b_shape = b.shape;
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
  BatchLayout batch =
      broadcast_batch(ctx, a_batch, b_batch, static_cast<uint64_t>(M * K), static_cast<uint64_t>(K * N));

  Shape out_shape;
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

  const bool residual = has_fused_residual(ctx);
  if (residual && ctx.input(kFusedResidualInput).shape != out_shape) {
    return plan_residual_fallback(ctx, out_shape,
                                  [spec](const PlanContext& c) { return plan_gemm(c, spec); });
  }

  // A weight-like B (no batch of its own) with a plain A: fold A's batch into M, one large GEMM.
  int64_t gemm_m = M;
  int64_t batch_count = 1;
  for (int64_t d : batch.extents) batch_count *= d;
  bool b_has_batch =
      std::any_of(batch.b_strides.begin(), batch.b_strides.end(), [](uint64_t s) { return s; });
  if (!spec.trans_a && !b_has_batch && batch_count > 1) {
    gemm_m = M * batch_count;
    batch_count = 1;
    batch.extents.clear();
    batch.a_strides.clear();
    batch.b_strides.clear();
  }

  OpPlan plan;
  plan.outputs.push_back({DType::Float32, out_shape});
  if (element_count(out_shape) == 0) return plan;

  // B: a constant is prepacked (below, once the kernel is known; planned as [N, K]); a runtime B is read as
  // it is.
  const Tensor* b_constant = ctx.constant(spec.b_input);
  const bool b_nk = b_constant ? true : spec.trans_b;
  const TensorRef b_ref =
      b_constant ? TensorRef::constant(0) : TensorRef::input(static_cast<uint32_t>(spec.b_input));

  // C / bias, broadcast to [M, N].
  uint32_t bias_stride_m = 0, bias_stride_n = 0;
  bool has_bias = spec.c_input && ctx.has_input(*spec.c_input);
  if (has_bias) {
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
    if (gemm_m != M && c_rows != 1) ctx.fail("a per-row C cannot be combined with batched A");
    bias_stride_m = c_rows == 1 ? 0 : checked_u32(ctx, c_cols, "C columns");
    bias_stride_n = c_cols == 1 ? 0 : 1;
  }

  // "wgi.kernel" forces a GEMM kernel; make_gemm_launch says why if it cannot run this product.
  GemmKernel kernel = GemmKernel::Auto;
  const std::string forced = ctx.node.attributes.get_string("wgi.kernel", "");
  if (!forced.empty()) {
    auto named = gemm_kernel_from_name(forced);
    if (!named) ctx.fail("unknown wgi.kernel '" + forced + "' (expected " + gemm_kernel_names() + ")");
    kernel = *named;
  }

  FusedActivation activation = FusedActivation::from_node(ctx.node);
  const uint32_t m32 = checked_u32(ctx, gemm_m, "M");
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
  g.batch = static_cast<uint32_t>(batch_count);
  g.batch_dims = dims;
  g.a_batch_strides = a_strides;
  g.b_batch_strides = b_strides;
  g.a_km = spec.trans_a;
  g.b_nk = b_nk;
  g.kernel = kernel;
  g.a = TensorRef::input(static_cast<uint32_t>(spec.a_input));
  g.b = b_ref;
  g.out = TensorRef::output(0);
  if (has_bias) g.bias = TensorRef::input(static_cast<uint32_t>(*spec.c_input));
  // R has the output's shape, so its row-major index is the kernels' [batch][M][N] (batch folded into M or
  // not, rank-1 operands' dropped dims included).
  if (residual) g.residual = TensorRef::input(kFusedResidualInput);
  g.bias_stride_m = bias_stride_m;
  g.bias_stride_n = bias_stride_n;
  g.alpha = spec.alpha;
  g.beta = spec.beta;
  g.activation = activation;
  if (b_constant) {
    // [K, N] for the 128x128 kernel (file comment); errors of a forced choice are left to
    // append_gemm_launches, which reports them with the node.
    g.b_prepacked = true;
    const bool want_nk = prepack_b_as_nk(ctx, g);
    if (want_nk == spec.trans_b) {
      // Stored as the kernel wants it (nn.Linear's [N, K] weight read in place,
      // graph::read_transposed_weights): bound as the weight itself, no prepacked copy on the host or on the
      // device.
      g.b = TensorRef::input(static_cast<uint32_t>(spec.b_input));
    } else {
      plan.constants.push_back(prepack_b(*b_constant, K, N, spec.trans_b, want_nk));
    }
    g.b_nk = want_nk;
  }
  append_gemm_launches(ctx, g, plan);
  return plan;
}

OpPlan plan_matmul(const PlanContext& ctx) {
  GemmSpec spec;
  spec.matmul_semantics = true;
  // A third input is the bias of a fused MatMul + Add (graph fusion pass), broadcast over rows; it may be
  // absent when a fourth, a fused residual, is given.
  if (ctx.input_count() > 2) spec.c_input = 2;
  spec.trans_b = ctx.node.attributes.get_int(kMatMulTransBAttribute, 0) != 0;
  if (spec.trans_b && ctx.input(1).shape.size() < 2)
    ctx.fail(std::string(kMatMulTransBAttribute) + " needs B of rank >= 2");
  return plan_gemm(ctx, spec);
}

OpPlan plan_onnx_gemm(const PlanContext& ctx) {
  GemmSpec spec;
  const auto& attrs = ctx.node.attributes;
  spec.trans_a = attrs.get_int("transA", 0) != 0;
  spec.trans_b = attrs.get_int("transB", 0) != 0;
  spec.alpha = attrs.get_float("alpha", 1.0f);
  spec.beta = attrs.get_float("beta", 1.0f);
  if (ctx.node.opset < 11 && !ctx.has_input(2)) ctx.fail("input C is required before opset 11");
  spec.c_input = 2;
  return plan_gemm(ctx, spec);
}

}  // namespace

void register_linear_ops(OpRegistry& registry) {
  registry.add("", "MatMul", 1, kLatestOpset, {plan_matmul, nullptr});
  // Gemm 6 and older had a `broadcast` attribute; 7+ broadcasts C unidirectionally, which is what we
  // implement.
  registry.add("", "Gemm", 7, kLatestOpset, {plan_onnx_gemm, nullptr});
}

}  // namespace wgi::ops
