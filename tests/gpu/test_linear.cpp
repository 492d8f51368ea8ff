// MatMul / Gemm (and the seeds' linear = Gemm with transB and a bias) against float64 references, through
// every kernel of the family (the seeds' scalar tiled and vec4, the 128x128 and 64x64 fast kernels in each
// of their workgroup-memory configurations, GEMV), aligned and unaligned sizes, every operand layout, batch
// dims, broadcasting, fused activations, 1x1 convolutions routed to the GEMM, folded grids, the planner's
// choices on model devices, and the errors a user can cause.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <sstream>
#include <tuple>

#include "ops/float16.h"
#include "ops/fused_activation.h"
#include "ops/gemm_launch.h"
#include "ops/internal_ops.h"
#include "ops/registry.h"
#include "runtime/node_runner.h"
#include "support/planner_devices.h"
#include "support/reference_elementwise.h"
#include "support/reference_linear.h"
#include "support/run_node.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;
using test::run_error;

const test::NodeMaker node{"linear_under_test"};

struct Mnk {
  int64_t m, n, k;
};

// The seeds' linear: out[m, n] = sum_k in[m, k] * weight[n, k] + bias[n], weight prepacked at load.
class SeedLinearTest : public ::testing::TestWithParam<Mnk> {};

TEST_P(SeedLinearTest, BothKernelsWithAndWithoutBias) {
  const auto [m, n, k] = GetParam();
  Tensor x = test::random_tensor({m, k}, 1 + m);
  Tensor w = test::random_tensor({n, k}, 2 + n);
  Tensor bias = test::random_tensor({n}, 3 + k);
  for (const char* kernel : {"tiled", "vec4"}) {
    if (std::string(kernel) == "vec4" && k % 4 != 0) continue;
    for (bool with_bias : {false, true}) {
      ops::NodeInfo g = node("Gemm");
      g.attributes.set("transB", int64_t{1});
      g.attributes.set("wgi.kernel", std::string(kernel));
      Inputs in = {NodeInput{x}, NodeInput{w, true}};
      if (with_bias) in.push_back(NodeInput{bias, true});
      auto out = runtime::run_node(test::device(), g, in);
      auto ref = test::gemm_reference(x, w, with_bias ? &bias : nullptr, false, true, 1, 1);
      EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(k)))
          << kernel << (with_bias ? " with bias" : " without bias") << " M=" << m << " N=" << n << " K=" << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, SeedLinearTest,
                         ::testing::Values(Mnk{1, 1, 1}, Mnk{1, 64, 32}, Mnk{3, 31, 33}, Mnk{31, 32, 64},
                                           Mnk{32, 33, 100}, Mnk{33, 64, 257}, Mnk{64, 100, 3},
                                           Mnk{100, 257, 31}, Mnk{257, 3, 32}, Mnk{33, 1, 4}),
                         [](const auto& p) {
                           std::ostringstream name;
                           name << "M" << p.param.m << "_N" << p.param.n << "_K" << p.param.k;
                           return name.str();
                         });

TEST(MatMul, LeadingBatchDimsFoldIntoMWithAConstantWeight) {
  Tensor x = test::random_tensor({2, 3, 5, 36}, 11);
  Tensor w = test::random_tensor({36, 20}, 12);  // [K, N] as torch exports nn.Linear
  for (const char* kernel : {"tiled", "vec4"}) {
    ops::NodeInfo n = node("MatMul");
    n.attributes.set("wgi.kernel", std::string(kernel));
    auto out = runtime::run_node(test::device(), n, Inputs{NodeInput{x}, NodeInput{w, true}});
    auto ref = test::matmul_reference(x, w);
    EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(36))) << kernel;
  }
}

TEST(MatMul, BroadcastBatchesWithRuntimeOperands) {
  struct Case {
    Shape a, b;
  };
  for (const Case& c :
       {Case{{2, 1, 7, 9}, {3, 9, 5}}, Case{{4, 6, 8}, {4, 8, 6}}, Case{{6, 8}, {2, 3, 8, 4}},
        Case{{1, 3, 1, 5, 4}, {2, 1, 2, 4, 3}}, Case{{9}, {2, 9, 3}}, Case{{2, 4, 9}, {9}}, Case{{7}, {7}}}) {
    Tensor a = test::random_tensor(c.a, 21);
    Tensor b = test::random_tensor(c.b, 22);
    auto out = runtime::run_node(test::device(), node("MatMul"), Inputs{NodeInput{a}, NodeInput{b}});
    auto ref = test::matmul_reference(a, b);
    EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(c.a.back())))
        << shape_to_string(c.a) << " x " << shape_to_string(c.b);
    // The same with B as a prepacked constant.
    auto packed = runtime::run_node(test::device(), node("MatMul"), Inputs{NodeInput{a}, NodeInput{b, true}});
    EXPECT_TRUE(test::all_close(packed[0], ref.shape, ref.values, test::fp32_tolerance(c.a.back())))
        << shape_to_string(c.a) << " x const " << shape_to_string(c.b);
  }
}

TEST(Gemm, TransposesAlphaBetaAndBroadcastC) {
  const int64_t M = 19, N = 23, K = 12;
  struct Case {
    bool ta, tb;
    Shape c;
  };
  for (const Case& c : {Case{false, false, {N}}, Case{true, false, {M, 1}}, Case{false, true, {M, N}},
                        Case{true, true, {}}, Case{true, true, {1, N}}}) {
    Tensor a = test::random_tensor(c.ta ? Shape{K, M} : Shape{M, K}, 31);
    Tensor b = test::random_tensor(c.tb ? Shape{N, K} : Shape{K, N}, 32);
    Tensor cc = test::random_tensor(c.c, 33);
    for (bool b_const : {false, true}) {
      ops::NodeInfo g = node("Gemm");
      g.attributes.set("transA", int64_t{c.ta});
      g.attributes.set("transB", int64_t{c.tb});
      g.attributes.set("alpha", 0.75f);
      g.attributes.set("beta", -1.5f);
      auto out =
          runtime::run_node(test::device(), g, Inputs{NodeInput{a}, NodeInput{b, b_const}, NodeInput{cc}});
      auto ref = test::gemm_reference(a, b, &cc, c.ta, c.tb, 0.75, -1.5);
      EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(K)))
          << "transA " << c.ta << " transB " << c.tb << " C " << shape_to_string(c.c) << " B const "
          << b_const;
    }
  }
}

TEST(Gemm, FusedReluAndClipEpilogues) {
  Tensor x = test::random_tensor({40, 24}, 41);
  Tensor w = test::random_tensor({24, 36}, 42);
  Tensor bias = test::random_tensor({36}, 43);
  for (const char* act : {"Relu", "Clip"}) {
    ops::NodeInfo g = node("Gemm");
    g.attributes.set(ops::kFusedActivationAttribute, std::string(act));
    g.attributes.set(ops::kFusedActivationMinAttribute, -0.25f);
    g.attributes.set(ops::kFusedActivationMaxAttribute, 0.5f);
    auto out =
        runtime::run_node(test::device(), g, Inputs{NodeInput{x}, NodeInput{w, true}, NodeInput{bias}});
    bool relu = std::string(act) == "Relu";
    auto ref =
        test::gemm_reference(x, w, &bias, false, false, 1, 1, relu ? 0.0 : -0.25, relu ? FLT_MAX : 0.5);
    EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(24))) << act;
  }
}

// Planned for a device that allows only 9 workgroups per dimension, 19 x 9 x 4 tiles of the seeds' kernel
// fold into 3-D; the kernel must decode tile and batch from the folded grid.
TEST(MatMul, FoldedGridDecodesEveryTile) {
  Tensor a = test::random_tensor({4, 19 * 32 - 5, 8}, 51);
  Tensor b = test::random_tensor({4, 8, 9 * 32 - 3}, 52);
  runtime::NodeRunOptions options;
  options.capabilities = test::device().capabilities();
  options.capabilities->limits.max_compute_workgroups_per_dimension = 9;
  ops::NodeInfo mm = node("MatMul");
  mm.attributes.set("wgi.kernel", std::string("tiled"));  // the fast kernels' folding is tested below
  auto out = runtime::run_node(test::device(), mm, Inputs{NodeInput{a}, NodeInput{b}}, options);
  auto ref = test::matmul_reference(a, b);
  EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(8)));
}

// The real thing: 70000 tiny matrices, 70000 workgroups past the 65535-per-dimension limit. Slow on CPU
// adapters (about a minute on SwiftShader), so heavy.
TEST(MatMulHeavy, GridPast65535WorkgroupsIsFolded) {
  Tensor a = test::random_tensor({70000, 1, 4}, 51);
  Tensor b = test::random_tensor({70000, 4, 2}, 52);
  auto out = runtime::run_node(test::device(), node("MatMul"), Inputs{NodeInput{a}, NodeInput{b}});
  auto ref = test::matmul_reference(a, b);
  EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(4)));
}

TEST(LinearErrors, SayWhatIsWrong) {
  Tensor a = test::random_tensor({4, 5}, 1);
  Tensor b = test::random_tensor({6, 3}, 2);
  EXPECT_NE(run_error(node("MatMul"), Inputs{NodeInput{a}, NodeInput{b}}).find("inner dimensions differ"),
            std::string::npos);
  EXPECT_NE(run_error(node("MatMul"), Inputs{NodeInput{test::random_tensor({2, 4, 5}, 1)},
                                             NodeInput{test::random_tensor({3, 5, 2}, 2)}})
                .find("do not broadcast"),
            std::string::npos);
  EXPECT_NE(
      run_error(node("MatMul"), Inputs{NodeInput{Tensor(DType::Int32, {2, 2})}, NodeInput{a}}).find("int32"),
      std::string::npos);
  ops::NodeInfo forced = node("MatMul");
  forced.attributes.set("wgi.kernel", std::string("vec4"));
  EXPECT_NE(
      run_error(forced, Inputs{NodeInput{a}, NodeInput{test::random_tensor({5, 3}, 3)}}).find("K % 4 == 0"),
      std::string::npos);
  forced.attributes.set("wgi.kernel", std::string("fast"));
  EXPECT_NE(run_error(forced, Inputs{NodeInput{a}, NodeInput{test::random_tensor({5, 3}, 3)}})
                .find("unknown wgi.kernel"),
            std::string::npos);
  EXPECT_NE(run_error(node("Gemm"), Inputs{NodeInput{test::random_tensor({2, 4, 5}, 1)}, NodeInput{a}})
                .find("rank-2"),
            std::string::npos);
  EXPECT_NE(run_error(node("Gemm"), Inputs{NodeInput{a}, NodeInput{test::random_tensor({5, 3}, 3)},
                                           NodeInput{test::random_tensor({2}, 4)}})
                .find("does not broadcast to [M, N] = [4, 3]"),
            std::string::npos);
  EXPECT_NE(run_error(node("Gemm", 9), Inputs{NodeInput{a}, NodeInput{test::random_tensor({5, 3}, 3)}})
                .find("input C is required before opset 11"),
            std::string::npos);
  std::string msg = run_error(node("MatMul"), Inputs{NodeInput{a}, NodeInput{b}});
  EXPECT_NE(msg.find("'linear_under_test'"), std::string::npos) << msg;
}

// ---- The fast kernels (128x128 and 64x64 tiles) and GEMV -------------------------------------------------
//
// CPU adapters compile one fast-kernel pipeline in 1-5 s (their compilers unroll the register tiles), so the
// CI cases share four fast pipelines and three GEMV pipelines, chosen so that together they cover every load
// path of both operands (K- or M/N-contiguous, vec4 or scalar), both tiles, both buffer modes (the 128x128
// tile double buffered where 33 KiB of workgroup memory fit, as on the H200), both fused activations and
// GEMV's reduction at several widths; many sizes run on each pipeline. The Heavy suites run the full cross
// product.

// Plans `n` on the test device, checks that the planner chose a kernel whose label starts with `label`, runs
// it and compares with `ref`.
void expect_kernel_matches(const ops::NodeInfo& n, const Inputs& in, const test::Reference& ref,
                           int64_t terms, const std::string& label, const std::string& what,
                           const runtime::NodeRunOptions& options = {}) {
  ops::OpPlan plan = runtime::plan_node(options.capabilities.value_or(test::device().capabilities()), n, in);
  ASSERT_EQ(plan.launches.size(), 1u) << what;
  EXPECT_EQ(plan.launches[0].program.label.rfind(label, 0), 0u)
      << what << ": planned " << plan.launches[0].program.label;
  auto out = runtime::run_node(test::device(), n, in, options);
  EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(terms))) << what;
}

