// Broadcasting elementwise ops (arithmetic, comparison, logic, Where, variadic Sum / Mean / Min / Max) and
// Cast against float64 / exact references: numpy broadcasting of every pattern (equal shapes, scalars, bias
// rows, channels, both sides broadcasting, rank 8), the vec4 and scalar paths, integer semantics (truncating
// division, both Mod conventions, int8 / uint8 wrapping), float16 through float32, host folding of int64
// shape arithmetic (beyond the GPU's 32 bits) agreeing with the GPU, grid folding and the errors a user can
// cause.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "ops/registry.h"
#include "runtime/node_runner.h"
#include "support/reference_elementwise.h"
#include "support/run_node.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;
using test::run_error;

const test::NodeMaker node{"elementwise_under_test"};

std::vector<Tensor> run(const ops::NodeInfo& n, const std::vector<Tensor>& inputs) {
  Inputs in;
  for (const Tensor& t : inputs) in.push_back(NodeInput{t});
  return runtime::run_node(test::device(), n, in);
}

std::vector<Tensor> fold(const ops::NodeInfo& n, const std::vector<const Tensor*>& inputs) {
  ops::PlanContext ctx{n, {}, {}, test::device().capabilities()};
  for (const Tensor* t : inputs) {
    ctx.inputs.push_back(ops::TensorDesc{t->dtype(), t->shape()});
    ctx.constant_inputs.push_back(t);
  }
  const auto* entry = ops::builtin_registry().find("", n.op_type, n.opset);
  EXPECT_TRUE(entry && entry->handler.evaluate_on_host) << n.op_type;
  return entry->handler.evaluate_on_host(ctx, inputs);
}

std::vector<float> floats(const Tensor& t) {
  return {t.data<float>().begin(), t.data<float>().end()};
}

test::Tolerance relative(double rel, double abs = 1e-30) {
  return [rel, abs](double r) { return rel * std::abs(r) + abs; };
}

// Shape pairs covering each broadcast pattern and both kernel widths.
const std::vector<std::pair<Shape, Shape>> kShapePairs = {
    {{2, 3, 4}, {2, 3, 4}},                                // equal, aligned: flat vec4
    {{3, 5, 7}, {3, 5, 7}},                                // equal, unaligned: flat scalar
    {{}, {2, 3, 5}},                                       // scalar
    {{1}, {4, 8}},                                         // one element, vec4 splat
    {{4, 8}, {8}},                                         // bias row
    {{2, 3, 4, 4}, {1, 3, 1, 1}},                          // per channel: vec4 output, scalar-read input
    {{3, 1, 5}, {1, 4, 1}},                                // both sides broadcast
    {{2, 1, 3, 1, 2, 2}, {1, 2, 1, 3, 1, 1}},              // rank 6
    {{2, 1, 2, 1, 2, 1, 2, 1}, {1, 2, 1, 2, 1, 2, 1, 2}},  // 8 dims that cannot merge
    {{0, 3}, {3}},                                         // empty
};

struct ArithmeticCase {
  const char* op;
  std::function<double(double, double)> reference;
  double rel;
  float lo, hi;
};

TEST(ElementwiseBinaryFloat, ArithmeticBroadcastsLikeNumpy) {
  const std::vector<ArithmeticCase> cases = {
      {"Add", [](double a, double b) { return a + b; }, 1.2e-7, -4, 4},
      {"Sub", [](double a, double b) { return a - b; }, 1.2e-7, -4, 4},
      {"Mul", [](double a, double b) { return a * b; }, 1.2e-7, -4, 4},
      {"Div", [](double a, double b) { return a / b; }, 3e-7, 0.5f, 4},
      {"Pow", [](double a, double b) { return std::pow(a, b); }, 2e-6, 0.1f, 3},
      {"Min", [](double a, double b) { return std::min(a, b); }, 0, -4, 4},
      {"Max", [](double a, double b) { return std::max(a, b); }, 0, -4, 4},
  };
  for (const ArithmeticCase& c : cases) {
    for (const auto& [sa, sb] : kShapePairs) {
      for (bool swapped : {false, true}) {
        Tensor a = test::random_tensor(swapped ? sb : sa, 11 + sa.size(), c.lo, c.hi);
        Tensor b = test::random_tensor(swapped ? sa : sb, 23 + sb.size(), c.lo, c.hi);
        auto out = run(node(c.op), {a, b});
        auto ref = test::broadcast_reference(
            {&a, &b}, [&](const std::vector<double>& v) { return c.reference(v[0], v[1]); });
        EXPECT_TRUE(
            test::all_close(out.at(0), test::broadcast_shape({a.shape(), b.shape()}), ref, relative(c.rel)))
            << c.op << " " << shape_to_string(a.shape()) << " with " << shape_to_string(b.shape());
      }
    }
  }
}

