// Fused attention: wgi's internal op "Attention" (domain "wgi"), which the graph pass fuse_attention makes
// out of the pattern exporters write for softmax(Q K^T * scale + mask) V:
//   MatMul(Q, K^T or Transpose(K)) -> [Mul | Div by a constant scalar] -> [Add mask] -> Softmax(last axis)
//   -> MatMul(., V)
// Inputs: Q, K (or K^T with k_transposed = 1), V, optional additive mask, optional scale tensor (one element,
// known when planning: exports often compute head_dim ** -0.5 from Shape). Attributes: scale (float),
// scale_divides (int: the scale tensor divides instead of multiplies), k_transposed (int). Their names and
// the input positions below: AttentionAttributes and AttentionInput in internal_ops.h.
//
// Layouts (set by the graph pass read_packed_qkv / write_attention_transposed, see src/graph/passes.h):
//   qkv_packed = 1   inputs 0, 1 and 2 are one tensor X (the packed projection, [B, N, 3 * heads * D]) and
//                    input 5 is `target` (int64, known when planning) such that Q, K and V are
//                    Gather(Transpose(Reshape(X, target), perm [2, 0, 3, 1, 4]), qkv_indices[i], axis 0):
//                    with Reshape(X, target) = [A0, A1, A2, A3, A4] each is the [A0, A3, A1, A4] view of X
//                    at element offset index * A3 * A4, with row (token) stride A2 * A3 * A4. qkv_indices
//                    (ints, 3; negative ones count from A2) say which of the A2 slices Q, K and V are.
//   heads_views = [q, k, v]   (read_split_heads) where a flag is 1, that input is X [B, N, heads * D] and
//                    input 6 + i its Reshape target [B, N, heads, D]: the operand is the [B, heads, N, D]
//                    view of X (row stride heads * D), as Transpose(perm [0, 2, 1, 3]) would have made it.
//   qkv_transposed = [q, k, v]   (with qkv_packed; DaViT's channel attention) where a flag is 1, that
//                    operand is that view transposed over its last two dims, [A0, A3, A4, A1] (q^T, v^T).
//   transpose_output = 1   the output [B0, B1, Tq, Dv] (two batch dims) is written as its Transpose with
//                    perm [0, 2, 1, 3], i.e. [B0, Tq, B1, Dv] (heads back beside each other per token).
//   output_perm = perm   the output is written as its Transpose with `perm` (any permutation; the graph pass
//                    sets [0, 3, 1, 2]: the channel attention's [B, heads, D, N] written [B, N, heads, D]).
// The strides follow from the concrete shapes when planning. The fused kernels read and write views whose
// last dim is contiguous in place (attention_common.wgsl) and copy the others (a transposed operand into a
// contiguous scratch buffer first, the output from one last). The three-launch plan's fast GEMMs read any
// view that is contiguous along one of its matrix dims through strides and write the output in place, as
// rows of P V or, where Tq is the output's contiguous dim, as rows of out^T = V^T P^T; on devices without the
// fast GEMM kernels (compat limits) it copies strided operands and the output as the fused kernels do.
//
// Three plans. The fused kernels never write the score matrix: attention/attention.wgsl (one workgroup per
// query row, online softmax; V's last dim at most kMaxValueDim) and, for many query rows with heads of at
// most 64 (window attention, vision transformers), attention/attention_tiled.wgsl (one query row per
// invocation, keys and values staged in workgroup memory). Beyond that the scores are the small part: DaViT's
// channel attention attends over the C/heads channels with the tokens (H*W, 36864 at 768x768) as both the
// contracted dim and V's last dim, so its score matrix is [C/heads, C/heads]. There the plan is the
// exporter's own sequence as three launches: the fast GEMM for scale * Q K^T (+ mask) into a scratch buffer
// (split over the tokens), Softmax over its rows into another, and the GEMM with V. With the views above no
// Transpose, Gather or copy runs around it (what they cost DaViT-base: docs/performance.md, "Measurements
// behind the planner's rules"). A session computing in f16 (docs/float16.md) runs heads of at most 64 over
// at least 16 queries on attention/attention_matrix_f16.wgsl, the fused kernel on subgroup matrices, except
// where the tiled kernel runs (it was faster on DaViT's windows).
//
// The planning runs in steps (attention_plan.h): parse the node (its attributes through internal_ops.h, Q, K
// and V as views), validate the shapes into an AttentionProblem, choose the plan and kernel (a pure function
// of the problem and the device's limits, unit-tested in tests/unit/test_attention_plan.cpp), build the
// launches.
#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>
#include <utility>

#include "ops/attention_plan.h"
#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/gemm_launch.h"
#include "ops/internal_ops.h"
#include "ops/kernel_interface.h"
#include "ops/reduction.h"
#include "ops/registry.h"
#include "ops/reshape.h"

