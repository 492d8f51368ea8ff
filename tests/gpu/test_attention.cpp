// wgi's fused Attention against a float64 reference, and the graph pass that makes it, fused and unfused, on
// an exported transformer.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/npy.h"
#include "graph/passes.h"
#include "onnx/importer.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"
#include "ops/registry.h"
#include "runtime/execution_plan.h"
#include "runtime/node_runner.h"
#include "support/model_reference.h"
#include "support/reference_data_movement.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;

// softmax(scale * Q K^T + mask) V with numpy broadcasting of the batch dims; K given as [.., Tk, D] or
// (k_transposed) [.., D, Tk]; the mask broadcasts to [.., Tq, Tk].
std::vector<double> attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                                        bool k_transposed, double scale, Shape& out_shape) {
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  const size_t r = qs.size();
  const int64_t tq = qs[r - 2], d = qs[r - 1], tk = k_transposed ? ks[r - 1] : ks[r - 2], dv = vs[r - 1];
  Shape batch(qs.begin(), qs.end() - 2);
  for (size_t i = 0; i + 2 < r; ++i) batch[i] = std::max({qs[i], ks[i], vs[i]});
  out_shape = batch;
  out_shape.push_back(tq);
  out_shape.push_back(dv);
  auto offset = [&](const Shape& s, int64_t b, int64_t matrix) {  // broadcast batch index -> element offset
    int64_t off = 0, stride = matrix;
    for (size_t i = r - 2; i-- > 0;) {
      int64_t idx = b % batch[i];
      b /= batch[i];
      if (s[i] != 1) off += idx * stride;
      stride *= s[i];
    }
    return off;
  };
  std::vector<double> out;
  const int64_t batches = element_count(batch);
  auto qd = q.data<float>(), kd = k.data<float>(), vd = v.data<float>();
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t qo = offset(qs, b, tq * d), ko = offset(ks, b, tk * d), vo = offset(vs, b, tk * dv);
    for (int64_t i = 0; i < tq; ++i) {
      std::vector<double> s(static_cast<size_t>(tk));
      double mx = -INFINITY;
      for (int64_t j = 0; j < tk; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < d; ++c) {
          acc += static_cast<double>(qd[qo + i * d + c]) * kd[ko + (k_transposed ? c * tk + j : j * d + c)];
        }
        acc *= scale;
        if (mask) {
          // Broadcast the mask from the right.
          const Shape& ms = mask->shape();
          std::vector<int64_t> idx(r);
          int64_t rest = b;
          for (size_t a = r - 2; a-- > 0;) {
            idx[a] = rest % batch[a];
            rest /= batch[a];
          }
          idx[r - 2] = i;
          idx[r - 1] = j;
          int64_t off = 0, stride = 1;
          for (size_t a = ms.size(); a-- > 0;) {
            const int64_t full = idx[r - ms.size() + a];
            off += (ms[a] == 1 ? 0 : full) * stride;
            stride *= ms[a];
          }
          acc += mask->data<float>()[off];
        }
        s[static_cast<size_t>(j)] = acc;
        mx = std::max(mx, acc);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int64_t c = 0; c < dv; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < tk; ++j) acc += s[static_cast<size_t>(j)] * vd[vo + j * dv + c];
        // No keys: the unfused graph's softmax of an empty row is empty and its product with V's 0 rows is 0.
        out.push_back(tk == 0 ? 0.0 : acc / sum);
      }
    }
  }
  return out;
}

ops::NodeInfo attention_node(float scale, bool k_transposed) {
  ops::NodeInfo n{"attn", "Attention", "wgi", 1, {}, {}, {}};
  n.attributes.set("scale", scale);
  n.attributes.set("k_transposed", int64_t{k_transposed});
  return n;
}

// Whether the three-launch plan (wgi.kernel = gemm) takes `mask`: none, or one shared by every batch entry
// and head (the scores' bias).
bool shared_mask(const std::optional<Shape>& mask) {
  return !mask || std::all_of(mask->begin(), mask->end() - std::min<ptrdiff_t>(2, mask->size()),
                              [](int64_t d) { return d == 1; });
}

struct AttentionCase {
  const char* name;
  Shape q, k, v;
  std::optional<Shape> mask;
  bool k_transposed;
  float mask_scale = 1.0f;
};

class AttentionTest : public ::testing::TestWithParam<AttentionCase> {};

// Every case through the planner's choice and through each kernel that can run it: "rows"
// (attention.wgsl, V's last dim <= 512), "tiled" (attention_tiled.wgsl, head sizes <= 64) and "gemm" (the
// three launches: a mask shared by every batch entry and head). The label of the first launch says which
// ran; the unfused plan starts with a GEMM.
TEST_P(AttentionTest, MatchesFloat64Reference) {
  const AttentionCase& c = GetParam();
  Tensor q = test::random_tensor(c.q, 1, -2, 2), k = test::random_tensor(c.k, 2, -2, 2),
         v = test::random_tensor(c.v, 3);
  std::optional<Tensor> mask;
  if (c.mask) mask = test::random_tensor(*c.mask, 4, -3 * c.mask_scale, c.mask_scale);
  const float scale = 0.35f;
  Inputs inputs = {NodeInput{q}, NodeInput{k}, NodeInput{v}};
  if (mask) inputs.push_back(NodeInput{*mask});
  Shape shape;
  auto ref = attention_reference(q, k, v, mask ? &*mask : nullptr, c.k_transposed, scale, shape);
  const int64_t d = c.q.back(), dv = c.v.back(), tk = c.k_transposed ? c.k.back() : c.k[c.k.size() - 2];
  std::vector<std::string> kernels = {""};
  if (dv <= 512) kernels.push_back("rows");
  if (d <= 64 && dv <= 64) kernels.push_back("tiled");
  if (shared_mask(c.mask)) kernels.push_back("gemm");
  for (const std::string& kernel : kernels) {
    ops::NodeInfo node = attention_node(scale, c.k_transposed);
    if (!kernel.empty()) node.attributes.set("wgi.kernel", kernel);
    const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), node, inputs);
    const std::string& label = plan.launches.at(0).program.label;
    if (tk == 0) {  // whatever kernel was asked for: the output is zeros
      EXPECT_EQ(label, "fill");
      EXPECT_EQ(plan.launches.size(), 1u);
    } else if (kernel == "rows") {
      EXPECT_EQ(label.rfind("attention", 0), 0u) << label;
      EXPECT_EQ(label.find("tiled"), std::string::npos) << label;
    } else if (kernel == "tiled") {
      EXPECT_EQ(label.rfind("attention_tiled", 0), 0u) << label;
    } else if (kernel == "gemm") {  // a GEMM kernel (GEMV for a few rows), not a fused one
      EXPECT_EQ(label.rfind("attention", 0), std::string::npos) << label;
    }
    auto out = runtime::run_node(test::device(), node, inputs);
    EXPECT_TRUE(test::all_close(out[0], shape, ref, test::fp32_tolerance(d * 4)))
        << "kernel " << (kernel.empty() ? "auto (" + label + ")" : kernel);
  }
}

// The labels of the launches planned for Q of `q` and K, V of `kv` on this device (no pipeline compiled).
std::vector<std::string> planned_labels(const Shape& q, const Shape& kv) {
  const ops::TensorDesc qd{DType::Float32, q}, kvd{DType::Float32, kv};
  const ops::NodeInfo node = attention_node(0.2f, false);
  const ops::PlanContext ctx{
      node, {qd, kvd, kvd}, {nullptr, nullptr, nullptr}, test::device().capabilities()};
  std::vector<std::string> labels;
  for (const auto& l : ops::builtin_registry().find("wgi", "Attention", 1)->handler.plan(ctx).launches)
    labels.push_back(l.program.label);
  return labels;
}

