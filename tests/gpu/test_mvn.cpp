// MeanVarianceNormalization on the GPU against ONNX's function body in float64: the default axes [0, 2, 3],
// the last axis, all axes, interleaved kept and reduced axes, groups larger than a workgroup, and the errors.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/reference_mvn.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::NodeInputs;

TEST(MeanVarianceNormalization, MatchesFloat64FunctionBody) {
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;  // empty: the default [0, 2, 3]
  };
  for (const Case& c : {Case{{2, 3, 5, 7}, {}}, Case{{3, 4, 1031}, {-1}}, Case{{2, 3, 4}, {0, 1, 2}},
                        Case{{4, 3, 5, 6, 2}, {1, 3}}, Case{{5, 2, 9, 9}, {0, 2, 3}}}) {
    SCOPED_TRACE(shape_to_string(c.shape));
    const Tensor x = test::random_tensor(c.shape, 61 + c.shape.size());
    ops::NodeInfo node = test::make_node("MeanVarianceNormalization", 13);
    if (!c.axes.empty()) node.attributes.set("axes", c.axes);
    const auto ref = test::mvn_reference(x, c.axes.empty() ? std::vector<int64_t>{0, 2, 3} : c.axes);
    const auto out = runtime::run_node(test::device(), node, NodeInputs{NodeInput{x}});
    // float32 mean and variance of up to ~4000 values in [-1, 1): errors of a few 1e-7 relative to the std
    // (about 0.58), so 1e-5 (1 + |y|) leaves a wide margin while catching any wrong grouping.
    EXPECT_TRUE(test::all_close(out[0], c.shape, ref, [](double r) { return 1e-5 * (1 + std::abs(r)); }));
  }
}

TEST(MeanVarianceNormalization, ErrorsNameTheProblem) {
  ops::NodeInfo node = test::make_node("MeanVarianceNormalization", 13);
  node.attributes.set("axes", std::vector<int64_t>{1, -2});
  const std::string twice = test::node_error(node, NodeInputs{NodeInput{test::random_tensor({2, 3, 4}, 1)}});
  EXPECT_NE(twice.find("twice"), std::string::npos) << twice;
  const std::string ints = test::node_error(test::make_node("MeanVarianceNormalization", 13),
                                            NodeInputs{NodeInput{test::ints({1, 2, 3, 4})}});
  EXPECT_NE(ints.find("float32 only"), std::string::npos) << ints;
}

}  // namespace
}  // namespace wgi