// numpy's power: negative bases with integer exponents, 0^0, exact small integer powers, NaN otherwise.
TEST(ElementwiseBinaryFloat, PowSpecialCases) {
  Tensor a = Tensor::from_vector<float>({10}, {-2, -2, -3, 0, 0, 0, 3, -2, 1.5f, 7});
  Tensor b = Tensor::from_vector<float>({10}, {3, 2, 0, 0, 2, -1, 5, 0.5f, -2, 2});
  auto out = run(node("Pow", 15), {a, b});
  const std::vector<float> expected = {-8, 4, 1, 1, 0, INFINITY, 243, NAN, 1 / 2.25f, 49};
  for (size_t i = 0; i < expected.size(); ++i) {
    const float got = out[0].data<float>()[i];
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got)) << i;
    } else {
      EXPECT_FLOAT_EQ(got, expected[i]) << i;
    }
  }
}

TEST(ElementwiseBinaryFloat, PReluSlopeBroadcastsToX) {
  Tensor x = test::random_tensor({2, 3, 5, 4}, 3, -2, 2);
  for (const Shape& slope_shape : {Shape{3, 1, 1}, Shape{4}, Shape{1}, Shape{2, 3, 5, 4}}) {
    Tensor slope = test::random_tensor(slope_shape, 4, 0, 1);
    auto out = run(node("PRelu", 16), {x, slope});
    auto ref = test::broadcast_reference(
        {&x, &slope}, [](const std::vector<double>& v) { return v[0] >= 0 ? v[0] : v[0] * v[1]; });
    EXPECT_TRUE(test::all_close(out[0], x.shape(), ref, relative(1.2e-7))) << shape_to_string(slope_shape);
  }
}

TEST(ElementwiseBinaryFloat, Float16GoesThroughFloat32) {
  const std::vector<int64_t> a_values = {-7, -3, 0, 2, 5, 9, 11, -12};
  Tensor a = test::int_tensor(DType::Float16, {2, 4}, a_values);
  Tensor b = test::int_tensor(DType::Float16, {4}, {3, -4, 2, 5});
  auto add = run(node("Add"), {a, b});
  ASSERT_EQ(add[0].dtype(), DType::Float16);
  auto mod = run(
      [] {
        ops::NodeInfo n = node("Mod");
        n.attributes.set("fmod", int64_t{1});
        return n;
      }(),
      {a, b});
  auto less = run(node("Less"), {a, b});
  ASSERT_EQ(less[0].dtype(), DType::Bool);
  auto add_ref =
      test::broadcast_reference({&a, &b}, [](const std::vector<double>& v) { return v[0] + v[1]; });
  auto mod_ref =
      test::broadcast_reference({&a, &b}, [](const std::vector<double>& v) { return std::fmod(v[0], v[1]); });
  auto less_ref = test::broadcast_reference(
      {&a, &b}, [](const std::vector<double>& v) { return v[0] < v[1] ? 1.0 : 0.0; });
  for (size_t i = 0; i < add_ref.size(); ++i) {
    EXPECT_EQ(test::element_as_double(add[0], i), add_ref[i]) << i;
    EXPECT_EQ(test::element_as_double(mod[0], i), mod_ref[i]) << i;
    EXPECT_EQ(test::element_as_double(less[0], i), less_ref[i]) << i;
  }
}

// ---- integers ----

int64_t trunc_div(int64_t a, int64_t b) {
  return a / b;
}
int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

// The reference's result wrapped into the dtype, as numpy's fixed-width arithmetic does.
std::vector<int64_t> wrap_to(DType dtype, const std::vector<int64_t>& values) {
  return test::int_values(test::int_tensor(dtype, {static_cast<int64_t>(values.size())}, values));
}