TEST(AttentionKernels, PlannerTakesTheTiledKernelForManyQueriesAndSmallHeads) {
  auto label = [](const Shape& q, const Shape& kv) { return planned_labels(q, kv).at(0); };
  // DaViT's window attention: 256 windows x 4 heads of 144 queries, head size 32 (768 tiled workgroups).
  EXPECT_EQ(label({256, 4, 144, 32}, {256, 4, 144, 32}), "attention_tiled");
  // SigLIP-B: 12 heads x 197 queries would give the tiled kernel only 48 workgroups.
  EXPECT_EQ(label({1, 12, 197, 64}, {1, 12, 197, 64}), "attention");
  // At batch 8 (96 heads of 197 rows over 197 keys) the scores are a batched GEMM, then a Softmax and P V
  // (the GEMMs the device's rules pick), no copy.
  const std::vector<std::string> batch8 = planned_labels({8, 12, 197, 64}, {8, 12, 197, 64});
  ASSERT_EQ(batch8.size(), 3u);
  EXPECT_EQ(batch8[0].rfind("gemm_", 0), 0u) << batch8[0];
  EXPECT_EQ(batch8[2].rfind("gemm_", 0), 0u) << batch8[2];
  // DaViT's windows (144 tokens) stay on the tiled kernel at batch 8 too.
  EXPECT_EQ(label({2048, 4, 144, 32}, {2048, 4, 144, 32}), "attention_tiled");
  // A decoder step: one query row, its keys spread over 64 invocations.
  EXPECT_EQ(label({256, 4, 1, 32}, {256, 4, 144, 32}), "attention");
}

// Few rows over many keys run as the row kernel over splits of the keys plus a combining launch; many rows
// or few keys as one launch. A part whose keys are all masked (-1e30) adds nothing: the combination equals
// the reference over the other parts' keys.
TEST(AttentionKernels, SplitKeysForFewRowsAndTheirCombination) {
  const auto labels = planned_labels;
  EXPECT_EQ(labels({1, 12, 1, 64}, {1, 12, 590, 64}),
            (std::vector<std::string>{"attention_split", "attention_combine"}));
  EXPECT_EQ(labels({1, 12, 1, 64}, {1, 12, 63, 64}), std::vector<std::string>{"attention"});     // few keys
  EXPECT_EQ(labels({1, 12, 197, 64}, {1, 12, 197, 64}), std::vector<std::string>{"attention"});  // many rows

  Tensor q = test::random_tensor({1, 2, 1, 8}, 5, -2, 2), k = test::random_tensor({1, 2, 200, 8}, 6, -2, 2),
         v = test::random_tensor({1, 2, 200, 8}, 7);
  Tensor mask = test::random_tensor({200}, 8, -2, 2);
  for (int64_t j = 0; j < 100; ++j) mask.data<float>()[static_cast<size_t>(j)] = -1e30f;  // parts 0..4 of 7
  Shape shape;
  const auto ref = attention_reference(q, k, v, &mask, false, 0.3, shape);
  const ops::NodeInfo node = attention_node(0.3f, false);
  const Inputs inputs = {NodeInput{q}, NodeInput{k}, NodeInput{v}, NodeInput{mask}};
  ASSERT_EQ(runtime::plan_node(test::device().capabilities(), node, inputs).launches.size(), 2u);
  const auto out = runtime::run_node(test::device(), node, inputs);
  EXPECT_TRUE(test::all_close(out[0], shape, ref, test::fp32_tolerance(8 * 4)));
}