std::string plan_error(const ops::NodeInfo& n, const Inputs& in,
                       const gpu::Capabilities& caps = test::device().capabilities()) {
  try {
    runtime::plan_node(caps, n, in);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string mnk_name(const Mnk& p) {
  std::ostringstream name;
  name << "M" << p.m << "_N" << p.n << "_K" << p.k;
  return name.str();
}

// A kernel forced with its tuning knobs (0: the planner's choice) and fused activation.
struct Forced {
  std::string kernel;
  int64_t tile_k = 0, stages = 0, gemv_lanes = 0;
  std::string activation = {};  // "", "Relu", "Clip" (to [-0.25, 0.5]), "Gelu" or "GeluTanh"
};

void apply(const Forced& f, ops::NodeInfo& n, const char* kernel_attribute = "wgi.kernel") {
  if (!f.kernel.empty()) n.attributes.set(kernel_attribute, f.kernel);
  if (f.tile_k) n.attributes.set(ops::kGemmTileKAttribute, f.tile_k);
  if (f.stages) n.attributes.set(ops::kGemmStagesAttribute, f.stages);
  if (f.gemv_lanes) n.attributes.set(ops::kGemvLanesAttribute, f.gemv_lanes);
  if (!f.activation.empty()) {
    n.attributes.set(ops::kFusedActivationAttribute, f.activation);
    n.attributes.set(ops::kFusedActivationMinAttribute, -0.25f);
    n.attributes.set(ops::kFusedActivationMaxAttribute, 0.5f);
  }
}

double act_lo(const Forced& f) {
  return f.activation == "Relu" ? 0.0 : f.activation == "Clip" ? -0.25 : -INFINITY;
}
double act_hi(const Forced& f) {
  return f.activation == "Clip" ? 0.5 : INFINITY;
}

// The forced activation applied to a float64 reference computed without it.
void activate(const Forced& f, std::vector<double>& values) {
  for (double& v : values) v = test::fused_activation_reference(f.activation, v, act_lo(f), act_hi(f));
}

// The operand layouts the kernels read: A as [M,K] or [K,M] (transA), B as a constant (prepacked [N,K]) or at
// run time as [K,N] or [N,K] (transB).
struct Layout {
  bool trans_a, trans_b, b_constant;
};

std::string layout_name(const Layout& l) {
  return std::string(l.trans_a ? "A[K,M]" : "A[M,K]") + (l.b_constant ? " const B" : " runtime B") +
         (l.trans_b ? "[N,K]" : "[K,N]");
}

struct GemmProblem {
  int64_t m, n, k;
  Shape c;  // shape of C, broadcast to [M, N]
  float alpha = 1.0f, beta = 1.0f;
};

// Gemm act(alpha * op(A) op(B) + beta * C) through the forced kernel, against the float64 reference.
void expect_gemm(const Forced& f, const Layout& l, const GemmProblem& p, const std::string& label) {
  const uint64_t seed = static_cast<uint64_t>(p.m * 1000003 + p.n * 1009 + p.k);
  Tensor a = test::random_tensor(l.trans_a ? Shape{p.k, p.m} : Shape{p.m, p.k}, seed);
  Tensor b = test::random_tensor(l.trans_b ? Shape{p.n, p.k} : Shape{p.k, p.n}, seed + 1);
  Tensor c = test::random_tensor(p.c, seed + 2);
  ops::NodeInfo g = node("Gemm");
  g.attributes.set("transA", int64_t{l.trans_a});
  g.attributes.set("transB", int64_t{l.trans_b});
  g.attributes.set("alpha", p.alpha);
  g.attributes.set("beta", p.beta);
  apply(f, g);
  auto ref = test::gemm_reference(a, b, &c, l.trans_a, l.trans_b, p.alpha, p.beta);
  activate(f, ref.values);
  std::ostringstream what;
  what << f.kernel << " " << layout_name(l) << " " << mnk_name({p.m, p.n, p.k}) << " C "
       << shape_to_string(p.c);
  expect_kernel_matches(g, Inputs{NodeInput{a}, NodeInput{b, l.b_constant}, NodeInput{c}}, ref, p.k, label,
                        what.str());
}

// MatMul with batch dims through the forced kernel; `max_per_dimension` > 0 plans for a device with that few
// workgroups per grid dimension, so the grid folds.
void expect_matmul(const Forced& f, const Shape& a_shape, const Shape& b_shape, bool b_constant,
                   const std::string& label, uint32_t max_per_dimension = 0) {
  Tensor a = test::random_tensor(a_shape, 71 + a_shape.back());
  Tensor b = test::random_tensor(b_shape, 72 + b_shape.back());
  ops::NodeInfo mm = node("MatMul");
  apply(f, mm);
  auto ref = test::matmul_reference(a, b);
  activate(f, ref.values);
  runtime::NodeRunOptions options;
  if (max_per_dimension) {
    options.capabilities = test::device().capabilities();
    options.capabilities->limits.max_compute_workgroups_per_dimension = max_per_dimension;
    ops::OpPlan plan =
        runtime::plan_node(*options.capabilities, mm, Inputs{NodeInput{a}, NodeInput{b, b_constant}});
    EXPECT_GT(plan.launches.at(0).groups.z, 1u) << "the grid should fold into 3-D";
  }
  expect_kernel_matches(mm, Inputs{NodeInput{a}, NodeInput{b, b_constant}}, ref, a_shape.back(), label,
                        f.kernel + " " + shape_to_string(a_shape) + " x " + (b_constant ? "const " : "") +
                            shape_to_string(b_shape),
                        options);
}

// MatMul with wgi.trans_b = 1 (graph::read_transposed_weights: PyTorch's Linear exported as
// MatMul(x, Transpose(W))): B given as [..., N, K], constant or computed, batched or not, on every kernel.
TEST(MatMulTransB, ReadsBAsNByKOnEveryKernel) {
  struct Case {
    const char* kernel;
    Shape a, b_nk;
    bool b_constant;
  };
  const Case cases[] = {
      {"", {130, 36}, {72, 36}, true},          {"fast128", {2, 67, 20}, {70, 20}, true},
      {"fast128", {3, 65, 8}, {72, 8}, true},   {"fast64", {2, 66, 12}, {2, 68, 12}, false},
      {"gemv", {3, 2, 40}, {33, 40}, true},     {"tiled", {5, 9}, {2, 7, 9}, false},
      {"vec4", {2, 33, 12}, {2, 30, 12}, true},
  };
  for (const Case& c : cases) {
    Tensor a = test::random_tensor(c.a, 301 + c.a.back());
    Tensor b_nk = test::random_tensor(c.b_nk, 302 + c.b_nk.back());
    // The reference's B [..., K, N].
    const int64_t n = c.b_nk[c.b_nk.size() - 2], k = c.b_nk.back(), matrices = b_nk.element_count() / (n * k);
    Shape kn_shape = c.b_nk;
    std::swap(kn_shape[kn_shape.size() - 2], kn_shape.back());
    Tensor b_kn(DType::Float32, kn_shape);
    for (int64_t m = 0; m < matrices; ++m) {
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t q = 0; q < k; ++q) {
          b_kn.data<float>()[m * n * k + q * n + r] = b_nk.data<float>()[m * n * k + r * k + q];
        }
      }
    }
    ops::NodeInfo mm = node("MatMul");
    mm.attributes.set(ops::kMatMulTransBAttribute, int64_t{1});
    if (*c.kernel) mm.attributes.set("wgi.kernel", std::string(c.kernel));
    const std::string label = *c.kernel == 0                    ? "gemm_"
                              : std::string(c.kernel) == "gemv" ? "gemv"
                                                                : "gemm_" + std::string(c.kernel);
    expect_kernel_matches(
        mm, Inputs{NodeInput{a}, NodeInput{b_nk, c.b_constant}}, test::matmul_reference(a, b_kn), k, label,
        std::string("trans_b ") + c.kernel + " " + shape_to_string(c.a) + " x " + shape_to_string(c.b_nk));
  }
}

// Pipeline 1, the common linear layer: 128x128 in the planner's buffer configuration, vec4 loads of A [M,K]
// and of the prepacked weight: [N, K] where N % 4 != 0, [K, N] otherwise (the layout this kernel reads
// fastest, linear.cpp), from a weight stored either way (Gemm's transB).
TEST(FastGemm, Fast128ReadsAPrepackedWeightWithVec4Loads) {
  const Forced f{"fast128"};
  const Layout weight{false, false, true};
  for (const GemmProblem& p : {GemmProblem{1, 1, 4, {1}}, GemmProblem{129, 257, 36, {129, 257}, 0.75f, -1.5f},
                               GemmProblem{127, 3, 8, {}}, GemmProblem{3, 129, 68, {3, 1}, 0.5f, 2.0f},
                               GemmProblem{200, 130, 4, {1, 130}}}) {
    expect_gemm(f, weight, p, "gemm_fast128");
  }
  // The same pipeline from MatMul: a batched constant B (prepacked per matrix), and A's batch folded into M.
  expect_matmul(f, {2, 3, 67, 20}, {3, 20, 70}, true, "gemm_fast128");
  expect_matmul(f, {2, 65, 12}, {12, 66}, true, "gemm_fast128");

  // N % 4 == 0: prepacked [K, N], batched too.
  for (const Layout& l : {Layout{false, false, true}, Layout{false, true, true}}) {
    for (const GemmProblem& p :
         {GemmProblem{129, 260, 36, {129, 260}, 0.75f, -1.5f}, GemmProblem{3, 132, 9, {132}}}) {
      expect_gemm(f, l, p, "gemm_fast128");
    }
  }
  expect_matmul(f, {2, 3, 67, 20}, {3, 20, 72}, true, "gemm_fast128");
  ops::NodeInfo mm = node("MatMul");
  apply(f, mm);
  const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), mm,
                                              Inputs{NodeInput{test::random_tensor({130, 20}, 1)},
                                                     NodeInput{test::random_tensor({20, 72}, 2), true}});
  EXPECT_NE(plan.launches.at(0).program.label.find("_bkn"), std::string::npos)
      << plan.launches.at(0).program.label;
  // B is stored [K, N] already: bound as the weight itself, no prepacked copy.
  EXPECT_TRUE(plan.constants.empty());
  const auto& bindings = plan.launches.at(0).bindings;
  EXPECT_TRUE(std::any_of(bindings.begin(), bindings.end(), [](const ops::TensorRef& r) {
    return r.kind == ops::TensorRef::Kind::Input && r.index == 1;
  }));
}

// Pipeline 2, attention-like and 1x1-conv-like products: 64x64 in the planner's buffer configuration, A [M,K]
// with K % 4 != 0 (scalar loads), a runtime B [K,N] read as vec4 along N, fused Clip; batch, broadcast batch
// and a folded grid.
TEST(FastGemm, Fast64ReadsRuntimeOperandsWithBatchAndClip) {
  const Forced f{"fast64", 0, 0, 0, "Clip"};
  for (const auto& [a, b] : std::vector<std::pair<Shape, Shape>>{{{1, 1}, {1, 4}},
                                                                 {{65, 3}, {3, 68}},
                                                                 {{130, 33}, {33, 68}},
                                                                 {{2, 1, 67, 21}, {3, 21, 68}},
                                                                 {{3, 66, 5}, {3, 5, 64}},
                                                                 {{66, 7}, {2, 3, 7, 68}}}) {
    expect_matmul(f, a, b, false, "gemm_fast64");
  }
  expect_matmul(f, {4, 131, 9}, {4, 9, 72}, false, "gemm_fast64", 3);  // 3 x 2 x 4 tiles in a 3x3x3 grid
}

// Pipeline 3: 64x64 double buffered, A stored [K,M] read as vec4 along M, a runtime B [N,K] with K % 4 != 0
// (scalar loads, transposed into workgroup memory); and a folded grid.
TEST(FastGemm, Fast64DoubleBufferedWithTransposedOperands) {
  const Forced f{"fast64", 16, 2};
  const Layout transposed{true, true, false};
  for (const GemmProblem& p :
       {GemmProblem{4, 1, 1, {1}}, GemmProblem{132, 67, 45, {132, 67}, 0.75f, -1.5f},
        GemmProblem{260, 130, 9, {130}}, GemmProblem{128, 64, 17, {128, 1}, 2.0f, 0.5f}}) {
    expect_gemm(f, transposed, p, "gemm_fast64_k16s2_akm_bnk_bscalar");
  }
  Tensor a = test::random_tensor({9, 132}, 91);
  Tensor b = test::random_tensor({100, 9}, 92);
  ops::NodeInfo g = node("Gemm");
  g.attributes.set("transA", int64_t{1});
  g.attributes.set("transB", int64_t{1});
  apply(f, g);
  runtime::NodeRunOptions options;
  options.capabilities = test::device().capabilities();
  options.capabilities->limits.max_compute_workgroups_per_dimension = 2;  // 3 x 2 tiles in a 2x2x2 grid
  auto ref = test::gemm_reference(a, b, nullptr, true, true, 1, 1);
  expect_kernel_matches(g, Inputs{NodeInput{a}, NodeInput{b}}, ref, 9, "gemm_fast64", "folded fast64",
                        options);
}

// Pipeline 4: 64x64 with one workgroup buffer (two barriers per slab), scalar loads of both operands (A [K,M]
// with M odd, B [K,N] with N odd), fused Relu.
TEST(FastGemm, Fast64SingleBufferedScalarLoadsAndRelu) {
  const Forced f{"fast64", 16, 1, 0, "Relu"};
  const Layout scalar{true, false, false};
  for (const GemmProblem& p : {GemmProblem{1, 1, 1, {1}}, GemmProblem{67, 65, 19, {65}, 0.75f, -1.5f},
                               GemmProblem{129, 131, 40, {129, 131}}, GemmProblem{3, 257, 2, {}}}) {
    expect_gemm(f, scalar, p, "gemm_fast64_k16s1_akm_bkn_ascalar_bscalar_relu");
  }
}

// Every (K slab, buffers) configuration: planned with the label it asks for where the device holds it,
// refused with the bytes it needs where not, and refused as impossible where the slab does not divide among
// 256 threads. Running each is the Heavy suite's job (pipelines 1-4 run one of each kind above).
TEST(FastGemm, WorkgroupMemoryConfigurationsAreCheckedAgainstTheDevice) {
  const uint32_t storage = test::device().capabilities().limits.max_compute_workgroup_storage_size;
  const Inputs in = {NodeInput{test::random_tensor({131, 45}, 1)},
                     NodeInput{test::random_tensor({45, 133}, 2), true}};
  for (int64_t tile : {128, 64}) {
    for (int64_t tile_k : {8, 16, 32}) {
      for (int64_t stages : {1, 2}) {
        ops::NodeInfo mm = node("MatMul");
        apply({tile == 128 ? "fast128" : "fast64", tile_k, stages}, mm);
        std::ostringstream what, label;
        what << "tile " << tile << " K slab " << tile_k << " stages " << stages;
        label << "gemm_fast" << tile << "_k" << tile_k << "s" << stages << "_bnk_ascalar_bscalar";
        const int64_t bytes = stages * tile_k * 2 * (tile / 4 + 1) * 16;
        std::string msg = plan_error(mm, in);
        if ((tile * tile_k) % 1024 != 0) {
          EXPECT_NE(msg.find("has no configuration with a K slab of " + std::to_string(tile_k)),
                    std::string::npos)
              << what.str() << ": " << msg;
        } else if (bytes > storage) {
          EXPECT_NE(msg.find("needs " + std::to_string(bytes) + " bytes of workgroup memory"),
                    std::string::npos)
              << what.str() << ": " << msg;
        } else {
          EXPECT_EQ(msg, "no error") << what.str();
          EXPECT_EQ(runtime::plan_node(test::device().capabilities(), mm, in).launches.at(0).program.label,
                    label.str());
        }
      }
    }
  }
}

