// Elementwise unary ops against float64 references: vec4 and scalar paths, odd sizes, batch dims.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/node_runner.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;

struct UnaryCase {
  const char* op;
  double (*reference)(double);
};

class UnaryOpTest : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryOpTest, MatchesFloat64Reference) {
  const UnaryCase& c = GetParam();
  for (const Shape& shape : {Shape{1}, Shape{3}, Shape{4}, Shape{2, 3, 5}, Shape{4, 64}, Shape{3, 1031}}) {
    Tensor x = test::random_tensor(shape, 42 + shape.size(), -6.0f, 6.0f);
    ops::NodeInfo node{"n", c.op, "", 13, {}, {}, {}};
    std::vector<std::optional<NodeInput>> inputs = {NodeInput{x}};
    auto out = runtime::run_node(test::device(), node, inputs);
    ASSERT_EQ(out.size(), 1u);
    std::vector<double> ref;
    for (float v : x.data<float>()) ref.push_back(c.reference(v));
    EXPECT_TRUE(test::all_close(out[0], shape, ref, [](double r) { return 2e-6 * (1 + std::abs(r)); }))
        << c.op << " " << shape_to_string(shape);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryOpTest,
                         ::testing::Values(UnaryCase{"Relu", [](double x) { return x > 0 ? x : 0.0; }},
                                           UnaryCase{"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }}),
                         [](const auto& param_info) { return std::string(param_info.param.op); });

TEST(UnaryOp, RejectsUnsupportedTypesNamingTheNode) {
  ops::NodeInfo node{"act7", "Relu", "", 14, {}, {}, {}};
  std::vector<std::optional<NodeInput>> inputs = {NodeInput{Tensor(DType::Int32, {4})}};
  try {
    runtime::run_node(test::device(), node, inputs);
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'act7'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace wgi