TEST(ElementwiseBinaryIntegers, ExactWithTruncatingDivisionAndWrapping) {
  struct IntCase {
    const char* op;
    std::function<int64_t(int64_t, int64_t)> reference;
    int64_t fmod;  // Mod's attribute; -1: none
  };
  const std::vector<IntCase> cases = {
      {"Add", [](int64_t a, int64_t b) { return a + b; }, -1},
      {"Sub", [](int64_t a, int64_t b) { return a - b; }, -1},
      {"Mul", [](int64_t a, int64_t b) { return a * b; }, -1},
      {"Div", trunc_div, -1},
      {"Mod", floor_mod, 0},
      {"Mod", [](int64_t a, int64_t b) { return a % b; }, 1},
      {"Min", [](int64_t a, int64_t b) { return std::min(a, b); }, -1},
      {"Max", [](int64_t a, int64_t b) { return std::max(a, b); }, -1},
  };
  for (DType dtype : {DType::Int64, DType::Int32, DType::Int8, DType::UInt8}) {
    const int64_t lo = dtype == DType::UInt8 ? 1 : -120, hi = dtype == DType::UInt8 ? 250 : 120;
    for (const auto& [sa, sb] : kShapePairs) {
      Tensor a = test::random_int_tensor(dtype, sa, 5 + sa.size(), lo, hi);
      Tensor b = test::random_int_tensor(dtype, sb, 9 + sb.size(), lo, hi);
      // No zero divisors (undefined in ONNX).
      std::vector<int64_t> bv = test::int_values(b);
      for (int64_t& v : bv) v = v == 0 ? 7 : v;
      b = test::int_tensor(dtype, b.shape(), bv);
      for (const IntCase& c : cases) {
        ops::NodeInfo n = node(c.op);
        if (c.fmod >= 0) n.attributes.set("fmod", c.fmod);
        auto out = run(n, {a, b});
        ASSERT_EQ(out[0].dtype(), dtype);
        auto ref = test::broadcast_reference_int(
            {&a, &b}, [&](const std::vector<int64_t>& v) { return c.reference(v[0], v[1]); });
        EXPECT_EQ(test::int_values(out[0]), wrap_to(dtype, ref))
            << c.op << " fmod " << c.fmod << " " << dtype_name(dtype) << " " << shape_to_string(sa)
            << " with " << shape_to_string(sb);
      }
    }
  }
}

TEST(ElementwiseBinaryIntegers, PowWithIntegerAndFloatExponents) {
  Tensor base = Tensor::from_vector<int32_t>({6}, {2, -3, 3, 5, 1, -1});
  Tensor float_exp = Tensor::from_vector<float>({6}, {10, 3, 6, 0.5f, 2, 2});
  auto ints = run(node("Pow", 15), {base, Tensor::from_vector<int32_t>({6}, {10, 3, 0, 2, -4, -3})});
  EXPECT_EQ(test::int_values(ints[0]), (std::vector<int64_t>{1024, -27, 1, 25, 1, -1}));
  auto mixed = run(node("Pow", 15), {base, float_exp});
  // numpy: pow in floating point, truncated back to the base's type: 3^6 = 729 exactly, sqrt(5) -> 2.
  EXPECT_EQ(test::int_values(mixed[0]), (std::vector<int64_t>{1024, -27, 729, 2, 1, 1}));
  Tensor fbase = Tensor::from_vector<float>({3}, {1.5f, -2, 4});
  auto float_int = run(node("Pow", 15), {fbase, Tensor::from_vector<int64_t>({3}, {2, 3, -1})});
  EXPECT_EQ(floats(float_int[0]), (std::vector<float>{2.25f, -8, 0.25f}));
}

// ---- comparisons and logic ----

TEST(ElementwiseBinaryCompare, ExactForFloatIntAndBool) {
  struct CompareCase {
    const char* op;
    int opset;
    std::function<bool(double, double)> reference;
  };
  const std::vector<CompareCase> cases = {
      {"Equal", 13, [](double a, double b) { return a == b; }},
      {"Less", 13, [](double a, double b) { return a < b; }},
      {"Greater", 13, [](double a, double b) { return a > b; }},
      {"LessOrEqual", 16, [](double a, double b) { return a <= b; }},
      {"GreaterOrEqual", 16, [](double a, double b) { return a >= b; }},
  };
  for (DType dtype : {DType::Float32, DType::Int64, DType::Int32, DType::Int8, DType::UInt8, DType::Bool}) {
    for (const auto& [sa, sb] : kShapePairs) {
      // Few distinct values, so that ties are common.
      const int64_t lo = dtype == DType::Bool || dtype == DType::UInt8 ? 0 : -2,
                    hi = dtype == DType::Bool ? 1 : 2;
      Tensor a = test::random_int_tensor(dtype, sa, 3 + sa.size(), lo, hi);
      Tensor b = test::random_int_tensor(dtype, sb, 4 + sb.size(), lo, hi);
      for (const CompareCase& c : cases) {
        if (dtype == DType::Bool && std::string(c.op) != "Equal") continue;
        auto out = run(node(c.op, c.opset), {a, b});
        ASSERT_EQ(out[0].dtype(), DType::Bool);
        auto ref = test::broadcast_reference_int({&a, &b}, [&](const std::vector<int64_t>& v) -> int64_t {
          return c.reference(double(v[0]), double(v[1]));
        });
        EXPECT_EQ(test::int_values(out[0]), ref)
            << c.op << " " << dtype_name(dtype) << " " << shape_to_string(sa);
      }
    }
  }
}