namespace wgi::ops {

namespace attention {

namespace {

constexpr uint32_t kMaxValueDim = 512;  // 8 accumulators per thread x 64 threads (attention.wgsl)
// attention_tiled.wgsl: one query row per invocation, keys staged a chunk at a time; its q row and
// accumulator are registers, so the head sizes are compiled in and bounded.
constexpr int64_t kTiledMaxHeadDim = 64;
// Keys staged per chunk: DaViT's 144 keys fill nine chunks of 16 (chunks of 32 left the fifth half padding).
constexpr int64_t kTiledKeysPerChunk = 16;
constexpr int64_t kTiledMaxQueriesPerWorkgroup = 256;
constexpr int64_t kTiledMinQueries = 32;  // below, most of a 32-row workgroup would idle: attention.wgsl
// ... and it must fill the GPU: SigLIP-B's 12 heads x 197 queries (48 tiled workgroups of 64) ran slower
// tiled than on attention.wgsl's 2364 workgroups, while DaViT's window attention (thousands of tiled
// workgroups) gained (docs/performance.md, "Measurements behind the planner's rules"): at least 256
// workgroups' worth of 64 query rows.
constexpr int64_t kTiledMinInvocations = 256 * 64;
// The three launches (two GEMMs and a Softmax) for rows and keys of at least this many, over at least this
// many query rows in all: SigLIP-B at batch 8 (96 x 197 rows of 197 keys), not at batch 1 (12 x 197), nor
// DaViT's window attention (144 tokens a window).
constexpr int64_t kGemmMinRows = 192;
constexpr int64_t kGemmMinQueryRows = 256 * 64;
// attention.wgsl's rows over split keys: a decoder step has a query row per head (12 rows for BART-base),
// one workgroup each over its 65 past or 590 encoder keys, which leaves most of a large GPU idle; its keys
// are split until about kSplitTargetWorkgroups workgroups run, each over at least kMinKeysPerSplit keys.
constexpr int64_t kSplitTargetWorkgroups = 256;
constexpr int64_t kMinKeysPerSplit = 32;
// attention_matrix_f16.wgsl (sessions computing in f16): 16 query rows per subgroup, at most 4 subgroups a
// workgroup (its Q rows are staged where one chunk's keys and values go), head sizes compiled in and padded
// to whole 16s, at most 64; keys in chunks of 64 where workgroup memory allows (half the barriers and
// accumulator round trips per key), else 32. Fewer than 16 queries (a decoder step) would leave most of each
// 16-row product empty: the f32 kernels run those.
constexpr int64_t kMatrixMaxHeadDim = 64;
constexpr int64_t kMatrixMaxSubgroups = 4;
constexpr int64_t kMatrixMinQueries = 16;

// attention_matrix_f16.wgsl's workgroup memory in bytes (its kv_s, p_s, s_s and o_s).
uint64_t matrix_attention_storage(int64_t d, int64_t dv, int64_t subgroups, int64_t keys_per_chunk) {
  const int64_t d16 = (d + 15) / 16 * 16, dv16 = (dv + 15) / 16 * 16;
  const int64_t rows = subgroups * 16;
  const int64_t halves = 2 * keys_per_chunk * (std::max(d16, dv16) + 8) + rows * (keys_per_chunk + 8);
  const int64_t floats = rows * (keys_per_chunk + 4) + rows * (dv16 + 4);
  return static_cast<uint64_t>(halves * 2 + floats * 4);
}

// Workgroups per query row of the row kernel for `rows` rows over `tk` keys (1: no split), and the keys
// each takes: only the last one may take fewer, none takes none.
std::pair<int64_t, int64_t> key_splits(int64_t rows, int64_t tk) {
  if (rows * 2 > kSplitTargetWorkgroups || tk < 2 * kMinKeysPerSplit) return {1, tk};
  const int64_t wanted =
      std::min((tk + kMinKeysPerSplit - 1) / kMinKeysPerSplit, (kSplitTargetWorkgroups + rows - 1) / rows);
  const int64_t per_split = (tk + wanted - 1) / wanted;
  return {(tk + per_split - 1) / per_split, per_split};
}

// The tiled kernel's query rows per workgroup: a head's queries rounded up to whole warps (32), so that
// they share one staging of the keys and values (DaViT's 144 queries: 160; with 64 rows per workgroup each
// head staged them three times), at most 256 and what the device allows. 0 if it allows fewer than 32.
int64_t tiled_queries_per_workgroup(int64_t tq, const gpu::Limits& limits) {
  const int64_t device =
      std::min<int64_t>(limits.max_compute_invocations_per_workgroup, limits.max_compute_workgroup_size_x);
  const int64_t cap = std::min(kTiledMaxQueriesPerWorkgroup, device) / 32 * 32;
  return std::min(cap, (tq + 31) / 32 * 32);
}

uint32_t to_u32(const PlanContext& ctx, int64_t v, const char* what) {
  if (v < 0 || v > static_cast<int64_t>(UINT32_MAX)) ctx.fail(std::string(what) + " does not fit u32");
  return static_cast<uint32_t>(v);
}

// Element strides of `shape`'s leading (batch) dims aligned to the output's batch dims `out`, 0 where the
// operand broadcasts (size 1 or missing); `matrix` is the size of one trailing matrix.
std::vector<int64_t> batch_strides(const Shape& batch, const Shape& out, int64_t matrix) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = matrix;
  for (size_t i = 0; i < batch.size(); ++i) {
    const size_t o = out.size() - 1 - i;
    const int64_t extent = batch[batch.size() - 1 - i];
    strides[o] = extent == 1 ? 0 : stride;
    stride *= extent;
  }
  return strides;
}

View contiguous_view(const Shape& shape) {
  return {shape, data_movement::row_major_strides(shape), 0};
}

bool is_contiguous(const View& v) {
  return v.offset == 0 && v.strides == data_movement::row_major_strides(v.shape);
}

// The element strides of `v`'s batch dims aligned to the output's batch dims (rank `rank`), 0 where `v`
// broadcasts (size 1 or missing).
std::vector<int64_t> view_batch_strides(const View& v, size_t rank) {
  std::vector<int64_t> strides(rank, 0);
  const size_t batch = v.shape.size() - 2;
  for (size_t i = 0; i < batch; ++i) {
    if (v.shape[i] != 1) strides[rank - batch + i] = v.strides[i];
  }
  return strides;
}

// Swaps the last two dims of `v` (the view of its Transpose over them).
void swap_last_two(View& v) {
  const size_t r = v.shape.size();
  std::swap(v.shape[r - 1], v.shape[r - 2]);
  std::swap(v.strides[r - 1], v.strides[r - 2]);
}

// A matrix (the last two dims of `v`) as a GEMM operand reads it: `column_major` when its rows are
// contiguous instead of its columns, `stride` the elements between consecutive rows (columns) as stored.
struct MatrixLayout {
  bool column_major = false;
  int64_t stride = 0;
};
std::optional<MatrixLayout> matrix_layout(const View& v) {
  const size_t r = v.shape.size();
  if (v.strides[r - 1] == 1) return MatrixLayout{false, v.strides[r - 2]};
  if (v.strides[r - 2] == 1) return MatrixLayout{true, v.strides[r - 1]};
  return std::nullopt;
}

// ---- parse ----

// Q, K and V as given: the inputs, or views of X (heads_views, qkv_packed; see the top).
std::array<View, 3> packed_operand_views(const PlanContext& ctx, const AttentionAttributes& attrs) {
  if (attrs.heads_views) {
    std::array<View, 3> views;
    for (size_t i = 0; i < 3; ++i) {
      const Shape& xs = ctx.input(i).shape;
      if (!(*attrs.heads_views)[i]) {
        views[i] = contiguous_view(xs);
        continue;
      }
      // Transpose(Reshape(X, target [B, N, heads, D]), perm [0, 2, 1, 3]): [B, heads, N, D] in place.
      const size_t target_input = AttentionInput::heads_target(i);
      if (!ctx.has_input(target_input)) {
        ctx.fail(std::string(kAttentionHeadsViewsAttribute) + " needs input " + std::to_string(target_input) +
                 ", the Reshape target of " + ctx.input_name(i));
      }
      const std::vector<int64_t> target = data_movement::known_ints(ctx, target_input, "the heads' shape");
      const std::optional<Shape> r = reshape_result(xs, target);
      if (!r || r->size() != 4) {
        ctx.fail(std::string(kAttentionHeadsViewsAttribute) + ": " + ctx.input_name(i) + " " +
                 shape_to_string(xs) + " reshaped to " + shape_to_string(target) +
                 " is not a 4-D [B, N, heads, D]");
      }
      const std::vector<int64_t> st = data_movement::row_major_strides(*r);
      views[i] = {{(*r)[0], (*r)[2], (*r)[1], (*r)[3]}, {st[0], st[2], st[1], st[3]}, 0};
    }
    return views;
  }
  if (!attrs.qkv_packed) {
    return {contiguous_view(ctx.input(AttentionInput::kQ).shape),
            contiguous_view(ctx.input(AttentionInput::kK).shape),
            contiguous_view(ctx.input(AttentionInput::kV).shape)};
  }
  const Shape& xs = ctx.input(AttentionInput::kQ).shape;
  if (ctx.input(AttentionInput::kK).shape != xs || ctx.input(AttentionInput::kV).shape != xs)
    ctx.fail("qkv_packed needs inputs 0, 1 and 2 to be the same tensor");
  if (!ctx.has_input(AttentionInput::kPackedTarget)) {
    ctx.fail("qkv_packed needs input " + std::to_string(AttentionInput::kPackedTarget) +
             ", the packed projection's Reshape target");
  }
  const std::vector<int64_t> target =
      data_movement::known_ints(ctx, AttentionInput::kPackedTarget, "the packed Q, K, V shape");
  const std::optional<Shape> r = reshape_result(xs, target);
  if (!r || r->size() != 5) {
    ctx.fail("qkv_packed: " + shape_to_string(xs) + " reshaped to " + shape_to_string(target) +
             " is not a 5-D [B, N, parts, heads, D]");
  }
  const std::vector<int64_t>& indices = attrs.qkv_indices;
  if (indices.size() != 3) ctx.fail("qkv_packed needs qkv_indices, three ints");
  const std::vector<int64_t> s = data_movement::row_major_strides(*r);
  std::array<View, 3> views;
  for (size_t i = 0; i < 3; ++i) {
    const int64_t index = indices[i] < 0 ? indices[i] + (*r)[2] : indices[i];
    if (index < 0 || index >= (*r)[2]) {
      ctx.fail("qkv_indices " + shape_to_string(indices) + " out of range for " + std::to_string((*r)[2]) +
               " packed parts");
    }
    views[i] = {{(*r)[0], (*r)[3], (*r)[1], (*r)[4]}, {s[0], s[3], s[1], s[4]}, index * s[2]};
  }
  return views;
}

// Q, K and V: the inputs as they are, or (qkv_packed) views of the packed projection (see the top), each
// transposed over its last two dims where qkv_transposed says so.
std::array<View, 3> operand_views(const PlanContext& ctx, const AttentionAttributes& attrs) {
  std::array<View, 3> views = packed_operand_views(ctx, attrs);
  if (attrs.qkv_transposed) {
    if (!attrs.qkv_packed) ctx.fail("qkv_transposed needs qkv_packed = 1");
    for (size_t i = 0; i < 3; ++i) {
      if ((*attrs.qkv_transposed)[i]) swap_last_two(views[i]);
    }
  }
  return views;
}

// The scale: the attribute times (or divided by) the scale tensor where one is given.
float resolve_scale(const PlanContext& ctx, const AttentionAttributes& attrs) {
  float scale = attrs.scale;
  if (ctx.has_input(AttentionInput::kScale)) {
    const Tensor* t = ctx.constant(AttentionInput::kScale);
    if (!t || t->element_count() != 1 || t->dtype() != DType::Float32) {
      ctx.fail("the attention scale (input " + std::to_string(AttentionInput::kScale) +
               ") must be one float32 known when planning");
    }
    const float f = t->data<float>()[0];
    scale = attrs.scale_divides ? scale / f : scale * f;
  }
  return scale;
}

// ---- validate ----

// The output batch dims: the numpy broadcast of Q's, K's and V's (as MatMul would give).
Shape broadcast_batch(const PlanContext& ctx, const Shape& qs, const Shape& ks, const Shape& vs) {
  Shape qb(qs.begin(), qs.end() - 2), kb(ks.begin(), ks.end() - 2), vb(vs.begin(), vs.end() - 2);
  const size_t rank = std::max({qb.size(), kb.size(), vb.size()});
  Shape out_batch(rank, 1);
  for (const Shape* b : {&qb, &kb, &vb}) {
    for (size_t i = 0; i < b->size(); ++i) {
      int64_t& o = out_batch[rank - b->size() + i];
      const int64_t e = (*b)[i];
      if (e != 1 && o != 1 && e != o) {
        ctx.fail("batch dims of Q " + shape_to_string(qs) + ", K " + shape_to_string(ks) + " and V " +
                 shape_to_string(vs) + " do not broadcast");
      }
      if (e != 1) o = e;
    }
  }
  if (rank > 4) ctx.fail("more than 4 batch dims");
  return out_batch;
}

// The output: logical [batch..., Tq, Dv], written as its Transpose by output_perm (transpose_output: perm
// [0, 2, 1, 3], i.e. [B0, Tq, B1, Dv]).
void resolve_output(const PlanContext& ctx, const AttentionAttributes& attrs, AttentionProblem& p) {
  const size_t rank = p.out_batch.size();
  const Shape& qs = p.views[0].shape;
  if (attrs.transpose_output && rank != 2) {
    ctx.fail("transpose_output needs two batch dims; the output has " + std::to_string(rank) + " (Q " +
             shape_to_string(qs) + ")");
  }
  std::vector<int64_t> perm;
  if (attrs.transpose_output) perm = {0, 2, 1, 3};
  if (attrs.output_perm) {
    if (attrs.transpose_output) ctx.fail("transpose_output and output_perm both given");
    perm = *attrs.output_perm;
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    bool permutation = sorted.size() == rank + 2;
    for (size_t i = 0; i < sorted.size() && permutation; ++i)
      permutation = sorted[i] == static_cast<int64_t>(i);
    if (!permutation) {
      ctx.fail("output_perm " + shape_to_string(perm) + " is not a permutation of the output's " +
               std::to_string(rank + 2) + " dims (Q " + shape_to_string(qs) + ")");
    }
  }
  p.logical_out = p.out_batch;
  p.logical_out.push_back(p.tq);
  p.logical_out.push_back(p.dv);
  p.out_view = contiguous_view(p.logical_out);
  p.out_shape = p.logical_out;
  if (!perm.empty()) {
    for (size_t i = 0; i < perm.size(); ++i) p.out_shape[i] = p.logical_out[static_cast<size_t>(perm[i])];
    const std::vector<int64_t> s = data_movement::row_major_strides(p.out_shape);
    for (size_t i = 0; i < perm.size(); ++i) p.out_view.strides[static_cast<size_t>(perm[i])] = s[i];
  }
}

// The mask's broadcast to the scores [batch..., Tq, Tk].
void resolve_mask(const PlanContext& ctx, AttentionProblem& p) {
  const size_t rank = p.out_batch.size();
  p.has_mask = ctx.has_input(AttentionInput::kMask);
  p.mask_strides.assign(rank, 0);
  if (!p.has_mask) return;
  const TensorDesc& m = ctx.input(AttentionInput::kMask);
  if (m.dtype != DType::Float32) ctx.fail("the mask has type " + std::string(dtype_name(m.dtype)));
  Shape ms = m.shape;
  while (ms.size() < rank + 2) ms.insert(ms.begin(), 1);
  if (ms.size() > rank + 2)
    ctx.fail("the mask " + shape_to_string(m.shape) + " has more dims than the scores");
  const int64_t rows = ms[ms.size() - 2], cols = ms.back();
  if ((rows != 1 && rows != p.tq) || (cols != 1 && cols != p.tk)) {
    ctx.fail("the mask " + shape_to_string(m.shape) + " does not broadcast to the scores [..., " +
             std::to_string(p.tq) + ", " + std::to_string(p.tk) + "]");
  }
  p.mask_col = cols == 1 ? 0 : 1;
  p.mask_row = rows == 1 ? 0 : cols;
  Shape mb(ms.begin(), ms.end() - 2);
  for (size_t i = 0; i < rank; ++i) {
    if (mb[i] != 1 && mb[i] != p.out_batch[i])
      ctx.fail("the mask " + shape_to_string(m.shape) + " does not broadcast");
  }
  p.mask_strides = batch_strides(mb, p.out_batch, rows * cols);
}

}  // namespace

AttentionProblem attention_problem(const PlanContext& ctx) {
  // parse
  const AttentionAttributes attrs = read_attention_attributes(ctx.node);
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.input(i).dtype != DType::Float32) {
      ctx.fail(ctx.input_name(i) + " has type " + std::string(dtype_name(ctx.input(i).dtype)) +
               "; expected float32");
    }
  }
  AttentionProblem p;
  p.views = operand_views(ctx, attrs);
  p.k_transposed = attrs.k_transposed;
  p.forced_kernel = attrs.kernel;
  const Shape& qs = p.views[0].shape;
  const Shape& ks = p.views[1].shape;
  const Shape& vs = p.views[2].shape;
  if (qs.size() < 2 || ks.size() < 2 || vs.size() < 2) ctx.fail("Q, K and V need rank >= 2");
  p.scale = resolve_scale(ctx, attrs);
  // validate
  p.tq = qs[qs.size() - 2];
  p.d = qs.back();
  p.tk = p.k_transposed ? ks.back() : ks[ks.size() - 2];
  const int64_t kd = p.k_transposed ? ks[ks.size() - 2] : ks.back();
  p.dv = vs.back();
  if (kd != p.d)
    ctx.fail("Q " + shape_to_string(qs) + " and K " + shape_to_string(ks) + " disagree on the head size");
  if (vs[vs.size() - 2] != p.tk) {
    ctx.fail("V " + shape_to_string(vs) + " has " + std::to_string(vs[vs.size() - 2]) + " rows; K has " +
             std::to_string(p.tk) + " keys");
  }
  p.out_batch = broadcast_batch(ctx, qs, ks, vs);
  resolve_output(ctx, attrs, p);
  resolve_mask(ctx, p);
  return p;
}

