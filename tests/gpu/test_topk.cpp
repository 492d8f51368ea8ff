// TopK on the GPU against a stable-sort reference (exact values and indices): largest and smallest, K from 1
// to the whole row, 50k-wide rows, ties (lower index first), NaN, inner axes with batch dims, int64 / int32
// values, the opset-1 attribute form, and the errors. K <= 16 runs the selection kernel (in one chunk or with
// the chunks' merge), larger K the sort: both on the same cases around their boundary.
#include <gtest/gtest.h>

#include <cmath>
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

TEST(TopK, SelectionAndSortAgreeAroundTheirBoundary) {
  // Row lengths around the selection's chunks (512 positions on a compatibility device, 1024 on others) and
  // shorter than K's candidates in the last chunk; K 16 selects, 17 sorts.
  for (int64_t len : {int64_t{17}, int64_t{511}, int64_t{512}, int64_t{1025}, int64_t{3001}}) {
    for (DType dtype : {DType::Float32, DType::Int64, DType::Int32}) {
      for (bool largest : {true, false}) {
        for (int64_t k : {int64_t{1}, int64_t{16}, int64_t{17}}) {
          SCOPED_TRACE("len " + std::to_string(len) + " k " + std::to_string(k) + " " +
                       std::string(dtype_name(dtype)) + (largest ? " largest" : " smallest"));
          expect_topk(with_ties(dtype, {3, len}, 51, 40), k, -1, largest);
        }
      }
    }
  }
}

TEST(TopK, SelectionOverInnerAxesAcrossChunks) {
  // Axis 1 of [2, 1500, 3]: strided rows, each spanning chunks.
  expect_topk(with_ties(DType::Float32, {2, 1500, 3}, 53, 100), 7, 1, true);
  expect_topk(with_ties(DType::Int64, {2, 1500, 3}, 55, 100), 16, 1, false);
}

TEST(TopK, SelectionKeepsSignedZerosAsEqualAndNaNOrder) {
  // Zeros of both signs (seeded) with a few numbers above and below them: the 16 best reach into the zeros,
  // which tie (lower index first, each written with its own sign); NaN spread over several chunks.
  Tensor signs = test::random_ints(DType::Int32, {2, 2500}, 57, 0, 2);
  Tensor x(DType::Float32, {2, 2500});
  for (size_t i = 0; i < static_cast<size_t>(x.element_count()); ++i)
    x.data<float>()[i] = signs.data<int32_t>()[i] == 1 ? -0.0f : 0.0f;
  for (size_t i : {size_t{3}, size_t{1200}, size_t{2400}, size_t{3700}}) x.data<float>()[i] = 1.5f;
  for (size_t i : {size_t{8}, size_t{1300}, size_t{4800}}) x.data<float>()[i] = -2.0f;
  for (size_t i : {size_t{1800}, size_t{4999}}) x.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  size_t negative_zeros = 0;
  for (size_t i = 0; i < 40; ++i) negative_zeros += std::signbit(x.data<float>()[i]) ? 1 : 0;
  ASSERT_GT(negative_zeros, 5u);  // both signs among the first zeros
  ASSERT_LT(negative_zeros, 35u);
  for (bool largest : {true, false}) {
    SCOPED_TRACE(largest ? "largest" : "smallest");
    expect_topk(x, 16, -1, largest);
  }
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