TEST(ElementwiseBinaryLogic, AndOrXorNotBroadcast) {
  for (const auto& [sa, sb] : kShapePairs) {
    Tensor a = test::random_int_tensor(DType::Bool, sa, 1 + sa.size(), 0, 1);
    Tensor b = test::random_int_tensor(DType::Bool, sb, 2 + sb.size(), 0, 1);
    const std::vector<std::pair<const char*, std::function<int64_t(int64_t, int64_t)>>> cases = {
        {"And", [](int64_t x, int64_t y) { return x & y; }},
        {"Or", [](int64_t x, int64_t y) { return x | y; }},
        {"Xor", [](int64_t x, int64_t y) { return x ^ y; }},
    };
    for (const auto& [op, f] : cases) {
      auto out = run(node(op, 7), {a, b});
      auto ref = test::broadcast_reference_int({&a, &b},
                                               [&](const std::vector<int64_t>& v) { return f(v[0], v[1]); });
      EXPECT_EQ(test::int_values(out[0]), ref)
          << op << " " << shape_to_string(sa) << " with " << shape_to_string(sb);
    }
    auto negated = run(node("Not", 7), {a});
    std::vector<int64_t> expected;
    for (int64_t v : test::int_values(a)) expected.push_back(!v);
    EXPECT_EQ(test::int_values(negated[0]), expected);
  }
}

TEST(ElementwiseBinaryWhere, ThreeWayBroadcastForEveryType) {
  Tensor cond = test::random_int_tensor(DType::Bool, {2, 1, 4}, 1, 0, 1);
  for (DType dtype : {DType::Float32, DType::Int64, DType::Int32, DType::Int8, DType::UInt8, DType::Bool}) {
    for (const auto& [sx, sy] :
         std::vector<std::pair<Shape, Shape>>{{{3, 1}, {4}}, {{2, 3, 4}, {}}, {{1}, {2, 3, 4}}}) {
      Tensor x = test::random_int_tensor(dtype, sx, 2, -100, 100);
      Tensor y = test::random_int_tensor(dtype, sy, 3, -100, 100);
      auto out = run(node("Where", 16), {cond, x, y});
      ASSERT_EQ(out[0].dtype(), dtype);
      auto ref = test::broadcast_reference_int(
          {&cond, &x, &y}, [](const std::vector<int64_t>& v) { return v[0] ? v[1] : v[2]; });
      EXPECT_EQ(test::int_values(out[0]), ref) << dtype_name(dtype) << " " << shape_to_string(sx);
    }
  }
}

// ---- variadic ----

