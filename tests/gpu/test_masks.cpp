// Trilu on the GPU against the per-element reference (exact): upper and lower, k known when planned or read
// at run time (positive, negative, past the matrix), batch dims, unaligned matrices, every device element
// type the op moves, and the errors a model can cause.
#include <gtest/gtest.h>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/reference_masks.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::make_node;
using test::NodeInputs;

std::vector<Tensor> run(const ops::NodeInfo& node, const NodeInputs& inputs) {
  return runtime::run_node(test::device(), node, inputs);
}

TEST(MasksTrilu, MatchesReferenceForShapesKAndDirections) {
  for (const Shape& shape : {Shape{5, 7}, Shape{3, 4, 9}, Shape{2, 3, 33, 17}, Shape{1, 64}, Shape{70, 3}}) {
    const int64_t rows = shape[shape.size() - 2], cols = shape.back();
    for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{-2}, int64_t{5}, cols + 3, -rows - 4}) {
      for (bool upper : {true, false}) {
        for (DType dtype : {DType::Float32, DType::Int64, DType::Bool}) {
          SCOPED_TRACE(shape_to_string(shape) + " k=" + std::to_string(k) + (upper ? " upper " : " lower ") +
                       std::string(dtype_name(dtype)));
          Tensor x = dtype == DType::Bool
                         ? test::iota_tensor(dtype, shape)
                         : test::random_ints(dtype, shape, 100 + static_cast<uint64_t>(cols), 1, 1000);
          ops::NodeInfo node = make_node("Trilu", 14);
          node.attributes.set("upper", int64_t{upper});
          const Tensor expected = test::trilu_reference(x, k, upper);
          for (bool known : {true, false}) {
            auto out =
                run(node, NodeInputs{NodeInput{x}, NodeInput{Tensor::from_vector<int64_t>({}, {k}), known}});
            ASSERT_EQ(out.size(), 1u);
            EXPECT_TRUE(test::identical(out[0], expected)) << (known ? "k known" : "k at run time");
          }
        }
      }
    }
  }
}

TEST(MasksTrilu, AbsentKIsZeroAndUpperIsTheDefault) {
  Tensor x = test::random_ints(DType::Float32, {2, 6, 5}, 7);
  auto out = run(make_node("Trilu", 14), NodeInputs{NodeInput{x}});
  EXPECT_TRUE(test::identical(out[0], test::trilu_reference(x, 0, true)));
}

TEST(MasksTrilu, ManyMatricesFoldTheGrid) {
  // More workgroups than a small maxComputeWorkgroupsPerDimension: the grid folds into 2-D.
  Tensor x = test::random_ints(DType::Float32, {37, 19, 23}, 9);
  ops::NodeInfo node = make_node("Trilu", 14);
  node.attributes.set("upper", int64_t{0});
  gpu::Capabilities caps = test::device().capabilities();
  caps.limits.max_compute_workgroups_per_dimension = 8;
  runtime::NodeRunOptions options;
  options.capabilities = caps;
  auto out = runtime::run_node(
      test::device(), node, NodeInputs{NodeInput{x}, NodeInput{Tensor::from_vector<int64_t>({}, {-1}), true}},
      options);
  EXPECT_TRUE(test::identical(out[0], test::trilu_reference(x, -1, false)));
}

TEST(MasksTrilu, ErrorsNameTheProblem) {
  const std::string rank1 =
      test::node_error(make_node("Trilu", 14), NodeInputs{NodeInput{test::ints({1, 2, 3})}});
  EXPECT_NE(rank1.find("rank >= 2"), std::string::npos) << rank1;
  Tensor x = test::random_ints(DType::Float32, {3, 3}, 1);
  const std::string bad_k =
      test::node_error(make_node("Trilu", 14), NodeInputs{NodeInput{x}, NodeInput{test::ints({1, 2}), true}});
  EXPECT_NE(bad_k.find("single value"), std::string::npos) << bad_k;
  ops::NodeInfo node = make_node("Trilu", 14);
  node.attributes.set("upper", int64_t{2});
  const std::string bad_upper = test::node_error(node, NodeInputs{NodeInput{x}});
  EXPECT_NE(bad_upper.find("'upper'"), std::string::npos) << bad_upper;
}

}  // namespace
}  // namespace wgi