// 1x1 convolutions are GEMMs with A = W [OC, IC] and B = X[n] [IC, H*W]: the planner takes a fast kernel once
// both extents reach a tile (planned as on a GPU: costly_barriers off), and "wgi.gemm_kernel" forces one.
// The cases share pipeline 2.
void expect_pointwise_conv(const Shape& x_shape, const Shape& w_shape, const Forced& f,
                           const std::string& label) {
  const int64_t batch = x_shape[0], ic = x_shape[1], pixels = x_shape[2] * x_shape[3], oc = w_shape[0];
  Tensor x = test::random_tensor(x_shape, 131);
  Tensor w = test::random_tensor(w_shape, 132);
  Tensor bias = test::random_tensor({oc}, 133);
  ops::NodeInfo conv{"conv_under_test", "Conv", "", 17, {}, {}, {}};
  apply(f, conv, ops::kGemmKernelAttribute);
  // Reference: W [OC, IC] times X viewed as [batch, IC, H*W], plus the bias per output channel.
  Tensor x3(DType::Float32, {batch, ic, pixels});
  Tensor w2(DType::Float32, {oc, ic});
  std::copy(x.data<float>().begin(), x.data<float>().end(), x3.data<float>().begin());
  std::copy(w.data<float>().begin(), w.data<float>().end(), w2.data<float>().begin());
  auto ref = test::matmul_reference(w2, x3);
  for (size_t i = 0; i < ref.values.size(); ++i) {
    double v =
        ref.values[i] + bias.data<float>()[(i / static_cast<size_t>(pixels)) % static_cast<size_t>(oc)];
    ref.values[i] = test::fused_activation_reference(f.activation, v, act_lo(f), act_hi(f));
  }
  ref.shape = {batch, oc, x_shape[2], x_shape[3]};
  runtime::NodeRunOptions options;
  options.capabilities = test::device().capabilities();
  options.capabilities->costly_barriers = false;
  expect_kernel_matches(
      conv, Inputs{NodeInput{x}, NodeInput{w, true}, NodeInput{bias, true}}, ref, ic + 1, label,
      "conv " + f.kernel + " " + shape_to_string(x_shape) + " * " + shape_to_string(w_shape), options);
}

TEST(FastGemm, PointwiseConvolutionRunsOnTheFastKernels) {
  expect_pointwise_conv({2, 21, 8, 9}, {70, 21, 1, 1}, {"", 0, 0, 0, "Clip"}, "conv1x1_gemm_fast64");
  expect_pointwise_conv({1, 21, 9, 8}, {66, 21, 1, 1}, {"fast64", 0, 0, 0, "Clip"}, "conv1x1_gemm_fast64");
  expect_pointwise_conv({1, 21, 9, 8}, {66, 21, 1, 1}, {"tiled", 0, 0, 0, "Clip"}, "conv1x1_gemm_tiled");
}

// GEMV pipeline 1: one row (decoder step) against a prepacked weight, vec4 loads, 8 lanes per column (the
// planner's choice for a wide N such as an LM head).
TEST(Gemv, OneRowAgainstAPrepackedWeight) {
  const Forced f{"gemv", 0, 0, 8};
  const Layout weight{false, true, true};
  for (const GemmProblem& p : {GemmProblem{1, 300, 768, {300}}, GemmProblem{1, 1, 4, {}},
                               GemmProblem{1, 257, 36, {1, 257}, 0.75f, -1.5f}}) {
    expect_gemm(f, weight, p, "gemv_r1_l8");
  }
  expect_matmul(f, {64}, {64, 50}, true, "gemv_r1_l8");  // rank-1 A
}

// GEMV pipeline 2: up to 8 rows, K % 4 != 0 (scalar loads), 4 lanes per column, a runtime [N,K] weight
// (transB), fused Relu.
TEST(Gemv, EightRowsScalarLoadsRuntimeWeightAndRelu) {
  const Forced f{"gemv", 0, 0, 4, "Relu"};
  const Layout runtime_nk{false, true, false};
  for (const GemmProblem& p :
       {GemmProblem{8, 129, 257, {129}}, GemmProblem{5, 31, 129, {5, 31}, 0.75f, -1.5f},
        GemmProblem{7, 65, 3, {7, 1}}, GemmProblem{8, 1, 1, {}}}) {
    expect_gemm(f, runtime_nk, p, "gemv_r8_l4_ascalar_bscalar_relu");
  }
}

// GEMV pipeline 3: two rows, 64 lanes per column; batched B with A broadcast, A's batch folded into M, and a
// folded grid.
TEST(Gemv, BatchBroadcastAndFoldedGrid) {
  const Forced f{"gemv", 0, 0, 64};
  const Layout weight{false, true, true};
  for (const GemmProblem& p : {GemmProblem{2, 33, 4, {33}}, GemmProblem{2, 257, 36, {2, 257}, 0.5f, 2.0f}}) {
    expect_gemm(f, weight, p, "gemv_r2_l64");
  }
  expect_matmul(f, {2, 3, 2, 20}, {3, 20, 33}, true, "gemv_r2_l64");
  expect_matmul(f, {2, 1, 36}, {36, 40}, true, "gemv_r2_l64");
  expect_matmul(f, {5, 2, 12}, {5, 12, 100}, true, "gemv_r2_l64", 5);  // 25 blocks x 5 in a 5x5x5 grid
}

// Without forcing, few rows against a constant weight plan as GEMV, and on the seeds' vec4 kernel where
// barriers are costly (gpu::Capabilities::costly_barriers); this device's limits, no pipelines compiled.
TEST(Gemv, IsThePlannersChoiceForFewRowsAgainstAWeight) {
  for (const bool cpu : {false, true}) {
    gpu::Capabilities caps = test::device().capabilities();
    caps.costly_barriers = cpu;
    const char* expected = cpu ? "gemm_vec4" : "gemv_r";
    for (const auto& [a, b] : std::vector<std::pair<Shape, Shape>>{{{1, 768}, {768, 3072}},
                                                                   {{3, 2, 36}, {36, 40}},
                                                                   {{2, 3, 3, 20}, {3, 20, 33}},
                                                                   {{64}, {64, 50}}}) {
      ops::OpPlan plan = runtime::plan_node(
          caps, node("MatMul"),
          Inputs{NodeInput{test::random_tensor(a, 1)}, NodeInput{test::random_tensor(b, 2), true}});
      EXPECT_EQ(plan.launches.at(0).program.label.rfind(expected, 0), 0u)
          << shape_to_string(a) << " x " << shape_to_string(b) << " (costly barriers " << cpu
          << "): " << plan.launches.at(0).program.label;
    }
  }
}

// The 128x64 rectangle (8x4 per thread, K slabs of 16 or 32): both layouts of each operand, vec4 and scalar
// loads, edges on every side (M and N not multiples of the tile, K not of the slab), a batch, an epilogue
// with bias and Gelu, and a 1x1 conv (its split K: SplitK.ForcedSplitsOnTheFastKernels).
TEST(FastGemm, Rectangle128x64MatchesFloat64Reference) {
  for (const Layout& l :
       {Layout{false, false, true}, Layout{false, true, false}, Layout{true, false, false}}) {
    for (const GemmProblem& p :
         {GemmProblem{131, 67, 45, {67}}, GemmProblem{257, 130, 19, {257, 1}, 0.75f, -1.5f},
          GemmProblem{5, 3, 33, {}}}) {
      expect_gemm(Forced{"fast128x64"}, l, p, "gemm_fast128x64_k16s2");
    }
  }
  expect_gemm(Forced{"fast128x64", 32, 1, 0, "Gelu"}, {false, true, true}, {140, 72, 70, {72}},
              "gemm_fast128x64_k32s1");
  expect_matmul(Forced{"fast128x64"}, {2, 3, 130, 20}, {3, 20, 68}, false, "gemm_fast128x64");
  expect_pointwise_conv({2, 20, 9, 15}, {70, 20, 1, 1}, Forced{"fast128x64", 0, 0, 0, "Relu"},
                        "conv1x1_gemm_fast128x64");
  // K slabs of 8 leave 64 columns at half a vec4 a thread: refused, naming the slab.
  ops::NodeInfo mm = node("MatMul");
  apply({"fast128x64", 8, 1}, mm);
  const std::string msg = plan_error(
      mm, {NodeInput{test::random_tensor({131, 45}, 1)}, NodeInput{test::random_tensor({45, 133}, 2), true}});
  EXPECT_NE(msg.find("fast128x64 GEMM kernel has no configuration with a K slab of 8"), std::string::npos)
      << msg;
}

// ---- Heavy: the full cross product (scripts/test --heavy) ----

constexpr Layout kLayouts[] = {{false, false, true},
                               {false, false, false},
                               {false, true, false},
                               {true, false, false},
                               {true, true, true}};

class FastGemmHeavyTest : public ::testing::TestWithParam<Mnk> {};