TEST(ElementwiseBinaryVariadic, OneToFourInputsWithBroadcasting) {
  const std::vector<Shape> shapes = {{2, 3, 4}, {4}, {3, 1}, {1, 1, 1}};
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < shapes.size(); ++i) inputs.push_back(test::random_tensor(shapes[i], 30 + i, -3, 3));
  struct VariadicCase {
    const char* op;
    std::function<double(const std::vector<double>&)> reference;
  };
  const std::vector<VariadicCase> cases = {
      {"Sum",
       [](const std::vector<double>& v) {
         double s = 0;
         for (double x : v) s += x;
         return s;
       }},
      {"Mean",
       [](const std::vector<double>& v) {
         double s = 0;
         for (double x : v) s += x;
         return s / double(v.size());
       }},
      {"Min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }},
      {"Max", [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }},
  };
  for (const VariadicCase& c : cases) {
    for (size_t n = 1; n <= inputs.size(); ++n) {
      std::vector<Tensor> args(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(n));
      std::vector<const Tensor*> ptrs;
      std::vector<Shape> arg_shapes;
      for (const Tensor& t : args) {
        ptrs.push_back(&t);
        arg_shapes.push_back(t.shape());
      }
      auto out = run(node(c.op), args);
      auto ref = test::broadcast_reference(ptrs, c.reference);
      EXPECT_TRUE(test::all_close(out[0], test::broadcast_shape(arg_shapes), ref, relative(3e-7, 1e-6)))
          << c.op << " with " << n << " inputs";
      auto folded = fold(node(c.op), ptrs);
      ASSERT_EQ(folded.size(), 1u);
      EXPECT_TRUE(test::all_close(folded[0], test::broadcast_shape(arg_shapes), ref, relative(3e-7, 1e-6)))
          << c.op << " folded, " << n << " inputs";
    }
  }
  // Integer Max / Min over three inputs.
  Tensor a = Tensor::from_vector<int64_t>({3}, {5, -7, 2});
  Tensor b = Tensor::from_vector<int64_t>({1}, {1});
  Tensor c = Tensor::from_vector<int64_t>({2, 3}, {0, 9, -3, 4, -8, 8});
  EXPECT_EQ(test::int_values(run(node("Max"), {a, b, c})[0]), (std::vector<int64_t>{5, 9, 2, 5, 1, 8}));
  EXPECT_EQ(test::int_values(run(node("Min"), {a, b, c})[0]), (std::vector<int64_t>{0, -7, -3, 1, -8, 1}));
}

// ---- Cast ----

TEST(ElementwiseBinaryCast, EveryPairOfTypes) {
  const std::vector<float> values = {-300.75f, -129.5f, -128,   -2.5f,  -1,  -0.75f,  0,   0.25f,
                                     1,        1.5f,    127.9f, 200.5f, 255, 256.25f, 1000};
  const std::vector<DType> types = {DType::Float32, DType::Int64, DType::Int32,
                                    DType::Int8,    DType::UInt8, DType::Bool};
  Tensor source = Tensor::from_vector<float>({static_cast<int64_t>(values.size())}, values);
  for (DType from : types) {
    // The source values in `from` (the host fold is itself under test, so build them directly).
    Tensor x = from == DType::Float32 ? source : test::int_tensor(from, source.shape(), [&] {
      std::vector<int64_t> v;
      for (float f : values) v.push_back(static_cast<int64_t>(f));
      return v;
    }());
    for (DType to : types) {
      ops::NodeInfo n = node("Cast", 13);
      const int64_t onnx_type[] = {1, 7, 6, 3, 2, 9};
      n.attributes.set("to", onnx_type[std::find(types.begin(), types.end(), to) - types.begin()]);
      std::vector<double> expected;
      for (size_t i = 0; i < values.size(); ++i) {
        const double v = test::element_as_double(x, i);
        if (to == DType::Float32) {
          expected.push_back(static_cast<float>(v));
        } else if (to == DType::Bool) {
          expected.push_back(v != 0);
        } else {
          expected.push_back(static_cast<double>(wrap_to(to, {static_cast<int64_t>(std::trunc(v))})[0]));
        }
      }
      for (bool on_host : {false, true}) {
        Tensor y = on_host ? fold(n, {&x}).at(0) : run(n, {x}).at(0);
        ASSERT_EQ(y.dtype(), to);
        for (size_t i = 0; i < values.size(); ++i) {
          EXPECT_EQ(test::element_as_double(y, i), expected[i])
              << dtype_name(from) << " " << test::element_as_double(x, i) << " -> " << dtype_name(to)
              << (on_host ? " (host)" : " (GPU)");
        }
      }
    }
  }
  // CastLike takes the type of its second input.
  Tensor like = Tensor(DType::Int32, {1});
  auto y = run(node("CastLike", 15), {source, like});
  EXPECT_EQ(y[0].dtype(), DType::Int32);
  EXPECT_EQ(test::int_values(y[0])[0], -300);
}