TEST(AttentionKernels, ForcedKernelsThatCannotRunAreErrors) {
  const Tensor q = test::random_tensor({1, 2, 40, 80}, 9), k = test::random_tensor({1, 2, 40, 80}, 10),
               v = test::random_tensor({1, 2, 40, 600}, 11);
  auto error = [&](const std::string& kernel) {
    ops::NodeInfo node = attention_node(0.2f, false);
    node.attributes.set("wgi.kernel", kernel);
    try {
      runtime::plan_node(test::device().capabilities(), node,
                         Inputs{NodeInput{q}, NodeInput{k}, NodeInput{v}});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("tiled").find("head sizes up to 64; Q·K has 80 and V 600"), std::string::npos)
      << error("tiled");
  EXPECT_NE(error("rows").find("V's last dim <= 512"), std::string::npos) << error("rows");
  EXPECT_NE(error("flash").find("unknown wgi.kernel 'flash' (expected rows, tiled, gemm or matrix)"),
            std::string::npos)
      << error("flash");
  // The three launches add a mask as the scores' bias: one mask for every batch entry and head.
  ops::NodeInfo gemm = attention_node(0.2f, false);
  gemm.attributes.set("wgi.kernel", std::string("gemm"));
  const Tensor q2 = test::random_tensor({2, 2, 5, 4}, 12), kv2 = test::random_tensor({2, 2, 6, 4}, 13);
  std::string msg = "no error";
  try {
    runtime::plan_node(test::device().capabilities(), gemm,
                       Inputs{NodeInput{q2}, NodeInput{kv2}, NodeInput{kv2},
                              NodeInput{test::random_tensor({2, 1, 1, 6}, 14)}});
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("wgi.kernel = gemm needs a mask shared by every batch entry and head"),
            std::string::npos)
      << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTest,
    ::testing::Values(
        AttentionCase{"basic", {2, 3, 5, 8}, {2, 3, 7, 8}, {2, 3, 7, 6}, std::nullopt, false},
        AttentionCase{"k_transposed", {2, 3, 5, 8}, {2, 3, 8, 7}, {2, 3, 7, 6}, std::nullopt, true},
        AttentionCase{"broadcast_kv", {2, 3, 4, 5}, {1, 3, 9, 5}, {2, 1, 9, 4}, std::nullopt, false},
        AttentionCase{"mask_rows_cols", {2, 2, 5, 4}, {2, 2, 6, 4}, {2, 2, 6, 3}, Shape{1, 1, 5, 6}, false},
        AttentionCase{
            "mask_per_batch_key", {2, 2, 5, 4}, {2, 2, 6, 4}, {2, 2, 6, 3}, Shape{2, 1, 1, 6}, false},
        AttentionCase{"mask_1d", {3, 4, 4}, {3, 6, 4}, {3, 6, 2}, Shape{6}, false},
        // Several 256-key chunks with growing maxima: the online softmax must rescale.
        AttentionCase{"long_keys", {1, 2, 3, 16}, {1, 2, 600, 16}, {1, 2, 600, 5}, Shape{600}, false, 8.0f},
        AttentionCase{"decoder_step", {2, 4, 1, 8}, {2, 4, 33, 8}, {2, 4, 33, 8}, std::nullopt, false},
        // Degenerate sizes: no keys (zeros, as the unfused MatMul of an empty softmax gives), heads of size 0
        // (every score 0 before the mask: softmax(mask) V).
        AttentionCase{"no_keys", {2, 3, 5, 8}, {2, 3, 0, 8}, {2, 3, 0, 6}, std::nullopt, false},
        AttentionCase{"head_size_0", {2, 3, 5, 0}, {2, 3, 7, 0}, {2, 3, 7, 6}, Shape{5, 7}, false},
        // Few query rows over many keys: the row kernel splits the keys over workgroups (19 parts of 32 for
        // the encoder's 590, the last of 14; 3 of 22, 22 and 21 over a past of 65) and combines them; a
        // mask with a wide range makes the parts' maxima differ.
        AttentionCase{
            "decoder_cross_split", {1, 4, 1, 64}, {1, 4, 590, 64}, {1, 4, 590, 64}, Shape{590}, false, 8.0f},
        AttentionCase{
            "decoder_self_split_kt", {2, 3, 1, 16}, {2, 3, 16, 65}, {2, 3, 65, 16}, std::nullopt, true},
        AttentionCase{"long_keys_no_mask", {1, 1, 2, 4}, {1, 1, 300, 4}, {1, 1, 300, 2}, std::nullopt, false},
        AttentionCase{"broadcast_k", {2, 3, 4, 5}, {1, 3, 9, 5}, {2, 3, 9, 4}, std::nullopt, false},
        AttentionCase{"broadcast_v", {2, 3, 4, 5}, {2, 3, 9, 5}, {2, 1, 9, 4}, std::nullopt, false},
        AttentionCase{"broadcast_q", {1, 3, 4, 5}, {2, 3, 9, 5}, {2, 3, 9, 4}, std::nullopt, false},
        AttentionCase{"wide_values", {1, 3, 16}, {1, 5, 16}, {1, 5, 130}, std::nullopt, false},
        // Many queries, as the tiled kernel takes them (forced in the test): one block of whole warps (96
        // rows for 70), several 32-key chunks, a partial last chunk; with a mask and K given transposed;
        // past 256 queries two blocks (the second partial), head dims that are not whole vec4s.
        AttentionCase{"window_like", {2, 2, 70, 12}, {2, 2, 70, 12}, {2, 2, 70, 12}, std::nullopt, false},
        AttentionCase{"window_two_blocks", {1, 1, 270, 6}, {1, 1, 270, 6}, {1, 1, 270, 3}, Shape{270}, false},
        AttentionCase{
            "window_like_kt_mask", {1, 3, 40, 8}, {1, 3, 8, 33}, {1, 3, 33, 5}, Shape{40, 33}, true},
        // V's last dim past the fused kernel's 512: the three-launch plan (GEMM, Softmax, GEMM). DaViT's
        // channel attention: the tokens are the contracted dim and V's last dim, K given transposed.
        AttentionCase{
            "channel_attention_unfused", {2, 3, 6, 520}, {2, 3, 520, 6}, {2, 3, 6, 520}, std::nullopt, true},
        AttentionCase{"mask_unfused", {1, 2, 3, 8}, {1, 2, 5, 8}, {1, 2, 5, 600}, Shape{3, 5}, false, 4.0f},
        AttentionCase{
            "broadcast_v_unfused", {2, 3, 4, 5}, {2, 3, 9, 5}, {2, 1, 9, 513}, std::nullopt, false}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(Attention, ScaleTensorMultipliesOrDivides) {
  Tensor q = test::random_tensor({1, 2, 3, 4}, 5), k = test::random_tensor({1, 2, 6, 4}, 6),
         v = test::random_tensor({1, 2, 6, 4}, 7);
  for (bool divides : {false, true}) {
    ops::NodeInfo n = attention_node(1.0f, false);
    n.attributes.set("scale_divides", int64_t{divides});
    Inputs inputs = {NodeInput{q}, NodeInput{k}, NodeInput{v}, std::nullopt,
                     NodeInput{Tensor::from_vector<float>({}, {4.0f}), true}};
    auto out = runtime::run_node(test::device(), n, inputs);
    Shape shape;
    auto ref = attention_reference(q, k, v, nullptr, false, divides ? 0.25 : 4.0, shape);
    EXPECT_TRUE(test::all_close(out[0], shape, ref, test::fp32_tolerance(16))) << "divides " << divides;
  }
}

TEST(Attention, ErrorsNameTheProblem) {
  auto error = [](const Inputs& in, const ops::NodeInfo& n) {
    try {
      runtime::run_node(test::device(), n, in);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Tensor q = test::random_tensor({1, 3, 4}, 1), v = test::random_tensor({1, 5, 2}, 3);
  EXPECT_NE(error({NodeInput{q}, NodeInput{test::random_tensor({1, 5, 3}, 2)}, NodeInput{v}},
                  attention_node(1, false))
                .find("disagree on the head size"),
            std::string::npos);
  EXPECT_NE(error({NodeInput{q}, NodeInput{test::random_tensor({1, 6, 4}, 2)}, NodeInput{v}},
                  attention_node(1, false))
                .find("keys"),
            std::string::npos);
  Inputs runtime_scale = {NodeInput{q}, NodeInput{test::random_tensor({1, 5, 4}, 2)}, NodeInput{v},
                          std::nullopt, NodeInput{Tensor::from_vector<float>({}, {2.0f}), false}};
  EXPECT_NE(error(runtime_scale, attention_node(1, false)).find("known when planning"), std::string::npos);
}

// Q, K and V as views of one packed projection (qkv_packed, the graph pass read_packed_qkv): X [B, N, parts *
// heads * D] reshaped to [B, N, parts, heads, D], permuted [2, 0, 3, 1, 4] and slice `index` taken: [B,
// heads, N, D], copied out contiguously on the host for the reference.
Tensor packed_slice(const Tensor& x, const Shape& r, int64_t index) {
  const int64_t b = r[0], n = r[1], parts = r[2], heads = r[3], d = r[4];
  std::vector<float> out;
  out.reserve(static_cast<size_t>(b * heads * n * d));
  auto xd = x.data<float>();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < n; ++t)
        for (int64_t c = 0; c < d; ++c)
          out.push_back(xd[static_cast<size_t>((((i * n + t) * parts + index) * heads + h) * d + c)]);
  return Tensor::from_vector<float>({b, heads, n, d}, out);
}

// [B0, B1, T, D] -> [B0, T, B1, D] (the Transpose with perm [0, 2, 1, 3] that transpose_output folds in).
std::vector<double> transpose_0213(const std::vector<double>& v, Shape& shape) {
  const int64_t b0 = shape[0], b1 = shape[1], t = shape[2], d = shape[3];
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < b0; ++i)
    for (int64_t h = 0; h < b1; ++h)
      for (int64_t r = 0; r < t; ++r)
        for (int64_t c = 0; c < d; ++c)
          out[static_cast<size_t>(((i * t + r) * b1 + h) * d + c)] =
              v[static_cast<size_t>(((i * b1 + h) * t + r) * d + c)];
  shape = {b0, t, b1, d};
  return out;
}

struct PackedCase {
  const char* name;
  int64_t batch, tokens, parts, heads, head;  // X [batch, tokens, parts * heads * head]
  std::vector<int64_t> indices;               // Q, K, V's parts (negative: from the end)
  bool transpose_output;
  std::optional<Shape> mask;
  bool k_transposed = false;         // K's slice taken as K^T [.., D, Tk] (then tokens == head)
  std::vector<int64_t> target = {};  // the Reshape target as given (0 and -1 allowed); {} = the shape itself
};

class PackedAttentionTest : public ::testing::TestWithParam<PackedCase> {};

// Every case through the planner's choice and each kernel that can run it, against the float64 reference of
// the same attention on contiguous copies of the slices (and the output transposed on the host).
TEST_P(PackedAttentionTest, MatchesFloat64Reference) {
  const PackedCase& c = GetParam();
  const Shape r = {c.batch, c.tokens, c.parts, c.heads, c.head};
  const Tensor x = test::random_tensor({c.batch, c.tokens, c.parts * c.heads * c.head}, 21, -2, 2);
  auto part = [&](int64_t i) { return packed_slice(x, r, i < 0 ? i + c.parts : i); };
  const Tensor q = part(c.indices[0]), k = part(c.indices[1]), v = part(c.indices[2]);
  std::optional<Tensor> mask;
  if (c.mask) mask = test::random_tensor(*c.mask, 22, -3, 1);
  const float scale = 0.3f;
  Shape shape;
  std::vector<double> ref =
      attention_reference(q, k, v, mask ? &*mask : nullptr, c.k_transposed, scale, shape);
  if (c.transpose_output) ref = transpose_0213(ref, shape);
  const std::vector<int64_t> target = c.target.empty() ? std::vector<int64_t>(r.begin(), r.end()) : c.target;
  Inputs inputs = {NodeInput{x}, NodeInput{x},
                   NodeInput{x}, mask ? std::optional<NodeInput>(NodeInput{*mask}) : std::nullopt,
                   std::nullopt, NodeInput{Tensor::from_vector<int64_t>({5}, target), true}};
  const int64_t d = c.head;
  std::vector<std::string> kernels = {""};
  if (d <= 512) kernels.push_back("rows");
  if (d <= 64) kernels.push_back("tiled");
  if (shared_mask(c.mask)) kernels.push_back("gemm");  // the GEMMs read the views in place
  for (const std::string& kernel : kernels) {
    ops::NodeInfo node = attention_node(scale, c.k_transposed);
    node.attributes.set("qkv_packed", int64_t{1});
    node.attributes.set("qkv_indices", c.indices);
    if (c.transpose_output) node.attributes.set("transpose_output", int64_t{1});
    if (!kernel.empty()) node.attributes.set("wgi.kernel", kernel);
    const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), node, inputs);
    std::string labels;
    for (const ops::KernelLaunch& l : plan.launches) labels += l.program.label + " ";
    if (kernel == "rows" || kernel == "tiled") {
      // The tiled kernel reads and writes the views in place; the row kernel copies strided K and V (and
      // reads Q in place) when there are several query rows.
      const size_t copies = kernel == "rows" && c.tokens > 1 ? 2 : 0;
      EXPECT_EQ(plan.launches.size(), 1u + copies) << labels;
      EXPECT_NE(
          plan.launches.back().program.label.rfind(kernel == "tiled" ? "attention_tiled" : "attention", 0),
          std::string::npos)
          << labels;
    }
    auto out = runtime::run_node(test::device(), node, inputs);
    EXPECT_TRUE(test::all_close(out[0], shape, ref, test::fp32_tolerance(d * 4)))
        << "kernel " << (kernel.empty() ? "auto" : kernel) << ": " << labels;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PackedAttentionTest,
    ::testing::Values(
        // DaViT's window attention: 144 tokens per window, head size 32; several 64-row blocks and 32-key
        // chunks, the last ones partial.
        PackedCase{"window_144_d32", 2, 144, 3, 3, 32, {0, 1, 2}, true, std::nullopt},
        PackedCase{"window_144_d32_no_transpose", 2, 144, 3, 2, 32, {0, 1, 2}, false, std::nullopt},
        PackedCase{"n70_d8_mask", 3, 70, 3, 4, 8, {0, 1, 2}, true, Shape{70, 70}},
        PackedCase{"n70_d8_mask_per_head", 2, 70, 3, 4, 8, {0, 1, 2}, false, Shape{1, 4, 70, 70}},
        // Parts in another order, a negative index, a target with 0 and -1 as exports write it.
        PackedCase{"shuffled_parts", 2, 70, 3, 2, 8, {2, -3, 1}, true, std::nullopt, false, {0, 0, 3, 2, -1}},
        PackedCase{"four_parts", 2, 33, 4, 2, 8, {3, 0, 1}, true, std::nullopt},
        // K's slice read as K^T [.., D, Tk] (the MatMul takes it as it is): tokens == head size.
        PackedCase{"k_transposed", 2, 8, 3, 2, 8, {0, 1, 2}, true, std::nullopt, true},
        // Head size past 512: the three-launch plan, which copies the views out and the output back.
        PackedCase{"unfused", 2, 5, 3, 2, 520, {0, 1, 2}, true, std::nullopt},
        PackedCase{"unfused_no_transpose", 1, 6, 3, 2, 520, {1, 2, 0}, false, Shape{6, 6}}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

// Q, K and V split into heads in place (heads_views, the graph pass read_split_heads): X [B, N, heads * D]
// read as [B, heads, N, D] through strides, on each plan, some operands contiguous, with the output written
// transposed (SigLIP's whole attention then runs without a Transpose), against the float64 reference of the
// same attention on contiguous copies.
TEST(Attention, SplitHeadsViewsOfSeparateProjections) {
  struct Case {
    int64_t batch, tokens, heads, head;
    std::vector<int64_t> flags;
    bool transpose_output;
    std::vector<int64_t> target;  // as given ({} = [B, N, heads, D])
  };
  for (const Case& c :
       {Case{2, 70, 3, 8, {1, 1, 1}, true, {}}, Case{1, 197, 4, 32, {1, 1, 1}, true, {0, 0, 4, -1}},
        Case{2, 33, 2, 8, {0, 1, 1}, false, {}}, Case{2, 6, 2, 520, {1, 0, 1}, true, {}}}) {
    const Shape r = {c.batch, c.tokens, 1, c.heads, c.head};
    const Shape x_shape = {c.batch, c.tokens, c.heads * c.head};
    std::vector<Tensor> x, contiguous;
    for (uint64_t i = 0; i < 3; ++i) {
      x.push_back(test::random_tensor(x_shape, 41 + i, -2, 2));
      contiguous.push_back(packed_slice(x.back(), r, 0));
    }
    Shape shape;
    std::vector<double> ref =
        attention_reference(contiguous[0], contiguous[1], contiguous[2], nullptr, false, 0.3, shape);
    if (c.transpose_output) ref = transpose_0213(ref, shape);
    const std::vector<int64_t> target =
        c.target.empty() ? std::vector<int64_t>{c.batch, c.tokens, c.heads, c.head} : c.target;
    Inputs inputs(9);
    for (size_t i = 0; i < 3; ++i) {
      inputs[i] = NodeInput{c.flags[i] ? x[i] : contiguous[i]};
      if (c.flags[i]) inputs[6 + i] = NodeInput{Tensor::from_vector<int64_t>({4}, target), true};
    }
    std::vector<std::string> kernels = {""};
    if (c.head <= 512) kernels.push_back("rows");
    if (c.head <= 64) kernels.push_back("tiled");
    kernels.push_back("gemm");  // SigLIP's heads read in place by the GEMMs (its batch-8 plan)
    for (const std::string& kernel : kernels) {
      ops::NodeInfo node = attention_node(0.3f, false);
      node.attributes.set("heads_views", c.flags);
      if (c.transpose_output) node.attributes.set("transpose_output", int64_t{1});
      if (!kernel.empty()) node.attributes.set("wgi.kernel", kernel);
      const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), node, inputs);
      if (kernel == "rows" || kernel == "tiled") {
        // In place on the tiled kernel; the row kernel copies the strided ones of K and V first.
        const size_t copies = kernel == "rows" ? static_cast<size_t>(c.flags[1] + c.flags[2]) : 0;
        EXPECT_EQ(plan.launches.size(), 1u + copies) << kernel;
      }
      auto out = runtime::run_node(test::device(), node, inputs);
      EXPECT_TRUE(test::all_close(out[0], shape, ref, test::fp32_tolerance(c.head * 4)))
          << c.tokens << " tokens, head " << c.head << ", kernel " << (kernel.empty() ? "auto" : kernel);
    }
  }
  // A flagged operand without its target, or one that does not split into 4-D heads: errors naming it.
  ops::NodeInfo node = attention_node(1.0f, false);
  node.attributes.set("heads_views", std::vector<int64_t>{1, 0, 0});
  const Tensor q = test::random_tensor({1, 5, 8}, 51), k = test::random_tensor({1, 2, 5, 4}, 52);
  Inputs missing = {NodeInput{q}, NodeInput{k}, NodeInput{k}};
  std::string msg;
  try {
    runtime::run_node(test::device(), node, missing);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("heads_views needs input 6"), std::string::npos) << msg;
  Inputs bad(7);
  bad[0] = NodeInput{q};
  bad[1] = NodeInput{k};
  bad[2] = NodeInput{k};
  bad[6] = NodeInput{Tensor::from_vector<int64_t>({3}, {1, 5, 8}), true};
  msg.clear();
  try {
    runtime::run_node(test::device(), node, bad);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("is not a 4-D [B, N, heads, D]"), std::string::npos) << msg;
}

// transpose_output alone (Q, K, V contiguous, SigLIP's and the tiny transformer's pattern), on each plan.
TEST(Attention, TransposedOutputOfContiguousOperands) {
  struct Case {
    Shape q, k, v;
  };
  for (const Case& c : {Case{{2, 3, 70, 8}, {2, 3, 70, 8}, {2, 3, 70, 8}},
                        Case{{2, 3, 5, 8}, {1, 3, 7, 8}, {2, 3, 7, 520}}}) {
    const Tensor q = test::random_tensor(c.q, 31), k = test::random_tensor(c.k, 32),
                 v = test::random_tensor(c.v, 33);
    Shape shape;
    std::vector<double> ref = attention_reference(q, k, v, nullptr, false, 0.4, shape);
    ref = transpose_0213(ref, shape);
    const Inputs inputs = {NodeInput{q}, NodeInput{k}, NodeInput{v}};
    std::vector<std::string> kernels = {"", "gemm"};
    if (c.v.back() <= 64) kernels = {"", "rows", "tiled", "gemm"};
    for (const std::string& kernel : kernels) {
      ops::NodeInfo node = attention_node(0.4f, false);
      node.attributes.set("transpose_output", int64_t{1});
      if (!kernel.empty()) node.attributes.set("wgi.kernel", kernel);
      auto out = runtime::run_node(test::device(), node, inputs);
      EXPECT_TRUE(test::all_close(out[0], shape, ref, test::fp32_tolerance(32)))
          << shape_to_string(c.v) << " kernel " << kernel;
    }
  }
}

TEST(Attention, PackedLayoutErrorsNameTheProblem) {
  const Tensor x = test::random_tensor({1, 4, 24}, 41);
  auto error = [&](const std::vector<int64_t>& target, const std::vector<int64_t>& indices, bool transpose) {
    ops::NodeInfo node = attention_node(1.0f, false);
    node.attributes.set("qkv_packed", int64_t{1});
    node.attributes.set("qkv_indices", indices);
    if (transpose) node.attributes.set("transpose_output", int64_t{1});
    try {
      runtime::plan_node(
          test::device().capabilities(), node,
          Inputs{
              NodeInput{x}, NodeInput{x}, NodeInput{x}, std::nullopt, std::nullopt,
              NodeInput{Tensor::from_vector<int64_t>({static_cast<int64_t>(target.size())}, target), true}});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({1, 4, 3, 2, 4}, {0, 1, 2}, true), "no error");
  EXPECT_NE(error({1, 4, 3, 8}, {0, 1, 2}, false).find("is not a 5-D"), std::string::npos);
  EXPECT_NE(error({1, 4, 3, 2, 5}, {0, 1, 2}, false).find("is not a 5-D"), std::string::npos);
  EXPECT_NE(error({1, 4, 3, 2, 4}, {0, 1, 3}, false).find("out of range"), std::string::npos);
  EXPECT_NE(error({1, 4, 3, 2, 4}, {0, 1}, false).find("qkv_indices"), std::string::npos);
  // A 3-D Q with transpose_output (one batch dim).
  ops::NodeInfo node = attention_node(1.0f, false);
  node.attributes.set("transpose_output", int64_t{1});
  const Tensor q = test::random_tensor({2, 4, 8}, 42);
  try {
    runtime::plan_node(test::device().capabilities(), node, Inputs{NodeInput{q}, NodeInput{q}, NodeInput{q}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("transpose_output needs two batch dims"), std::string::npos)
        << e.what();
  }
}

// The exported transformer runs the same with and without the fusion: both paths must match the reference.
TEST(AttentionFusion, FusedAndUnfusedGraphsMatchTheReference) {
  const std::filesystem::path dir =
      std::filesystem::path(WGI_TEST_DATA_DIR) / "models" / "tiny_transformer_opset17";
  Tensor x = npy::load(dir / "input_x.npy");
  test::Float64Array expected = test::load_float64_npy(dir / "expected_y.npy");
  for (bool fuse : {true, false}) {
    graph::Graph g = onnx::import_model_file(dir / "model.onnx");
    graph::eliminate_identities(g);
    graph::fold_constants(g, ops::builtin_registry());
    graph::fuse_bias_adds(g);
    const int fused = fuse ? graph::fuse_attention(g) : 0;
    EXPECT_EQ(fused, fuse ? 1 : 0);
    const bool has_attention = std::any_of(
        g.nodes.begin(), g.nodes.end(), [](const graph::Node& n) { return n.info.op_type == "Attention"; });
    const bool has_softmax = std::any_of(g.nodes.begin(), g.nodes.end(),
                                         [](const graph::Node& n) { return n.info.op_type == "Softmax"; });
    EXPECT_EQ(has_attention, fuse);
    EXPECT_EQ(has_softmax, !fuse);
    runtime::WeightStore weights(test::device());
    runtime::ExecutionPlan plan(test::device(), g, ops::builtin_registry(), weights,
                                {{{x.dtype(), x.shape()}, nullptr}}, {});
    std::vector<Tensor> out = plan.run({&x}, nullptr);
    EXPECT_TRUE(test::close_in_l2(out[0], expected, 1e-4)) << (fuse ? "fused" : "unfused");
  }
}

// DaViT's channel attention on a packed projection X [B, N, 3 * heads * D] (read_packed_qkv with
// qkv_transposed, write_attention_transposed with output_perm [0, 3, 1, 2]): Q = q^T and V = v^T, the
// [B, heads, D, N] views of the slices, K^T = k as it is, the output [B, heads, D, N] written as [B, N,
// heads, D]. The reference: the same attention on contiguous copies, its output permuted on the host.
std::vector<double> channel_attention_reference(const Tensor& x, const Shape& r, float scale, Shape& shape) {
  const std::vector<int64_t> swap = {0, 1, 3, 2};
  const Tensor q = test::transpose_reference(packed_slice(x, r, 0), swap), k = packed_slice(x, r, 1),
               v = test::transpose_reference(packed_slice(x, r, 2), swap);
  const std::vector<double> o = attention_reference(q, k, v, nullptr, true, scale, shape);  // [B, H, D, N]
  const int64_t b = shape[0], h = shape[1], d = shape[2], n = shape[3];
  std::vector<double> out(o.size());
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < h; ++j)
      for (int64_t c = 0; c < d; ++c)
        for (int64_t t = 0; t < n; ++t)
          out[static_cast<size_t>(((i * n + t) * h + j) * d + c)] =
              o[static_cast<size_t>(((i * h + j) * d + c) * n + t)];
  shape = {b, n, h, d};
  return out;
}

// The node on each plan: the fused kernels (tokens <= 512) copy the transposed views and the output; the
// three-launch plan (tokens > 512) reads the views and writes the output in place: no copy launch at all.
TEST(Attention, ChannelAttentionViewsOfThePackedProjection) {
  struct Case {
    int64_t batch, tokens, heads, head;
  };
  for (const Case& c : {Case{2, 40, 2, 8}, Case{1, 520, 3, 8}, Case{2, 530, 2, 12}}) {
    const Shape r = {c.batch, c.tokens, 3, c.heads, c.head};
    const Tensor x = test::random_tensor({c.batch, c.tokens, 3 * c.heads * c.head}, 61 + c.tokens, -2, 2);
    const float scale = 0.3f;
    Shape shape;
    const std::vector<double> ref = channel_attention_reference(x, r, scale, shape);
    const Inputs inputs = {
        NodeInput{x},
        NodeInput{x},
        NodeInput{x},
        std::nullopt,
        std::nullopt,
        NodeInput{Tensor::from_vector<int64_t>({5}, std::vector<int64_t>(r.begin(), r.end())), true}};
    std::vector<std::string> kernels = {""};
    if (c.tokens <= 512) kernels.push_back("rows");
    if (c.tokens <= 64) kernels.push_back("tiled");
    for (const std::string& kernel : kernels) {
      ops::NodeInfo node = attention_node(scale, true);
      node.attributes.set("qkv_packed", int64_t{1});
      node.attributes.set("qkv_indices", std::vector<int64_t>{0, 1, 2});
      node.attributes.set("qkv_transposed", std::vector<int64_t>{1, 0, 1});
      node.attributes.set("output_perm", std::vector<int64_t>{0, 3, 1, 2});
      if (!kernel.empty()) node.attributes.set("wgi.kernel", kernel);
      const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), node, inputs);
      std::string labels;
      size_t copies = 0;
      for (const ops::KernelLaunch& l : plan.launches) {
        labels += l.program.label + " ";
        if (l.program.label.rfind("copy_strided", 0) == 0) ++copies;
      }
      if (c.tokens > 512) {
        EXPECT_EQ(copies, 0u) << labels;
        EXPECT_NE(labels.find("softmax"), std::string::npos) << labels;
      } else {
        EXPECT_GT(copies, 0u) << labels;  // Q^T, V^T and the output copied around the fused kernel
      }
      auto out = runtime::run_node(test::device(), node, inputs);
      EXPECT_TRUE(test::all_close(out[0], shape, ref, test::fp32_tolerance(c.tokens * 4)))
          << c.tokens << " tokens, kernel " << (kernel.empty() ? "auto" : kernel) << ": " << labels;
    }
    if (c.tokens > 512) {
      // A device without the fast GEMM kernels (a compat device's 128 invocations per workgroup): the seeds'
      // kernels on packed copies of the views, the output copied into place.
      runtime::NodeRunOptions compat;
      compat.capabilities = test::device().capabilities();
      compat.capabilities->limits.max_compute_invocations_per_workgroup = 128;
      compat.capabilities->limits.max_compute_workgroup_size_x = 128;
      ops::NodeInfo node = attention_node(scale, true);
      node.attributes.set("qkv_packed", int64_t{1});
      node.attributes.set("qkv_indices", std::vector<int64_t>{0, 1, 2});
      node.attributes.set("qkv_transposed", std::vector<int64_t>{1, 0, 1});
      node.attributes.set("output_perm", std::vector<int64_t>{0, 3, 1, 2});
      const ops::OpPlan plan = runtime::plan_node(*compat.capabilities, node, inputs);
      std::string labels;
      size_t copies = 0;
      for (const ops::KernelLaunch& l : plan.launches) {
        labels += l.program.label + " ";
        if (l.program.label.rfind("copy_strided", 0) == 0) ++copies;
        EXPECT_EQ(l.program.label.find("gemm_fast"), std::string::npos) << labels;
      }
      EXPECT_EQ(copies, 4u) << labels;  // Q^T, K, V^T in, the output out
      auto out = runtime::run_node(test::device(), node, inputs, compat);
      EXPECT_TRUE(test::all_close(out[0], shape, ref, test::fp32_tolerance(c.tokens * 4)))
          << c.tokens << " tokens, compat: " << labels;
    }
  }
  // The output permutation must be one of the output's dims.
  ops::NodeInfo node = attention_node(1.0f, true);
  node.attributes.set("output_perm", std::vector<int64_t>{0, 3, 1});
  const Tensor q = test::random_tensor({1, 2, 4, 6}, 71), k = test::random_tensor({1, 2, 6, 4}, 72);
  std::string msg;
  try {
    runtime::run_node(test::device(), node, Inputs{NodeInput{q}, NodeInput{k}, NodeInput{q}});
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("output_perm [0, 3, 1] is not a permutation of the output's 4 dims"), std::string::npos)
      << msg;
}

// The channel attention as DaViT exports it (Reshape, Transpose [2, 0, 3, 1, 4], Gathers, q * scale,
// Transposes, MatMuls, Softmax, Transpose [0, 3, 1, 2], Reshape), run as is and after the passes that make
// it one Attention node reading the packed projection: both against the float64 reference.
TEST(AttentionFusion, ChannelAttentionGraphMatchesTheUnfusedGraph) {
  struct Case {
    int64_t batch, tokens, heads, head;
  };
  for (const Case& c : {Case{2, 48, 2, 8}, Case{1, 520, 2, 16}}) {
    const int64_t channels = c.heads * c.head;
    graph::Graph g;
    auto value = [&](const std::string& name) {
      graph::Value v;
      v.name = name + std::to_string(g.values.size());
      return g.add_value(std::move(v));
    };
    auto constant = [&](Tensor t) {
      graph::Value v;
      v.name = "c" + std::to_string(g.values.size());
      v.dtype = t.dtype();
      v.shape = graph::ValueShape::of(t.shape());
      v.constant = std::move(t);
      return g.add_value(std::move(v));
    };
    auto node = [&](const std::string& op, std::vector<graph::ValueId> in, std::vector<int64_t> perm = {}) {
      const graph::ValueId out = value(op);
      graph::Node n;
      n.info.name = g.value(out).name;
      n.info.op_type = op;
      n.info.opset = 17;
      if (!perm.empty()) n.info.attributes.set("perm", perm);
      n.inputs = std::move(in);
      n.outputs = {out};
      g.nodes.push_back(std::move(n));
      return out;
    };
    graph::Value xv;
    xv.name = "x";
    xv.shape = graph::ValueShape::of({c.batch, c.tokens, 3 * channels});
    const graph::ValueId x = g.add_value(std::move(xv));
    g.inputs = {x};
    const std::vector<int64_t> target = {c.batch, c.tokens, 3, c.heads, c.head};
    const graph::ValueId split =
        node("Transpose", {node("Reshape", {x, constant(Tensor::from_vector<int64_t>({5}, target))})},
             {2, 0, 3, 1, 4});
    std::vector<graph::ValueId> qkv;
    for (int64_t i = 0; i < 3; ++i) {
      qkv.push_back(node("Gather", {split, constant(Tensor::from_vector<int64_t>({}, {i}))}));
      g.nodes.back().info.attributes.set("axis", int64_t{0});
    }
    const float scale = 0.25f;
    const graph::ValueId qt =
        node("Transpose", {node("Mul", {qkv[0], constant(Tensor::from_vector<float>({}, {scale}))})},
             {0, 1, 3, 2});
    const graph::ValueId probs = node("Softmax", {node("MatMul", {qt, qkv[1]})});
    g.nodes.back().info.attributes.set("axis", int64_t{-1});
    const graph::ValueId o = node("MatMul", {probs, node("Transpose", {qkv[2]}, {0, 1, 3, 2})});
    const graph::ValueId y = node("Transpose", {o}, {0, 3, 1, 2});
    g.outputs = {
        node("Reshape", {y, constant(Tensor::from_vector<int64_t>({3}, {c.batch, c.tokens, channels}))})};
    g.sort_topologically();

    const Tensor xt = test::random_tensor({c.batch, c.tokens, 3 * channels}, 81 + c.tokens, -2, 2);
    Shape shape;
    const std::vector<double> ref =
        channel_attention_reference(xt, {c.batch, c.tokens, 3, c.heads, c.head}, scale, shape);
    std::vector<Tensor> results;
    for (bool fuse : {false, true}) {
      graph::Graph run = g;
      if (fuse) {
        EXPECT_EQ(graph::fuse_attention(run), 1);
        EXPECT_EQ(graph::read_packed_qkv(run), 1);
        EXPECT_EQ(graph::write_attention_transposed(run), 1);
        graph::remove_dead_nodes(run);
        for (const graph::Node& n : run.nodes) {
          EXPECT_TRUE(n.info.op_type == "Attention" || n.info.op_type == "Reshape") << n.info.op_type;
        }
      }
      runtime::WeightStore weights(test::device());
      runtime::ExecutionPlan plan(test::device(), run, ops::builtin_registry(), weights,
                                  {{{xt.dtype(), xt.shape()}, nullptr}}, {});
      results.push_back(plan.run({&xt}, nullptr)[0]);
      EXPECT_TRUE(test::all_close(results.back(), {c.batch, c.tokens, channels}, ref,
                                  test::fp32_tolerance(c.tokens * 4)))
          << c.tokens << " tokens, " << (fuse ? "fused" : "unfused");
    }
  }
}

}  // namespace

