// MaxUnpool, ReverseSequence and BitShift on the GPU against references written here from the ONNX
// definitions (exact comparisons: they move or shift values without arithmetic), with batch > 1, unaligned
// sizes, indices known at plan time and given at run time, and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::NodeInputs;

TEST(MaxUnpool, ScattersToIndicesOverZeros) {
  struct Case {
    Shape x_shape;
    std::vector<int64_t> kernel, strides, pads;
    Shape out_shape;             // what kernel / strides / pads give
    std::optional<Shape> given;  // the output_shape input
  };
  for (const Case& c :
       {Case{{2, 3, 3, 4}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {2, 3, 6, 8}, std::nullopt},
        Case{{2, 3, 3, 4}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {2, 3, 6, 8}, Shape{2, 3, 7, 9}},
        Case{{3, 2, 5}, {3}, {2}, {1, 0}, {3, 2, 10}, std::nullopt},
        Case{{1, 2, 2, 3, 2}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0, 0, 1, 0}, {1, 2, 4, 5, 4}, std::nullopt}}) {
    SCOPED_TRACE(shape_to_string(c.x_shape) + (c.given ? " output_shape " + shape_to_string(*c.given) : ""));
    const Shape out_shape = c.given ? *c.given : c.out_shape;
    const int64_t unpooled_count = element_count(c.out_shape), in_count = element_count(c.x_shape);
    // Distinct random positions of the unpooled shape (MaxPool's indices are flat over N and C too).
    std::vector<int64_t> positions(static_cast<size_t>(unpooled_count));
    std::iota(positions.begin(), positions.end(), 0);
    std::shuffle(positions.begin(), positions.end(), std::mt19937_64(static_cast<uint64_t>(unpooled_count)));
    positions.resize(static_cast<size_t>(in_count));
    const Tensor x = test::random_tensor(c.x_shape, 31);
    const Tensor indices = Tensor::from_vector<int64_t>(c.x_shape, positions);
    // Each position's coordinates in the unpooled shape are its coordinates in the (larger) output.
    Tensor expected(DType::Float32, out_shape);
    for (size_t k = 0; k < positions.size(); ++k) {
      int64_t rest = positions[k], at = 0, stride = 1;
      for (size_t d = out_shape.size(); d-- > 0;) {
        at += (rest % c.out_shape[d]) * stride;
        rest /= c.out_shape[d];
        stride *= out_shape[d];
      }
      expected.data<float>()[static_cast<size_t>(at)] = x.data<float>()[k];
    }
    ops::NodeInfo node = test::make_node("MaxUnpool", 11);
    node.attributes.set("kernel_shape", c.kernel);
    node.attributes.set("strides", c.strides);
    node.attributes.set("pads", c.pads);
    for (bool known : {false, true}) {
      NodeInputs inputs{NodeInput{x}, NodeInput{indices, known}};
      if (c.given) inputs.push_back(NodeInput{test::ints(*c.given), true});
      const auto out = runtime::run_node(test::device(), node, inputs);
      EXPECT_TRUE(test::identical(out[0], expected)) << (known ? "indices known" : "indices at run time");
    }
  }
}

TEST(MaxUnpool, ErrorsNameTheProblem) {
  const Tensor x = test::random_tensor({1, 1, 2, 2}, 1);
  const Tensor indices = Tensor::from_vector<int64_t>({1, 1, 2, 2}, {0, 3, 9, 16});
  ops::NodeInfo node = test::make_node("MaxUnpool", 11);
  node.attributes.set("kernel_shape", std::vector<int64_t>{2, 2});
  node.attributes.set("strides", std::vector<int64_t>{2, 2});
  const std::string known = test::node_error(node, NodeInputs{NodeInput{x}, NodeInput{indices, true}});
  EXPECT_NE(known.find("has 16 at element 3, outside the unpooled shape [1, 1, 4, 4]"), std::string::npos)
      << known;
  runtime::PreparedNode prepared(test::device(), node, NodeInputs{NodeInput{x}, NodeInput{indices}});
  try {
    prepared.run();
    ADD_FAILURE() << "no error for an index out of range at run time";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(MaxUnpool, opset 11): input 1 holds index 16 at element 3"),
              std::string::npos)
        << e.what();
  }
  const std::string no_kernel =
      test::node_error(test::make_node("MaxUnpool", 11), NodeInputs{NodeInput{x}, NodeInput{indices}});
  EXPECT_NE(no_kernel.find("'kernel_shape' is required"), std::string::npos) << no_kernel;
  const std::string small = test::node_error(
      node, NodeInputs{NodeInput{x}, NodeInput{indices}, NodeInput{test::ints({1, 1, 3, 4}), true}});
  EXPECT_NE(small.find("smaller than the unpooled shape"), std::string::npos) << small;
}

// y[t, b] = x[len[b] - 1 - t, b] for t < len[b], with the time and batch axes either way round.
Tensor reverse_sequence_reference(const Tensor& x, const std::vector<int64_t>& lengths, int64_t time_axis) {
  const Shape& s = x.shape();
  const int64_t steps = s[static_cast<size_t>(time_axis)], batch = s[static_cast<size_t>(1 - time_axis)];
  int64_t inner = 1;
  for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  const size_t size = dtype_size(x.dtype());
  Tensor y(x.dtype(), s);
  auto offset = [&](int64_t t, int64_t b) {
    return static_cast<size_t>(((time_axis == 0 ? t * batch + b : b * steps + t) * inner)) * size;
  };
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t from = t < lengths[static_cast<size_t>(b)] ? lengths[static_cast<size_t>(b)] - 1 - t : t;
      std::copy_n(x.bytes().data() + offset(from, b), static_cast<size_t>(inner) * size,
                  y.bytes().data() + offset(t, b));
    }
  }
  return y;
}

