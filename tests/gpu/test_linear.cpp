// MatMul / Gemm (and the seeds' linear = Gemm with transB and a bias) against float64 references, through
// both kernels of the family (scalar tiled, vec4), aligned and unaligned sizes, batch dims, broadcasting,
// fused activations, a grid past 65535 workgroups, and the errors a user can cause.
#include <gtest/gtest.h>

#include <cfloat>
#include <sstream>

#include "ops/fused_activation.h"
#include "runtime/node_runner.h"
#include "support/reference_linear.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;

ops::NodeInfo node(const char* op, int opset = 13) {
  return ops::NodeInfo{"linear_under_test", op, "", opset, {}, {}, {}};
}

std::string run_error(const ops::NodeInfo& n, const Inputs& inputs) {
  try {
    runtime::run_node(test::device(), n, inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

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

// Planned for a device that allows only 9 workgroups per dimension, 19 x 9 x 4 tiles fold into 3-D; the
// kernel must decode tile and batch from the folded grid.
TEST(MatMul, FoldedGridDecodesEveryTile) {
  Tensor a = test::random_tensor({4, 19 * 32 - 5, 8}, 51);
  Tensor b = test::random_tensor({4, 8, 9 * 32 - 3}, 52);
  runtime::NodeRunOptions options;
  options.capabilities = test::device().capabilities();
  options.capabilities->limits.max_compute_workgroups_per_dimension = 9;
  auto out = runtime::run_node(test::device(), node("MatMul"), Inputs{NodeInput{a}, NodeInput{b}}, options);
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

}  // namespace
}  // namespace wgi