namespace {

// Window partition and reverse as DaViT exports them, around a token-mixing product inside each window (so a
// wrong window order cannot cancel out): x [1, h * w, C] -> image [1, h, w, C] -> Pad to multiples of 4 ->
// partition into 4x4 windows -> qkv MatMul + bias -> MatMul(M, .) mixing a window's 16 tokens -> proj MatMul
// + bias -> reverse -> crop (ends from Shape, as exported) -> Reshape -> Add(., x). The optimised graph (qkv
// reading the image through a row map, proj writing the reversed image with the residual in its epilogue, or
// the copies of the plan where the crop is not empty or the device lacks the fast kernels) must match the
// graph as exported and a float64 reference.
struct WindowBlock {
  graph::Graph g;
  Tensor x;
  test::Float64Array expected;
};

WindowBlock window_block(int64_t h, int64_t w) {
  constexpr int64_t c = 8, ws = 4, tokens = ws * ws;
  const int64_t hp = (h + ws - 1) / ws * ws, wp = (w + ws - 1) / ws * ws;
  uint32_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<float>((seed >> 8) % 2001) / 1000.0f - 1.0f;
  };
  auto randoms = [&](const Shape& shape) {
    std::vector<float> v(static_cast<size_t>(element_count(shape)));
    for (float& e : v) e = next();
    return Tensor::from_vector(shape, v);
  };
  WindowBlock r;
  graph::Graph& g = r.g;
  auto value = [&g](std::optional<Tensor> t = std::nullopt) {
    graph::Value v;
    v.name = "v" + std::to_string(g.values.size());
    if (t) {
      v.dtype = t->dtype();
      v.shape = graph::ValueShape::of(t->shape());
      v.constant = std::move(*t);
    }
    return g.add_value(std::move(v));
  };
  auto ints = [&](const std::vector<int64_t>& v) {
    return value(Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
  };
  auto node = [&](const std::string& op, std::vector<graph::ValueId> inputs) {
    const graph::ValueId out = value();
    graph::Node n;
    n.info.name = op + std::to_string(out);
    n.info.op_type = op;
    n.info.opset = 17;
    n.inputs = std::move(inputs);
    n.outputs = {out};
    g.nodes.push_back(std::move(n));
    return out;
  };
  auto transpose = [&](graph::ValueId v) {
    const graph::ValueId t = node("Transpose", {v});
    g.nodes.back().info.attributes.set("perm", std::vector<int64_t>{0, 1, 3, 2, 4, 5});
    return t;
  };
  r.x = randoms({1, h * w, c});
  const Tensor w1 = randoms({c, c}), b1 = randoms({c}), mix = randoms({tokens, tokens}), w2 = randoms({c, c}),
               b2 = randoms({c});
  const graph::ValueId x = value();
  g.values[static_cast<size_t>(x)].name = "x";
  g.values[static_cast<size_t>(x)].shape = graph::ValueShape::of(r.x.shape());
  g.inputs = {x};
  const graph::ValueId image = node("Reshape", {x, ints({1, h, w, c})});
  const graph::ValueId padded = node("Pad", {image, ints({0, 0, 0, 0, 0, hp - h, wp - w, 0})});
  const graph::ValueId image_shape = node("Shape", {image});
  const graph::ValueId end_h = node("Slice", {image_shape, ints({1}), ints({2})});
  const graph::ValueId end_w = node("Slice", {image_shape, ints({2}), ints({3})});
  const graph::ValueId part = transpose(node("Reshape", {padded, ints({1, hp / ws, ws, wp / ws, ws, c})}));
  const graph::ValueId a =
      node("Reshape", {node("Reshape", {part, ints({-1, ws, ws, c})}), ints({-1, tokens, c})});
  const graph::ValueId qkv = node("Add", {node("MatMul", {a, value(w1)}), value(b1)});
  const graph::ValueId mixed = node("MatMul", {value(mix), qkv});
  const graph::ValueId proj = node("Add", {node("MatMul", {mixed, value(w2)}), value(b2)});
  const graph::ValueId windows = node(
      "Reshape", {node("Reshape", {proj, ints({-1, ws, ws, c})}), ints({1, hp / ws, wp / ws, ws, ws, c})});
  const graph::ValueId reversed = node("Reshape", {transpose(windows), ints({1, hp, wp, c})});
  const graph::ValueId crop_h = node("Slice", {reversed, ints({0}), end_h, ints({1}), ints({1})});
  const graph::ValueId crop_w = node("Slice", {crop_h, ints({0}), end_w, ints({2}), ints({1})});
  g.outputs = {node("Add", {node("Reshape", {crop_w, ints({1, h * w, c})}), x})};
  g.sort_topologically();

  // The reference, window by window.
  auto at = [](const Tensor& t, int64_t i) {
    return static_cast<double>(t.data<float>()[static_cast<size_t>(i)]);
  };
  r.expected.shape = {1, h * w, c};
  r.expected.values.assign(static_cast<size_t>(h * w * c), 0.0);
  for (int64_t wy = 0; wy < hp / ws; ++wy) {
    for (int64_t wx = 0; wx < wp / ws; ++wx) {
      std::vector<double> q(static_cast<size_t>(tokens * c), 0.0);
      for (int64_t t = 0; t < tokens; ++t) {
        const int64_t y = wy * ws + t / ws, xx = wx * ws + t % ws;
        for (int64_t n = 0; n < c; ++n) {
          double acc = at(b1, n);
          for (int64_t k = 0; k < c && y < h && xx < w; ++k)
            acc += at(r.x, (y * w + xx) * c + k) * at(w1, k * c + n);
          q[static_cast<size_t>(t * c + n)] = acc;
        }
      }
      for (int64_t t = 0; t < tokens; ++t) {
        const int64_t y = wy * ws + t / ws, xx = wx * ws + t % ws;
        if (y >= h || xx >= w) continue;
        for (int64_t n = 0; n < c; ++n) {
          double acc = at(b2, n);
          for (int64_t k = 0; k < c; ++k) {
            double m = 0.0;
            for (int64_t s = 0; s < tokens; ++s)
              m += at(mix, t * tokens + s) * q[static_cast<size_t>(s * c + k)];
            acc += m * at(w2, k * c + n);
          }
          const int64_t i = (y * w + xx) * c + n;
          r.expected.values[static_cast<size_t>(i)] = acc + at(r.x, i);
        }
      }
    }
  }
  return r;
}

TEST(WindowsInPlace, RewrittenGraphMatchesTheExportedGraphAndTheReference) {
  // 8x8: the windows tile the image (row maps, the residual in proj's epilogue); 6x6: padded to 8x8, the
  // crop is not empty (the plan's copies after the product).
  for (int64_t size : {8, 6}) {
    std::vector<Tensor> outputs;
    for (bool optimise : {false, true}) {
      WindowBlock block = window_block(size, size);
      if (optimise) {
        const graph::PassReport report = graph::optimize(block.g, ops::builtin_registry());
        EXPECT_EQ(report.count("read_windows_in_place"), 1) << report.summary();
        EXPECT_EQ(report.count("write_windows_in_place"), 1) << report.summary();
        EXPECT_EQ(report.count("fuse_residual_adds"), 1) << report.summary();
        EXPECT_FALSE(std::any_of(block.g.nodes.begin(), block.g.nodes.end(),
                                 [](const graph::Node& n) { return n.info.op_type == "Transpose"; }));
      }
      runtime::WeightStore weights(test::device());
      runtime::ExecutionPlan plan(test::device(), block.g, ops::builtin_registry(), weights,
                                  {{{block.x.dtype(), block.x.shape()}, nullptr}}, {});
      std::vector<Tensor> out = plan.run({&block.x}, nullptr);
      EXPECT_TRUE(test::close_in_l2(out[0], block.expected, 1e-5))
          << size << "x" << size << (optimise ? " optimised" : " as exported");
      outputs.push_back(std::move(out[0]));
    }
    ASSERT_EQ(outputs[0].shape(), outputs[1].shape());
    for (int64_t i = 0; i < outputs[0].element_count(); ++i) {
      ASSERT_NEAR(outputs[0].data<float>()[static_cast<size_t>(i)],
                  outputs[1].data<float>()[static_cast<size_t>(i)], 1e-4)
          << size << "x" << size << " element " << i;
    }
  }
}

// The rewritten MatMuls as single nodes, on this device and as on a device without the fast GEMM kernels (a
// compat device's 128 invocations per workgroup): there the plan copies the windows packed and back. An 8x8
// image of 4x4 windows; the reverse cropped to 8x8 (empty: the output written through the row map, the
// residual in the epilogue) and to 6x7 (the product reversed, cropped and added by copies).
TEST(WindowsInPlace, RewrittenMatMulsOnEveryDevice) {
  constexpr int64_t c = 8, size = 8;
  uint32_t seed = 777;
  auto randoms = [&seed](const Shape& shape) {
    std::vector<float> v(static_cast<size_t>(element_count(shape)));
    for (float& e : v) {
      seed = seed * 1664525u + 1013904223u;
      e = static_cast<float>((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
    return Tensor::from_vector(shape, v);
  };
  auto ints = [](const std::vector<int64_t>& v) {
    return runtime::NodeInput{Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v), true};
  };
  const Tensor image = randoms({1, size, size, c}), w = randoms({c, c}), bias = randoms({c});
  // Token t of window (wy, wx) is pixel (4 wy + t / 4, 4 wx + t % 4).
  auto pixel = [](int64_t window, int64_t t) {
    return ((window / 2) * 4 + t / 4) * size + (window % 2) * 4 + t % 4;
  };
  auto product = [&](const Tensor& a, int64_t row, int64_t n) {
    double acc = bias.data<float>()[static_cast<size_t>(n)];
    for (int64_t k = 0; k < c; ++k)
      acc += static_cast<double>(a.data<float>()[static_cast<size_t>(row * c + k)]) *
             w.data<float>()[static_cast<size_t>(k * c + n)];
    return acc;
  };
  runtime::NodeRunOptions compat;
  compat.capabilities = test::device().capabilities();
  compat.capabilities->limits.max_compute_invocations_per_workgroup = 128;
  compat.capabilities->limits.max_compute_workgroup_size_x = 128;
  const bool views = ops::gemm_views_supported(test::device().capabilities());
  auto check = [&](const ops::NodeInfo& node, const std::vector<std::optional<runtime::NodeInput>>& inputs,
                   const Shape& shape, const std::vector<double>& want, bool in_place,
                   const std::string& what) {
    for (bool on_compat : {false, true}) {
      const ops::OpPlan plan =
          runtime::plan_node(on_compat ? *compat.capabilities : test::device().capabilities(), node, inputs);
      std::string labels;
      size_t copies = 0, fast = 0;
      for (const ops::KernelLaunch& l : plan.launches) {
        labels += l.program.label + " ";
        copies += l.program.label.rfind("copy_strided", 0) == 0 ? 1 : 0;
        fast += l.program.label.find("map") != std::string::npos ? 1 : 0;
      }
      if (on_compat) {
        EXPECT_GT(copies, 0u) << what << ": " << labels;
        EXPECT_EQ(fast, 0u) << what << ": " << labels;
      } else if (in_place && views) {
        EXPECT_EQ(copies, 0u) << what << ": " << labels;
        EXPECT_GT(fast, 0u) << what << ": " << labels;
      }
      const auto out = on_compat ? runtime::run_node(test::device(), node, inputs, compat)
                                 : runtime::run_node(test::device(), node, inputs);
      EXPECT_TRUE(test::all_close(out[0], shape, want, test::fp32_tolerance(c * 4)))
          << what << (on_compat ? " (compat)" : "") << ": " << labels;
    }
  };

  // The partition read in place: out [4 windows, 16 tokens, C].
  ops::NodeInfo qkv;
  qkv.op_type = "MatMul";
  qkv.opset = 17;
  qkv.name = "qkv";
  qkv.attributes.set(ops::kMatMulWindowsInAttribute, int64_t{1});
  std::vector<double> want(4 * 16 * c);
  for (int64_t win = 0; win < 4; ++win)
    for (int64_t t = 0; t < 16; ++t)
      for (int64_t n = 0; n < c; ++n)
        want[static_cast<size_t>((win * 16 + t) * c + n)] = product(image, pixel(win, t), n);
  check(qkv,
        {runtime::NodeInput{image}, runtime::NodeInput{w, true}, runtime::NodeInput{bias, true}, std::nullopt,
         ints({1, 2, 4, 2, 4, c}), ints({-1, 4, 4, c}), ints({-1, 16, c})},
        {4, 16, c}, want, true, "partition");

  // The reverse written in place, with a residual, cropped to crop_h x crop_w.
  const Tensor windows = randoms({4, 16, c});
  ops::NodeInfo proj = qkv;
  proj.name = "proj";
  proj.attributes = ops::Attributes();
  proj.attributes.set(ops::kMatMulWindowsOutAttribute, int64_t{1});
  proj.attributes.set(ops::kFusedResidualAttribute, int64_t{1});
  for (const auto& [crop_h, crop_w] : {std::pair<int64_t, int64_t>{8, 8}, {6, 7}}) {
    const Tensor residual = randoms({1, crop_h * crop_w, c});
    std::vector<double> reversed(static_cast<size_t>(size * size * c));
    for (int64_t win = 0; win < 4; ++win)
      for (int64_t t = 0; t < 16; ++t)
        for (int64_t n = 0; n < c; ++n)
          reversed[static_cast<size_t>(pixel(win, t) * c + n)] = product(windows, win * 16 + t, n);
    std::vector<double> expected;
    for (int64_t y = 0; y < crop_h; ++y)
      for (int64_t x = 0; x < crop_w; ++x)
        for (int64_t n = 0; n < c; ++n)
          expected.push_back(reversed[static_cast<size_t>((y * size + x) * c + n)] +
                             residual.data<float>()[expected.size()]);
    check(proj,
          {runtime::NodeInput{windows}, runtime::NodeInput{w, true}, runtime::NodeInput{bias, true},
           runtime::NodeInput{residual}, ints({-1, 4, 4, c}), ints({1, 2, 2, 4, 4, c}),
           ints({1, size, size, c}), ints({crop_h}), ints({crop_w}), ints({1, crop_h * crop_w, c})},
          {1, crop_h * crop_w, c}, expected, crop_h == size && crop_w == size,
          "reverse cropped to " + std::to_string(crop_h) + "x" + std::to_string(crop_w));
  }
}

// What the plan checks when the shapes are known: windows that do not tile the image, a 0 in the windows'
// shape copying a dim the partition moved, targets that do not lead back to the image; each names the
// attribute and what it expected.
TEST(WindowsInPlace, PlanErrorsNameTheProblem) {
  constexpr int64_t c = 8;
  auto ints = [](const std::vector<int64_t>& v) {
    return runtime::NodeInput{Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v), true};
  };
  const Tensor image = test::random_tensor({1, 8, 8, c}, 5), w = test::random_tensor({c, c}, 6),
               windows = test::random_tensor({4, 16, c}, 7);
  auto error = [&](const char* attribute, const std::vector<std::optional<runtime::NodeInput>>& inputs) {
    ops::NodeInfo n;
    n.op_type = "MatMul";
    n.opset = 17;
    n.name = "windowed";
    n.attributes.set(attribute, int64_t{1});
    try {
      runtime::plan_node(test::device().capabilities(), n, inputs);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const runtime::NodeInput a{image}, b{w, true}, x{windows};
  // 8 rows cut as 2 x 3 do not tile them (the partition's Reshape does not even hold the image).
  std::string e = error(
      ops::kMatMulWindowsInAttribute,
      {a, b, std::nullopt, std::nullopt, ints({1, 2, 3, 2, 4, c}), ints({-1, 4, 4, c}), ints({-1, 16, c})});
  EXPECT_NE(e.find("windowed"), std::string::npos) << e;
  EXPECT_NE(e.find("the windows must tile the image exactly"), std::string::npos) << e;
  // 4 x 2 windows of 2 x 4 tokens: the Transpose makes [B, nh, nw, wh, ww, C] = [1, 4, 4, 2, 2, C] of
  // [1, 4, 2, 4, 2, C], so a 0 at dim 2 would copy wh (2) where nw (4) now stands.
  e = error(ops::kMatMulWindowsInAttribute, {a, b, std::nullopt, std::nullopt, ints({1, 4, 2, 4, 2, c}),
                                             ints({-1, 2, 0, c}), ints({-1, 4, c})});
  EXPECT_NE(e.find("copies dim 2 with a 0"), std::string::npos) << e;
  // The reversed windows reshaped to an image of other sides than the windows make.
  e = error(ops::kMatMulWindowsOutAttribute,
            {x, b, std::nullopt, std::nullopt, ints({-1, 4, 4, c}), ints({1, 2, 2, 4, 4, c}),
             ints({1, 4, 16, c}), std::nullopt, std::nullopt, ints({1, 64, c})});
  EXPECT_NE(e.find("are not the image"), std::string::npos) << e;
  // A missing target.
  e = error(ops::kMatMulWindowsOutAttribute, {x, b});
  EXPECT_NE(e.find("needs input 4"), std::string::npos) << e;
}

}  // namespace
}  // namespace wgi
