// IsNaN and IsInf on the GPU against std::isnan / std::isinf over every class of float32 value (quiet and
// signalling NaNs of both signs, infinities, extremes, subnormals, zeros, seeded ordinary values), in
// odd-sized batched tensors, with each IsInf direction.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::NodeInputs;

Tensor special_values(const Shape& shape) {
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            std::bit_cast<float>(0x7f800001u),
                            std::bit_cast<float>(0xff812345u),
                            inf,
                            -inf,
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(),
                            0.0f,
                            -0.0f,
                            1e-38f};
  Tensor t = test::random_tensor(shape, 77, -10, 10);
  auto v = t.data<float>();
  for (size_t i = 0; i < v.size(); i += 3) v[i] = specials[(i / 3) % std::size(specials)];
  return t;
}

Tensor bools(const Tensor& x, bool (*predicate)(float)) {
  Tensor y(DType::Bool, x.shape());
  for (int64_t i = 0; i < x.element_count(); ++i) {
    y.bytes()[static_cast<size_t>(i)] = std::byte{predicate(x.data<float>()[static_cast<size_t>(i)])};
  }
  return y;
}

TEST(FloatClass, IsNaNAndIsInfMatchTheStandardLibrary) {
  for (const Shape& shape : {Shape{12}, Shape{2, 3, 37}, Shape{5, 1031}}) {
    const Tensor x = special_values(shape);
    ops::NodeInfo is_nan = test::make_node("IsNaN", 13);
    EXPECT_TRUE(test::identical(runtime::run_node(test::device(), is_nan, NodeInputs{NodeInput{x}})[0],
                                bools(x, [](float v) { return std::isnan(v); })));
    struct Direction {
      int64_t negative, positive;
      bool (*predicate)(float);
    };
    for (const Direction& d : {Direction{1, 1, [](float v) { return std::isinf(v); }},
                               Direction{1, 0, [](float v) { return std::isinf(v) && v < 0; }},
                               Direction{0, 1, [](float v) { return std::isinf(v) && v > 0; }},
                               Direction{0, 0, [](float) { return false; }}}) {
      ops::NodeInfo is_inf = test::make_node("IsInf", 10);
      is_inf.attributes.set("detect_negative", d.negative);
      is_inf.attributes.set("detect_positive", d.positive);
      EXPECT_TRUE(test::identical(runtime::run_node(test::device(), is_inf, NodeInputs{NodeInput{x}})[0],
                                  bools(x, d.predicate)))
          << shape_to_string(shape) << " negative " << d.negative << " positive " << d.positive;
    }
  }
  const std::string error =
      test::node_error(test::make_node("IsNaN", 13), NodeInputs{NodeInput{test::ints({1})}});
  EXPECT_NE(error.find("float32 only"), std::string::npos) << error;
}

}  // namespace
}  // namespace wgi
