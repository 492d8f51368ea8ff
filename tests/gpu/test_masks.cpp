// Trilu on the GPU against the per-element reference (exact): upper and lower, k known when planned or read
// at run time (positive, negative, past the matrix), batch dims, unaligned matrices, every device element
// type the op moves, and the errors a model can cause.
#include <gtest/gtest.h>

#include <limits>

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

TEST(MasksOneHot, AxesIndexTypesAndOutOfRange) {
  struct Case {
    Shape indices;
    int64_t axis;
    int64_t depth;
  };
  for (const Case& c : {Case{{5}, -1, 7}, Case{{3, 4}, 0, 10}, Case{{3, 4}, 1, 6}, Case{{2, 3, 5}, -1, 33},
                        Case{{2, 3, 5}, 2, 4}}) {
    for (DType index_type : {DType::Int64, DType::Int32, DType::Float32}) {
      for (DType value_type : {DType::Float32, DType::Int64, DType::Bool}) {
        SCOPED_TRACE(shape_to_string(c.indices) + " axis " + std::to_string(c.axis) + " depth " +
                     std::to_string(c.depth) + " " + std::string(dtype_name(index_type)) + " -> " +
                     std::string(dtype_name(value_type)));
        // Indices in [-depth - 2, depth + 2): negative ones and a few out of range (a row of off values).
        const Tensor ints = test::random_ints(DType::Int64, c.indices, 17, -c.depth - 2, c.depth + 2);
        std::vector<int64_t> index_values(ints.data<int64_t>().begin(), ints.data<int64_t>().end());
        Tensor indices(index_type, c.indices);
        for (size_t i = 0; i < index_values.size(); ++i) {
          if (index_type == DType::Int64) indices.data<int64_t>()[i] = index_values[i];
          if (index_type == DType::Int32) indices.data<int32_t>()[i] = static_cast<int32_t>(index_values[i]);
          // Floats with a fraction: ONNX casts them to integers (truncation).
          if (index_type == DType::Float32) {
            indices.data<float>()[i] =
                static_cast<float>(index_values[i]) + (index_values[i] < 0 ? -0.25f : 0.25f);
          }
        }
        const Tensor values = value_type == DType::Bool    ? Tensor::from_vector<uint8_t>({2}, {0, 1})
                              : value_type == DType::Int64 ? Tensor::from_vector<int64_t>({2}, {-3, 9})
                                                           : Tensor::from_vector<float>({2}, {0.5f, -2.25f});
        const Tensor typed_values =
            value_type == DType::Bool ? Tensor(DType::Bool, {2}, values.bytes()) : values;
        ops::NodeInfo node = make_node("OneHot", 11);
        node.attributes.set("axis", c.axis);
        const Tensor expected =
            test::one_hot_reference(c.indices, index_values, c.depth, c.axis, typed_values);
        for (bool values_known : {true, false}) {
          auto out = run(
              node, NodeInputs{NodeInput{indices},
                               NodeInput{Tensor::from_vector<float>({}, {static_cast<float>(c.depth)}), true},
                               NodeInput{typed_values, values_known}});
          EXPECT_TRUE(test::identical(out[0], expected));
        }
      }
    }
  }
  const std::string runtime_depth = test::node_error(
      make_node("OneHot", 11), NodeInputs{NodeInput{test::ints({1})}, NodeInput{test::ints({3})},
                                          NodeInput{Tensor::from_vector<float>({2}, {0, 1})}});
  EXPECT_NE(runtime_depth.find("known when the model is planned"), std::string::npos) << runtime_depth;
}

TEST(MasksHardmax, AxesOpsetsTiesAndNaN) {
  struct Case {
    Shape shape;
    int64_t axis;
    int opset;
  };
  for (const Case& c :
       {Case{{7}, 0, 13}, Case{{3, 300}, -1, 13}, Case{{4, 9, 5}, 1, 13}, Case{{2, 3, 1031}, 2, 13},
        Case{{4, 9, 5}, 1, 11}, Case{{2, 3, 4, 5}, 2, 11}, Case{{2, 3, 4, 5}, -3, 1}}) {
    SCOPED_TRACE(shape_to_string(c.shape) + " axis " + std::to_string(c.axis) + " opset " +
                 std::to_string(c.opset));
    const int64_t rank = static_cast<int64_t>(c.shape.size());
    const size_t axis = static_cast<size_t>(c.axis < 0 ? c.axis + rank : c.axis);
    int64_t len = 1, inner = 1;
    for (size_t d = axis; d < c.shape.size(); ++d) (d == axis || c.opset < 13 ? len : inner) *= c.shape[d];
    // Few distinct values: many ties, which go to the first maximum.
    Tensor x = test::random_ints(DType::Int32, c.shape, 21, -5, 5);
    Tensor xf(DType::Float32, c.shape);
    for (int64_t i = 0; i < x.element_count(); ++i) {
      xf.data<float>()[static_cast<size_t>(i)] =
          static_cast<float>(x.data<int32_t>()[static_cast<size_t>(i)]);
    }
    if (xf.element_count() > 40) xf.data<float>()[37] = std::numeric_limits<float>::quiet_NaN();
    ops::NodeInfo node = make_node("Hardmax", c.opset);
    node.attributes.set("axis", c.axis);
    auto out = run(node, NodeInputs{NodeInput{xf}});
    EXPECT_TRUE(test::identical(out[0], test::hardmax_reference(xf, len, inner)));
  }
}

}  // namespace
}  // namespace wgi