TEST_P(FastGemmHeavyTest, EveryLayoutMatchesFloat64Reference) {
  const auto [m, n, k] = GetParam();
  for (const char* kernel : {"fast128", "fast64", "fast128x64"}) {
    for (const Layout& l : kLayouts) {
      expect_gemm(Forced{kernel}, l, {m, n, k, {n}, 0.5f, 2.0f}, std::string("gemm_") + kernel);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, FastGemmHeavyTest,
                         ::testing::Values(Mnk{1, 1, 1}, Mnk{3, 33, 31}, Mnk{31, 129, 8}, Mnk{127, 3, 33},
                                           Mnk{129, 257, 3}, Mnk{64, 128, 16}, Mnk{257, 127, 129},
                                           Mnk{128, 64, 257}),
                         [](const auto& p) { return mnk_name(p.param); });

TEST(FastGemmHeavy, EveryWorkgroupMemoryConfigurationTheDeviceHoldsRuns) {
  const uint32_t storage = test::device().capabilities().limits.max_compute_workgroup_storage_size;
  for (const auto& [name, tile_m, tile_n] :
       {std::tuple{"fast128", 128, 128}, std::tuple{"fast64", 64, 64}, std::tuple{"fast128x64", 128, 64}}) {
    for (int64_t tile_k : {8, 16, 32}) {
      for (int64_t stages : {1, 2}) {
        if ((tile_n * tile_k) % 1024 != 0 ||
            stages * tile_k * ((tile_m / 4 + 1) + (tile_n / 4 + 1)) * 16 > static_cast<int64_t>(storage))
          continue;
        const Forced f{name, tile_k, stages};
        std::ostringstream label;
        label << "gemm_" << name << "_k" << tile_k << "s" << stages;
        expect_gemm(f, {false, false, true}, {131, 133, 45, {133}}, label.str());
        expect_gemm(f, {false, false, false}, {70, 68, 52, {70, 1}}, label.str());
      }
    }
  }
}

TEST(FastGemmHeavy, ActivationsAndPointwiseConvolutionOnEveryTile) {
  for (const char* kernel : {"fast128", "fast64", "fast128x64"}) {
    for (const char* act : {"Relu", "Clip"}) {
      const Forced f{kernel, 0, 0, 0, act};
      expect_gemm(f, {false, false, true}, {70, 66, 24, {66}}, std::string("gemm_") + kernel);
      expect_pointwise_conv({2, 20, 9, 15}, {70, 20, 1, 1}, f, std::string("conv1x1_gemm_") + kernel);
      expect_pointwise_conv({1, 16, 8, 8}, {72, 16, 1, 1}, f, std::string("conv1x1_gemm_") + kernel);
    }
  }
}

class GemvHeavyTest : public ::testing::TestWithParam<Mnk> {};

TEST_P(GemvHeavyTest, LanesAndLayoutsMatchFloat64Reference) {
  const auto [m, n, k] = GetParam();
  for (int64_t lanes : {0, 4, 8, 16, 32, 64, 128, 256}) {
    for (bool constant : {true, false}) {
      expect_gemm(Forced{"gemv", 0, 0, lanes}, {false, true, constant}, {m, n, k, {n}, 1.25f, 0.5f}, "gemv");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, GemvHeavyTest,
                         ::testing::Values(Mnk{1, 1, 1}, Mnk{2, 33, 3}, Mnk{3, 257, 31}, Mnk{5, 31, 129},
                                           Mnk{8, 129, 257}, Mnk{1, 300, 768}, Mnk{7, 65, 100},
                                           Mnk{4, 127, 1}),
                         [](const auto& p) { return mnk_name(p.param); });

// ---- The planner on model devices ----

using test::model_device;

ops::GemmLaunchSpec problem(uint32_t m, uint32_t n, uint32_t k, bool b_nk = true) {
  ops::GemmLaunchSpec s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.b_nk = b_nk;
  return s;
}

// The planner on model devices (pure, no GPU): the H200 (48 KiB, 1024 invocations), WebGPU's defaults
// (16 KiB, 256) and a compat device with 128 invocations.
TEST(GemmPlanner, ChoosesByProblemSizeAndDeviceLimits) {
  const gpu::Capabilities h200 = model_device(49152, 1024);
  const gpu::Capabilities web = gpu::default_capabilities();
  const gpu::Capabilities compat = model_device(16384, 128);
  using K = ops::GemmKernel;

  ops::GemmConfig c = ops::choose_gemm_config(problem(4096, 4096, 4096), h200);
  EXPECT_EQ(c.kernel, K::Fast128);
  EXPECT_EQ(c.tile_k, 16u);
  EXPECT_EQ(c.stages, 1u);  // the base choice: the rules then refine K slab and buffers (GemmRulesBuffers.*)
  c = ops::choose_gemm_config(problem(1024, 1024, 1024), h200);
  EXPECT_EQ(c.kernel, K::Fast64);
  EXPECT_EQ(c.stages, 2u);
  EXPECT_TRUE(c.a_vec4 && c.b_vec4);
  EXPECT_EQ(ops::choose_gemm_config(problem(4096, 1024, 1024), h200).kernel, K::Fast128);
  EXPECT_EQ(ops::choose_gemm_config(problem(1024, 1024, 1024), h200).kernel, K::Fast64);
  EXPECT_EQ(ops::choose_gemm_config(problem(196, 768, 768), h200).kernel, K::Fast64);
  // Tall products take the 128 tile with fewer than 256 tiles (72 x 2 here), as `wgi tune` found.
  EXPECT_EQ(ops::choose_gemm_config(problem(9216, 256, 256, false), h200).kernel, K::Fast128);
  EXPECT_EQ(ops::choose_gemm_config(problem(2304, 512, 512), h200).kernel, K::Fast128);
  EXPECT_EQ(ops::choose_gemm_config(problem(2304, 128, 512), h200).kernel, K::Fast64);   // too narrow
  EXPECT_EQ(ops::choose_gemm_config(problem(576, 1024, 1024), h200).kernel, K::Fast64);  // not tall enough
  // From 512 rows, 72 tiles of 128 (SigLIP-B's batch-8 attention output and MLP-down: 78; the latter split).
  EXPECT_EQ(ops::choose_gemm_config(problem(1576, 768, 768), h200).kernel, K::Fast128);
  EXPECT_EQ(ops::choose_gemm_config(problem(1576, 768, 3072), h200).kernel, K::Fast128);
  EXPECT_EQ(ops::choose_gemm_config(problem(512, 1792, 768), h200).kernel, K::Fast64);  // 56 tiles
  // Fewer than 128 rows: the 64 tile however many 128 tiles there would be.
  EXPECT_EQ(ops::choose_gemm_config(problem(32, 36864, 32, false), h200).kernel, K::Fast64);
  c = ops::choose_gemm_config(problem(1, 51289, 768), h200);
  EXPECT_EQ(c.kernel, K::Gemv);
  EXPECT_EQ(c.gemv_rows, 1u);
  EXPECT_EQ(c.gemv_lanes, 8u);
  c = ops::choose_gemm_config(problem(1, 768, 768), h200);
  EXPECT_EQ(c.kernel, K::Gemv);
  EXPECT_EQ(c.gemv_lanes, 64u);
  EXPECT_EQ(ops::choose_gemm_config(problem(5, 3072, 768), h200).gemv_rows, 8u);
  // A runtime [K, N] B with few rows and products under 16 rows stay on the seeds' kernels; from 16 rows and
  // columns on the 64 tile runs them (faster on the H200 although half of a 32-row tile is padding).
  EXPECT_EQ(ops::choose_gemm_config(problem(1, 768, 64, false), h200).kernel, K::Tiled);
  EXPECT_EQ(ops::choose_gemm_config(problem(12, 4096, 64), h200).kernel, K::Vec4);
  EXPECT_EQ(ops::choose_gemm_config(problem(32, 32, 32), h200).kernel, K::Fast64);
  EXPECT_EQ(ops::choose_gemm_config(problem(33, 4096, 33), h200).kernel, K::Fast64);

  c = ops::choose_gemm_config(problem(4096, 4096, 4096), web);
  EXPECT_EQ(c.kernel, K::Fast128);
  EXPECT_EQ(c.tile_k, 8u);
  EXPECT_EQ(c.stages, 1u);
  EXPECT_LE(c.workgroup_storage_bytes, 16384u);
  c = ops::choose_gemm_config(problem(196, 768, 768), web);
  EXPECT_EQ(c.kernel, K::Fast64);
  EXPECT_EQ(c.stages, 1u);

  EXPECT_EQ(ops::choose_gemm_config(problem(4096, 4096, 4096), compat).kernel, K::Vec4);
  EXPECT_EQ(ops::choose_gemm_config(problem(4096, 4096, 4095), compat).kernel, K::Tiled);
  EXPECT_EQ(ops::choose_gemm_config(problem(1, 4096, 4096), compat).kernel, K::Vec4);

  // Costly barriers (SwiftShader) with the H200's limits: the seeds' kernels, unless a fast kernel's knob is
  // forced.
  gpu::Capabilities cpu = h200;
  cpu.costly_barriers = true;
  EXPECT_EQ(ops::choose_gemm_config(problem(4096, 4096, 4096), cpu).kernel, K::Vec4);
  EXPECT_EQ(ops::choose_gemm_config(problem(1, 51289, 768), cpu).kernel, K::Vec4);
  EXPECT_EQ(ops::choose_gemm_config(problem(196, 768, 768, false), cpu).kernel, K::Tiled);
  ops::GemmLaunchSpec knob = problem(4096, 4096, 4096);
  knob.tile_k = 32;
  EXPECT_EQ(ops::choose_gemm_config(knob, cpu).kernel, K::Fast128);

  // Forced choices that cannot run are errors that say why.
  ops::GemmLaunchSpec s = problem(4096, 4096, 4096);
  s.kernel = K::Fast128;
  EXPECT_NE(
      test::gemm_choice_error(s, compat).find("needs 256 invocations per workgroup; the device allows 128"),
      std::string::npos);
  s.stages = 2;
  s.tile_k = 16;
  EXPECT_NE(
      test::gemm_choice_error(s, web).find("needs 33792 bytes of workgroup memory; the device allows 16384"),
      std::string::npos);
  EXPECT_EQ(ops::choose_gemm_config(s, h200).workgroup_storage_bytes, 33792u);
  s.kernel = K::Fast64;
  s.tile_k = 8;
  EXPECT_NE(test::gemm_choice_error(s, h200).find("has no configuration"), std::string::npos);
  s = problem(9, 100, 100);
  s.kernel = K::Gemv;
  EXPECT_NE(test::gemm_choice_error(s, h200).find("M <= 8"), std::string::npos);
  s = problem(2, 100, 100, false);
  s.kernel = K::Gemv;
  EXPECT_NE(test::gemm_choice_error(s, h200).find("B as [K, N]"), std::string::npos);
  s = problem(2, 100, 100);
  s.a_km = true;
  s.kernel = K::Gemv;
  EXPECT_NE(test::gemm_choice_error(s, h200).find("A as [K, M]"), std::string::npos);
  s.kernel = K::Vec4;
  EXPECT_NE(test::gemm_choice_error(s, h200).find("K % 4 == 0"), std::string::npos);
}

TEST(GemmPlanner, ForcedKernelsThatCannotRunAreErrorsNamingTheNode) {
  Tensor a = test::random_tensor({9, 12}, 141);
  Tensor b = test::random_tensor({12, 20}, 142);
  ops::NodeInfo mm = node("MatMul");
  mm.attributes.set("wgi.kernel", std::string("gemv"));
  std::string msg = plan_error(mm, Inputs{NodeInput{a}, NodeInput{b, true}});
  EXPECT_NE(msg.find("'linear_under_test'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("M <= 8"), std::string::npos) << msg;

  mm.attributes.set("wgi.kernel", std::string("fast64"));
  gpu::Capabilities small = test::device().capabilities();
  small.limits.max_compute_invocations_per_workgroup = 128;
  msg = plan_error(mm, Inputs{NodeInput{a}, NodeInput{b, true}}, small);
  EXPECT_NE(msg.find("needs 256 invocations per workgroup"), std::string::npos) << msg;
  // Without forcing, the same device falls back to the seeds' kernels.
  EXPECT_EQ(runtime::plan_node(small, node("MatMul"),
                               Inputs{NodeInput{test::random_tensor({100, 12}, 1)},
                                      NodeInput{test::random_tensor({12, 100}, 2), true}})
                .launches.at(0)
                .program.label,
            "gemm_vec4_bnk");

  mm.attributes.set(ops::kGemmTileKAttribute, int64_t{12});
  msg = plan_error(mm, Inputs{NodeInput{a}, NodeInput{b, true}});
  EXPECT_NE(msg.find("wgi.gemm_tile_k = 12 (expected 8, 16 or 32)"), std::string::npos) << msg;

  ops::NodeInfo unknown = node("Gemm");
  unknown.attributes.set("wgi.kernel", std::string("fast256"));
  msg = plan_error(unknown, Inputs{NodeInput{a}, NodeInput{b}});
  EXPECT_NE(msg.find("expected tiled, vec4, fast128, fast64, fast128x64 or gemv"), std::string::npos) << msg;
}

// ---- Split-K: the tiled kernel over K chunks, then gemm_split_reduce.wgsl ----

// Gemm or MatMul with `splits` K chunks forced (0: the planner's choice), against the float64 reference; the
// plan must be the two split-K launches.
void expect_split_gemm(const ops::NodeInfo& n, const Inputs& in, const test::Reference& ref, int64_t k,
                       const std::string& what, const std::string& kernel_label = "gemm_tiled") {
  ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), n, in);
  ASSERT_EQ(plan.launches.size(), 2u) << what;
  EXPECT_EQ(plan.launches[0].program.label.rfind(kernel_label, 0), 0u)
      << what << ": " << plan.launches[0].program.label;
  EXPECT_NE(plan.launches[0].program.label.find("_splitk"), std::string::npos) << what;
  EXPECT_EQ(plan.launches[1].program.label, "gemm_split_reduce") << what;
  auto out = runtime::run_node(test::device(), n, in);
  EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(k))) << what;
}

// Both GELU forms in the epilogues of the seeds' kernels (the planner's choice for a small product), the 64
// and 128 tiles (whose second, in-place activation pass covers edge tiles here) and GEMV (the split-K
// reduction's is in SplitK.ForcedSplitsOnTheFastKernels). Values of |x| up to ~3 cover GELU's curved range,
// and the tails of erf and the sigmoid.
TEST(Gemm, FusedGeluEpilogues) {
  struct Case {
    const char* kernel;
    int64_t m, n, k;
    const char* activation;
    const char* label;
  };
  for (const Case& c :
       {Case{"", 40, 36, 24, "Gelu", "gemm_"}, Case{"", 9, 33, 20, "GeluTanh", "gemm_"},
        Case{"fast64", 70, 67, 40, "GeluTanh", "gemm_fast64"},
        Case{"fast128", 130, 131, 24, "Gelu", "gemm_fast128"},
        Case{"fast64", 70, 68, 40, "Gelu", "gemm_fast64"}, Case{"gemv", 3, 50, 64, "Gelu", "gemv"}}) {
    Tensor a = test::random_tensor({c.m, c.k}, 61);
    Tensor b = test::random_tensor({c.k, c.n}, 62);
    Tensor bias = test::random_tensor({c.n}, 63);
    ops::NodeInfo g = node("Gemm");
    const Forced f{c.kernel, 0, 0, 0, c.activation};
    apply(f, g);
    auto ref = test::gemm_reference(a, b, &bias, false, false, 1, 1);
    activate(f, ref.values);
    expect_kernel_matches(g, Inputs{NodeInput{a}, NodeInput{b, true}, NodeInput{bias}}, ref, c.k, c.label,
                          std::string(c.kernel) + " " + c.activation + " " + mnk_name({c.m, c.n, c.k}));
  }
}

struct SplitCase {
  const char* kernel;  // "" for the planner's (the tiled kernel takes a forced split)
  int64_t m, n, k, splits;
  Layout layout;
  const char* activation;
};

// Gemm (alpha 0.75, beta 1.5, a bias) with the case's split forced, against the float64 reference.
void expect_forced_split(const SplitCase& c) {
  const uint64_t seed = static_cast<uint64_t>(c.m * 13 + c.n * 7 + c.k);
  const Layout& l = c.layout;
  Tensor a = test::random_tensor(l.trans_a ? Shape{c.k, c.m} : Shape{c.m, c.k}, seed);
  Tensor b = test::random_tensor(l.trans_b ? Shape{c.n, c.k} : Shape{c.k, c.n}, seed + 1);
  Tensor bias = test::random_tensor({c.n}, seed + 2);
  ops::NodeInfo g = node("Gemm");
  g.attributes.set("transA", int64_t{l.trans_a});
  g.attributes.set("transB", int64_t{l.trans_b});
  g.attributes.set("alpha", 0.75f);
  g.attributes.set("beta", 1.5f);
  g.attributes.set(ops::kGemmSplitKAttribute, c.splits);
  Forced f{c.kernel, 0, 0, 0, c.activation};
  apply(f, g);
  auto ref = test::gemm_reference(a, b, &bias, l.trans_a, l.trans_b, 0.75f, 1.5f);
  activate(f, ref.values);
  std::ostringstream what;
  what << c.kernel << " " << c.splits << " chunks " << layout_name(l) << " " << mnk_name({c.m, c.n, c.k})
       << " " << c.activation;
  expect_split_gemm(g, Inputs{NodeInput{a}, NodeInput{b, l.b_constant}, NodeInput{bias}}, ref, c.k,
                    what.str(), *c.kernel ? std::string("gemm_") + c.kernel : "gemm_tiled");
}

TEST(SplitK, ForcedSplitsMatchFloat64Reference) {
  // More chunks than K tiles (empty chunks), chunks that end mid-tile, one row, transposed operands.
  for (const SplitCase& c : {SplitCase{"", 33, 17, 1000, 4, {false, false, true}, ""},
                             SplitCase{"", 5, 70, 300, 3, {true, false, false}, "Relu"},
                             SplitCase{"", 1, 1, 40, 2, {false, true, false}, ""},
                             SplitCase{"", 64, 40, 96, 7, {true, true, true}, "Clip"}}) {
    expect_forced_split(c);
  }
}

// The fast kernels' split: chunks of whole K slabs (so more chunks than slabs leaves some empty), partial
// tiles on both sides, transposed and scalar-loaded operands, batch, fused activations.
TEST(SplitK, ForcedSplitsOnTheFastKernels) {
  for (const SplitCase& c : {SplitCase{"fast64", 70, 67, 1000, 4, {false, false, true}, ""},
                             SplitCase{"fast64", 5, 130, 300, 3, {true, true, false}, "Relu"},
                             SplitCase{"fast64", 65, 64, 40, 5, {false, true, true}, "Clip"},
                             SplitCase{"fast128", 130, 129, 515, 2, {true, false, false}, ""},
                             SplitCase{"fast128", 3, 200, 96, 3, {false, false, true}, "Relu"},
                             SplitCase{"fast64", 20, 30, 600, 3, {false, true, true}, "GeluTanh"},
                             SplitCase{"fast128x64", 131, 66, 700, 3, {false, true, true}, "Relu"},
                             SplitCase{"fast128x64", 9, 130, 260, 4, {true, false, false}, ""}}) {
    expect_forced_split(c);
  }
  Tensor a = test::random_tensor({2, 3, 66, 520}, 321);
  Tensor b = test::random_tensor({1, 3, 520, 68}, 322);
  ops::NodeInfo mm = node("MatMul");
  mm.attributes.set("wgi.kernel", std::string("fast64"));
  mm.attributes.set(ops::kGemmSplitKAttribute, int64_t{4});
  expect_split_gemm(mm, Inputs{NodeInput{a}, NodeInput{b}}, test::matmul_reference(a, b), 520,
                    "fast64 [2,3,66,520] x [1,3,520,68], 4 chunks", "gemm_fast64");
}

TEST(SplitK, BatchedMatMulWithBroadcastSplits) {
  Tensor a = test::random_tensor({2, 3, 9, 130}, 301);
  Tensor b = test::random_tensor({1, 3, 130, 6}, 302);
  ops::NodeInfo mm = node("MatMul");
  mm.attributes.set(ops::kGemmSplitKAttribute, int64_t{3});
  expect_split_gemm(mm, Inputs{NodeInput{a}, NodeInput{b}}, test::matmul_reference(a, b), 130,
                    "[2,3,9,130] x [1,3,130,6], 3 chunks");
}

TEST(SplitK, PlannerSplitsFewTilesOverALongK) {
  ops::GemmLaunchSpec channel_attention = problem(32, 32, 36864, false);  // DaViT stage 0, 4 heads
  channel_attention.batch = 4;
  const ops::GemmConfig seed{};                                       // the seeds' 32x32 tiled kernel
  EXPECT_EQ(ops::choose_split_k(channel_attention, seed), 64u);       // 4 tiles -> 256 workgroups of 576
  EXPECT_EQ(ops::choose_split_k(problem(32, 32, 1024), seed), 1u);    // K too short to pay
  EXPECT_EQ(ops::choose_split_k(problem(32, 32, 2048), seed), 4u);    // chunks of at least 512
  EXPECT_EQ(ops::choose_split_k(problem(512, 512, 8192), seed), 1u);  // 256 tiles: enough already
  // The planner's choice for it now: the 64 tile, 4 tiles -> 66 chunks (about 264 workgroups) of 576.
  const ops::GemmConfig chosen = ops::choose_gemm_config(channel_attention, gpu::default_capabilities());
  EXPECT_EQ(chosen.kernel, ops::GemmKernel::Fast64);
  EXPECT_EQ(ops::choose_split_k(channel_attention, chosen), 66u);
  ops::GemmConfig fast = seed;
  fast.kernel = ops::GemmKernel::Fast128;
  fast.tile_m = fast.tile_n = 128;
  EXPECT_EQ(ops::choose_split_k(problem(4096, 4096, 4096), fast), 1u);
  // The 128 tile splits only from K = 2048 (chunks of ~768) on fewer than 132 tiles, in one wave of two
  // workgroups per SM: SigLIP-B's batch-8 MLP-down, 78 tiles, in 3 (4 would need 312 workgroups).
  EXPECT_EQ(ops::choose_split_k(problem(1576, 768, 3072), fast), 3u);
  EXPECT_EQ(ops::choose_split_k(problem(2304, 512, 2048), fast), 3u);  // 72 tiles
  EXPECT_EQ(ops::choose_split_k(problem(576, 1024, 4096), fast), 6u);  // 40 tiles
  EXPECT_EQ(ops::choose_split_k(problem(2304, 512, 512), fast), 1u);   // K 512: unsplit is faster
  EXPECT_EQ(ops::choose_split_k(problem(576, 3072, 1024), fast), 1u);  // K 1024, 120 tiles
  // Fewer than 96 tiles from K = 768, in chunks of 256 (SigLIP-B's batch-8 attention output: 78 tiles).
  EXPECT_EQ(ops::choose_split_k(problem(1576, 768, 768), fast), 3u);
  EXPECT_EQ(ops::choose_split_k(problem(1576, 768, 512), fast), 1u);  // K below 768
  // The 64 tile: up to about 864 workgroups on fewer than 432 tiles, chunks of 96..512, at most 8 of them.
  ops::GemmConfig fast64 = fast;
  fast64.kernel = ops::GemmKernel::Fast64;
  fast64.tile_m = fast64.tile_n = 64;
  EXPECT_EQ(ops::choose_split_k(problem(196, 768, 3072), fast64), 8u);    // 48 tiles
  EXPECT_EQ(ops::choose_split_k(problem(196, 768, 768), fast64), 8u);     // 48 tiles, chunks of 96
  EXPECT_EQ(ops::choose_split_k(problem(196, 768, 256), fast64), 1u);     // K too short
  EXPECT_EQ(ops::choose_split_k(problem(196, 3072, 768), fast64), 5u);    // 192 tiles
  EXPECT_EQ(ops::choose_split_k(problem(576, 1024, 1024), fast64), 6u);   // 144 tiles
  EXPECT_EQ(ops::choose_split_k(problem(2304, 512, 2048), fast64), 4u);   // 288 tiles: chunks of 512
  EXPECT_EQ(ops::choose_split_k(problem(1024, 1024, 1024), fast64), 1u);  // 256 tiles over K < 2048
  EXPECT_EQ(ops::choose_split_k(problem(2304, 2048, 512), fast64), 1u);   // 1152 tiles
  ops::GemmLaunchSpec forced = problem(64, 64, 64);
  forced.split_k = 2;
  EXPECT_EQ(ops::choose_split_k(forced, fast), 2u);
  ops::GemmConfig gemv = fast;
  gemv.kernel = ops::GemmKernel::Gemv;
  EXPECT_THROW(ops::choose_split_k(forced, gemv), Error);
}

TEST(SplitK, ForcedSplitOnAnotherForcedKernelIsAnError) {
  Tensor a = test::random_tensor({8, 64}, 311);
  Tensor b = test::random_tensor({64, 8}, 312);
  ops::NodeInfo mm = node("MatMul");
  mm.attributes.set("wgi.kernel", std::string("vec4"));
  mm.attributes.set(ops::kGemmSplitKAttribute, int64_t{2});
  const std::string msg = plan_error(mm, Inputs{NodeInput{a}, NodeInput{b, true}});
  EXPECT_NE(msg.find("runs on the tiled and fast kernels only"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'linear_under_test'"), std::string::npos) << msg;
}

// ---- The wave tail (wgi.gemm_head_rows): the first rows as one launch, the later ones planned as a product
// of their own and bound further into A, the output, the residual and a per-row C ----

struct HeadCase {
  const char* kernel;  // forced (the CPU adapters' rules take the seeds' kernels, which have no head)
  int64_t m, n, k, head_rows;
  const char* activation;
  bool residual, row_c, half_weight;
};

// Gemm (alpha 0.75, beta 1.5; C [N] or [M, N]; a fused residual R [M, N]) with B a constant (float32 or
// float16), against the float64 reference; the plan must start with the head's launch.
void expect_head_rows(const HeadCase& c) {
  const uint64_t seed = static_cast<uint64_t>(c.m * 31 + c.n * 7 + c.k + c.head_rows);
  Tensor a = test::random_tensor({c.m, c.k}, seed);
  Tensor b = test::random_tensor({c.k, c.n}, seed + 1);
  Tensor b_half = ops::narrow_to_float16(b);
  if (c.half_weight) b = ops::widen_float16(b_half);  // the values the kernels read
  Tensor bias = test::random_tensor(c.row_c ? Shape{c.m, c.n} : Shape{c.n}, seed + 2);
  Tensor r = test::random_tensor({c.m, c.n}, seed + 3);
  ops::NodeInfo g = node("Gemm");
  g.attributes.set("alpha", 0.75f);
  g.attributes.set("beta", 1.5f);
  g.attributes.set(ops::kGemmHeadRowsAttribute, c.head_rows);
  const Forced f{c.kernel, 0, 0, 0, c.activation};
  apply(f, g);
  Inputs in = {NodeInput{a}, NodeInput{c.half_weight ? b_half : b, true}, NodeInput{bias, true}};
  if (c.residual) {
    g.attributes.set(ops::kFusedResidualAttribute, int64_t{1});
    in.push_back(NodeInput{r});
  }
  test::Reference ref = test::gemm_reference(a, b, &bias, false, false, 0.75, 1.5);
  for (size_t i = 0; i < ref.values.size(); ++i) {
    if (c.residual) ref.values[i] += r.data<float>()[i];
    ref.values[i] = test::fused_activation_reference(f.activation, ref.values[i], act_lo(f), act_hi(f));
  }
  std::ostringstream what;
  what << c.kernel << " " << mnk_name({c.m, c.n, c.k}) << " head " << c.head_rows << " " << c.activation
       << (c.residual ? " residual" : "") << (c.row_c ? " C[M,N]" : " C[N]")
       << (c.half_weight ? " f16 B" : "");
  const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), g, in);
  ASSERT_GE(plan.launches.size(), 2u) << what.str();
  const std::string& head = plan.launches[0].program.label;
  EXPECT_EQ(head.rfind(std::string("gemm_") + c.kernel, 0), 0u) << what.str() << ": " << head;
  EXPECT_EQ(head.substr(head.size() - 5), "_head") << what.str() << ": " << head;
  const std::vector<Tensor> out = runtime::run_node(test::device(), g, in);
  EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(c.k))) << what.str();
}

