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

TEST(MasksEyeLike, DiagonalsTypesAndShapes) {
  for (const Shape& shape : {Shape{4, 5}, Shape{7, 3}, Shape{33, 33}, Shape{1, 70}}) {
    for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{-2}, int64_t{40}, int64_t{-40}}) {
      for (int64_t onnx_type : {int64_t{-1}, int64_t{1}, int64_t{7}, int64_t{6}, int64_t{9}, int64_t{2}}) {
        SCOPED_TRACE(shape_to_string(shape) + " k=" + std::to_string(k) + " dtype " +
                     std::to_string(onnx_type));
        ops::NodeInfo node = make_node("EyeLike", 9);
        node.attributes.set("k", k);
        if (onnx_type >= 0) node.attributes.set("dtype", onnx_type);
        const DType dtype = onnx_type == 1   ? DType::Float32
                            : onnx_type == 7 ? DType::Int64
                            : onnx_type == 6 ? DType::Int32
                            : onnx_type == 9 ? DType::Bool
                            : onnx_type == 2 ? DType::UInt8
                                             : DType::Int32;  // the input's type
        auto out = run(node, NodeInputs{NodeInput{test::random_ints(DType::Int32, shape, 3)}});
        EXPECT_TRUE(test::identical(out[0], test::eye_like_reference(shape[0], shape[1], k, dtype)));
      }
    }
  }
  const std::string rank3 = test::node_error(
      make_node("EyeLike", 9), NodeInputs{NodeInput{test::random_ints(DType::Int32, {2, 2, 2}, 3)}});
  EXPECT_NE(rank3.find("rank 2"), std::string::npos) << rank3;
  ops::NodeInfo f64 = make_node("EyeLike", 9);
  f64.attributes.set("dtype", int64_t{11});
  const std::string bad_type =
      test::node_error(f64, NodeInputs{NodeInput{test::random_ints(DType::Int32, {2, 2}, 3)}});
  EXPECT_NE(bad_type.find("data type 11"), std::string::npos) << bad_type;
}

}  // namespace
}  // namespace wgi