// float16 <-> float32 on the GPU (halves are packed two per word): every half decodes exactly; encoding
// rounds to nearest even at every boundary, overflows to inf and keeps NaN.
TEST(ElementwiseBinaryCast, Float16BothWaysExhaustive) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  Tensor halves(DType::Float16, {65536}, std::as_bytes(std::span<const uint16_t>(all)));
  ops::NodeInfo to_float = node("Cast", 13);
  to_float.attributes.set("to", int64_t{1});
  Tensor decoded = run(to_float, {halves})[0];
  for (size_t i = 0; i < all.size(); ++i) {
    const double want = test::half_bits_to_double(all[i]);
    const float got = decoded.data<float>()[i];
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << i;
    } else {
      ASSERT_EQ(got, want) << "half 0x" << std::hex << i;
    }
  }
  // Encode: every finite half's value, the midpoints between neighbours (ties to even) and just beside them,
  // overflow, tiny values and specials. An odd count exercises the half-filled last word.
  std::vector<float> floats_in;
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const double v = test::half_bits_to_double(static_cast<uint16_t>(h));
    const double next = test::half_bits_to_double(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((v + next) / 2);
    for (float f : {static_cast<float>(v), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      floats_in.push_back(f);
      floats_in.push_back(-f);
    }
  }
  for (float f : {65519.0f, 65520.0f, 1e10f, INFINITY, -INFINITY, NAN, 1e-30f, 2.9802322e-8f})
    floats_in.push_back(f);
  ops::NodeInfo to_half = node("Cast", 13);
  to_half.attributes.set("to", int64_t{10});
  Tensor input = Tensor::from_vector<float>({static_cast<int64_t>(floats_in.size())}, floats_in);
  for (bool on_host : {false, true}) {
    Tensor encoded = on_host ? fold(to_half, {&input}).at(0) : run(to_half, {input}).at(0);
    ASSERT_EQ(encoded.dtype(), DType::Float16);
    for (size_t i = 0; i < floats_in.size(); ++i) {
      uint16_t got;
      std::memcpy(&got, encoded.bytes().data() + 2 * i, 2);
      const uint16_t want = test::double_to_half_bits(floats_in[i]);
      if (std::isnan(floats_in[i])) {
        ASSERT_TRUE((got & 0x7c00) == 0x7c00 && (got & 0x3ff)) << i;
      } else {
        ASSERT_EQ(got, want) << floats_in[i] << (on_host ? " (host)" : " (GPU)");
      }
    }
  }
}

// ---- host folding of shape arithmetic ----

// Torch exports compute shapes with int64 Add / Sub / Mul / Div / Equal / Where / Cast on the host; the fold
// keeps int64's full range (the GPU holds 32 bits) and truncates division toward zero.
TEST(ElementwiseBinaryHostFold, Int64ShapeArithmetic) {
  const int64_t big = int64_t{1} << 40;
  Tensor a = Tensor::from_vector<int64_t>({4}, {big, -7, 7, 9223372036854775807});
  Tensor b = Tensor::from_vector<int64_t>({}, {2});
  Tensor c = Tensor::from_vector<int64_t>({4}, {3, 2, -2, 1});
  EXPECT_EQ(test::int_values(fold(node("Add"), {&a, &b})[0]),
            (std::vector<int64_t>{big + 2, -5, 9, std::numeric_limits<int64_t>::min() + 1}));
  EXPECT_EQ(test::int_values(fold(node("Mul"), {&a, &b})[0]), (std::vector<int64_t>{2 * big, -14, 14, -2}));
  EXPECT_EQ(test::int_values(fold(node("Div"), {&a, &c})[0]),
            (std::vector<int64_t>{big / 3, -3, -3, 9223372036854775807}));
  EXPECT_EQ(test::int_values(fold(node("Sub"), {&a, &c})[0]),
            (std::vector<int64_t>{big - 3, -9, 9, 9223372036854775806}));
  Tensor eq = fold(node("Equal"), {&c, &b})[0];
  EXPECT_EQ(eq.dtype(), DType::Bool);
  EXPECT_EQ(test::int_values(eq), (std::vector<int64_t>{0, 1, 0, 0}));
  EXPECT_EQ(test::int_values(fold(node("Where", 16), {&eq, &a, &c})[0]),
            (std::vector<int64_t>{3, -7, -2, 1}));
  ops::NodeInfo to_float = node("Cast");
  to_float.attributes.set("to", int64_t{1});
  Tensor f = fold(to_float, {&a})[0];
  EXPECT_EQ(f.data<float>()[0], static_cast<float>(big));
  ops::NodeInfo to_int = node("Cast");
  to_int.attributes.set("to", int64_t{7});
  Tensor g = Tensor::from_vector<float>({3}, {-2.75f, 3.5f, 1e12f});
  EXPECT_EQ(test::int_values(fold(to_int, {&g})[0]),
            (std::vector<int64_t>{-2, 3, static_cast<int64_t>(1e12f)}));
  ops::NodeInfo mod = node("Mod");
  EXPECT_EQ(test::int_values(fold(mod, {&a, &c})[0]), (std::vector<int64_t>{big % 3, 1, -1, 0}));
  // Declines without every input known.
  ops::PlanContext ctx{node("Add"),
                       {ops::TensorDesc{a.dtype(), a.shape()}, ops::TensorDesc{b.dtype(), b.shape()}},
                       {&a, nullptr},
                       test::device().capabilities()};
  const Tensor* partial[] = {&a, nullptr};
  EXPECT_TRUE(ops::builtin_registry().find("", "Add", 13)->handler.evaluate_on_host(ctx, partial).empty());
}

