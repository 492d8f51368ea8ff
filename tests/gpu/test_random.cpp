// The seeded random ops on the GPU. Their values come from wgi's own generator (kernels/random/random.wgsl),
// so nothing can be compared value by value (ONNX's node tests cannot either); these tests check what the
// definitions promise: the range, the distribution's mean and spread within 5 sigma of a few thousand draws,
// Bernoulli's frequencies (exact for p = 0 and 1), that a seed gives the same tensor every run and another
// seed another tensor, and the errors (an unseeded node is refused).
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::NodeInputs;

struct Moments {
  double mean = 0, variance = 0;
};

Moments moments(std::span<const float> v) {
  Moments m;
  for (float x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (float x : v) m.variance += (x - m.mean) * (x - m.mean);
  m.variance /= static_cast<double>(v.size() - 1);
  return m;
}

ops::NodeInfo seeded(const std::string& op, float seed) {
  ops::NodeInfo node = test::make_node(op, 15);
  node.attributes.set("seed", seed);
  return node;
}

TEST(RandomOps, UniformLikeRangeMomentsAndSeeds) {
  const Tensor like = test::random_tensor({3, 1001}, 1);  // only its shape matters
  ops::NodeInfo node = seeded("RandomUniformLike", 7.0f);
  node.attributes.set("low", -2.0f);
  node.attributes.set("high", 3.0f);
  const auto first = runtime::run_node(test::device(), node, NodeInputs{NodeInput{like}});
  ASSERT_EQ(first[0].shape(), like.shape());
  auto v = first[0].data<float>();
  for (float x : v) ASSERT_TRUE(x >= -2.0f && x < 3.0f) << x;
  const Moments m = moments(v);
  const double n = static_cast<double>(v.size());
  // Uniform on [-2, 3): mean 0.5, variance 25 / 12; the sample variance's sigma is ~sqrt(0.8 / n) * variance.
  EXPECT_NEAR(m.mean, 0.5, 5 * std::sqrt(25.0 / 12 / n));
  EXPECT_NEAR(m.variance, 25.0 / 12, 5 * std::sqrt(0.8 / n) * 25.0 / 12);
  const auto again = runtime::run_node(test::device(), node, NodeInputs{NodeInput{like}});
  EXPECT_TRUE(test::identical(again[0], first[0])) << "a seed must give the same tensor every run";
  ops::NodeInfo other = node;
  other.attributes.set("seed", 8.0f);
  const auto different = runtime::run_node(test::device(), other, NodeInputs{NodeInput{like}});
  size_t same = 0;
  for (size_t i = 0; i < v.size(); ++i) same += different[0].data<float>()[i] == v[i];
  EXPECT_LT(same, v.size() / 100) << "another seed should draw other values";
}

TEST(RandomOps, NormalMoments) {
  ops::NodeInfo node = seeded("RandomNormal", 3.0f);
  node.attributes.set("shape", std::vector<int64_t>{2, 2503});
  node.attributes.set("mean", 1.5f);
  node.attributes.set("scale", 0.5f);
  const auto out = runtime::run_node(test::device(), node, NodeInputs{});
  ASSERT_EQ(out[0].shape(), (Shape{2, 2503}));
  const Moments m = moments(out[0].data<float>());
  const double n = 2 * 2503;
  // A normal sample's variance has sigma sqrt(2 / n) * variance.
  EXPECT_NEAR(m.mean, 1.5, 5 * 0.5 / std::sqrt(n));
  EXPECT_NEAR(m.variance, 0.25, 5 * std::sqrt(2 / n) * 0.25);
  size_t within_one_sigma = 0;
  for (float x : out[0].data<float>()) within_one_sigma += std::abs(x - 1.5) < 0.5;
  // 68.27% of a normal lies within one sigma; binomial sigma of that fraction ~ 0.0066 here.
  EXPECT_NEAR(static_cast<double>(within_one_sigma) / n, 0.6827, 5 * 0.0066);
}

TEST(RandomOps, BernoulliFrequencies) {
  // Three bands of probabilities: 0, 0.3 and 1, 2000 draws each.
  std::vector<float> p;
  for (float band : {0.0f, 0.3f, 1.0f}) p.insert(p.end(), 2000, band);
  const Tensor probabilities = Tensor::from_vector<float>({3, 2000}, p);
  for (bool as_bool : {true, false}) {
    ops::NodeInfo node = seeded("Bernoulli", 5.0f);
    if (as_bool) node.attributes.set("dtype", int64_t{9});
    const auto out = runtime::run_node(test::device(), node, NodeInputs{NodeInput{probabilities}});
    ASSERT_EQ(out[0].dtype(), as_bool ? DType::Bool : DType::Float32);
    auto value = [&](size_t i) {
      return as_bool ? static_cast<double>(out[0].bytes()[i] != std::byte{0}) : out[0].data<float>()[i];
    };
    double ones[3] = {0, 0, 0};
    for (size_t i = 0; i < p.size(); ++i) {
      const double v = value(i);
      ASSERT_TRUE(v == 0 || v == 1) << v;
      ones[i / 2000] += v;
    }
    EXPECT_EQ(ones[0], 0);
    EXPECT_EQ(ones[2], 2000);
    EXPECT_NEAR(ones[1] / 2000, 0.3, 5 * std::sqrt(0.21 / 2000));
  }
}

TEST(RandomOps, ErrorsNameTheProblem) {
  const Tensor like = test::random_tensor({4}, 1);
  const std::string unseeded =
      test::node_error(test::make_node("RandomUniformLike", 15), NodeInputs{NodeInput{like}});
  EXPECT_NE(unseeded.find("has no 'seed' attribute"), std::string::npos) << unseeded;
  ops::NodeInfo typed = seeded("RandomNormalLike", 1.0f);
  typed.attributes.set("dtype", int64_t{7});
  const std::string type = test::node_error(typed, NodeInputs{NodeInput{like}});
  EXPECT_NE(type.find("'dtype' is 7"), std::string::npos) << type;
  const std::string no_shape = test::node_error(seeded("RandomUniform", 1.0f), NodeInputs{});
  EXPECT_NE(no_shape.find("'shape' is required"), std::string::npos) << no_shape;
}

}  // namespace
}  // namespace wgi
