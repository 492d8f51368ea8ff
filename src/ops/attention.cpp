// Fused attention: wgi's internal op "Attention" (domain "wgi"), which the graph pass fuse_attention makes
// out of the pattern exporters write for softmax(Q K^T * scale + mask) V:
//   MatMul(Q, K^T or Transpose(K)) -> [Mul | Div by a constant scalar] -> [Add mask] -> Softmax(last axis)
//   -> MatMul(., V)
// Inputs: Q, K (or K^T with k_transposed = 1), V, optional additive mask, optional scale tensor (one element,
// known when planning: exports often compute head_dim ** -0.5 from Shape). Attributes: scale (float),
// scale_divides (int: the scale tensor divides instead of multiplies), k_transposed (int).
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
//   transpose_output = 1   the output [B0, B1, Tq, Dv] (two batch dims) is written as its Transpose with
//                    perm [0, 2, 1, 3], i.e. [B0, Tq, B1, Dv] (heads back beside each other per token).
// The strides follow from the concrete shapes when planning; the fused kernels read and write the views in
// place (attention_common.wgsl), the three-launch plan copies a strided operand into a contiguous scratch
// buffer first and its result into the transposed output last.
//
// Three plans. The fused kernels never write the score matrix: attention/attention.wgsl (one workgroup per
// query row, online softmax; V's last dim at most kMaxValueDim) and, for many query rows with heads of at
// most 64 (window attention, vision transformers), attention/attention_tiled.wgsl (one query row per
// invocation, keys and values staged in workgroup memory). Beyond that the scores are the small part: DaViT's
// channel attention attends over the C/heads channels with the tokens (H*W, 36864 at 768x768) as both the
// contracted dim and V's last dim, so its score matrix is [C/heads, C/heads]. There the plan is the
// exporter's own sequence as three launches: the fast GEMM for scale * Q K^T (+ mask) into a scratch buffer,
// Softmax over its rows into another, and the GEMM with V.
#include <algorithm>
#include <array>

#include "gpu/uniform.h"
#include "kernels/wgsl_library.h"
#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/gemm_launch.h"
#include "ops/reduction.h"
#include "ops/registry.h"
#include "ops/reshape.h"