// The host fold and the GPU agree on every op and type (within 32-bit values).
TEST(ElementwiseBinaryHostFold, AgreesWithTheGpu) {
  const std::vector<std::string> ops = {
      "Add", "Sub", "Mul",  "Div", "Min", "Max", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
      "Mod", "Pow", "PRelu"};
  for (DType dtype : {DType::Float32, DType::Int64, DType::Int32, DType::Int8, DType::UInt8}) {
    Tensor a = dtype == DType::Float32
                   ? test::random_tensor({3, 4}, 1, -3, 3)
                   : test::random_int_tensor(dtype, {3, 4}, 1, dtype == DType::UInt8 ? 0 : -9, 9);
    Tensor b = dtype == DType::Float32 ? test::random_tensor({4}, 2, 0.5f, 3)
                                       : test::random_int_tensor(dtype, {4}, 2, 1, 5);
    for (const std::string& op : ops) {
      ops::NodeInfo n = node(op, 16);
      if (op == "Mod") n.attributes.set("fmod", int64_t{dtype == DType::Float32 ? 1 : 0});
      if ((op == "Pow" && (dtype == DType::Int8 || dtype == DType::UInt8)) ||
          (op == "PRelu" && dtype == DType::UInt8)) {
        continue;
      }
      Tensor on_gpu = run(n, {a, b})[0];
      Tensor on_host = fold(n, {&a, &b})[0];
      ASSERT_EQ(on_gpu.dtype(), on_host.dtype()) << op;
      for (size_t i = 0; i < static_cast<size_t>(on_gpu.element_count()); ++i) {
        const double g = test::element_as_double(on_gpu, i), h = test::element_as_double(on_host, i);
        if (std::isnan(g) && std::isnan(h)) continue;  // e.g. a negative base to a fractional power
        EXPECT_NEAR(g, h, 2e-6 * std::abs(h)) << op << " " << dtype_name(dtype) << " element " << i;
      }
    }
  }
}

// ---- plans ----

TEST(ElementwiseBinaryPlan, FastPathsAndMergedDims) {
  const gpu::Capabilities& caps = test::device().capabilities();
  auto plan = [&](const Shape& sa, const Shape& sb) {
    Inputs in = {NodeInput{Tensor(DType::Float32, sa)}, NodeInput{Tensor(DType::Float32, sb)}};
    return runtime::plan_node(caps, node("Add"), in);
  };
  EXPECT_NE(plan({8, 16}, {8, 16}).launches.at(0).program.label.find("vec4_flat"), std::string::npos);
  EXPECT_NE(plan({3, 5}, {3, 5}).launches.at(0).program.label.find("_flat"), std::string::npos);
  EXPECT_EQ(plan({3, 5}, {3, 5}).launches.at(0).program.label.find("vec4"), std::string::npos);
  // [8, 15] merges into one dim of 120: vec4 after all.
  EXPECT_NE(plan({8, 15}, {8, 15}).launches.at(0).program.label.find("vec4_flat"), std::string::npos);
  EXPECT_NE(plan({8, 16}, {}).launches.at(0).program.label.find("vec4_flat"), std::string::npos);
  EXPECT_NE(plan({2, 3, 4, 4}, {1, 3, 1, 1}).launches.at(0).program.label.find("vec4"), std::string::npos);
  // The same kernel text for every shape of a pattern: shapes live in the uniform.
  EXPECT_EQ(plan({2, 3, 4, 4}, {1, 3, 1, 1}).launches.at(0).program.wgsl.str(),
            plan({5, 7, 8, 12}, {1, 7, 1, 1}).launches.at(0).program.wgsl.str());
  EXPECT_TRUE(plan({0, 4}, {4}).launches.empty());
  EXPECT_EQ(plan({0, 4}, {4}).outputs.at(0).shape, (Shape{0, 4}));
  // Casts that keep the device's bits are aliases, not kernels.
  ops::NodeInfo cast = node("Cast");
  cast.attributes.set("to", int64_t{7});
  Inputs ints = {NodeInput{Tensor(DType::Int32, {5})}};
  auto alias = runtime::plan_node(caps, cast, ints);
  EXPECT_EQ(alias.alias_output_to_input, 0);
  EXPECT_TRUE(alias.launches.empty());
}