// Heads of one and several tiles; tails shorter than a tile, of several tiles, and split into K chunks by
// their own plan (the reduction writes the later rows); unaligned N and K; every epilogue part.
TEST(WaveTail, ForcedHeadRowsMatchFloat64Reference) {
  for (const HeadCase& c : {HeadCase{"fast128", 300, 70, 100, 128, "", false, false, false},
                            HeadCase{"fast128", 300, 129, 37, 256, "GeluTanh", true, false, false},
                            HeadCase{"fast64", 200, 66, 40, 64, "Relu", true, true, false},
                            HeadCase{"fast64", 150, 68, 1000, 128, "", true, true, true},
                            HeadCase{"fast128x64", 260, 40, 24, 128, "Gelu", false, true, true}}) {
    expect_head_rows(c);
  }
}

TEST(WaveTail, TheRuleTakesOnlyATailAfterOneWave) {
  // SigLIP-B's batch-8 MLP-up: 13 x 24 tiles of 128, 264 at once: 11 rows of tiles, then 48 tiles.
  EXPECT_EQ(ops::wave_tail_head_rows(1576, 24), 1408u);
  EXPECT_EQ(ops::wave_tail_head_rows(1700, 24), 1408u);  // a tail of 72 tiles
  EXPECT_EQ(ops::wave_tail_head_rows(1576, 18), 0u);     // 234 tiles: one wave
  EXPECT_EQ(ops::wave_tail_head_rows(1800, 24), 0u);     // 360 tiles: a tail of 96, over a third of a wave
  EXPECT_EQ(ops::wave_tail_head_rows(4096, 32), 0u);     // four waves
  EXPECT_EQ(ops::wave_tail_head_rows(1024, 300), 0u);    // a row of tiles wider than a wave
  EXPECT_EQ(ops::wave_tail_head_rows(2432, 14), 2304u);  // 266 tiles: 18 rows of 14 first, then 14 tiles
  // Planned through the rules on the H200's limits: the head on the 128 tile, nothing when a knob is forced.
  const gpu::Capabilities h200 = model_device(49152, 1024);
  ops::GemmLaunchSpec mlp_up = problem(1576, 3072, 768);
  mlp_up.b_prepacked = true;
  const ops::GemmPlanned planned = ops::plan_gemm_rules(mlp_up, h200, true);
  EXPECT_EQ(planned.config.kernel, ops::GemmKernel::Fast128);
  EXPECT_EQ(planned.head_rows, 1408u);
  EXPECT_EQ(ops::plan_gemm_rules(mlp_up, h200, false).head_rows, 0u);  // a call site that cannot split
  ops::GemmLaunchSpec forced = mlp_up;
  forced.kernel = ops::GemmKernel::Fast128;
  EXPECT_EQ(ops::plan_gemm_rules(forced, h200, true).head_rows, 0u);
  forced = mlp_up;
  forced.head_rows = 1576;  // M or more: one launch
  EXPECT_EQ(ops::plan_gemm_rules(forced, h200, true).head_rows, 0u);
  forced.head_rows = 256;
  EXPECT_EQ(ops::plan_gemm_rules(forced, h200, true).head_rows, 256u);
  ops::GemmLaunchSpec batched = mlp_up;  // a product per batch entry cannot bind its later rows apart
  batched.batch = 2;
  batched.batch_dims = {1, 1, 1, 2};
  EXPECT_EQ(ops::plan_gemm_rules(batched, h200, true).head_rows, 0u);
}