namespace wgi::ops {

namespace {

constexpr uint32_t kMaxValueDim = 512;  // 8 accumulators per thread x 64 threads (attention.wgsl)
// attention_tiled.wgsl: one query row per invocation, 64 rows per workgroup, keys staged 32 at a time; its
// q row and accumulator are registers, so the head sizes are compiled in and bounded.
constexpr int64_t kTiledQueriesPerWorkgroup = 64;  // BQ in attention_tiled.wgsl
constexpr int64_t kTiledMaxHeadDim = 64;
constexpr int64_t kTiledKeysPerChunk = 32;
constexpr int64_t kTiledMinQueries = 32;  // below, most of a 64-row workgroup would idle: attention.wgsl
// ... and it must fill the GPU: on the H200 SigLIP-B's 12 heads x 197 queries (48 tiled workgroups) ran in
// 1.97 ms tiled against 0.92 ms on attention.wgsl's 2364 workgroups, while DaViT's window attention
// (thousands of tiled workgroups) went from 14.9 to 4.4 ms (docs/performance.md).
constexpr int64_t kTiledMinWorkgroups = 256;

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

// An operand as the kernels read it: logical `shape` ([batch..., rows, cols]), element `strides` per dim
// (the last one 1) and the element `offset` of its first element in the bound tensor.
struct View {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

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

// Q, K and V: the inputs as they are, or (qkv_packed) views of the packed projection (see the top).
std::array<View, 3> operand_views(const PlanContext& ctx) {
  if (ctx.node.attributes.has("heads_views")) {
    const std::vector<int64_t> flags = ctx.node.attributes.get_ints("heads_views", {});
    if (flags.size() != 3) ctx.fail("heads_views needs three flags (Q, K, V)");
    std::array<View, 3> views;
    for (size_t i = 0; i < 3; ++i) {
      const Shape& xs = ctx.input(i).shape;
      if (flags[i] == 0) {
        views[i] = contiguous_view(xs);
        continue;
      }
      // Transpose(Reshape(X, target [B, N, heads, D]), perm [0, 2, 1, 3]): [B, heads, N, D] in place.
      if (!ctx.has_input(6 + i)) {
        ctx.fail("heads_views needs input " + std::to_string(6 + i) + ", the Reshape target of " +
                 ctx.input_name(i));
      }
      const std::vector<int64_t> target = data_movement::known_ints(ctx, 6 + i, "the heads' shape");
      const std::optional<Shape> r = reshape_result(xs, target);
      if (!r || r->size() != 4) {
        ctx.fail("heads_views: " + ctx.input_name(i) + " " + shape_to_string(xs) + " reshaped to " +
                 shape_to_string(target) + " is not a 4-D [B, N, heads, D]");
      }
      const std::vector<int64_t> st = data_movement::row_major_strides(*r);
      views[i] = {{(*r)[0], (*r)[2], (*r)[1], (*r)[3]}, {st[0], st[2], st[1], st[3]}, 0};
    }
    return views;
  }
  if (ctx.node.attributes.get_int("qkv_packed", 0) == 0) {
    return {contiguous_view(ctx.input(0).shape), contiguous_view(ctx.input(1).shape),
            contiguous_view(ctx.input(2).shape)};
  }
  const Shape& xs = ctx.input(0).shape;
  if (ctx.input(1).shape != xs || ctx.input(2).shape != xs)
    ctx.fail("qkv_packed needs inputs 0, 1 and 2 to be the same tensor");
  if (!ctx.has_input(5)) ctx.fail("qkv_packed needs input 5, the packed projection's Reshape target");
  const std::vector<int64_t> target = data_movement::known_ints(ctx, 5, "the packed Q, K, V shape");
  const std::optional<Shape> r = reshape_result(xs, target);
  if (!r || r->size() != 5) {
    ctx.fail("qkv_packed: " + shape_to_string(xs) + " reshaped to " + shape_to_string(target) +
             " is not a 5-D [B, N, parts, heads, D]");
  }
  const std::vector<int64_t> indices = ctx.node.attributes.get_ints("qkv_indices", {});
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

OpPlan plan_attention(const PlanContext& ctx) {
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.input(i).dtype != DType::Float32) {
      ctx.fail(ctx.input_name(i) + " has type " + std::string(dtype_name(ctx.input(i).dtype)) +
               "; expected float32");
    }
  }
  std::array<View, 3> views = operand_views(ctx);
  const Shape& qs = views[0].shape;
  const Shape& ks = views[1].shape;
  const Shape& vs = views[2].shape;
  if (qs.size() < 2 || ks.size() < 2 || vs.size() < 2) ctx.fail("Q, K and V need rank >= 2");
  bool k_transposed = ctx.node.attributes.get_int("k_transposed", 0) != 0;
  float scale = ctx.node.attributes.get_float("scale", 1.0f);
  if (ctx.has_input(4)) {
    const Tensor* t = ctx.constant(4);
    if (!t || t->element_count() != 1 || t->dtype() != DType::Float32) {
      ctx.fail("the attention scale (input 4) must be one float32 known when planning");
    }
    const float f = t->data<float>()[0];
    scale = ctx.node.attributes.get_int("scale_divides", 0) != 0 ? scale / f : scale * f;
  }
  const int64_t tq = qs[qs.size() - 2], d = qs.back();
  const int64_t tk = k_transposed ? ks.back() : ks[ks.size() - 2];
  const int64_t kd = k_transposed ? ks[ks.size() - 2] : ks.back();
  const int64_t dv = vs.back();
  if (kd != d)
    ctx.fail("Q " + shape_to_string(qs) + " and K " + shape_to_string(ks) + " disagree on the head size");
  if (vs[vs.size() - 2] != tk) {
    ctx.fail("V " + shape_to_string(vs) + " has " + std::to_string(vs[vs.size() - 2]) + " rows; K has " +
             std::to_string(tk) + " keys");
  }
  // Output batch dims: the numpy broadcast of Q's, K's and V's (as MatMul would give).
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
  // The output: logical [batch..., Tq, Dv]; with transpose_output written as [B0, Tq, B1, Dv].
  const bool transpose_output = ctx.node.attributes.get_int("transpose_output", 0) != 0;
  if (transpose_output && rank != 2) {
    ctx.fail("transpose_output needs two batch dims; the output has " + std::to_string(rank) + " (Q " +
             shape_to_string(qs) + ")");
  }
  Shape logical_out = out_batch;
  logical_out.push_back(tq);
  logical_out.push_back(dv);
  View out_view = contiguous_view(logical_out);
  Shape out_shape = logical_out;
  if (transpose_output) {
    out_shape = {out_batch[0], tq, out_batch[1], dv};
    const std::vector<int64_t> s = data_movement::row_major_strides(out_shape);
    out_view.strides = {s[0], s[2], s[1], s[3]};
  }