// ---- choose ----

int64_t matrix_attention_subgroups(int64_t tq) {
  const int64_t blocks = (std::max<int64_t>(tq, 1) + 15) / 16;
  int64_t best = 1, best_cost = INT64_MAX;
  for (int64_t sg = kMatrixMaxSubgroups; sg >= 1; --sg) {
    const int64_t cost = (blocks + sg - 1) / sg * (sg + 2);
    if (cost < best_cost) best = sg, best_cost = cost;
  }
  return best;
}

AttentionChoice choose_attention_plan(const AttentionProblem& p, const gpu::Capabilities& caps) {
  const gpu::Limits& limits = caps.limits;
  const bool gemm_views = gemm_views_supported(caps);
  // Which kernel: wgi.kernel = rows (attention.wgsl) | tiled (attention_tiled.wgsl) | gemm (the three
  // launches) | matrix (attention_matrix_f16.wgsl) forces one.
  const std::string& forced = p.forced_kernel;
  if (!forced.empty() && forced != "rows" && forced != "tiled" && forced != "gemm" && forced != "matrix")
    throw Error("unknown wgi.kernel '" + forced + "' (expected rows, tiled, gemm or matrix)");

  // Keys and values staged as whole vec4s (head dims padded; a head of size 0, scoring 0, as one vec4; an
  // empty V plans no launch, plan_attention).
  const int64_t d4 = std::max<int64_t>(1, (p.d + 3) / 4), dv4 = (p.dv + 3) / 4;
  const uint64_t tiled_storage = static_cast<uint64_t>(kTiledKeysPerChunk * (d4 + dv4) * 4) * sizeof(float);
  const int64_t tiled_queries = tiled_queries_per_workgroup(p.tq, limits);
  std::string why_not_tiled;
  if (tiled_queries == 0) {
    why_not_tiled = "32 invocations per workgroup; the device allows " +
                    std::to_string(std::min(limits.max_compute_invocations_per_workgroup,
                                            limits.max_compute_workgroup_size_x));
  } else if (p.d > kTiledMaxHeadDim || p.dv > kTiledMaxHeadDim) {
    why_not_tiled = "head sizes up to " + std::to_string(kTiledMaxHeadDim) + "; Q·K has " +
                    std::to_string(p.d) + " and V " + std::to_string(p.dv);
  } else if (tiled_storage > limits.max_compute_workgroup_storage_size) {
    why_not_tiled = std::to_string(tiled_storage) + " bytes of workgroup memory; the device allows " +
                    std::to_string(limits.max_compute_workgroup_storage_size);
  }
  if (forced == "tiled" && !why_not_tiled.empty()) throw Error("wgi.kernel = tiled needs " + why_not_tiled);
  if (forced == "rows" && p.dv > kMaxValueDim) {
    throw Error("wgi.kernel = rows needs V's last dim <= " + std::to_string(kMaxValueDim) + "; V is " +
                shape_to_string(p.views[2].shape));
  }
  const int64_t tiled_workgroups =
      tiled_queries == 0 ? 0 : p.batch() * ((p.tq + tiled_queries - 1) / tiled_queries);
  const bool tiled_by_rule = forced.empty() && why_not_tiled.empty() && p.tq >= kTiledMinQueries &&
                             tiled_workgroups * tiled_queries >= kTiledMinInvocations;
  // A session computing in f16 runs attention on subgroup matrices where the kernel can.
  // The preferred subgroups per workgroup, fewer where a device's workgroup memory is smaller than the
  // H100's 48 KB; chunks of 64 keys where they fit, else 32.
  int64_t subgroups = matrix_attention_subgroups(p.tq), keys_per_chunk = 64;
  const uint64_t storage_limit = limits.max_compute_workgroup_storage_size;
  while (matrix_attention_storage(p.d, p.dv, subgroups, keys_per_chunk) > storage_limit &&
         (keys_per_chunk > 32 || subgroups > 1)) {
    if (keys_per_chunk > 32) {
      keys_per_chunk = 32;
    } else {
      --subgroups, keys_per_chunk = 64;
    }
  }
  const uint64_t matrix_storage = matrix_attention_storage(p.d, p.dv, subgroups, keys_per_chunk);
  std::string why_not_matrix;
  if (!caps.f16_compute) {
    why_not_matrix = "a session computing in f16 (SessionOptions::precision f16, on subgroup matrices)";
  } else if (p.d > kMatrixMaxHeadDim || p.dv > kMatrixMaxHeadDim || p.d == 0) {
    why_not_matrix = "head sizes from 1 to " + std::to_string(kMatrixMaxHeadDim) + "; Q·K has " +
                     std::to_string(p.d) + " and V " + std::to_string(p.dv);
  } else if (matrix_storage > storage_limit) {
    why_not_matrix = std::to_string(matrix_storage) + " bytes of workgroup memory; the device allows " +
                     std::to_string(storage_limit);
  }
  if (forced == "matrix" && !why_not_matrix.empty())
    throw Error("wgi.kernel = matrix needs " + why_not_matrix);
  // Many long rows (SigLIP-B at batch 8: 96 heads of 197 x 197) are products the fast GEMMs run near their
  // rate, where the f32 fused kernels compute each score once per query row at a few TFLOP/s.
  const bool gemm_by_rule = forced.empty() && gemm_views && p.tq >= kGemmMinRows && p.tk >= kGemmMinRows &&
                            !p.has_mask && p.batch() * p.tq >= kGemmMinQueryRows;
  // Not where the f32 plan runs the tiled kernel: DaViT's window attention (heads of 32 over 144 keys) ran
  // slower on this kernel than tiled (docs/performance.md, "Attention on subgroup matrices in f16"); where
  // the f32 plan runs GEMMs (SigLIP-B at batch 8) this kernel was 1.7-1.9x faster (same section).
  const bool f32_plan_tiled = tiled_by_rule && !gemm_by_rule;
  const bool matrix = forced == "matrix" || (forced.empty() && why_not_matrix.empty() &&
                                             p.tq >= kMatrixMinQueries && !f32_plan_tiled);
  const bool tiled = forced == "tiled" || (!matrix && tiled_by_rule);
  const bool scores_as_gemm = forced == "gemm" || (!matrix && gemm_by_rule);

  AttentionChoice c;
  c.k_transposed = p.k_transposed;
  std::array<View, 3> views = p.views;
  // Operand i copied contiguous: its view becomes the plain layout.
  auto copy = [&](size_t i) {
    if (is_contiguous(views[i])) return;
    c.copied[i] = true;
    views[i] = contiguous_view(views[i].shape);
  };

  if ((p.dv > kMaxValueDim && !tiled && !matrix) || scores_as_gemm) {
    // Scores S = scale * Q K^T (+ mask), P = softmax(S), out = P V: batch dims decoded by the GEMM.
    c.kernel = AttentionKernel::ThreeLaunch;
    if (p.has_mask &&
        std::any_of(p.mask_strides.begin(), p.mask_strides.end(), [](int64_t v) { return v != 0; })) {
      throw Error(forced == "gemm"
                      ? std::string("wgi.kernel = gemm needs a mask shared by every batch entry and "
                                    "head (the scores' bias); this one differs across them")
                      : "a mask that differs across batch or heads needs V's last dim <= " +
                            std::to_string(kMaxValueDim) + " (the fused kernel); V is " +
                            shape_to_string(p.views[2].shape));
    }
    // The fast GEMMs read Q, K and V through their strides and write the output view in place (DaViT's
    // channel attention: the packed projection read as Q^T, K^T and V^T, the output written [B, N, heads, D];
    // those Transposes, Gathers and copies cost time, docs/performance.md). A view whose matrices are
    // contiguous along neither dim is copied into a scratch buffer of its own first, and an output view that
    // is neither rows nor columns of the product goes through one copied at the end. The seeds' kernels
    // read packed matrices only: where the device cannot run the fast ones (compat devices' workgroup
    // limits) every strided operand is copied and the output goes through a copy, as the Transposes did.
    for (size_t i = 0; i < 3; ++i) {
      if (!gemm_views || !matrix_layout(views[i])) copy(i);
    }
    const size_t out_rank = p.logical_out.size();
    const int64_t out_row = p.out_view.strides[out_rank - 2], out_col = p.out_view.strides[out_rank - 1];
    // The product written as rows (out = P V) or, where Tq is the output's contiguous dim, as columns:
    // out^T = V^T P^T.
    const bool rows_out = !gemm_views ? is_contiguous(p.out_view) : out_col == 1;
    c.columns_out = gemm_views && !rows_out && out_row == 1;
    c.output_copied = !rows_out && !c.columns_out;
    return c;
  }

  c.kernel = matrix ? AttentionKernel::MatrixF16 : tiled ? AttentionKernel::Tiled : AttentionKernel::Rows;
  c.tiled_queries = tiled ? tiled_queries : 0;
  c.matrix_subgroups = matrix ? subgroups : 0;
  c.matrix_keys_per_chunk = matrix ? keys_per_chunk : 0;
  const bool staged = tiled || matrix;  // K and V staged in workgroup memory, their views read in place
  if (!staged) std::tie(c.key_splits, c.keys_per_split) = key_splits(p.batch() * p.tq, p.tk);
  c.workgroups = matrix  ? p.batch() * ((p.tq + 16 * subgroups - 1) / (16 * subgroups))
                 : tiled ? tiled_workgroups
                         : p.batch() * p.tq * c.key_splits;
  // The row kernel reads all of K and V once per query row, a key per invocation: it wants K^T (consecutive
  // invocations on consecutive keys). SigLIP-B exports K^T (a Transpose with perm [0, 2, 3, 1]); read as a
  // strided K view in place instead, its attention ran slower (docs/performance.md, "Measurements behind
  // the planner's rules"). With several query rows per head, a strided K is copied once as K^T and a strided
  // V contiguously (what the exporter's Transposes made); the tiled and matrix kernels stage K and V in
  // workgroup memory and read the views in place.
  if (!staged && p.tq > 1 && !is_contiguous(views[1])) {
    if (!c.k_transposed) {  // copy the view of K^T: K's last two dims swapped
      swap_last_two(views[1]);
      c.k_transposed = true;
    }
    copy(1);
  }
  if (!staged && p.tq > 1) copy(2);
  // The fused kernels read rows whose last dim is contiguous and write such rows: a view transposed over its
  // last two dims (qkv_transposed) is copied first, and an output view whose Dv is not contiguous
  // (output_perm [0, 3, 1, 2]) is written to a scratch buffer copied into place last.
  for (size_t i = 0; i < 3; ++i) {
    if (views[i].strides.back() != 1) copy(i);
  }
  c.output_copied = p.out_view.strides.back() != 1;
  // The matrix kernel reads Q, K and V 16 bytes at a time where every row, matrix and element it starts from
  // is a multiple of 4 elements in.
  auto quads = [](const View& v) {
    return v.offset % 4 == 0 &&
           std::all_of(v.strides.begin(), v.strides.end() - 1, [](int64_t s) { return s % 4 == 0; });
  };
  c.matrix_vec4 = matrix && !c.k_transposed && p.d % 4 == 0 && p.dv % 4 == 0 &&
                  std::all_of(views.begin(), views.end(), quads);
  return c;
}