TEST(WaveTail, HeadsThatCannotRunAreErrorsNamingTheNode) {
  Tensor a = test::random_tensor({300, 64}, 1), b = test::random_tensor({64, 40}, 2);
  auto error = [&](const char* kernel, int64_t head_rows, int64_t split_k = 0) {
    ops::NodeInfo mm = node("MatMul");
    mm.attributes.set("wgi.kernel", std::string(kernel));
    mm.attributes.set(ops::kGemmHeadRowsAttribute, head_rows);
    if (split_k) mm.attributes.set(ops::kGemmSplitKAttribute, split_k);
    return plan_error(mm, Inputs{NodeInput{a}, NodeInput{b, true}});
  };
  EXPECT_NE(error("fast128", 100).find("needs a multiple of the fast128 kernel's 128 rows"),
            std::string::npos)
      << error("fast128", 100);
  EXPECT_NE(error("tiled", 128).find("runs on the fast kernels only, not tiled"), std::string::npos)
      << error("tiled", 128);
  EXPECT_NE(error("fast64", 128, 2).find("is not also split into K chunks (2)"), std::string::npos)
      << error("fast64", 128, 2);
  EXPECT_NE(error("fast128", 100).find("'linear_under_test'"), std::string::npos) << error("fast128", 100);
  EXPECT_EQ(error("fast64", 128), "no error");
  EXPECT_EQ(error("fast64", 300), "no error");  // M rows: one launch
  EXPECT_NE(error("fast64", 0).find("wgi.gemm_head_rows = 0 (expected 1 to 2^32 - 1)"), std::string::npos)
      << error("fast64", 0);
  // A product per batch entry (runtime operands of a batched MatMul).
  Tensor a3 = test::random_tensor({2, 150, 64}, 3), b3 = test::random_tensor({2, 64, 40}, 4);
  ops::NodeInfo mm = node("MatMul");
  mm.attributes.set("wgi.kernel", std::string("fast64"));
  mm.attributes.set(ops::kGemmHeadRowsAttribute, int64_t{64});
  const std::string batched = plan_error(mm, Inputs{NodeInput{a3}, NodeInput{b3}});
  EXPECT_NE(batched.find("needs one packed A [M, K] and output"), std::string::npos) << batched;
}

// ---- Strided views: GemmLaunchSpec's row strides, offsets and output strides (attention's Q, K, V read in
// the packed projection, its output written transposed) on the fast kernels, split and unsplit ----