  const bool has_mask = ctx.has_input(3);
  std::vector<int64_t> mask_strides(rank, 0);
  int64_t mask_row = 0, mask_col = 0;
  if (has_mask) {
    const TensorDesc& m = ctx.input(3);
    if (m.dtype != DType::Float32) ctx.fail("the mask has type " + std::string(dtype_name(m.dtype)));
    Shape ms = m.shape;
    while (ms.size() < rank + 2) ms.insert(ms.begin(), 1);
    if (ms.size() > rank + 2)
      ctx.fail("the mask " + shape_to_string(m.shape) + " has more dims than the scores");
    const int64_t rows = ms[ms.size() - 2], cols = ms.back();
    if ((rows != 1 && rows != tq) || (cols != 1 && cols != tk)) {
      ctx.fail("the mask " + shape_to_string(m.shape) + " does not broadcast to the scores [..., " +
               std::to_string(tq) + ", " + std::to_string(tk) + "]");
    }
    mask_col = cols == 1 ? 0 : 1;
    mask_row = rows == 1 ? 0 : cols;
    Shape mb(ms.begin(), ms.end() - 2);
    for (size_t i = 0; i < rank; ++i) {
      if (mb[i] != 1 && mb[i] != out_batch[i])
        ctx.fail("the mask " + shape_to_string(m.shape) + " does not broadcast");
    }
    mask_strides = batch_strides(mb, out_batch, rows * cols);
  }

  OpPlan plan;
  plan.outputs.push_back({DType::Float32, out_shape});
  const int64_t rows = element_count(out_batch) * tq;
  if (rows == 0 || dv == 0) return plan;
  for (size_t i = 0; i < 3; ++i) to_u32(ctx, element_count(ctx.input(i).shape), "a tensor's element count");
  to_u32(ctx, element_count(out_shape), "a tensor's element count");

  auto pad4 = [&](const std::vector<int64_t>& v) {
    std::array<uint32_t, 4> out = {0, 0, 0, 0};
    for (size_t i = 0; i < v.size(); ++i) out[4 - v.size() + i] = to_u32(ctx, v[i], "a batch stride");
    return out;
  };
  std::array<uint32_t, 4> dims = {1, 1, 1, 1};
  for (size_t i = 0; i < rank; ++i) dims[4 - rank + i] = to_u32(ctx, out_batch[i], "a batch dim");

  // Which kernel: "wgi.kernel" = rows (attention.wgsl) | tiled (attention_tiled.wgsl) forces one.
  const std::string forced = ctx.node.attributes.get_string("wgi.kernel", "");
  if (!forced.empty() && forced != "rows" && forced != "tiled")
    ctx.fail("unknown wgi.kernel '" + forced + "' (expected rows or tiled)");
  const uint64_t tiled_storage = static_cast<uint64_t>(kTiledKeysPerChunk * (d + dv)) * sizeof(float);
  std::string why_not_tiled;
  if (d > kTiledMaxHeadDim || dv > kTiledMaxHeadDim) {
    why_not_tiled = "head sizes up to " + std::to_string(kTiledMaxHeadDim) + "; Q·K has " +
                    std::to_string(d) + " and V " + std::to_string(dv);
  } else if (tiled_storage > ctx.caps.limits.max_compute_workgroup_storage_size) {
    why_not_tiled = std::to_string(tiled_storage) + " bytes of workgroup memory; the device allows " +
                    std::to_string(ctx.caps.limits.max_compute_workgroup_storage_size);
  }
  if (forced == "tiled" && !why_not_tiled.empty()) ctx.fail("wgi.kernel = tiled needs " + why_not_tiled);
  if (forced == "rows" && dv > kMaxValueDim) {
    ctx.fail("wgi.kernel = rows needs V's last dim <= " + std::to_string(kMaxValueDim) + "; V is " +
             shape_to_string(vs));
  }
  const int64_t tiled_workgroups =
      element_count(out_batch) * ((tq + kTiledQueriesPerWorkgroup - 1) / kTiledQueriesPerWorkgroup);
  const bool tiled = forced == "tiled" || (forced.empty() && why_not_tiled.empty() &&
                                           tq >= kTiledMinQueries && tiled_workgroups >= kTiledMinWorkgroups);

