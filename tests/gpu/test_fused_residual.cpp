// A residual fused into a GEMM or conv epilogue (ops/fused_residual.h: input 3 with wgi.residual = 1, as
// graph::fuse_residual_adds makes it): every kernel the planner can choose for MatMul, Gemm and Conv, forced,
// against float64 references of act(product + bias + R), and the fallback when the planned R broadcasts
// instead (the product into scratch, then one elementwise launch). The models' end-to-end checks are in
// test_models.cpp. CPU adapters compile the fast kernels slowly: a few pipelines, small problems.
#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ops/fused_activation.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"
#include "runtime/node_runner.h"
#include "support/reference_conv.h"
#include "support/reference_elementwise.h"
#include "support/reference_linear.h"
#include "support/run_node.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;
using Ints = std::vector<int64_t>;

const test::NodeMaker node{"residual_under_test", 17};

// Sets the fused residual and activation ("", "Relu", "Gelu", "GeluTanh") on `n` and appends R as input 3.
void fuse(ops::NodeInfo& n, Inputs& in, const Tensor& residual, const std::string& activation) {
  n.attributes.set(ops::kFusedResidualAttribute, int64_t{1});
  if (!activation.empty()) n.attributes.set(ops::kFusedActivationAttribute, activation);
  in.resize(ops::kFusedResidualInput);
  in.push_back(NodeInput{residual});
}

// values + R (broadcast from `r` to `shape`), then the activation.
std::vector<double> add_and_activate(std::vector<double> values, const Shape& shape, const Tensor& r,
                                     const std::string& activation) {
  for (size_t i = 0; i < values.size(); ++i) {
    const double sum = values[i] + r.data<float>()[test::broadcast_source(shape, r.shape(), i)];
    values[i] =
        test::fused_activation_reference(activation, sum, activation == "Relu" ? 0.0 : -INFINITY, INFINITY);
  }
  return values;
}

// The label suffix of the launch that adds R in its epilogue: "_res" and the activation's.
std::string fused_suffix(const ops::NodeInfo& n) {
  return std::string(ops::residual_label_suffix(true)) + ops::FusedActivation::from_node(n).label_suffix();
}

// Plans `n` (the labels of its launches must start with `labels`, in order; the last one's must end with
// `last_suffix`), runs it and compares with the reference.
void expect_plan_and_values(const ops::NodeInfo& n, const Inputs& in, const std::vector<std::string>& labels,
                            const std::string& last_suffix, const Shape& shape,
                            const std::vector<double>& values, int64_t terms, const std::string& what) {
  const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), n, in);
  ASSERT_EQ(plan.launches.size(), labels.size()) << what;
  for (size_t i = 0; i < labels.size(); ++i) {
    EXPECT_EQ(plan.launches[i].program.label.rfind(labels[i], 0), 0u)
        << what << ": launch " << i << " is " << plan.launches[i].program.label;
  }
  const std::string& last = plan.launches.back().program.label;
  EXPECT_TRUE(last.size() >= last_suffix.size() &&
              last.compare(last.size() - last_suffix.size(), last_suffix.size(), last_suffix) == 0)
      << what << ": " << last << " does not end with " << last_suffix;
  const std::vector<Tensor> out = runtime::run_node(test::device(), n, in);
  ASSERT_EQ(out.size(), 1u) << what;
  EXPECT_TRUE(test::all_close(out[0], shape, values, test::fp32_tolerance(terms + 2))) << what;
}

struct GemmCase {
  const char* kernel;  // wgi.kernel
  int64_t m, n, k;
  bool bias;
  const char* activation;
  int64_t split_k;  // wgi.gemm_split_k, 0: none
  std::vector<std::string> labels;
};