namespace views {

// One product over two batch dims [B0, B1] with every operand in a buffer of its own layout: A's and B's
// stored rows `*_pad` elements longer than their contiguous extent and starting `*_offset` elements in, B
// optionally broadcast over B0; the output's rows `out_pad` longer, or (interleave) its matrices side by side
// per row as [B0, M, B1, N + out_pad] (the heads of an attention output written [B, N, heads, D]).
struct Case {
  const char* what;
  uint32_t m, n, k;
  uint32_t b0 = 1, b1 = 1;
  bool a_km = false, b_nk = false;
  uint32_t a_pad = 0, b_pad = 0, out_pad = 0, a_offset = 0, b_offset = 0;
  bool b_broadcast0 = false;
  bool interleave = false;
  ops::GemmKernel kernel = ops::GemmKernel::Fast64;
  uint32_t split_k = 1;
  bool bias = false;
};

struct Layout {
  uint32_t a_row, b_row, out_row;
  std::array<uint32_t, 4> a_batch, b_batch, out_batch;
  int64_t a_size, b_size, out_size;
};

Layout layout_of(const Case& c) {
  Layout l;
  l.a_row = (c.a_km ? c.m : c.k) + c.a_pad;
  l.b_row = (c.b_nk ? c.k : c.n) + c.b_pad;
  const uint32_t a_matrix = (c.a_km ? c.k : c.m) * l.a_row, b_matrix = (c.b_nk ? c.n : c.k) * l.b_row;
  l.a_batch = {0, 0, c.b1 * a_matrix, a_matrix};
  l.b_batch = {0, 0, c.b_broadcast0 ? 0 : c.b1 * b_matrix, b_matrix};
  l.a_size = c.a_offset + int64_t{c.b0} * c.b1 * a_matrix + 3;  // a few elements past the view
  l.b_size = c.b_offset + int64_t{c.b_broadcast0 ? 1 : c.b0} * c.b1 * b_matrix + 3;
  if (c.interleave) {
    l.out_row = c.b1 * (c.n + c.out_pad);
    l.out_batch = {0, 0, c.m * l.out_row, c.n + c.out_pad};
  } else {
    l.out_row = c.n + c.out_pad;
    l.out_batch = {0, 0, c.b1 * c.m * l.out_row, c.m * l.out_row};
  }
  l.out_size = int64_t{c.b0} * l.out_batch[2] + 5;
  return l;
}

bool multiples_of_4(std::initializer_list<uint32_t> values) {
  return std::all_of(values.begin(), values.end(), [](uint32_t v) { return v % 4 == 0; });
}

ops::GemmLaunchSpec spec_of(const Case& c) {
  const Layout l = layout_of(c);
  ops::GemmLaunchSpec s;
  s.m = c.m;
  s.n = c.n;
  s.k = c.k;
  s.batch = c.b0 * c.b1;
  s.batch_dims = {1, 1, c.b0, c.b1};
  s.a_batch_strides = l.a_batch;
  s.b_batch_strides = l.b_batch;
  s.a_km = c.a_km;
  s.b_nk = c.b_nk;
  s.a_row_stride = l.a_row;
  s.b_row_stride = l.b_row;
  s.a_offset = c.a_offset;
  s.b_offset = c.b_offset;
  s.out_row_stride = l.out_row;
  s.out_batch_strides = l.out_batch;
  s.kernel = c.kernel;
  s.split_k = c.split_k;
  s.a = ops::TensorRef::input(0);
  s.b = ops::TensorRef::input(1);
  if (c.bias) {
    s.bias = ops::TensorRef::input(2);
    s.bias_stride_n = 1;
    s.beta = 0.5f;
  }
  s.alpha = 1.25f;
  s.out = ops::TensorRef::output(0);
  return s;
}

// A registry with one test op, "StridedGemm" (domain wgi.test), that runs `spec` into a flat output of
// `out_size` elements through append_gemm_launches.
ops::OpRegistry registry_for(const ops::GemmLaunchSpec& spec, int64_t out_size) {
  ops::OpRegistry r;
  r.add("wgi.test", "StridedGemm", 1, ops::kLatestOpset,
        {[spec, out_size](const ops::PlanContext& ctx) {
           ops::OpPlan plan;
           plan.outputs.push_back({DType::Float32, {out_size}});
           ops::append_gemm_launches(ctx, spec, plan);
           return plan;
         },
         nullptr});
  return r;
}

ops::NodeInfo strided_node() {
  return ops::NodeInfo{"strided_gemm", "StridedGemm", "wgi.test", 1, {}, {}, {}};
}

void expect_case(const Case& c) {
  SCOPED_TRACE(c.what);
  const Layout l = layout_of(c);
  const ops::GemmLaunchSpec spec = spec_of(c);
  const uint64_t seed = 1000 + c.m * 31 + c.n * 7 + c.k;
  Tensor a = test::random_tensor({l.a_size}, seed);
  Tensor b = test::random_tensor({l.b_size}, seed + 1);
  Tensor bias = test::random_tensor({c.n}, seed + 2);
  Inputs in = {NodeInput{a}, NodeInput{b}};
  if (c.bias) in.push_back(NodeInput{bias});
  const ops::OpRegistry registry = registry_for(spec, l.out_size);

  // The planner's vec4 decisions: loads where stride, offset and batch strides allow, stores likewise.
  const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), strided_node(), in, registry);
  ASSERT_EQ(plan.launches.size(), c.split_k > 1 ? 2u : 1u);
  const std::string& label = plan.launches[0].program.label;
  EXPECT_NE(label.find(c.kernel == ops::GemmKernel::Fast128 ? "gemm_fast128" : "gemm_fast64"),
            std::string::npos)
      << label;
  const bool a_vec4 =
      (c.a_km ? c.m : c.k) % 4 == 0 && multiples_of_4({l.a_row, c.a_offset, l.a_batch[2], l.a_batch[3]});
  const bool b_vec4 =
      (c.b_nk ? c.k : c.n) % 4 == 0 && multiples_of_4({l.b_row, c.b_offset, l.b_batch[2], l.b_batch[3]});
  EXPECT_EQ(label.find("_ascalar") == std::string::npos, a_vec4) << label;
  EXPECT_EQ(label.find("_bscalar") == std::string::npos, b_vec4) << label;
  if (c.split_k <= 1) {
    // vec4 stores where the view allows them and the kernel stores the packed output so.
    auto vec4_stores = [&](const ops::GemmLaunchSpec& s) {
      const ops::OpRegistry r = registry_for(s, l.out_size);
      return runtime::plan_node(test::device().capabilities(), strided_node(), in, r)
                 .launches[0]
                 .program.wgsl.str()
                 .find("output: array<vec4<f32>>") != std::string::npos;
    };
    ops::GemmLaunchSpec packed_out = spec;
    packed_out.out_row_stride = 0;
    packed_out.out_batch_strides = {0, 0, 0, 0};
    const bool out_vec4 = multiples_of_4({c.n, l.out_row, l.out_batch[2], l.out_batch[3]});
    EXPECT_EQ(vec4_stores(spec), out_vec4 && vec4_stores(packed_out)) << label;
  }

  std::vector<Tensor> out = runtime::run_node(test::device(), strided_node(), in, {}, registry);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].element_count(), l.out_size);
  auto av = a.data<float>();
  auto bv = b.data<float>();
  auto ov = out[0].data<float>();
  std::vector<bool> written(static_cast<size_t>(l.out_size), false);
  const test::Tolerance tolerance = test::fp32_tolerance(c.k);
  int bad = 0;
  for (uint32_t i0 = 0; i0 < c.b0; ++i0) {
    for (uint32_t i1 = 0; i1 < c.b1; ++i1) {
      const int64_t a_base = c.a_offset + int64_t{i0} * l.a_batch[2] + int64_t{i1} * l.a_batch[3];
      const int64_t b_base = c.b_offset + int64_t{i0} * l.b_batch[2] + int64_t{i1} * l.b_batch[3];
      const int64_t o_base = int64_t{i0} * l.out_batch[2] + int64_t{i1} * l.out_batch[3];
      for (uint32_t m = 0; m < c.m; ++m) {
        for (uint32_t n = 0; n < c.n; ++n) {
          double sum = 0;
          for (uint32_t k = 0; k < c.k; ++k) {
            const int64_t ai = a_base + (c.a_km ? int64_t{k} * l.a_row + m : int64_t{m} * l.a_row + k);
            const int64_t bi = b_base + (c.b_nk ? int64_t{n} * l.b_row + k : int64_t{k} * l.b_row + n);
            sum += double{av[static_cast<size_t>(ai)]} * double{bv[static_cast<size_t>(bi)]};
          }
          double expected = 1.25 * sum;
          if (c.bias) expected += 0.5 * double{bias.data<float>()[n]};
          const size_t oi = static_cast<size_t>(o_base + int64_t{m} * l.out_row + n);
          ASSERT_FALSE(written[oi]) << "views overlap at " << oi;
          written[oi] = true;
          const double got = ov[oi];
          if (!(std::abs(got - expected) <= tolerance(expected)) && bad++ < 5) {
            ADD_FAILURE() << "batch (" << i0 << ", " << i1 << ") m " << m << " n " << n << ": " << got
                          << ", expected " << expected;
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
  // Nothing outside the view is written: the run poisons outputs with NaN first.
  int stray = 0;
  for (size_t i = 0; i < written.size(); ++i) {
    if (!written[i] && !std::isnan(ov[i]) && stray++ < 5)
      ADD_FAILURE() << "element " << i << " outside the view written";
  }
}

}  // namespace views

TEST(GemmViews, StridedOperandsAndOutputsMatchFloat64Reference) {
  using ops::GemmKernel;
  using views::Case;
  for (const Case& c : {
           // Unaligned row strides and offsets: scalar loads and stores.
           Case{.what = "A[M,K] B[K,N] unaligned, packed out",
           .m = 37,
           .n = 20,
           .k = 29,
           .a_pad = 3,
           .b_pad = 5,
           .a_offset = 7,
           .b_offset = 2},
           Case{.what = "A[K,M] B[N,K] unaligned, batch, strided out, bias",
           .m = 19,
           .n = 23,
           .k = 41,
           .b0 = 2,
           .b1 = 2,
           .a_km = true,
           .b_nk = true,
           .a_pad = 1,
           .b_pad = 2,
           .out_pad = 1,
           .a_offset = 5,
           .b_offset = 3,
           .b_broadcast0 = true,
           .bias = true},
           // Aligned: vec4 loads and stores, interleaved output matrices, both tiles.
           Case{.what = "aligned, interleaved out, fast128",
           .m = 40,
           .n = 24,
           .k = 32,
           .b0 = 2,
           .b1 = 3,
           .a_pad = 4,
           .b_pad = 8,
           .out_pad = 4,
           .a_offset = 4,
           .b_offset = 8,
           .interleave = true,
           .kernel = GemmKernel::Fast128},
           Case{.what = "aligned A[K,M] B[N,K], fast64",
           .m = 68,
           .n = 12,
           .k = 20,
           .b1 = 2,
           .a_km = true,
           .b_nk = true,
           .a_pad = 8,
           .b_pad = 4,
           .out_pad = 8,
           .a_offset = 12,
           .b_offset = 4},
           // DaViT's channel attention on a small scale (C = 36: 3 heads of 12, 200 tokens): the scores
           // Q^T K read in the packed projection [200, 108], split over the tokens; and out^T = V^T P^T
           // written [tokens, heads, D] (row stride C, heads side by side).
           Case{.what = "channel scores, split",
           .m = 12,
           .n = 12,
           .k = 200,
           .b1 = 3,
           .a_km = true,
           .a_pad = 96,
           .b_pad = 96,
           .a_offset = 0,
           .b_offset = 36,
           .split_k = 3},
           Case{.what = "channel values, interleaved out",
           .m = 200,
           .n = 12,
           .k = 12,
           .b1 = 3,
           .b_nk = true,
           .a_pad = 96,
           .a_offset = 72,
           .interleave = true},
           Case{.what = "channel values, interleaved out, fast128",
           .m = 200,
           .n = 12,
           .k = 12,
           .b1 = 3,
           .b_nk = true,
           .a_pad = 96,
           .a_offset = 72,
           .interleave = true,
           .kernel = GemmKernel::Fast128},
           // Split products: packed partial sums, the reduction writes the view.
           Case{.what = "split, unaligned interleaved out, bias",
           .m = 33,
           .n = 18,
           .k = 150,
           .b0 = 2,
           .b1 = 2,
           .b_nk = true,
           .a_pad = 2,
           .b_pad = 1,
           .out_pad = 1,
           .a_offset = 1,
           .interleave = true,
           .split_k = 4,
           .bias = true},
           Case{.what = "split on fast128, aligned strided out",
           .m = 20,
           .n = 16,
           .k = 96,
           .b0 = 3,
           .a_km = true,
           .a_pad = 4,
           .b_pad = 4,
           .out_pad = 8,
           .a_offset = 8,
           .b_offset = 4,
           .b_broadcast0 = true,
           .kernel = GemmKernel::Fast128,
           .split_k = 2},
       }) {
    views::expect_case(c);
  }
}

TEST(GemmViews, SeedKernelsAndStridedResidualsAreErrors) {
  views::Case c{.what = "forced", .m = 8, .n = 8, .k = 8, .a_pad = 4};
  const views::Layout l = views::layout_of(c);
  Inputs in = {NodeInput{test::random_tensor({l.a_size}, 1)}, NodeInput{test::random_tensor({l.b_size}, 2)},
               NodeInput{test::random_tensor({l.out_size}, 3)}};
  auto error = [&](const ops::GemmLaunchSpec& spec) {
    const ops::OpRegistry registry = views::registry_for(spec, l.out_size);
    try {
      runtime::run_node(test::device(), views::strided_node(), in, {}, registry);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (ops::GemmKernel k : {ops::GemmKernel::Tiled, ops::GemmKernel::Vec4, ops::GemmKernel::Gemv}) {
    ops::GemmLaunchSpec spec = views::spec_of(c);
    spec.kernel = k;
    const std::string e = error(spec);
    EXPECT_NE(e.find("strided_gemm"), std::string::npos) << e;
    EXPECT_NE(
        e.find(std::string(ops::gemm_kernel_name(k)) + " GEMM kernel reads and writes packed matrices only"),
        std::string::npos)
        << e;
  }
  ops::GemmLaunchSpec residual =
      views::spec_of(views::Case{.what = "residual", .m = 8, .n = 8, .k = 8, .out_pad = 4});
  residual.residual = ops::TensorRef::input(2);
  const std::string e = error(residual);
  EXPECT_NE(e.find("residual"), std::string::npos) << e;
  EXPECT_NE(e.find("strided output"), std::string::npos) << e;
}

// ---- Row maps: A read through DaViT's window partition, the output written through the window reverse
// (GemmLaunchSpec::a_row_map / out_row_map) on both fast tiles, split and unsplit, with a fused residual ----

namespace row_maps {

// Per batch matrix an image x [H, W, K] cut into windows of wh x ww tokens; the product's row m is token
// (i, j) of window (wi, wj), m = ((wi * W/ww + wj) * wh + i) * ww + j. A read through the partition (or
// packed in window order without a_map), the output written back into [H, W, N] (or packed without
// out_map). `fold`: the b0 images folded into M (the outermost digit then runs over images and window rows,
// as linear.cpp folds a weight product's batch); otherwise b0 batch matrices, B broadcast over them.
struct Case {
  const char* what;
  uint32_t h, w, wh, ww, n, k;
  uint32_t b0 = 1;
  bool fold = false;
  bool a_map = true, out_map = true;
  ops::GemmKernel kernel = ops::GemmKernel::Fast64;
  uint32_t split_k = 1;
  bool residual = false;
};

// The row map of a window partition of [rows, w, c] (rows: all image rows, several images when folded).
ops::GemmRowMap window_map(uint32_t rows, uint32_t w, uint32_t wh, uint32_t ww, uint32_t c) {
  return {{rows / wh, w / ww, wh, ww}, {wh * w * c, ww * c, w * c, c}};
}

// Element offset of row m as the map says (the reference's own decoding).
int64_t mapped(const ops::GemmRowMap& map, uint32_t m) {
  int64_t offset = 0;
  for (int d = 3; d >= 0; --d) {
    offset += int64_t{m % map.extents[static_cast<size_t>(d)]} * map.strides[static_cast<size_t>(d)];
    m /= map.extents[static_cast<size_t>(d)];
  }
  return offset;
}

void expect_case(const Case& c) {
  SCOPED_TRACE(c.what);
  const uint32_t tokens = c.h * c.w;
  const uint32_t m = c.fold ? c.b0 * tokens : tokens;
  const uint32_t matrices = c.fold ? 1 : c.b0;
  const ops::GemmRowMap a_map = window_map(c.fold ? c.b0 * c.h : c.h, c.w, c.wh, c.ww, c.k);
  const ops::GemmRowMap out_map = window_map(c.fold ? c.b0 * c.h : c.h, c.w, c.wh, c.ww, c.n);
  const ops::GemmRowMap packed_a{{1, 1, 1, m}, {0, 0, 0, c.k}}, packed_out{{1, 1, 1, m}, {0, 0, 0, c.n}};
  const ops::GemmRowMap& a_rows = c.a_map ? a_map : packed_a;
  const ops::GemmRowMap& out_rows = c.out_map ? out_map : packed_out;
  const int64_t out_size = int64_t{c.b0} * tokens * c.n;

  ops::GemmLaunchSpec s;
  s.m = m;
  s.n = c.n;
  s.k = c.k;
  s.batch = matrices;
  s.batch_dims = {1, 1, 1, matrices};
  s.a_batch_strides = {0, 0, 0, matrices > 1 ? tokens * c.k : 0};
  s.b_nk = true;
  if (c.a_map) s.a_row_map = a_map;
  if (c.out_map) s.out_row_map = out_map;
  s.kernel = c.kernel;
  s.split_k = c.split_k;
  s.a = ops::TensorRef::input(0);
  s.b = ops::TensorRef::input(1);
  s.bias = ops::TensorRef::input(2);
  s.bias_stride_n = 1;
  s.beta = 0.5f;
  s.alpha = 1.25f;
  if (c.residual) s.residual = ops::TensorRef::input(3);
  s.out = ops::TensorRef::output(0);

  const uint64_t seed = 5000 + c.h * 131 + c.w * 31 + c.n * 7 + c.k;
  Tensor a = test::random_tensor({int64_t{c.b0} * tokens * c.k}, seed);
  Tensor b = test::random_tensor({int64_t{c.n} * c.k}, seed + 1);
  Tensor bias = test::random_tensor({c.n}, seed + 2);
  Tensor residual = test::random_tensor({out_size}, seed + 3);
  Inputs in = {NodeInput{a}, NodeInput{b}, NodeInput{bias}};
  if (c.residual) in.push_back(NodeInput{residual});
  const ops::OpRegistry registry = views::registry_for(s, out_size);

  const ops::OpPlan plan =
      runtime::plan_node(test::device().capabilities(), views::strided_node(), in, registry);
  ASSERT_EQ(plan.launches.size(), c.split_k > 1 ? 2u : 1u);
  const std::string& label = plan.launches[0].program.label;
  EXPECT_NE(label.find(c.kernel == ops::GemmKernel::Fast128 ? "gemm_fast128" : "gemm_fast64"),
            std::string::npos)
      << label;
  EXPECT_EQ(label.find("_amap") != std::string::npos, c.a_map) << label;
  EXPECT_EQ(label.find("_ascalar") == std::string::npos, c.k % 4 == 0) << label;
  if (c.split_k <= 1) {
    EXPECT_EQ(plan.launches[0].program.wgsl.str().find("output: array<vec4<f32>>") != std::string::npos,
              c.n % 4 == 0)
        << label;
  }

  std::vector<Tensor> out = runtime::run_node(test::device(), views::strided_node(), in, {}, registry);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].element_count(), out_size);
  auto av = a.data<float>();
  auto bv = b.data<float>();
  auto ov = out[0].data<float>();
  std::vector<bool> written(static_cast<size_t>(out_size), false);
  const test::Tolerance tolerance = test::fp32_tolerance(c.k);
  int bad = 0;
  for (uint32_t mat = 0; mat < matrices; ++mat) {
    const int64_t a_base = int64_t{mat} * tokens * c.k, o_base = int64_t{mat} * tokens * c.n;
    for (uint32_t row = 0; row < m; ++row) {
      const int64_t a_row = a_base + mapped(a_rows, row), o_row = o_base + mapped(out_rows, row);
      for (uint32_t n = 0; n < c.n; ++n) {
        double sum = 0;
        for (uint32_t k = 0; k < c.k; ++k) {
          sum += double{av[static_cast<size_t>(a_row + k)]} *
                 double{bv[static_cast<size_t>(int64_t{n} * c.k + k)]};
        }
        const size_t oi = static_cast<size_t>(o_row + n);
        double expected = 1.25 * sum + 0.5 * double{bias.data<float>()[n]};
        if (c.residual) expected += double{residual.data<float>()[oi]};
        ASSERT_FALSE(written[oi]) << "rows overlap at " << oi;
        written[oi] = true;
        const double got = ov[oi];
        if (!(std::abs(got - expected) <= tolerance(expected)) && bad++ < 5) {
          ADD_FAILURE() << "matrix " << mat << " row " << row << " n " << n << ": " << got << ", expected "
                        << expected;
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_TRUE(std::all_of(written.begin(), written.end(), [](bool w) { return w; }));
}

}  // namespace row_maps

TEST(GemmRowMaps, WindowPartitionAndReverseMatchFloat64Reference) {
  using ops::GemmKernel;
  using row_maps::Case;
  for (const Case& c : {
           // vec4 loads and stores (K, N multiples of 4), both maps, two images as batch matrices.
           Case{.what = "aligned, batch, fast64", .h = 6, .w = 6, .wh = 3, .ww = 3, .n = 12, .k = 8, .b0 = 2},
           Case{.what = "aligned, folded images, fast128, residual",
           .h = 6,
           .w = 4,
           .wh = 3,
           .ww = 2,
           .n = 8,
           .k = 12,
           .b0 = 2,
           .fold = true,
           .kernel = GemmKernel::Fast128,
           .residual = true},
           // Scalar loads and stores (K, N not multiples of 4), non-square windows.
           Case{.what = "unaligned, batch, fast128, residual",
           .h = 4,
           .w = 6,
           .wh = 2,
           .ww = 3,
           .n = 10,
           .k = 6,
           .b0 = 2,
           .kernel = GemmKernel::Fast128,
           .residual = true},
           Case{.what = "unaligned, fast64, residual",
           .h = 6,
           .w = 6,
           .wh = 2,
           .ww = 3,
           .n = 7,
           .k = 9,
           .residual = true},
           // One map at a time.
           Case{.what = "A map only",
           .h = 4,
           .w = 4,
           .wh = 2,
           .ww = 2,
           .n = 8,
           .k = 8,
           .b0 = 2,
           .out_map = false},
           Case{.what = "output map only, residual",
           .h = 4,
           .w = 4,
           .wh = 2,
           .ww = 2,
           .n = 8,
           .k = 8,
           .b0 = 2,
           .a_map = false,
           .residual = true},
           // Split: packed partial sums (A still read through its map), the reduction writes through the
           // output's map and adds the residual there.
           Case{.what = "split, fast64, residual",
           .h = 4,
           .w = 6,
           .wh = 2,
           .ww = 3,
           .n = 12,
           .k = 40,
           .b0 = 2,
           .split_k = 3,
           .residual = true},
           Case{.what = "split, unaligned, folded, fast128",
           .h = 6,
           .w = 6,
           .wh = 3,
           .ww = 3,
           .n = 6,
           .k = 30,
           .b0 = 2,
           .fold = true,
           .kernel = GemmKernel::Fast128,
           .split_k = 2},
       }) {
    row_maps::expect_case(c);
  }
}

TEST(GemmRowMaps, SeedKernelsAndMalformedMapsAreErrors) {
  ops::GemmLaunchSpec s;
  s.m = 16;
  s.n = s.k = 8;
  s.b_nk = true;
  s.a_row_map = row_maps::window_map(4, 4, 2, 2, 8);
  const gpu::Capabilities& caps = test::device().capabilities();
  auto error = [&](const ops::GemmLaunchSpec& spec) {
    try {
      ops::choose_gemm_config(spec, caps);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(s), "no error");
  EXPECT_TRUE(ops::gemm_has_views(s));
  // The planner's own choice is a fast kernel, even where barriers are costly (SwiftShader).
  const ops::GemmKernel chosen = ops::choose_gemm_config(s, caps).kernel;
  EXPECT_TRUE(chosen == ops::GemmKernel::Fast64 || chosen == ops::GemmKernel::Fast128);
  for (ops::GemmKernel k : {ops::GemmKernel::Tiled, ops::GemmKernel::Vec4, ops::GemmKernel::Gemv}) {
    ops::GemmLaunchSpec forced = s;
    forced.kernel = k;
    EXPECT_NE(error(forced).find("row maps"), std::string::npos) << error(forced);
  }
  ops::GemmLaunchSpec rows = s;
  rows.out_row_map = row_maps::window_map(4, 2, 2, 2, 8);  // 8 rows for M = 16
  EXPECT_NE(error(rows).find("the output's row map has extents (2, 1, 2, 2), 8 rows; the product has M = 16"),
            std::string::npos)
      << error(rows);
  ops::GemmLaunchSpec stride = s;
  stride.a_row_stride = 12;
  EXPECT_NE(error(stride).find("A has both a row map and a row stride (12)"), std::string::npos)
      << error(stride);
  ops::GemmLaunchSpec km = s;
  km.a_km = true;
  EXPECT_NE(error(km).find("A's row map needs A stored as [M, K]"), std::string::npos) << error(km);
}

// ---- Products whose output is split into column blocks (wgi.split_columns) ----
//
// graph::merge_sibling_products lays sibling weights side by side; the product then writes each sibling's
// columns to an output of its own: the GEMV itself, every other kernel through a scratch product and one
// split copy. Each block is checked against its columns of the float64 product.

// The reference's columns [begin, end) of its last dim, as a reference of their own.
test::Reference column_block(const test::Reference& ref, int64_t begin, int64_t end) {
  const int64_t n = ref.shape.back();
  test::Reference block{ref.shape, {}};
  block.shape.back() = end - begin;
  for (size_t row = 0; row < ref.values.size() / static_cast<size_t>(n); ++row)
    for (int64_t c = begin; c < end; ++c) block.values.push_back(ref.values[row * n + c]);
  return block;
}

struct ColumnSplitCase {
  Shape a;                      // [..., K]
  std::vector<int64_t> widths;  // the blocks, summing to N
  const char* kernel;           // wgi.kernel ("" the planner's choice)
  int64_t split_k = 0;          // wgi.gemm_split_k (0: none forced)
};

// `half_weight`: B a float16 constant (a fp16 export's weight, read packed), the reference on its values.
void expect_split(const ColumnSplitCase& c, bool bias, const char* activation, uint64_t seed,
                  bool half_weight = false) {
  const int64_t k = c.a.back();
  int64_t n = 0;
  for (int64_t w : c.widths) n += w;
  Tensor x = test::random_tensor(c.a, seed);
  Tensor w = test::random_tensor({k, n}, seed + 1);  // [K, N], as exports store nn.Linear's weight
  Tensor b = test::random_tensor({n}, seed + 2);
  Tensor w_half = ops::narrow_to_float16(w);
  if (half_weight) w = ops::widen_float16(w_half);  // the values the kernels read
  ops::NodeInfo split_node = test::make_node("MatMul", 13, c.widths.size());
  split_node.attributes.set("wgi.split_columns", c.widths);
  if (*c.kernel) split_node.attributes.set("wgi.kernel", std::string(c.kernel));
  if (c.split_k) split_node.attributes.set("wgi.gemm_split_k", c.split_k);
  if (*activation) split_node.attributes.set("wgi.activation", std::string(activation));
  Inputs in = {NodeInput{x}, NodeInput{half_weight ? w_half : w, true}};
  if (bias) in.push_back(NodeInput{b, true});
  test::Reference ref = test::matmul_reference(x, w);
  for (size_t i = 0; i < ref.values.size(); ++i) {
    double& v = ref.values[i];
    if (bias) v += b.data<float>()[i % static_cast<size_t>(n)];
    if (std::string(activation) == "Relu") v = std::max(v, 0.0);
  }
  const std::string what = std::string("A ") + shape_to_string(c.a) + " kernel '" + c.kernel + "' split_k " +
                           std::to_string(c.split_k) + (bias ? " bias " : " ") + activation +
                           (half_weight ? " float16 B" : "");
  const std::vector<Tensor> out = runtime::run_node(test::device(), split_node, in);
  ASSERT_EQ(out.size(), c.widths.size()) << what;
  int64_t begin = 0;
  for (size_t i = 0; i < c.widths.size(); ++i) {
    const test::Reference block = column_block(ref, begin, begin + c.widths[i]);
    EXPECT_TRUE(test::all_close(out[i], block.shape, block.values, test::fp32_tolerance(k)))
        << what << ", block " << i;
    begin += c.widths[i];
  }
}

// Two and three blocks, widths aligned to 4 and not, K aligned and not, a batch folded into M; the GEMV
// (1..8 rows: the blocks written by the kernel) and the GEMMs (the whole product copied into the blocks),
// a forced split K, with and without bias and Relu.
TEST(SplitColumns, EveryKernelWritesEachBlockAsItsOwnProduct) {
  const std::vector<ColumnSplitCase> cases = {
      {{1, 64}, {16, 32, 16}, "gemv"},   {{3, 33}, {5, 7, 13}, "gemv"},  {{2, 3, 20}, {9, 4}, "gemv"},
      {{1, 1, 36}, {12, 12, 12}, ""},    {{9, 33}, {5, 7, 13}, "tiled"}, {{2, 20, 64}, {16, 32, 16}, "vec4"},
      {{40, 36}, {24, 8, 40}, "fast64"}, {{17, 33}, {3, 30}, "fast128"}, {{12, 300}, {8, 12, 4}, "tiled", 3},
      {{20, 64}, {32, 32}, ""},
  };
  uint64_t seed = 7000;
  for (const ColumnSplitCase& c : cases) {
    for (bool bias : {false, true}) {
      expect_split(c, bias, bias ? "Relu" : "", seed += 10);
    }
  }
  // A float16 weight (merged siblings of an fp16 export), on the GEMV and on a GEMM.
  expect_split({{2, 64}, {16, 32, 16}, "gemv"}, true, "", seed += 10, true);
  expect_split({{9, 36}, {12, 12, 12}, "tiled"}, true, "", seed += 10, true);
}

// The GEMV writes the blocks itself (one launch); the other kernels add one copy after the product.
TEST(SplitColumns, GemvWritesTheBlocksInOneLaunch) {
  Tensor x = test::random_tensor({1, 64}, 1), w = test::random_tensor({64, 48}, 2);
  const Inputs in = {NodeInput{x}, NodeInput{w, true}};
  for (const char* kernel : {"gemv", "tiled"}) {
    ops::NodeInfo split_node = test::make_node("MatMul", 13, 3);
    split_node.attributes.set("wgi.split_columns", std::vector<int64_t>{16, 16, 16});
    split_node.attributes.set("wgi.kernel", std::string(kernel));
    const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), split_node, in);
    ASSERT_EQ(plan.outputs.size(), 3u);
    EXPECT_EQ(plan.outputs[1].shape, (Shape{1, 16}));
    if (std::string(kernel) == "gemv") {
      ASSERT_EQ(plan.launches.size(), 1u) << kernel;
    } else {
      ASSERT_EQ(plan.launches.size(), 2u) << kernel;
      EXPECT_EQ(plan.launches[1].program.label, "split_columns_3");
    }
  }
}

TEST(SplitColumns, BadSplitsFailNamingTheNode) {
  Tensor x = test::random_tensor({2, 8}, 1), w = test::random_tensor({8, 12}, 2);
  Tensor r = test::random_tensor({2, 12}, 3);
  auto error = [&](std::vector<int64_t> widths, size_t outputs, bool residual = false) {
    ops::NodeInfo split_node = test::make_node("MatMul", 13, outputs);
    split_node.attributes.set("wgi.split_columns", widths);
    Inputs in = {NodeInput{x}, NodeInput{w, true}};
    if (residual) {
      split_node.attributes.set("wgi.residual", int64_t{1});
      in.push_back(std::nullopt);
      in.push_back(NodeInput{r});
    }
    return plan_error(split_node, in);
  };
  EXPECT_NE(error({4, 4}, 2).find("splits 8 columns into 2 blocks; the product has N = 12"),
            std::string::npos)
      << error({4, 4}, 2);
  EXPECT_NE(error({3, 3, 3, 3}, 4).find("(2 to 3 blocks)"), std::string::npos) << error({3, 3, 3, 3}, 4);
  EXPECT_NE(error({6, 6}, 3).find("2 column blocks for the node's 3 outputs"), std::string::npos)
      << error({6, 6}, 3);
  EXPECT_NE(error({12, 0}, 2).find("a block of width 0"), std::string::npos) << error({12, 0}, 2);
  EXPECT_NE(error({6, 6}, 2, true).find("with a fused residual"), std::string::npos)
      << error({6, 6}, 2, true);
  EXPECT_NE(error({4, 4}, 2).find("dm_under_test"), std::string::npos);
  EXPECT_EQ(error({6, 6}, 2), "no error");
  // Gemm has no split output (the pass makes MatMuls only).
  ops::NodeInfo gemm = test::make_node("Gemm", 13, 2);
  gemm.attributes.set("wgi.split_columns", std::vector<int64_t>{6, 6});
  const std::string gemm_error = plan_error(gemm, {NodeInput{x}, NodeInput{w, true}});
  EXPECT_NE(gemm_error.find("wgi.split_columns apply to MatMul only"), std::string::npos) << gemm_error;
}

}  // namespace
}  // namespace wgi

namespace wgi {
namespace {

// A LayerNormalization taken into the MatMul that reads it (wgi.layer_norm_epsilon, as
// graph::fuse_layer_norm_into_products makes it): input 0 is X, the scale and bias are inputs 4 and 5, and
// the normalised X is the last output. The GEMV normalises A itself (one launch, "_ln"); every other kernel,
// and the GEMV where it cannot, gets a LayerNormalization launch first. Both outputs against float64: Y = (X
// - mean) / sqrt(var + eps) * scale + bias per row, then Y B + C.
struct LayerNormCase {
  const char* kernel;  // wgi.kernel, "" for the planner's choice
  int64_t m, n, k;
  bool product_bias, ln_bias;
  std::vector<std::string> labels;  // the launches' label prefixes, in order
  std::string last_contains;
  bool half_weight = false;  // B a float16 constant (an fp16 export's, or an f16 session's GEMV weight)
};

TEST(LayerNormInProduct, GemvNormalisesAItselfOtherKernelsAfterALaunch) {
  for (const LayerNormCase& c : {
           LayerNormCase{"gemv", 1, 50, 64, true, true, {"gemv_r1_l"}, "_ln"},
           LayerNormCase{"gemv", 3, 37, 30, false, false, {"gemv_r4_l"}, "_ln"},  // K % 4 != 0: scalar loads
           LayerNormCase{"gemv", 8, 96, 768, true, true, {"gemv_r8_l"}, "_ln"},
           LayerNormCase{"gemv", 2, 40, 64, true, true, {"gemv_r2_l"}, "_bf16_ln", true},
           LayerNormCase{"tiled", 12, 20, 64, true, true, {"layer_norm_rows", "gemm_tiled"}, ""},
           LayerNormCase{"tiled", 2, 20, 30, false, true, {"row_norm_", "gemm_tiled"}, ""},
       }) {
    const std::string what = std::string(c.kernel) + " " + std::to_string(c.m) + "x" + std::to_string(c.n) +
                             "x" + std::to_string(c.k);
    SCOPED_TRACE(what);
    ops::NodeInfo n = node("MatMul");
    const float epsilon = 1e-5f;
    n.attributes.set(ops::kMatMulLayerNormEpsilonAttribute, epsilon);
    if (*c.kernel) n.attributes.set(ops::kForcedKernelAttribute, std::string(c.kernel));
    // Rows with an offset and a spread of their own, so that the mean and the variance both matter.
    Tensor x = test::random_tensor({c.m, c.k}, 11, -2.0f, 3.0f);
    const Tensor b32 = test::random_tensor({c.k, c.n}, 12);
    const Tensor b = c.half_weight ? ops::narrow_to_float16(b32) : b32;
    const Tensor b_values = c.half_weight ? ops::widen_float16(b) : b32;  // what the product multiplies
    const Tensor bias = test::random_tensor({c.n}, 13);
    const Tensor scale = test::random_tensor({c.k}, 14, 0.5f, 1.5f);
    const Tensor ln_bias = test::random_tensor({c.k}, 15);
    Inputs in{NodeInput{x}, NodeInput{b, true}};
    in.push_back(c.product_bias ? std::optional<NodeInput>(NodeInput{bias, true}) : std::nullopt);
    in.push_back(std::nullopt);  // no residual
    in.push_back(NodeInput{scale, true});
    in.push_back(c.ln_bias ? std::optional<NodeInput>(NodeInput{ln_bias, true}) : std::nullopt);

    std::vector<double> y(static_cast<size_t>(c.m * c.k)), product(static_cast<size_t>(c.m * c.n));
    for (int64_t r = 0; r < c.m; ++r) {
      double mean = 0, var = 0;
      for (int64_t k = 0; k < c.k; ++k) mean += x.data<float>()[r * c.k + k];
      mean /= static_cast<double>(c.k);
      for (int64_t k = 0; k < c.k; ++k) var += std::pow(x.data<float>()[r * c.k + k] - mean, 2);
      const double inv_std = 1.0 / std::sqrt(var / static_cast<double>(c.k) + epsilon);
      for (int64_t k = 0; k < c.k; ++k) {
        y[r * c.k + k] = (x.data<float>()[r * c.k + k] - mean) * inv_std * scale.data<float>()[k] +
                         (c.ln_bias ? ln_bias.data<float>()[k] : 0.0);
      }
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = c.product_bias ? bias.data<float>()[j] : 0.0;
        for (int64_t k = 0; k < c.k; ++k) sum += y[r * c.k + k] * b_values.data<float>()[k * c.n + j];
        product[r * c.n + j] = sum;
      }
    }

    const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), n, in);
    ASSERT_EQ(plan.launches.size(), c.labels.size());
    for (size_t i = 0; i < c.labels.size(); ++i) {
      EXPECT_EQ(plan.launches[i].program.label.rfind(c.labels[i], 0), 0u)
          << "launch " << i << " is " << plan.launches[i].program.label;
    }
    EXPECT_NE(plan.launches.back().program.label.find(c.last_contains), std::string::npos)
        << plan.launches.back().program.label;
    const std::vector<Tensor> out = runtime::run_node(test::device(), n, in);
    ASSERT_EQ(out.size(), 2u);
    // The normalised values: a mean and a variance over K terms, then one product and a sum.
    EXPECT_TRUE(test::all_close(out[1], {c.m, c.k}, y, test::fp32_tolerance(2 * c.k))) << "normalised X";
    EXPECT_TRUE(test::all_close(out[0], {c.m, c.n}, product, test::fp32_tolerance(3 * c.k + 2))) << "product";
  }
}

// The fused LayerNormalization's scale and bias must be float32 constants of K values: an error naming them.
TEST(LayerNormInProduct, ScaleOfTheWrongLengthIsAnError) {
  ops::NodeInfo n = node("MatMul");
  n.attributes.set(ops::kMatMulLayerNormEpsilonAttribute, 1e-5f);
  Inputs in{NodeInput{test::random_tensor({1, 8}, 1)}, NodeInput{test::random_tensor({8, 4}, 2), true},
            std::nullopt, std::nullopt, NodeInput{test::random_tensor({7}, 3), true}};
  const std::string error = run_error(n, in);
  EXPECT_NE(error.find("the fused LayerNormalization's scale (input 4"), std::string::npos) << error;
  EXPECT_NE(error.find("float32 constant of shape [8]"), std::string::npos) << error;
}

}  // namespace
}  // namespace wgi
