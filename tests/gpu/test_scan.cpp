// CumSum on the GPU against the serial float64 / int64 definition: every exclusive / reverse combination,
// axes inside and last (negative too), rows shorter than a workgroup and rows of several 1024-element chunks,
// int32 / int64 exactly, many rows (grid folding), and the errors a model can cause.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/reference_scan.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::make_node;
using test::NodeInputs;

ops::NodeInfo cumsum_node(bool exclusive, bool reverse) {
  ops::NodeInfo node = make_node("CumSum", 14);
  node.attributes.set("exclusive", int64_t{exclusive});
  node.attributes.set("reverse", int64_t{reverse});
  return node;
}

// A float32 scan adds each term through at most 4 serial adds, log2(256) = 8 tree levels and one carry per
// 1024-element chunk: the error stays below (12 + chunks) float32 roundings of the sum of magnitudes.
::testing::AssertionResult close_to(const Tensor& got, const test::CumSumReference& ref, int64_t len) {
  const double roundings = 12.0 + static_cast<double>((len + 1023) / 1024);
  size_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < ref.values.size(); ++i) {
    const double g = got.dtype() == DType::Float32 ? got.data<float>()[i]
                     : got.dtype() == DType::Int32 ? got.data<int32_t>()[i]
                                                   : static_cast<double>(got.data<int64_t>()[i]);
    const double tol = got.dtype() == DType::Float32 ? 1e-30 + roundings * 6e-8 * ref.magnitude[i] : 0.0;
    if (!(std::abs(g - ref.values[i]) <= tol)) {
      if (bad++ == 0)
        first << "[" << i << "] got " << g << ", expected " << ref.values[i] << " (tolerance " << tol << ")";
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << ref.values.size() << " elements differ; first " << first.str();
}

TEST(ScanCumSum, MatchesSerialDefinition) {
  struct Case {
    Shape shape;
    int64_t axis;
  };
  for (const Case& c : {Case{{7}, 0}, Case{{5, 1030}, 1}, Case{{4, 9, 6}, 1}, Case{{4, 9, 6}, -3},
                        Case{{3, 5000}, -1}, Case{{2, 3, 2049}, 2}, Case{{2, 1100, 3}, 1}}) {
    const int64_t len =
        c.shape[static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis)];
    for (DType dtype : {DType::Float32, DType::Int32, DType::Int64}) {
      Tensor x = test::random_ints(dtype, c.shape, 5 + static_cast<uint64_t>(len), -1000, 1000);
      for (bool exclusive : {false, true}) {
        for (bool reverse : {false, true}) {
          SCOPED_TRACE(shape_to_string(c.shape) + " axis " + std::to_string(c.axis) + " " +
                       std::string(dtype_name(dtype)) + (exclusive ? " exclusive" : "") +
                       (reverse ? " reverse" : ""));
          auto out = runtime::run_node(
              test::device(), cumsum_node(exclusive, reverse),
              NodeInputs{NodeInput{x},
                         NodeInput{Tensor::from_vector<int32_t>({}, {static_cast<int32_t>(c.axis)}), true}});
          ASSERT_EQ(out[0].shape(), c.shape);
          ASSERT_EQ(out[0].dtype(), dtype);
          EXPECT_TRUE(close_to(out[0], test::cumsum_reference(x, c.axis, exclusive, reverse), len));
        }
      }
    }
  }
}

TEST(ScanCumSum, ManyRowsFoldTheGrid) {
  Tensor x = test::random_tensor({300, 7}, 3);
  gpu::Capabilities caps = test::device().capabilities();
  caps.limits.max_compute_workgroups_per_dimension = 16;
  runtime::NodeRunOptions options;
  options.capabilities = caps;
  auto out = runtime::run_node(
      test::device(), cumsum_node(false, true),
      NodeInputs{NodeInput{x}, NodeInput{Tensor::from_vector<int64_t>({}, {1}), true}}, options);
  EXPECT_TRUE(close_to(out[0], test::cumsum_reference(x, 1, false, true), 7));
}

TEST(ScanCumSum, ErrorsNameTheProblem) {
  Tensor x = test::random_tensor({3, 4}, 1);
  const std::string runtime_axis = test::node_error(
      cumsum_node(false, false), NodeInputs{NodeInput{x}, NodeInput{Tensor::from_vector<int64_t>({}, {1})}});
  EXPECT_NE(runtime_axis.find("axis"), std::string::npos) << runtime_axis;
  const std::string bad_axis =
      test::node_error(cumsum_node(false, false),
                       NodeInputs{NodeInput{x}, NodeInput{Tensor::from_vector<int64_t>({}, {2}), true}});
  EXPECT_NE(bad_axis.find("axis"), std::string::npos) << bad_axis;
  const std::string bad_type = test::node_error(
      cumsum_node(false, false), NodeInputs{NodeInput{Tensor(DType::UInt8, {4})},
                                            NodeInput{Tensor::from_vector<int64_t>({}, {0}), true}});
  EXPECT_NE(bad_type.find("float32, int32 and int64"), std::string::npos) << bad_type;
}

}  // namespace
}  // namespace wgi