// Gemm act(A B + C + R) with B a constant, R of the output's shape, through each GEMM kernel.
TEST(FusedResidual, EveryGemmKernel) {
  for (const GemmCase& c : {
           GemmCase{"fast128", 130, 131, 24, true, "Relu", 0, {"gemm_fast128_"}},
           GemmCase{"fast128", 130, 131, 24, true, "Gelu", 0, {"gemm_fast128_"}},
           // N % 4 == 0: vec4 stores and the vec4 in-place pass, on edge tiles in M and N.
           GemmCase{"fast128", 130, 132, 24, true, "Gelu", 0, {"gemm_fast128_"}},
           GemmCase{"fast64", 70, 68, 40, false, "Relu", 0, {"gemm_fast64_"}},
           GemmCase{"fast64", 70, 67, 40, false, "GeluTanh", 0, {"gemm_fast64_"}},
           GemmCase{"fast64", 64, 64, 32, true, "", 0, {"gemm_fast64_"}},
           GemmCase{"tiled", 33, 65, 20, true, "Relu", 0, {"gemm_tiled_bnk_res_relu"}},
           GemmCase{"vec4", 31, 40, 36, true, "", 0, {"gemm_vec4_bnk_res"}},
           GemmCase{"gemv", 1, 50, 64, true, "", 0, {"gemv_r1_l"}},
           GemmCase{"gemv", 8, 37, 30, false, "Relu", 0, {"gemv_r8_l"}},
           GemmCase{"tiled", 20, 24, 300, true, "Relu", 3, {"gemm_tiled_bnk", "gemm_split_reduce_res"}},
           GemmCase{"fast64", 40, 36, 256, true, "", 4, {"gemm_fast64", "gemm_split_reduce_res"}},
       }) {
    std::ostringstream what;
    what << c.kernel << " M" << c.m << " N" << c.n << " K" << c.k << " " << c.activation << " split "
         << c.split_k;
    const uint64_t seed = static_cast<uint64_t>(c.m * 1000 + c.n * 10 + c.k);
    Tensor a = test::random_tensor({c.m, c.k}, seed);
    Tensor b = test::random_tensor({c.k, c.n}, seed + 1);
    Tensor bias = test::random_tensor({c.n}, seed + 2);
    Tensor r = test::random_tensor({c.m, c.n}, seed + 3, -2.0f, 2.0f);
    ops::NodeInfo g = node("Gemm");
    g.attributes.set("wgi.kernel", std::string(c.kernel));
    if (c.split_k) g.attributes.set(ops::kGemmSplitKAttribute, c.split_k);
    Inputs in = {NodeInput{a}, NodeInput{b, true}};
    if (c.bias) in.push_back(NodeInput{bias, true});
    fuse(g, in, r, c.activation);
    const test::Reference ref = test::gemm_reference(a, b, c.bias ? &bias : nullptr, false, false, 1, 1);
    // A split's reduction adds R (its label does not name the activation).
    expect_plan_and_values(g, in, c.labels, c.split_k ? "_res" : fused_suffix(g), ref.shape,
                           add_and_activate(ref.values, ref.shape, r, c.activation), c.k, what.str());
  }
}

// MatMul with batch dims: a runtime B with its own batch (batched kernels: R indexed [batch][M][N]), and a
// constant B under a batched A (the batch folded into M), with and without the bias of a fused MatMul + Add.
TEST(FusedResidual, BatchedMatMul) {
  struct Case {
    const char* kernel;
    Shape a, b;
    bool b_constant, bias;
    const char* label;
  };
  for (const Case& c : {Case{"tiled", {2, 3, 17, 20}, {2, 3, 20, 19}, false, false, "gemm_tiled_bkn_res"},
                        Case{"fast64", {2, 3, 17, 20}, {2, 3, 20, 19}, false, true, "gemm_fast64"},
                        Case{"gemv", {3, 2, 24}, {24, 20}, true, true, "gemv_r8"},
                        Case{"vec4", {2, 5, 20}, {20, 12}, true, false, "gemm_vec4_bnk_res"}}) {
    const std::string what =
        std::string(c.kernel) + " " + shape_to_string(c.a) + " x " + shape_to_string(c.b);
    Tensor a = test::random_tensor(c.a, 5 + c.a.back());
    Tensor b = test::random_tensor(c.b, 6 + c.b.back());
    const test::Reference product = test::matmul_reference(a, b);
    Tensor bias = test::random_tensor({c.b.back()}, 7);
    Tensor r = test::random_tensor(product.shape, 8, -2.0f, 2.0f);
    ops::NodeInfo mm = node("MatMul");
    mm.attributes.set("wgi.kernel", std::string(c.kernel));
    Inputs in = {NodeInput{a}, NodeInput{b, c.b_constant}};
    if (c.bias) in.push_back(NodeInput{bias, true});
    fuse(mm, in, r, "");
    std::vector<double> values = product.values;
    if (c.bias) {
      for (size_t i = 0; i < values.size(); ++i) values[i] += bias.data<float>()[i % bias.element_count()];
    }
    expect_plan_and_values(mm, in, {c.label}, fused_suffix(mm), product.shape,
                           add_and_activate(values, product.shape, r, ""), c.a.back(), what);
  }
}