TEST(ReverseSequence, ReversesEachBatchEntrysPrefix) {
  for (int64_t time_axis : {0, 1}) {
    for (DType dtype : {DType::Float32, DType::Int64}) {
      const Shape shape = time_axis == 0 ? Shape{7, 3, 5} : Shape{3, 7, 2, 3};
      const std::vector<int64_t> lengths = {7, 2, 0};
      const Tensor x = test::random_ints(dtype, shape, 41 + static_cast<uint64_t>(time_axis));
      ops::NodeInfo node = test::make_node("ReverseSequence", 10);
      node.attributes.set("time_axis", time_axis);
      node.attributes.set("batch_axis", 1 - time_axis);
      for (bool known : {false, true}) {
        const auto out = runtime::run_node(test::device(), node,
                                           NodeInputs{NodeInput{x}, NodeInput{test::ints(lengths), known}});
        EXPECT_TRUE(test::identical(out[0], reverse_sequence_reference(x, lengths, time_axis)))
            << "time_axis " << time_axis << " " << dtype_name(dtype) << (known ? " lengths known" : "");
      }
    }
  }
}

TEST(ReverseSequence, ErrorsNameTheProblem) {
  const Tensor x = test::random_tensor({4, 2}, 1);
  const std::string known = test::node_error(test::make_node("ReverseSequence", 10),
                                             NodeInputs{NodeInput{x}, NodeInput{test::ints({5, 1}), true}});
  EXPECT_NE(known.find("has 5 at element 0, outside [0, 4]"), std::string::npos) << known;
  runtime::PreparedNode prepared(test::device(), test::make_node("ReverseSequence", 10),
                                 NodeInputs{NodeInput{x}, NodeInput{test::ints({1, 5})}});
  EXPECT_THROW(prepared.run(), Error);
  ops::NodeInfo axes = test::make_node("ReverseSequence", 10);
  axes.attributes.set("time_axis", int64_t{1});
  const std::string bad_axes =
      test::node_error(axes, NodeInputs{NodeInput{x}, NodeInput{test::ints({1, 1})}});
  EXPECT_NE(bad_axes.find("must be 0 and 1, or 1 and 0"), std::string::npos) << bad_axes;
  const std::string lengths = test::node_error(test::make_node("ReverseSequence", 10),
                                               NodeInputs{NodeInput{x}, NodeInput{test::ints({1, 1, 1})}});
  EXPECT_NE(lengths.find("must be [2]"), std::string::npos) << lengths;
}

TEST(BitShift, Uint8BothDirectionsWithBroadcast) {
  // [2, 3, 5] by [5] takes the kernel's scalar path, [3, 8] by [3, 1] its vec4 path with a splat shift.
  for (const auto& [x_shape, shift_shape] :
       {std::pair{Shape{2, 3, 5}, Shape{5}}, std::pair{Shape{3, 8}, Shape{3, 1}}}) {
    const Tensor x = test::random_ints(DType::UInt8, x_shape, 51, 0, 256);
    const Tensor shifts =
        test::random_ints(DType::UInt8, shift_shape, 52, 0, 10);  // 8 and 9 shift everything out
    const int64_t inner = x_shape.back(), shift_inner = shift_shape.back();
    for (const char* direction : {"LEFT", "RIGHT"}) {
      Tensor expected(DType::UInt8, x.shape());
      for (int64_t i = 0; i < x.element_count(); ++i) {
        const int64_t at = shift_inner == 1 ? i / inner % shifts.element_count() : i % inner;
        const unsigned v = x.data<uint8_t>()[static_cast<size_t>(i)],
                       s = shifts.data<uint8_t>()[static_cast<size_t>(at)];
        const unsigned r = s >= 8 ? 0u : std::string(direction) == "LEFT" ? (v << s) & 255u : v >> s;
        expected.data<uint8_t>()[static_cast<size_t>(i)] = static_cast<uint8_t>(r);
      }
      ops::NodeInfo node = test::make_node("BitShift", 11);
      node.attributes.set("direction", std::string(direction));
      SCOPED_TRACE(std::string(direction) + " " + shape_to_string(x_shape));
      test::expect_node_outputs(node, NodeInputs{NodeInput{x}, NodeInput{shifts}}, {expected});
    }
  }
  const Tensor x = test::random_ints(DType::UInt8, {2, 3, 5}, 51, 0, 256);
  const Tensor shifts = test::random_ints(DType::UInt8, {5}, 52, 0, 10);
  ops::NodeInfo up = test::make_node("BitShift", 11);
  up.attributes.set("direction", std::string("UP"));
  const std::string bad = test::node_error(up, NodeInputs{NodeInput{x}, NodeInput{shifts}});
  EXPECT_NE(bad.find("'direction' is 'UP'"), std::string::npos) << bad;
  ops::NodeInfo left = test::make_node("BitShift", 11);
  left.attributes.set("direction", std::string("LEFT"));
  const Tensor wide = test::random_ints(DType::Int32, {3}, 53, 0, 100);
  const std::string type = test::node_error(left, NodeInputs{NodeInput{wide}, NodeInput{wide}});
  EXPECT_NE(type.find("BitShift on uint8 only"), std::string::npos) << type;
}

}  // namespace
}  // namespace wgi