namespace {

// ---- build ----

// The launches' shared state: the operands as bound (inputs, or their contiguous copies) and their views.
struct Operands {
  std::array<TensorRef, 3> refs = {TensorRef::input(0), TensorRef::input(1), TensorRef::input(2)};
  std::array<View, 3> views;
};

// The operands as `choice` reads them: K's view transposed where it is read as K^T, the copied ones copied.
Operands build_operands(const PlanContext& ctx, const AttentionProblem& p, const AttentionChoice& choice,
                        OpPlan& plan) {
  Operands operands;
  operands.views = p.views;
  if (choice.k_transposed != p.k_transposed) swap_last_two(operands.views[1]);
  for (uint32_t i = 0; i < 3; ++i) {
    if (!choice.copied[i]) continue;
    View& view = operands.views[i];
    operands.refs[i] = plan.add_scratch(static_cast<uint64_t>(element_count(view.shape)) * sizeof(float));
    data_movement::StridedCopy copy;
    copy.shape = view.shape;
    copy.src_strides = view.strides;
    copy.dst_strides = data_movement::row_major_strides(view.shape);
    copy.src_offset = view.offset;
    copy.src = TensorRef::input(i);
    copy.dst = operands.refs[i];
    data_movement::add_copy_launches(ctx, plan, std::move(copy));
    view = contiguous_view(view.shape);
  }
  return operands;
}

// The copy of the logical output from `from` (packed) into the output tensor's view.
void add_output_copy(const PlanContext& ctx, const AttentionProblem& p, TensorRef from, OpPlan& plan) {
  data_movement::StridedCopy copy;
  copy.shape = p.logical_out;
  copy.src_strides = data_movement::row_major_strides(p.logical_out);
  copy.dst_strides = p.out_view.strides;
  copy.src = from;
  copy.dst = TensorRef::output(0);
  data_movement::add_copy_launches(ctx, plan, std::move(copy));
}

std::array<uint32_t, 4> pad4(const PlanContext& ctx, const std::vector<int64_t>& v, const char* what) {
  std::array<uint32_t, 4> out = {0, 0, 0, 0};
  for (size_t i = 0; i < v.size(); ++i) out[4 - v.size() + i] = to_u32(ctx, v[i], what);
  return out;
}

std::array<uint32_t, 4> batch_dims(const PlanContext& ctx, const AttentionProblem& p) {
  std::array<uint32_t, 4> dims = {1, 1, 1, 1};
  const size_t rank = p.out_batch.size();
  for (size_t i = 0; i < rank; ++i) dims[4 - rank + i] = to_u32(ctx, p.out_batch[i], "a batch dim");
  return dims;
}

// GEMM (scores), Softmax, GEMM (P V), reading the views in place where the choice does.
void build_three_launch_plan(const PlanContext& ctx, const AttentionProblem& p, const AttentionChoice& choice,
                             OpPlan& plan) {
  const uint64_t score_bytes = static_cast<uint64_t>(p.batch() * p.tq * p.tk) * sizeof(float);
  plan.scratch_bytes = {score_bytes, score_bytes};  // scores, probabilities; split-K partials may follow
  const Operands operands = build_operands(ctx, p, choice, plan);
  std::array<MatrixLayout, 3> layouts;
  for (size_t i = 0; i < 3; ++i) {
    const std::optional<MatrixLayout> layout = matrix_layout(operands.views[i]);
    if (!layout) ctx.fail("internal: operand " + std::to_string(i) + " is not a matrix the GEMM reads");
    layouts[i] = *layout;
  }
  const size_t rank = p.out_batch.size();
  const size_t out_rank = p.logical_out.size();
  const int64_t out_row = p.out_view.strides[out_rank - 2], out_col = p.out_view.strides[out_rank - 1];
  TensorRef product = TensorRef::output(0);
  if (choice.output_copied) {
    product = plan.add_scratch(static_cast<uint64_t>(element_count(p.logical_out)) * sizeof(float));
  }
  auto batch_of = [&](const View& v) { return pad4(ctx, view_batch_strides(v, rank), "a batch stride"); };
  const std::array<uint32_t, 4> dims = batch_dims(ctx, p);

  GemmLaunchSpec scores;
  scores.m = to_u32(ctx, p.tq, "Tq");
  scores.n = to_u32(ctx, p.tk, "Tk");
  scores.k = to_u32(ctx, p.d, "D");
  scores.batch = to_u32(ctx, p.batch(), "batch");
  scores.batch_dims = dims;
  // Q [Tq, D] is A [M, K] (A [K, M] when stored by columns).
  scores.a_km = layouts[0].column_major;
  scores.a_row_stride = to_u32(ctx, layouts[0].stride, "Q's row stride");
  scores.a_offset = to_u32(ctx, operands.views[0].offset, "Q's offset");
  scores.a_batch_strides = batch_of(operands.views[0]);
  // K [Tk, D] is B stored [N, K]; K^T [D, Tk] is B [K, N]; either the other way when stored by columns.
  scores.b_nk = choice.k_transposed == layouts[1].column_major;
  scores.b_row_stride = to_u32(ctx, layouts[1].stride, "K's row stride");
  scores.b_offset = to_u32(ctx, operands.views[1].offset, "K's offset");
  scores.b_batch_strides = batch_of(operands.views[1]);
  scores.a = operands.refs[0];
  scores.b = operands.refs[1];
  scores.out = TensorRef::scratch(0);
  if (p.has_mask) {
    scores.bias = TensorRef::input(AttentionInput::kMask);
    scores.bias_stride_m = to_u32(ctx, p.mask_row, "mask row stride");
    scores.bias_stride_n = to_u32(ctx, p.mask_col, "mask column stride");
  }
  scores.alpha = p.scale;
  scores.beta = 1.0f;
  append_gemm_launches(ctx, scores, plan);  // split-K for channel attention's long contraction

  plan.launches.push_back(make_softmax_launch(ctx, p.batch() * p.tq, p.tk, 1, false, TensorRef::scratch(0),
                                              TensorRef::scratch(1)));

  // P [Tq, Tk], packed over the output's batch dims.
  const std::array<uint32_t, 4> p_strides =
      pad4(ctx, batch_strides(p.out_batch, p.out_batch, p.tq * p.tk), "a batch stride");
  GemmLaunchSpec values;
  values.k = scores.n;
  values.batch = scores.batch;
  values.batch_dims = dims;
  values.out = product;
  if (choice.columns_out) {
    // out^T [Dv, Tq] = V^T [Dv, Tk] P^T: A = V^T (stored [K, M] when V's rows are contiguous), B = P
    // stored [N, K].
    values.m = to_u32(ctx, p.dv, "Dv");
    values.n = scores.m;
    values.a = operands.refs[2];
    values.a_km = !layouts[2].column_major;
    values.a_row_stride = to_u32(ctx, layouts[2].stride, "V's row stride");
    values.a_offset = to_u32(ctx, operands.views[2].offset, "V's offset");
    values.a_batch_strides = batch_of(operands.views[2]);
    values.b = TensorRef::scratch(1);
    values.b_nk = true;
    values.b_batch_strides = p_strides;
    values.out_row_stride = to_u32(ctx, out_col, "the output's column stride");
  } else {
    values.m = scores.m;
    values.n = to_u32(ctx, p.dv, "Dv");
    values.a = TensorRef::scratch(1);
    values.a_batch_strides = p_strides;
    values.b = operands.refs[2];
    values.b_nk = layouts[2].column_major;
    values.b_row_stride = to_u32(ctx, layouts[2].stride, "V's row stride");
    values.b_offset = to_u32(ctx, operands.views[2].offset, "V's offset");
    values.b_batch_strides = batch_of(operands.views[2]);
    if (!choice.output_copied) values.out_row_stride = to_u32(ctx, out_row, "the output's row stride");
  }
  if (!choice.output_copied) values.out_batch_strides = batch_of(p.out_view);
  append_gemm_launches(ctx, values, plan);
  if (choice.output_copied) add_output_copy(ctx, p, product, plan);
}

// One fused kernel (attention.wgsl, attention_tiled.wgsl or attention_matrix_f16.wgsl), with the copies the
// choice asks for.
void build_fused_plan(const PlanContext& ctx, const AttentionProblem& p, const AttentionChoice& choice,
                      OpPlan& plan) {
  const bool tiled = choice.kernel == AttentionKernel::Tiled;
  const bool matrix = choice.kernel == AttentionKernel::MatrixF16;
  const Operands operands = build_operands(ctx, p, choice, plan);
  const View written = contiguous_view(p.logical_out);
  TensorRef fused_out = TensorRef::output(0);
  if (choice.output_copied) {
    fused_out = plan.add_scratch(static_cast<uint64_t>(element_count(p.logical_out)) * sizeof(float));
  }
  const View& kernel_out = choice.output_copied ? written : p.out_view;
  const size_t rank = p.out_batch.size();
  const std::string k_t = choice.k_transposed ? "1" : "0";
  const bool split = choice.key_splits > 1;
  const int64_t rows = p.batch() * p.tq;
  // Split keys: the partial sums [rows][splits][Dv], then each part's running maximum and sum, in scratch.
  const TensorRef partials =
      split ? plan.add_scratch(static_cast<uint64_t>(rows * choice.key_splits * (p.dv + 2)) * sizeof(float))
            : fused_out;
  KernelLaunch launch;
  launch.program.label = std::string(matrix  ? "attention_matrix_f16"
                                     : tiled ? "attention_tiled"
                                             : "attention") +
                         (choice.k_transposed ? "_kt" : "") + (split ? "_split" : "");
  const std::vector<UniformMember> members = {
      {"rows", UniformType::U32},  // batch * Tq
      {"tq", UniformType::U32},
      {"tk", UniformType::U32},
      {"d", UniformType::U32},
      {"dv", UniformType::U32},
      {"has_mask", UniformType::U32},
      {"mask_row_stride", UniformType::U32},
      {"mask_col_stride", UniformType::U32},
      {"scale", UniformType::F32},
      {"q_row_stride", UniformType::U32},
      {"k_row_stride", UniformType::U32},
      {"v_row_stride", UniformType::U32},
      {"q_offset", UniformType::U32},
      {"k_offset", UniformType::U32},
      {"v_offset", UniformType::U32},
      {"out_row_stride", UniformType::U32},
      {"batch_dims", UniformType::Vec4U},
      {"q_strides", UniformType::Vec4U},
      {"k_strides", UniformType::Vec4U},
      {"v_strides", UniformType::Vec4U},
      {"mask_strides", UniformType::Vec4U},
      {"out_strides", UniformType::Vec4U},
      {"key_splits", UniformType::U32},  // the row kernel's workgroups per row
      {"keys_per_split", UniformType::U32}};
  KernelInterface iface;
  const char* operand_type = choice.matrix_vec4 ? "vec4<f32>" : "f32";
  iface.read("q", operand_type, operands.refs[0])
      .read("k", operand_type, operands.refs[1])
      .read("v", operand_type, operands.refs[2])
      .read("mask", "f32", p.has_mask ? TensorRef::input(AttentionInput::kMask) : TensorRef::zero())
      .read_write("output", "f32", partials)
      .uniforms(members);
  if (matrix) {
    launch.program.wgsl = iface.load_wgsl("attention/attention_matrix_f16.wgsl",
                                          {{"K_TRANSPOSED", k_t},
                                           {"HEAD_DIM", std::to_string(p.d)},
                                           {"VALUE_DIM", std::to_string(p.dv)},
                                           {"SUBGROUPS", std::to_string(choice.matrix_subgroups)},
                                           {"KEYS_PER_CHUNK", std::to_string(choice.matrix_keys_per_chunk)},
                                           {"VEC4", choice.matrix_vec4 ? "1" : "0"}});
  } else if (tiled) {
    launch.program.wgsl = iface.load_wgsl("attention/attention_tiled.wgsl",
                                          {{"K_TRANSPOSED", k_t},
                                           {"HEAD_DIM", std::to_string(p.d)},
                                           {"VALUE_DIM", std::to_string(p.dv)},
                                           {"QUERIES_PER_WORKGROUP", std::to_string(choice.tiled_queries)},
                                           {"KEYS_PER_CHUNK", std::to_string(kTiledKeysPerChunk)}});
  } else {
    launch.program.wgsl = iface.load_wgsl("attention/attention.wgsl",
                                          {{"K_TRANSPOSED", k_t}, {"SPLIT_KEYS", split ? "1" : "0"}});
  }
  iface.bind(launch);
  auto row_stride = [&](const View& v) {
    return to_u32(ctx, v.strides[v.strides.size() - 2], "a row stride");
  };
  auto batch_of = [&](const View& v) { return pad4(ctx, view_batch_strides(v, rank), "a batch stride"); };
  UniformValues values = iface.values();
  values.u32("rows", to_u32(ctx, rows, "rows"))
      .u32("tq", to_u32(ctx, p.tq, "Tq"))
      .u32("tk", to_u32(ctx, p.tk, "Tk"))
      .u32("d", to_u32(ctx, p.d, "D"))
      .u32("dv", to_u32(ctx, p.dv, "Dv"))
      .u32("has_mask", p.has_mask ? 1 : 0)
      .u32("mask_row_stride", to_u32(ctx, p.mask_row, "mask row stride"))
      .u32("mask_col_stride", to_u32(ctx, p.mask_col, "mask column stride"))
      .f32("scale", p.scale)
      .u32("q_row_stride", row_stride(operands.views[0]))
      .u32("k_row_stride", row_stride(operands.views[1]))
      .u32("v_row_stride", row_stride(operands.views[2]))
      .u32("q_offset", to_u32(ctx, operands.views[0].offset, "Q's offset"))
      .u32("k_offset", to_u32(ctx, operands.views[1].offset, "K's offset"))
      .u32("v_offset", to_u32(ctx, operands.views[2].offset, "V's offset"))
      .u32("out_row_stride", row_stride(kernel_out))
      .vec4u("batch_dims", batch_dims(ctx, p))
      .vec4u("q_strides", batch_of(operands.views[0]))
      .vec4u("k_strides", batch_of(operands.views[1]))
      .vec4u("v_strides", batch_of(operands.views[2]))
      .vec4u("mask_strides", pad4(ctx, p.mask_strides, "a batch stride"))
      .vec4u("out_strides", batch_of(kernel_out))
      .u32("key_splits", to_u32(ctx, choice.key_splits, "key splits"))
      .u32("keys_per_split", to_u32(ctx, split ? choice.keys_per_split : p.tk, "keys per split"));
  launch.uniform = values.bytes();
  launch.groups = gpu::fold_workgroups(static_cast<uint64_t>(choice.workgroups),
                                       ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
  if (split) {
    // The parts of each row combined: an invocation per output element, written where the kernel writes.
    KernelLaunch combine;
    combine.program.label = "attention_combine";
    KernelInterface combined;
    combined.read("partials", "f32", partials).read_write("output", "f32", fused_out).uniforms(members);
    combine.program.wgsl = combined.load_wgsl("attention/attention_combine.wgsl");
    combined.bind(combine);
    combine.uniform = plan.launches.back().uniform;  // the same block: sizes, strides, the split
    combine.groups = gpu::fold_workgroups(static_cast<uint64_t>((rows * p.dv + 255) / 256),
                                          ctx.caps.limits.max_compute_workgroups_per_dimension);
    plan.launches.push_back(std::move(combine));
  }
  if (choice.output_copied) add_output_copy(ctx, p, fused_out, plan);
}

OpPlan plan_attention(const PlanContext& ctx) {
  const AttentionProblem p = attention_problem(ctx);
  OpPlan plan;
  plan.outputs.push_back({DType::Float32, p.out_shape});
  if (p.batch() * p.tq == 0 || p.dv == 0) return plan;
  for (size_t i = 0; i < 3; ++i) to_u32(ctx, element_count(ctx.input(i).shape), "a tensor's element count");
  to_u32(ctx, element_count(p.out_shape), "a tensor's element count");
  // No keys: the unfused graph's softmax of an empty row is empty and its product with V's 0 rows is 0 (the
  // kernels would divide 0 by 0).
  if (p.tk == 0) {
    data_movement::add_fill_launch(ctx, plan, TensorRef::output(0), element_count(p.out_shape), 0u);
    return plan;
  }
  AttentionChoice choice;
  try {
    choice = choose_attention_plan(p, ctx.caps);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  if (choice.kernel == AttentionKernel::ThreeLaunch) {
    build_three_launch_plan(ctx, p, choice, plan);
  } else {
    build_fused_plan(ctx, p, choice, plan);
  }
  return plan;
}

}  // namespace

}  // namespace attention

void register_attention_ops(OpRegistry& registry) {
  registry.add("wgi", "Attention", 1, kLatestOpset, {attention::plan_attention, nullptr});
}

}  // namespace wgi::ops