// R that broadcasts (known only when planned: exports have no shapes for the fusion pass): the product into
// scratch, then act(product + R) by the elementwise kernel, with the Add's output shape (which may be larger
// than the product's).
TEST(FusedResidual, BroadcastResidualFallsBackToAnElementwiseLaunch) {
  struct Case {
    Shape r;
    const char* activation;
  };
  for (const Case& c : {Case{{6}, "Relu"}, Case{{3, 4, 6}, ""}, Case{{4, 1}, "GeluTanh"}}) {
    Tensor a = test::random_tensor({4, 10}, 91);
    Tensor b = test::random_tensor({10, 6}, 92);
    Tensor bias = test::random_tensor({6}, 93);
    Tensor r = test::random_tensor(c.r, 94, -2.0f, 2.0f);
    ops::NodeInfo mm = node("MatMul");
    mm.attributes.set("wgi.kernel", std::string("tiled"));
    Inputs in = {NodeInput{a}, NodeInput{b, true}, NodeInput{bias, true}};
    fuse(mm, in, r, c.activation);
    test::Reference product = test::matmul_reference(a, b);
    for (size_t i = 0; i < product.values.size(); ++i) product.values[i] += bias.data<float>()[i % 6];
    const Shape out_shape = test::broadcast_shape({product.shape, c.r});
    std::vector<double> values(static_cast<size_t>(element_count(out_shape)));
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = product.values[test::broadcast_source(out_shape, product.shape, i)];
    }
    expect_plan_and_values(mm, in,
                           {"gemm_tiled_bnk", std::string("elementwise_Add") +
                                                  ops::FusedActivation::from_node(mm).label_suffix()},
                           "", out_shape, add_and_activate(values, out_shape, r, c.activation), 10,
                           "R " + shape_to_string(c.r));
  }
}

struct ConvCase {
  const char* forced;  // wgi.kernel
  Shape x, w;
  Ints pads;
  int64_t group;
  bool constant_weight;
  int64_t split_k;
  const char* activation;
  std::vector<std::string> labels;
  Shape r = {};  // R's shape; empty: the output's
};

