// wgi's DepthwiseConvChannelsLast (src/ops/conv_channels_last.h) against a float64 reference written directly
// over [B, H, W, C]: batch 1 and 2, 4, 8 and 132 channels (vec4) and 3, 6 and 5 (scalar), images from 1x1 to
// 17x9, kernels 3x3, 5x5 and 7x7 with pads k / 2 and others (even, asymmetric, strided), bias or none,
// residual or none, fused activations, the Reshape targets given as inputs instead of height / width, a
// folded dispatch grid, and the plan's errors. The model-level check (DaViT's ConvPosEnc fused and matching
// its reference) is tests/gpu/test_models.cpp with tests/unit/test_passes.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ops/fused_activation.h"
#include "ops/registry.h"
#include "runtime/node_runner.h"
#include "support/reference_elementwise.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;
using Ints = std::vector<int64_t>;

struct ChannelsLastCase {
  std::string name;
  int64_t batch = 1, height = 5, width = 7, channels = 8;
  int64_t kh = 3, kw = 3;
  Ints pads = {};  // [top, left, bottom, right]; empty: k / 2 on every side
  Ints strides = {1, 1};
  bool bias = true;
  bool residual = false;
  std::string activation = {};   // "", "Relu", "Clip" ([-0.25, 0.5]), "Gelu", "GeluTanh"
  bool reshape_targets = false;  // H and W from the Reshape targets (inputs 4 and 5), not the attributes
  uint32_t max_workgroups_per_dimension = 0;  // plan with this limit (folds the grid); 0: the device's
};

void PrintTo(const ChannelsLastCase& c, std::ostream* os) {
  *os << c.name;
}

uint64_t seed_of(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char ch : name) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

Ints pads_of(const ChannelsLastCase& c) {
  return c.pads.empty() ? Ints{c.kh / 2, c.kw / 2, c.kh / 2, c.kw / 2} : c.pads;
}

int64_t out_h_of(const ChannelsLastCase& c) {
  const Ints p = pads_of(c);
  return (c.height + p[0] + p[2] - c.kh) / c.strides[0] + 1;
}

int64_t out_w_of(const ChannelsLastCase& c) {
  const Ints p = pads_of(c);
  return (c.width + p[1] + p[3] - c.kw) / c.strides[1] + 1;
}

// out[b, oh, ow, c] = act(bias[c] + sum_{i, j} x[b, oh * sh + i - top, ow * sw + j - left, c] * w[c, 0, i,
// j])
//                     + r[b, oh * Wo + ow, c], zeros outside the image; x [B, H * W, C], w [C, 1, KH, KW].
std::vector<double> reference(const ChannelsLastCase& c, const Tensor& x, const Tensor& w, const Tensor* bias,
                              const Tensor* residual, double lo, double hi) {
  const Ints p = pads_of(c);
  const int64_t oh_n = out_h_of(c), ow_n = out_w_of(c), C = c.channels;
  auto xv = x.data<float>();
  auto wv = w.data<float>();
  std::vector<double> out(static_cast<size_t>(c.batch * oh_n * ow_n * C));
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        for (int64_t ch = 0; ch < C; ++ch) {
          double acc = bias ? bias->data<float>()[ch] : 0.0;
          for (int64_t i = 0; i < c.kh; ++i) {
            const int64_t ih = oh * c.strides[0] + i - p[0];
            if (ih < 0 || ih >= c.height) continue;
            for (int64_t j = 0; j < c.kw; ++j) {
              const int64_t iw = ow * c.strides[1] + j - p[1];
              if (iw < 0 || iw >= c.width) continue;
              acc += static_cast<double>(xv[((b * c.height + ih) * c.width + iw) * C + ch]) *
                     wv[(ch * c.kh + i) * c.kw + j];
            }
          }
          const int64_t at = ((b * oh_n + oh) * ow_n + ow) * C + ch;
          double v = test::fused_activation_reference(c.activation, acc, lo, hi);
          if (residual) v += residual->data<float>()[at];
          out[static_cast<size_t>(at)] = v;
        }
      }
    }
  }
  return out;
}

ops::NodeInfo node_of(const ChannelsLastCase& c) {
  ops::NodeInfo node{"pos_enc_" + c.name, "DepthwiseConvChannelsLast", "wgi", 1, {}, {}, {}};
  node.attributes.set("kernel_shape", Ints{c.kh, c.kw});
  node.attributes.set("pads", pads_of(c));
  node.attributes.set("strides", c.strides);
  if (!c.reshape_targets) {
    node.attributes.set("height", c.height);
    node.attributes.set("width", c.width);
  }
  return node;
}