  // Operand i as a contiguous copy in a scratch buffer of its own: its view becomes the plain layout.
  std::array<TensorRef, 3> operands = {TensorRef::input(0), TensorRef::input(1), TensorRef::input(2)};
  auto materialise = [&](uint32_t i) {
    if (is_contiguous(views[i])) return;
    operands[i] = TensorRef::scratch(static_cast<uint32_t>(plan.scratch_bytes.size()));
    plan.scratch_bytes.push_back(static_cast<uint64_t>(element_count(views[i].shape)) * sizeof(float));
    data_movement::StridedCopy copy;
    copy.shape = views[i].shape;
    copy.src_strides = views[i].strides;
    copy.dst_strides = data_movement::row_major_strides(views[i].shape);
    copy.src_offset = views[i].offset;
    copy.src = TensorRef::input(i);
    copy.dst = operands[i];
    data_movement::add_copy_launches(ctx, plan, std::move(copy));
    views[i] = contiguous_view(views[i].shape);
  };

  if (dv > kMaxValueDim && !tiled) {
    // Scores S = scale * Q K^T (+ mask), P = softmax(S), out = P V: batch dims decoded by the GEMM.
    const std::vector<int64_t> q_strides = batch_strides(qb, out_batch, tq * d);
    const std::vector<int64_t> k_strides = batch_strides(kb, out_batch, tk * d);
    const std::vector<int64_t> v_strides = batch_strides(vb, out_batch, tk * dv);
    // The scores are written contiguously over the output's batch dims.
    const std::vector<int64_t> score_strides = batch_strides(out_batch, out_batch, tq * tk);
    if (has_mask && std::any_of(mask_strides.begin(), mask_strides.end(), [](int64_t v) { return v != 0; })) {
      ctx.fail("a mask that differs across batch or heads needs V's last dim <= " +
               std::to_string(kMaxValueDim) + " (the fused kernel); V is " + shape_to_string(vs));
    }
    const uint64_t score_bytes = static_cast<uint64_t>(element_count(out_batch) * tq * tk) * sizeof(float);
    plan.scratch_bytes = {score_bytes, score_bytes};  // scores, probabilities; split-K partials may follow
    // The GEMMs read contiguous matrices: a strided view is first copied into a scratch buffer of its own,
    // and with transpose_output the product goes to one that is copied transposed at the end.
    for (uint32_t i = 0; i < 3; ++i) materialise(i);
    TensorRef product = TensorRef::output(0);
    if (!is_contiguous(out_view)) {
      product = TensorRef::scratch(static_cast<uint32_t>(plan.scratch_bytes.size()));
      plan.scratch_bytes.push_back(static_cast<uint64_t>(element_count(logical_out)) * sizeof(float));
    }

    GemmLaunchSpec scores;
    scores.m = to_u32(ctx, tq, "Tq");
    scores.n = to_u32(ctx, tk, "Tk");
    scores.k = to_u32(ctx, d, "D");
    scores.batch = to_u32(ctx, element_count(out_batch), "batch");
    scores.batch_dims = dims;
    scores.a_batch_strides = pad4(q_strides);
    scores.b_batch_strides = pad4(k_strides);
    scores.b_nk = !k_transposed;  // K [Tk, D] is B stored [N, K]; K^T [D, Tk] is B [K, N]
    scores.a = operands[0];
    scores.b = operands[1];
    scores.out = TensorRef::scratch(0);
    if (has_mask) {
      scores.bias = TensorRef::input(3);
      scores.bias_stride_m = to_u32(ctx, mask_row, "mask row stride");
      scores.bias_stride_n = to_u32(ctx, mask_col, "mask column stride");
    }
    scores.alpha = scale;
    scores.beta = 1.0f;
    append_gemm_launches(ctx, scores, plan);  // split-K for channel attention's long contraction

    plan.launches.push_back(make_softmax_launch(ctx, element_count(out_batch) * tq, tk, 1, false,
                                                TensorRef::scratch(0), TensorRef::scratch(1)));

    GemmLaunchSpec values;
    values.m = scores.m;
    values.n = to_u32(ctx, dv, "Dv");
    values.k = scores.n;
    values.batch = scores.batch;
    values.batch_dims = dims;
    values.a_batch_strides = pad4(score_strides);
    values.b_batch_strides = pad4(v_strides);
    values.a = TensorRef::scratch(1);
    values.b = operands[2];
    values.out = product;
    append_gemm_launches(ctx, values, plan);
    if (!is_contiguous(out_view)) {
      data_movement::StridedCopy copy;
      copy.shape = logical_out;
      copy.src_strides = data_movement::row_major_strides(logical_out);
      copy.dst_strides = out_view.strides;
      copy.src = product;
      copy.dst = TensorRef::output(0);
      data_movement::add_copy_launches(ctx, plan, std::move(copy));
    }
    return plan;
  }