// Conv act(conv + bias + R) through every conv kernel.
TEST(FusedResidual, EveryConvKernel) {
  for (const ConvCase& c : {
           ConvCase{"implicit_gemm64",
                    {2, 8, 9, 7},
                    {20, 8, 3, 3},
                    {1, 1, 1, 1},
                    1,
                    true,
                    0,
                    "Relu",
                    {"conv_igemm64_k16s1_res_relu"}},
           ConvCase{"implicit_gemm128",
                    {1, 4, 12, 12},
                    {130, 4, 3, 3},
                    {1, 1, 1, 1},
                    1,
                    true,
                    0,
                    "GeluTanh",
                    {"conv_igemm128_k8s1_res_gelu_tanh"}},
           ConvCase{"implicit_gemm64",
                    {1, 32, 6, 6},
                    {24, 32, 3, 3},
                    {1, 1, 1, 1},
                    1,
                    true,
                    3,
                    "Relu",
                    {"conv_igemm64_k16s1_splitk", "gemm_split_reduce_res"}},
           ConvCase{"gemm", {2, 12, 5, 7}, {16, 12, 1, 1}, {}, 1, true, 0, "Relu", {"conv1x1_gemm_"}},
           // A 1x1 conv's product with K split: the reduction adds bias and residual per output channel.
           ConvCase{"gemm",
                    {2, 40, 3, 5},
                    {24, 40, 1, 1},
                    {},
                    1,
                    true,
                    3,
                    "Relu",
                    {"conv1x1_gemm_", "gemm_split_reduce_res"}},
           ConvCase{"direct",
                    {1, 8, 6, 5},
                    {6, 8, 3, 3},
                    {1, 0, 1, 2},
                    1,
                    true,
                    0,
                    "Relu",
                    {"conv2d_vec4_res_relu"}},
           ConvCase{"direct", {2, 6, 6, 5}, {6, 3, 3, 3}, {1, 1, 1, 1}, 2, false, 0, "", {"conv2d_res"}},
           ConvCase{"depthwise_rows",
                    {1, 5, 9, 8},
                    {5, 1, 3, 3},
                    {1, 1, 1, 1},
                    5,
                    true,
                    0,
                    "Relu",
                    {"conv_depthwise_rows4_v4_k3x3_s1x1_res_relu"}},
           ConvCase{"depthwise_rows",
                    {2, 3, 7, 7},
                    {3, 1, 5, 5},
                    {2, 2, 2, 2},
                    3,
                    true,
                    0,
                    "",
                    {"conv_depthwise_rows4_k5x5_s1x1_res"}},
           ConvCase{"depthwise",
                    {1, 4, 10, 9},
                    {4, 1, 3, 3},
                    {1, 1, 1, 1},
                    4,
                    false,
                    0,
                    "Relu",
                    {"conv_depthwise_t"}},
           // R [1, C, 1, 1] broadcasts: the conv into scratch, then the elementwise add.
           ConvCase{"implicit_gemm64",
                    {1, 8, 5, 5},
                    {16, 8, 3, 3},
                    {1, 1, 1, 1},
                    1,
                    true,
                    0,
                    "Relu",
                    {"conv_igemm64_k16s1", "elementwise_Add_relu"},
                    {1, 16, 1, 1}},
       }) {
    const std::string what =
        std::string(c.forced) + " x " + shape_to_string(c.x) + " w " + shape_to_string(c.w);
    const uint64_t seed = static_cast<uint64_t>(c.x[1] * 100 + c.w[0] * 10 + c.w[2]);
    Tensor x = test::random_tensor(c.x, seed);
    Tensor w = test::random_tensor(c.w, seed + 1);
    Tensor b = test::random_tensor({c.w[0]}, seed + 2);
    test::ConvReferenceParams p;
    p.groups = c.group;
    if (!c.pads.empty()) p.pads = {c.pads[0], c.pads[1], c.pads[2], c.pads[3]};
    const test::ConvReference ref = test::conv_reference(x, w, &b, p);
    Tensor r = test::random_tensor(c.r.empty() ? ref.shape : c.r, seed + 3, -2.0f, 2.0f);
    ops::NodeInfo conv = node("Conv");
    conv.attributes.set("wgi.kernel", std::string(c.forced));
    if (!c.pads.empty()) conv.attributes.set("pads", c.pads);
    if (c.group != 1) conv.attributes.set("group", c.group);
    if (c.split_k) conv.attributes.set(ops::kGemmSplitKAttribute, c.split_k);
    Inputs in = {NodeInput{x}, NodeInput{w, c.constant_weight}, NodeInput{b, true}};
    fuse(conv, in, r, c.activation);
    const std::string suffix = !c.r.empty() ? "" : c.split_k ? "_res" : fused_suffix(conv);
    expect_plan_and_values(conv, in, c.labels, suffix, ref.shape,
                           add_and_activate(ref.values, ref.shape, r, c.activation), c.w[1] * c.w[2] * c.w[3],
                           what);
  }
}

// A conv without bias (input 2 empty) and a residual: ResNet's convs after BatchNorm folding have a bias,
// torch exports of bias=False convs do not.
TEST(FusedResidual, ConvWithoutBias) {
  Tensor x = test::random_tensor({1, 8, 6, 6}, 301);
  Tensor w = test::random_tensor({8, 8, 3, 3}, 302);
  test::ConvReferenceParams p;
  p.pads = {1, 1, 1, 1};
  const test::ConvReference ref = test::conv_reference(x, w, nullptr, p);
  ops::NodeInfo conv = node("Conv");
  conv.attributes.set("pads", Ints{1, 1, 1, 1});
  conv.attributes.set("wgi.kernel", std::string("direct"));
  Inputs in = {NodeInput{x}, NodeInput{w, true}, std::nullopt};
  fuse(conv, in, x, "Relu");  // the block's input itself, as in ResNet's identity shortcut
  expect_plan_and_values(conv, in, {"conv2d_vec4_res_relu"}, "_res_relu", ref.shape,
                         add_and_activate(ref.values, ref.shape, x, "Relu"), 72, "direct, no bias");
}

TEST(FusedResidual, ErrorsNameTheResidual) {
  Tensor a = test::random_tensor({4, 6}, 1);
  Tensor b = test::random_tensor({6, 5}, 2);
  ops::NodeInfo mm = node("MatMul");
  mm.attributes.set(ops::kFusedResidualAttribute, int64_t{1});
  try {
    runtime::plan_node(test::device().capabilities(), mm, Inputs{NodeInput{a}, NodeInput{b}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the residual) is not given"), std::string::npos) << e.what();
  }
  Inputs in = {NodeInput{a}, NodeInput{b}, std::nullopt, NodeInput{test::random_tensor({3, 5}, 3)}};
  try {
    runtime::plan_node(test::device().capabilities(), mm, in);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not broadcast with the output [4, 5]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace wgi