TEST(ElementwiseBinaryGridFolding, FoldedGridCoversEveryElement) {
  gpu::Capabilities caps = test::device().capabilities();
  caps.limits.max_compute_workgroups_per_dimension = 4;
  Tensor a = test::random_tensor({5, 3, 347}, 1);
  Tensor b = test::random_tensor({3, 1}, 2);
  runtime::NodeRunOptions options;
  options.capabilities = caps;
  runtime::PreparedNode prepared(test::device(), node("Mul"), Inputs{NodeInput{a}, NodeInput{b}}, options);
  ASSERT_GT(prepared.plan().launches.at(0).groups.y, 1u);
  auto out = prepared.run();
  auto ref = test::broadcast_reference({&a, &b}, [](const std::vector<double>& v) { return v[0] * v[1]; });
  EXPECT_TRUE(test::all_close(out[0], a.shape(), ref, relative(1.2e-7)));
}

// ---- errors ----

TEST(ElementwiseBinaryErrors, NameTheNodeAndWhatIsWrong) {
  auto expect_error = [](const ops::NodeInfo& n, const Inputs& in, std::vector<std::string> parts) {
    std::string msg = run_error(n, in);
    EXPECT_NE(msg.find("'elementwise_under_test'"), std::string::npos) << msg;
    for (const std::string& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
  };
  Tensor f = test::random_tensor({2, 3}, 1);
  Tensor i32(DType::Int32, {2, 3});
  Tensor flag(DType::Bool, {2, 3});
  expect_error(node("Add"), {NodeInput{f}, NodeInput{i32}}, {"int32", "float32", "must match"});
  expect_error(node("Add"), {NodeInput{f}, NodeInput{test::random_tensor({4}, 2)}},
               {"[2, 3]", "[4]", "broadcast"});
  expect_error(node("Add"), {NodeInput{flag}, NodeInput{flag}}, {"bool", "Add"});
  expect_error(node("And", 7), {NodeInput{f}, NodeInput{f}}, {"float32", "And", "bool"});
  expect_error(node("Sum"), {NodeInput{i32}, NodeInput{i32}}, {"int32", "Sum"});
  expect_error(node("Mod"), {NodeInput{f}, NodeInput{f}}, {"fmod", "floating-point"});
  expect_error(node("Where", 16), {NodeInput{f}, NodeInput{f}, NodeInput{f}}, {"input 0", "float32", "bool"});
  expect_error(node("Where", 16), {NodeInput{flag}, NodeInput{f}, NodeInput{i32}}, {"must match"});
  expect_error(node("Pow", 15), {NodeInput{Tensor(DType::Int8, {2})}, NodeInput{f}}, {"int8", "Pow"});
  expect_error(node("PRelu", 16), {NodeInput{test::random_tensor({3}, 3)}, NodeInput{f}}, {"slope", "X"});
  ops::NodeInfo cast = node("Cast");
  cast.attributes.set("to", int64_t{11});
  expect_error(cast, {NodeInput{f}}, {"'to'", "11"});
  expect_error(node("Cast"), {NodeInput{f}}, {"'to'", "required"});
  // Nine dims that cannot merge: more than the kernel's uniform holds.
  Tensor nine_a = test::random_tensor({2, 1, 2, 1, 2, 1, 2, 1, 2}, 4);
  Tensor nine_b = test::random_tensor({1, 2, 1, 2, 1, 2, 1, 2, 1}, 5);
  expect_error(node("Add"), {NodeInput{nine_a}, NodeInput{nine_b}}, {"9 dims", "at most 8"});
}

}  // namespace
}  // namespace wgi
