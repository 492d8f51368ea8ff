// TopK on the GPU against a stable-sort reference (exact values and indices): largest and smallest, K from 1
// to the whole row, 50k-wide rows, ties (lower index first), NaN, inner axes with batch dims, int64 / int32
// values, the opset-1 attribute form, and the errors.
#include <gtest/gtest.h>

#include <limits>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/reference_topk.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::make_node;
using test::NodeInputs;

Tensor with_ties(DType dtype, const Shape& shape, uint64_t seed, int64_t levels) {
  Tensor ints = test::random_ints(DType::Int32, shape, seed, -levels, levels);
  if (dtype == DType::Int32) return ints;
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.element_count(); ++i) {
    const int32_t v = ints.data<int32_t>()[static_cast<size_t>(i)];
    if (dtype == DType::Float32) t.data<float>()[static_cast<size_t>(i)] = 0.25f * static_cast<float>(v);
    if (dtype == DType::Int64) t.data<int64_t>()[static_cast<size_t>(i)] = int64_t{v} * 1000;
  }
  return t;
}

void expect_topk(const Tensor& x, int64_t k, int64_t axis, bool largest) {
  ops::NodeInfo node = make_node("TopK", 11, 2);
  node.attributes.set("axis", axis);
  node.attributes.set("largest", int64_t{largest});
  auto out =
      runtime::run_node(test::device(), node, NodeInputs{NodeInput{x}, NodeInput{test::ints({k}), true}});
  auto [values, indices] = test::topk_reference(x, k, axis, largest);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(test::identical(out[0], values)) << "values";
  EXPECT_TRUE(test::identical(out[1], indices)) << "indices";
}

TEST(TopK, MatchesStableSortForShapesKAndDirections) {
  struct Case {
    Shape shape;
    int64_t axis, k;
  };
  for (const Case& c : {Case{{7}, 0, 3}, Case{{3, 100}, -1, 100}, Case{{4, 9, 5}, 1, 4},
                        Case{{2, 33, 3}, 1, 1}, Case{{5, 1031}, 1, 17}, Case{{2, 3, 257}, 2, 256}}) {
    for (DType dtype : {DType::Float32, DType::Int64, DType::Int32}) {
      for (bool largest : {true, false}) {
        SCOPED_TRACE(shape_to_string(c.shape) + " axis " + std::to_string(c.axis) + " k " +
                     std::to_string(c.k) + " " + std::string(dtype_name(dtype)) +
                     (largest ? " largest" : " smallest"));
        expect_topk(with_ties(dtype, c.shape, 41, 20), c.k, c.axis, largest);
      }
    }
  }
}

TEST(TopK, FiftyThousandWideRowsAndLargeK) {
  const Tensor x = with_ties(DType::Float32, {2, 50000}, 43, 30000);
  for (int64_t k : {int64_t{10}, int64_t{50000}}) {
    SCOPED_TRACE("k " + std::to_string(k));
    expect_topk(x, k, -1, true);
  }
  expect_topk(x, 1000, -1, false);
}

TEST(TopK, NaNFirstWhenLargestAndLastWhenSmallest) {
  Tensor x = with_ties(DType::Float32, {3, 20}, 47, 5);
  for (size_t i : {size_t{2}, size_t{9}, size_t{31}, size_t{55}})
    x.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  expect_topk(x, 5, 1, true);
  expect_topk(x, 20, 1, false);
}

TEST(TopK, OpsetOneAttributeAndErrors) {
  const Tensor x = with_ties(DType::Float32, {3, 8}, 49, 6);
  ops::NodeInfo v1 = make_node("TopK", 1, 2);
  v1.attributes.set("k", int64_t{3});
  auto out = runtime::run_node(test::device(), v1, NodeInputs{NodeInput{x}});
  auto [values, indices] = test::topk_reference(x, 3, -1, true);
  EXPECT_TRUE(test::identical(out[0], values));
  EXPECT_TRUE(test::identical(out[1], indices));
  const std::string too_large =
      test::node_error(make_node("TopK", 11, 2), NodeInputs{NodeInput{x}, NodeInput{test::ints({9}), true}});
  EXPECT_NE(too_large.find("expected 0 to the axis' length 8"), std::string::npos) << too_large;
  const std::string runtime_k =
      test::node_error(make_node("TopK", 11, 2), NodeInputs{NodeInput{x}, NodeInput{test::ints({2})}});
  EXPECT_NE(runtime_k.find("K"), std::string::npos) << runtime_k;
}

}  // namespace
}  // namespace wgi