  // The row kernel reads all of K and V once per query row, a key per invocation: it wants K^T (consecutive
  // invocations on consecutive keys). SigLIP-B exports K^T (a Transpose with perm [0, 2, 3, 1]); read as a
  // strided K view in place instead, its attention ran 3.7x slower on the H200 (0.154 against 0.042 ms per
  // layer, 2026-11-30). With several query rows per head, a strided K is copied once as K^T and a strided V
  // contiguously (what the exporter's Transposes made); the tiled kernel stages K and V in workgroup memory
  // and reads the views in place.
  if (!tiled && tq > 1 && !is_contiguous(views[1])) {
    if (!k_transposed) {  // copy the view of K^T: K's last two dims swapped
      const size_t r = views[1].shape.size();
      std::swap(views[1].shape[r - 1], views[1].shape[r - 2]);
      std::swap(views[1].strides[r - 1], views[1].strides[r - 2]);
      k_transposed = true;
    }
    materialise(1);
  }
  if (!tiled && tq > 1) materialise(2);
  KernelLaunch launch;
  launch.program.label = std::string(tiled ? "attention_tiled" : "attention") + (k_transposed ? "_kt" : "");
  if (tiled) {
    launch.program.wgsl =
        kernels::load_wgsl("attention/attention_tiled.wgsl", {{"K_TRANSPOSED", k_transposed ? "1" : "0"},
                                                              {"HEAD_DIM", std::to_string(d)},
                                                              {"VALUE_DIM", std::to_string(dv)}});
  } else {
    launch.program.wgsl =
        kernels::load_wgsl("attention/attention.wgsl", {{"K_TRANSPOSED", k_transposed ? "1" : "0"}});
  }
  launch.program.bindings = {gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::ReadOnlyStorage,
                             gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::ReadOnlyStorage,
                             gpu::BindingKind::Storage,         gpu::BindingKind::Uniform};
  launch.bindings = {operands[0], operands[1], operands[2],
                     has_mask ? TensorRef::input(3) : TensorRef::zero(), TensorRef::output(0)};
  auto row_stride = [&](const View& v) {
    return to_u32(ctx, v.strides[v.strides.size() - 2], "a row stride");
  };
  launch.uniform = gpu::UniformBuilder()
                       .u32(to_u32(ctx, rows, "rows"))
                       .u32(to_u32(ctx, tq, "Tq"))
                       .u32(to_u32(ctx, tk, "Tk"))
                       .u32(to_u32(ctx, d, "D"))
                       .u32(to_u32(ctx, dv, "Dv"))
                       .u32(has_mask ? 1 : 0)
                       .u32(to_u32(ctx, mask_row, "mask row stride"))
                       .u32(to_u32(ctx, mask_col, "mask column stride"))
                       .f32(scale)
                       .u32(row_stride(views[0]))
                       .u32(row_stride(views[1]))
                       .u32(row_stride(views[2]))
                       .u32(to_u32(ctx, views[0].offset, "Q's offset"))
                       .u32(to_u32(ctx, views[1].offset, "K's offset"))
                       .u32(to_u32(ctx, views[2].offset, "V's offset"))
                       .u32(row_stride(out_view))
                       .vec4u(dims)
                       .vec4u(pad4(view_batch_strides(views[0], rank)))
                       .vec4u(pad4(view_batch_strides(views[1], rank)))
                       .vec4u(pad4(view_batch_strides(views[2], rank)))
                       .vec4u(pad4(mask_strides))
                       .vec4u(pad4(view_batch_strides(out_view, rank)))
                       .bytes();
  const uint64_t workgroups = static_cast<uint64_t>(tiled ? tiled_workgroups : rows);
  launch.groups = gpu::fold_workgroups(workgroups, ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_attention_ops(OpRegistry& registry) {
  registry.add("wgi", "Attention", 1, kLatestOpset, {plan_attention, nullptr});
}

}  // namespace wgi::ops