Tensor ints(const Ints& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

class ChannelsLastTest : public ::testing::TestWithParam<ChannelsLastCase> {};

TEST_P(ChannelsLastTest, MatchesFloat64Reference) {
  const ChannelsLastCase& c = GetParam();
  const uint64_t seed = seed_of(c.name);
  const int64_t out_pixels = out_h_of(c) * out_w_of(c);
  Tensor x = test::random_tensor({c.batch, c.height * c.width, c.channels}, seed);
  Tensor w = test::random_tensor({c.channels, 1, c.kh, c.kw}, seed + 1);
  Tensor b = test::random_tensor({c.channels}, seed + 2);
  Tensor r = test::random_tensor({c.batch, out_pixels, c.channels}, seed + 3);

  ops::NodeInfo node = node_of(c);
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  if (!c.activation.empty()) {
    node.attributes.set(ops::kFusedActivationAttribute, c.activation);
    if (c.activation == "Relu") lo = 0;
    if (c.activation == "Clip") {
      node.attributes.set(ops::kFusedActivationMinAttribute, -0.25f);
      node.attributes.set(ops::kFusedActivationMaxAttribute, 0.5f);
      lo = -0.25;
      hi = 0.5;
    }
  }
  Inputs inputs = {NodeInput{x}, NodeInput{w, true}};
  inputs.push_back(c.bias ? std::optional<NodeInput>(NodeInput{b, true}) : std::nullopt);
  inputs.push_back(c.residual ? std::optional<NodeInput>(NodeInput{r}) : std::nullopt);
  if (c.reshape_targets) {
    // As exports write them: the batch copied (0), the token count inferred (-1).
    inputs.push_back(NodeInput{ints({0, c.channels, c.height, c.width}), true});
    inputs.push_back(NodeInput{ints({c.batch, 0, -1}), true});
  }
  runtime::NodeRunOptions options;
  options.capabilities = test::device().capabilities();
  if (c.max_workgroups_per_dimension)
    options.capabilities->limits.max_compute_workgroups_per_dimension = c.max_workgroups_per_dimension;

  ops::OpPlan plan = runtime::plan_node(*options.capabilities, node, inputs);
  ASSERT_EQ(plan.launches.size(), 1u);
  const std::string& label = plan.launches[0].program.label;
  const std::string expected_prefix = std::string("conv_depthwise_channels_last") +
                                      (c.channels % 4 == 0 ? "_v4" : "") + "_k" + std::to_string(c.kh) + "x" +
                                      std::to_string(c.kw);
  EXPECT_EQ(label.rfind(expected_prefix, 0), 0u) << label;
  if (c.max_workgroups_per_dimension) {
    EXPECT_GT(plan.launches[0].groups.y, 1u) << "the grid should be folded";
  }

  std::vector<Tensor> out = runtime::run_node(test::device(), node, inputs, options);
  ASSERT_EQ(out.size(), 1u);
  const std::vector<double> ref =
      reference(c, x, w, c.bias ? &b : nullptr, c.residual ? &r : nullptr, lo, hi);
  EXPECT_TRUE(
      test::all_close(out[0], {c.batch, out_pixels, c.channels}, ref, test::fp32_tolerance(c.kh * c.kw + 2)));
}

std::vector<ChannelsLastCase> channels_last_cases() {
  std::vector<ChannelsLastCase> cases;
  // Every batch x channels x image x kernel (pads k / 2); bias and residual take turns.
  int i = 0;
  for (int64_t batch : {1, 2}) {
    for (int64_t channels : {4, 8, 132}) {
      for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {5, 7}, {12, 12}, {17, 9}}) {
        for (int64_t k : {3, 5, 7}) {
          ChannelsLastCase c;
          c.batch = batch;
          c.channels = channels;
          c.height = h;
          c.width = w;
          c.kh = c.kw = k;
          c.bias = i % 2 == 0;
          c.residual = (i / 2) % 2 == 0;
          c.name = "b" + std::to_string(batch) + "_c" + std::to_string(channels) + "_" + std::to_string(h) +
                   "x" + std::to_string(w) + "_k" + std::to_string(k) + (c.bias ? "_bias" : "") +
                   (c.residual ? "_residual" : "");
          cases.push_back(c);
          ++i;
        }
      }
    }
  }
  // C % 4 != 0: one channel per invocation.
  cases.push_back({.name = "scalar_c3", .channels = 3, .residual = true});
  cases.push_back(
      {.name = "scalar_c6_b2_k5", .batch = 2, .height = 9, .width = 6, .channels = 6, .kh = 5, .kw = 5});
  cases.push_back({.name = "scalar_c5_1x1",
                   .height = 1,
                   .width = 1,
                   .channels = 5,
                   .kh = 7,
                   .kw = 7,
                   .bias = false,
                   .residual = true});
  // Other geometries: even and rectangular kernels, asymmetric and no padding, strides, a 1x1 kernel.
  cases.push_back(
      {.name = "k2x4_asymmetric_pads", .height = 6, .width = 9, .kh = 2, .kw = 4, .pads = {0, 2, 1, 1}});
  cases.push_back({.name = "k3x3_no_pad", .height = 8, .width = 10, .pads = {0, 0, 0, 0}});
  cases.push_back({.name = "k1x1", .height = 4, .width = 5, .kh = 1, .kw = 1, .residual = true});
  cases.push_back({.name = "stride2", .height = 12, .width = 13, .channels = 12, .strides = {2, 2}});
  cases.push_back({.name = "stride2x1_k5_scalar",
                   .height = 11,
                   .width = 9,
                   .channels = 7,
                   .kh = 5,
                   .kw = 5,
                   .strides = {2, 1}});
  cases.push_back(
      {.name = "stride3_large_pads", .height = 7, .width = 8, .pads = {3, 2, 1, 4}, .strides = {3, 3}});
  // Fused activations, applied before the residual.
  for (const char* act : {"Relu", "Clip", "Gelu", "GeluTanh"}) {
    cases.push_back({.name = std::string("activation_") + act,
                     .height = 6,
                     .width = 6,
                     .channels = 12,
                     .residual = true,
                     .activation = act});
  }
  cases.push_back({.name = "activation_scalar_relu", .channels = 5, .residual = true, .activation = "Relu"});
  // H and W from the Reshape targets, as the graph pass passes them.
  cases.push_back({.name = "reshape_targets",
                   .batch = 2,
                   .height = 4,
                   .width = 9,
                   .channels = 16,
                   .residual = true,
                   .reshape_targets = true});
  // A grid folded into 2-D: 2 x 12 x 3 x 33 invocations in workgroups of 64 with at most 8 per dimension.
  cases.push_back({.name = "folded_grid",
                   .batch = 2,
                   .height = 12,
                   .width = 12,
                   .channels = 132,
                   .residual = true,
                   .max_workgroups_per_dimension = 8});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(ChannelsLast, ChannelsLastTest, ::testing::ValuesIn(channels_last_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

// What the plan refuses, naming the input and the shape it expected.
TEST(ChannelsLastPlan, FailsCleanly) {
  const gpu::Capabilities caps = test::device().capabilities();
  const ChannelsLastCase c{.name = "errors", .height = 3, .width = 4, .channels = 8};
  const Tensor x = test::random_tensor({1, 12, 8}, 1);
  const Tensor w = test::random_tensor({8, 1, 3, 3}, 2);
  auto expect_failure = [&](ops::NodeInfo node, Inputs inputs, const std::string& message) {
    try {
      runtime::plan_node(caps, node, inputs);
      ADD_FAILURE() << "expected: " << message;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  const ops::NodeInfo node = node_of(c);
  expect_failure(node, {NodeInput{x}, NodeInput{w, false}}, "the weight must be a constant");
  expect_failure(node, {NodeInput{x}, NodeInput{test::random_tensor({4, 1, 3, 3}, 2), true}},
                 "expected float32 [8, 1, KH, KW]");
  expect_failure(node, {NodeInput{test::random_tensor({1, 13, 8}, 1)}, NodeInput{w, true}},
                 "height 3 x width 4 is not X's token count 13");
  expect_failure(node, {NodeInput{test::random_tensor({12, 8}, 1)}, NodeInput{w, true}},
                 "expected [B, N, C]");
  expect_failure(
      node, {NodeInput{x}, NodeInput{w, true}, std::nullopt, NodeInput{test::random_tensor({1, 12, 4}, 3)}},
      "expected float32 [1, 12, 8]");
  expect_failure(node, {NodeInput{x}, NodeInput{w, true}, NodeInput{test::random_tensor({8}, 3), false}},
                 "it must be a constant");
  expect_failure(node, {NodeInput{x}, NodeInput{test::random_tensor({8, 1, 9, 9}, 2), true}},
                 "outside 1x1 to 7x7");
  // Reshape targets that do not give [B, C, H, W] and [B, C, Ho * Wo].
  ChannelsLastCase t = c;
  t.reshape_targets = true;
  expect_failure(node_of(t),
                 {NodeInput{x}, NodeInput{w, true}, std::nullopt, std::nullopt,
                  NodeInput{ints({1, 3, 8, 4}), true}, NodeInput{ints({1, 8, 12}), true}},
                 "does not take [B, C, N] [1, 8, 12] to [1, 8, H, W]");
  expect_failure(node_of(t),
                 {NodeInput{x}, NodeInput{w, true}, std::nullopt, std::nullopt,
                  NodeInput{ints({1, 8, 3, 4}), true}, NodeInput{ints({1, 12, 8}), true}},
                 "to [1, 8, 12]");
  expect_failure(node_of(t), {NodeInput{x}, NodeInput{w, true}}, "needs the height and width attributes");
}

}  // namespace
}  // namespace wgi
