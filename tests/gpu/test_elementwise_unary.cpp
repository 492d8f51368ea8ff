// Elementwise unary ops against float64 references: vec4 and scalar paths, odd sizes, batch dims, attributes,
// the tails where textbook formulas overflow or cancel, integer types, Clip's attribute and input forms
// (host-known and runtime bounds), host folding, grid folding and the errors a user can cause.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
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

const test::NodeMaker node{"unary_under_test"};

test::Tolerance tolerance(double rel, double abs) {
  return [rel, abs](double r) { return abs + rel * std::abs(r); };
}

// float32 of an attribute value, as the kernel sees it.
double f32(double v) {
  return static_cast<float>(v);
}

using test::gelu;
using test::gelu_tanh;
double softplus(double x) {
  return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
}
double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

struct UnaryCase {
  std::string name;  // test name; the op unless a variant
  std::string op;
  int opset;
  float lo, hi;  // input range
  std::function<double(double)> reference;
  double rel, abs;  // tolerance: abs + rel * |reference|
  std::function<void(ops::Attributes&)> attributes = nullptr;
};

const double kSeluAlpha = f32(1.67326319217681884765625), kSeluGamma = f32(1.05070102214813232421875);

std::vector<UnaryCase> unary_cases() {
  return {
      {"Relu", "Relu", 14, -6, 6, [](double x) { return x > 0 ? x : 0.0; }, 0, 0},
      {"Sigmoid", "Sigmoid", 13, -20, 20, sigmoid, 2e-6, 0},
      {"Tanh", "Tanh", 13, -6, 6, [](double x) { return std::tanh(x); }, 2e-6, 0},
      {"Exp", "Exp", 13, -20, 20, [](double x) { return std::exp(x); }, 2e-6, 0},
      {"Log", "Log", 13, 0.001f, 100, [](double x) { return std::log(x); }, 2e-6, 2e-7},
      {"Sqrt", "Sqrt", 13, 0, 100, [](double x) { return std::sqrt(x); }, 2e-6, 0},
      {"Reciprocal", "Reciprocal", 13, 0.01f, 6, [](double x) { return 1 / x; }, 2e-6, 0},
      {"Neg", "Neg", 13, -6, 6, [](double x) { return -x; }, 0, 0},
      {"Abs", "Abs", 13, -6, 6, [](double x) { return std::abs(x); }, 0, 0},
      {"Floor", "Floor", 13, -6, 6, [](double x) { return std::floor(x); }, 0, 0},
      {"Ceil", "Ceil", 13, -6, 6, [](double x) { return std::ceil(x); }, 0, 0},
      {"Round", "Round", 11, -6, 6, [](double x) { return std::nearbyint(x); }, 0, 0},
      {"Sign", "Sign", 13, -6, 6, [](double x) { return x > 0   ? 1.0
                                                        : x < 0 ? -1.0
                                                                : 0.0; }, 0, 0},
      {"Erf", "Erf", 13, -6, 6, [](double x) { return std::erf(x); }, 4e-7, 0},
      {"Gelu", "Gelu", 20, -6, 6, gelu, 2e-6, 1e-7},
      {"GeluTanh", "Gelu", 20, -6, 6, gelu_tanh, 2e-6, 1e-7,
       [](ops::Attributes& a) { a.set("approximate", std::string("tanh")); }},
      {"Softplus", "Softplus", 13, -20, 20, softplus, 2e-6, 0},
      {"Softsign", "Softsign", 13, -6, 6, [](double x) { return x / (1 + std::abs(x)); }, 2e-6, 0},
      {"Mish", "Mish", 18, -6, 6, [](double x) { return x * std::tanh(softplus(x)); }, 2e-6, 1e-7},
      {"LeakyRelu", "LeakyRelu", 16, -6, 6, [](double x) { return x >= 0 ? x : f32(0.1) * x; }, 1.2e-7, 0,
       [](ops::Attributes& a) { a.set("alpha", 0.1f); }},
      {"LeakyReluDefault", "LeakyRelu", 16, -6, 6, [](double x) { return x >= 0 ? x : f32(0.01) * x; },
       1.2e-7, 0},
      {"ThresholdedRelu", "ThresholdedRelu", 10, -6, 6, [](double x) { return x > 0.5 ? x : 0.0; }, 0, 0,
       [](ops::Attributes& a) { a.set("alpha", 0.5f); }},
      {"HardSigmoid", "HardSigmoid", 6, -6, 6,
       [](double x) { return std::clamp(f32(0.3) * x + f32(0.4), 0.0, 1.0); }, 2e-7, 1e-7,
       [](ops::Attributes& a) {
         a.set("alpha", 0.3f);
         a.set("beta", 0.4f);
       }},
      {"HardSwish", "HardSwish", 14, -6, 6, [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); },
       2e-6, 1e-7},
      {"Elu", "Elu", 6, -6, 6, [](double x) { return x >= 0 ? x : f32(0.7) * std::expm1(x); }, 2e-6, 0,
       [](ops::Attributes& a) { a.set("alpha", 0.7f); }},
      {"Selu", "Selu", 6, -6, 6,
       [](double x) { return kSeluGamma * (x > 0 ? x : kSeluAlpha * std::expm1(x)); }, 2e-6, 0},
      {"Celu", "Celu", 12, -6, 6,
       [](double x) { return std::max(0.0, x) + std::min(0.0, f32(1.5) * std::expm1(x / f32(1.5))); }, 2e-6,
       0, [](ops::Attributes& a) { a.set("alpha", 1.5f); }},
      {"Shrink", "Shrink", 9, -6, 6,
       [](double x) { return x < -f32(0.8)  ? x + f32(0.3)
                             : x > f32(0.8) ? x - f32(0.3)
                                            : 0.0; }, 1.2e-7, 0,
       [](ops::Attributes& a) {
         a.set("lambd", 0.8f);
         a.set("bias", 0.3f);
       }},
      {"Sin", "Sin", 7, -10, 10, [](double x) { return std::sin(x); }, 2e-6, 1e-7},
      {"Cos", "Cos", 7, -10, 10, [](double x) { return std::cos(x); }, 2e-6, 1e-7},
      {"ClipAttributes", "Clip", 6, -6, 6, [](double x) { return std::clamp(x, -1.5, 2.25); }, 0, 0,
       [](ops::Attributes& a) {
         a.set("min", -1.5f);
         a.set("max", 2.25f);
       }},
  };
}

class ElementwiseUnaryTest : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(ElementwiseUnaryTest, MatchesFloat64Reference) {
  const UnaryCase& c = GetParam();
  ops::NodeInfo n = node(c.op, c.opset);
  if (c.attributes) c.attributes(n.attributes);
  for (const Shape& shape : {Shape{1}, Shape{3}, Shape{4}, Shape{2, 3, 5}, Shape{4, 64}, Shape{3, 1031}}) {
    Tensor x =
        test::random_tensor(shape, 42 + shape.size() + static_cast<uint64_t>(shape.back()), c.lo, c.hi);
    auto out = runtime::run_node(test::device(), n, Inputs{NodeInput{x}});
    ASSERT_EQ(out.size(), 1u);
    std::vector<double> ref;
    for (float v : x.data<float>()) ref.push_back(c.reference(v));
    EXPECT_TRUE(test::all_close(out[0], shape, ref, tolerance(c.rel, c.abs)))
        << c.name << " " << shape_to_string(shape);
  }
}

// The host fold (constant subgraphs) computes the same function.
TEST_P(ElementwiseUnaryTest, HostFoldMatchesReference) {
  const UnaryCase& c = GetParam();
  ops::NodeInfo n = node(c.op, c.opset);
  if (c.attributes) c.attributes(n.attributes);
  Tensor x = test::random_tensor({5, 7}, 7, c.lo, c.hi);
  const ops::OpHandler& handler = ops::builtin_registry().find("", c.op, c.opset)->handler;
  ASSERT_TRUE(handler.evaluate_on_host);
  ops::PlanContext ctx{n, {ops::TensorDesc{x.dtype(), x.shape()}}, {&x}, test::device().capabilities()};
  const Tensor* inputs[] = {&x};
  auto out = handler.evaluate_on_host(ctx, inputs);
  ASSERT_EQ(out.size(), 1u);
  std::vector<double> ref;
  for (float v : x.data<float>()) ref.push_back(c.reference(v));
  EXPECT_TRUE(test::all_close(out[0], x.shape(), ref, tolerance(std::max(c.rel, 1.2e-7), c.abs))) << c.name;
}

INSTANTIATE_TEST_SUITE_P(ElementwiseUnaryOps, ElementwiseUnaryTest, ::testing::ValuesIn(unary_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

// One op on explicit inputs: the GPU result, checked finite where the reference is.
Tensor run_unary(const std::string& op, const std::vector<float>& xs, int opset = 20,
                 const std::function<void(ops::Attributes&)>& attributes = nullptr) {
  ops::NodeInfo n = node(op, opset);
  if (attributes) attributes(n.attributes);
  Tensor x = Tensor::from_vector<float>({static_cast<int64_t>(xs.size())}, xs);
  return runtime::run_node(test::device(), n, Inputs{NodeInput{x}})[0];
}

// Where the textbook formulas overflow (exp of a large argument: inf / inf) or cancel (1 + tiny), the results
// must stay finite and accurate. GPUs may flush float32 subnormals, hence the 1e-37 absolute slack.
TEST(ElementwiseUnaryTails, FiniteAndAccurateWhereTheTextbookFormulaFails) {
  struct Tail {
    const char* op;
    std::vector<float> xs;
    std::function<double(double)> reference;
  };
  const std::vector<Tail> tails = {
      {"Sigmoid", {-1e30f, -1000, -100, -87, -50, -30, 30, 50, 100, 1000, 1e30f}, sigmoid},
      {"Tanh",
       {-1e30f, -1000, -100, -45, -20, -9, -1e-3f, -1e-6f, 1e-6f, 1e-3f, 9, 20, 45, 100, 1000, 1e30f},
       [](double x) { return std::tanh(x); }},
      {"Softplus", {-1e30f, -1000, -100, -80, -30, -1e-3f, 1e-3f, 30, 80, 100, 1000, 1e30f}, softplus},
      {"Erf",
       {-1e30f, -100, -6, -4, -1e-3f, -1e-20f, 1e-20f, 1e-3f, 4, 6, 100, 1e30f},
       [](double x) { return std::erf(x); }},
      {"Mish", {-1000, -100, -30, 30, 100, 1000}, [](double x) { return x * std::tanh(softplus(x)); }},
      {"Elu", {-1000, -100, -1e-3f, -1e-6f, -1e-9f}, [](double x) { return std::expm1(x); }},
      {"Selu", {-1000, -1e-6f}, [](double x) { return kSeluGamma * kSeluAlpha * std::expm1(x); }},
      {"Celu", {-1000, -1e-6f}, [](double x) { return std::expm1(x); }},
      {"Exp", {-1000, -100, 80}, [](double x) { return std::exp(x); }},
  };
  for (const Tail& t : tails) {
    Tensor y = run_unary(t.op, t.xs);
    for (size_t i = 0; i < t.xs.size(); ++i) {
      const double ref = t.reference(t.xs[i]), got = y.data<float>()[i];
      EXPECT_TRUE(std::isfinite(got)) << t.op << "(" << t.xs[i] << ") = " << got;
      EXPECT_LE(std::abs(got - ref), 1e-37 + 2e-6 * std::abs(ref)) << t.op << "(" << t.xs[i] << ")";
    }
  }
  // Gelu = x (1 + erf(x / sqrt 2)) / 2: finite everywhere; in the negative tail 1 + erf cancels, leaving an
  // absolute error of about ulp(1) * |x| / 2 (as in other float32 implementations).
  const std::vector<float> gelu_xs = {-1e30f, -100, -10, -5, -2, 2, 5, 10, 100, 1e30f};
  Tensor g = run_unary("Gelu", gelu_xs);
  for (size_t i = 0; i < gelu_xs.size(); ++i) {
    const double ref = gelu(gelu_xs[i]), got = g.data<float>()[i];
    EXPECT_TRUE(std::isfinite(got)) << "Gelu(" << gelu_xs[i] << ")";
    EXPECT_LE(std::abs(got - ref), 2e-6 * std::abs(ref) + 6e-8 * std::abs(gelu_xs[i]))
        << "Gelu(" << gelu_xs[i] << ")";
  }
  // Gelu's tanh form, written as x * sigmoid(2u), has no 1 + tanh(u) to cancel.
  Tensor y = run_unary("Gelu", {-1e5f, -30, -10, 10, 30, 1e5f}, 20,
                       [](ops::Attributes& a) { a.set("approximate", std::string("tanh")); });
  for (size_t i = 0; i < 6; ++i) EXPECT_TRUE(std::isfinite(y.data<float>()[i])) << i;
}

// Juffa's erf against std::erf, densely over [-6, 6] and near 0: a few ulp (relative), far tighter than the
// ~1e-7 absolute error of Abramowitz-Stegun 7.1.26.
TEST(ElementwiseUnaryErf, MatchesStdErfOverMinus6To6) {
  std::vector<float> xs;
  for (int i = 0; i < 24000; ++i) xs.push_back(-6.0f + 12.0f * static_cast<float>(i) / 24000.0f);
  for (float v = 1e-30f; v < 1; v *= 3.7f) {
    xs.push_back(v);
    xs.push_back(-v);
  }
  Tensor y = run_unary("Erf", xs, 13);
  std::vector<double> ref;
  for (float v : xs) ref.push_back(std::erf(static_cast<double>(v)));
  EXPECT_TRUE(test::all_close(y, {static_cast<int64_t>(xs.size())}, ref, tolerance(3e-7, 0)));
}

TEST(ElementwiseUnaryRound, HalvesRoundToEven) {
  Tensor y = run_unary("Round", {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f}, 11);
  std::vector<float> expected = {-2, -2, -0.0f, 0, 2, 2, 4};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(y.data<float>()[i], expected[i]) << i;
}

// Relu / Abs / Neg / Sign / Clip on integers; int8 results wrap like numpy's (-(-128) = -128).
TEST(ElementwiseUnaryIntegers, SignedAndUnsignedTypes) {
  const std::vector<int64_t> values = {-128, -100, -7, -1, 0, 1, 5, 100, 127};
  const Shape shape = {static_cast<int64_t>(values.size())};
  struct IntCase {
    const char* op;
    std::function<int64_t(int64_t)> reference;
    bool unsigned_too;
  };
  const std::vector<IntCase> cases = {
      {"Relu", [](int64_t x) { return std::max<int64_t>(x, 0); }, false},
      {"Abs", [](int64_t x) { return std::abs(x); }, true},
      {"Neg", [](int64_t x) { return -x; }, false},
      {"Sign", [](int64_t x) { return int64_t{x > 0} - int64_t{x < 0}; }, true},
  };
  for (DType dtype : {DType::Int64, DType::Int32, DType::Int8, DType::UInt8}) {
    Tensor x = test::int_tensor(dtype, shape, values);
    for (const IntCase& c : cases) {
      if (dtype == DType::UInt8 && !c.unsigned_too) continue;
      auto out = runtime::run_node(test::device(), node(c.op, 14), Inputs{NodeInput{x}});
      std::vector<int64_t> expected;
      for (int64_t v : test::int_values(x)) {
        Tensor one = test::int_tensor(dtype, {1}, {c.reference(v)});  // wraps like the type
        expected.push_back(test::int_values(one)[0]);
      }
      EXPECT_EQ(out[0].dtype(), dtype);
      EXPECT_EQ(test::int_values(out[0]), expected) << c.op << " " << dtype_name(dtype);
    }
  }
}

// Clip: attributes before opset 11; optional inputs since (host-known or computed on the GPU); integer types
// from opset 12 with their own limits as defaults.
TEST(ElementwiseUnaryClip, EveryFormOfTheBounds) {
  Tensor x = test::random_tensor({3, 7}, 5, -4, 4);
  Tensor lo = Tensor::from_vector<float>({}, {-1.25f});
  Tensor hi = Tensor::from_vector<float>({1}, {0.5f});
  auto check = [&](const Inputs& in, double min, double max, const std::string& what) {
    auto out = runtime::run_node(test::device(), node("Clip", 13), in);
    std::vector<double> ref;
    for (float v : x.data<float>()) ref.push_back(std::min(std::max<double>(v, min), max));
    EXPECT_TRUE(test::all_close(out[0], x.shape(), ref, tolerance(0, 0))) << what;
  };
  for (bool constant : {true, false}) {
    const std::string how = constant ? " (host-known)" : " (runtime)";
    check({NodeInput{x}, NodeInput{lo, constant}, NodeInput{hi, constant}}, -1.25, 0.5, "both" + how);
    check({NodeInput{x}, NodeInput{lo, constant}}, -1.25, INFINITY, "min only" + how);
    check({NodeInput{x}, std::nullopt, NodeInput{hi, constant}}, -INFINITY, 0.5, "max only" + how);
  }
  check({NodeInput{x}, NodeInput{lo, true}, NodeInput{hi, false}}, -1.25, 0.5, "min host-known, max runtime");
  check({NodeInput{x}}, -INFINITY, INFINITY, "no bounds");
  // min > max: every value becomes max (ONNX).
  check({NodeInput{x}, NodeInput{Tensor::from_vector<float>({}, {1.0f}), true},
         NodeInput{Tensor::from_vector<float>({}, {-1.0f}), false}},
        1.0, -1.0, "min > max");

  const std::vector<int64_t> values = {-128, -50, -3, 0, 3, 50, 127};
  for (DType dtype : {DType::Int64, DType::Int32, DType::Int8, DType::UInt8}) {
    Tensor xi = test::int_tensor(
        dtype, {7}, dtype == DType::UInt8 ? std::vector<int64_t>{0, 2, 3, 9, 50, 128, 255} : values);
    Tensor bound_lo = test::int_tensor(dtype, {}, {dtype == DType::UInt8 ? 3 : -3});
    Tensor bound_hi = test::int_tensor(dtype, {}, {50});
    for (bool constant : {true, false}) {
      auto out = runtime::run_node(
          test::device(), node("Clip", 13),
          Inputs{NodeInput{xi}, NodeInput{bound_lo, constant}, NodeInput{bound_hi, constant}});
      std::vector<int64_t> expected;
      for (int64_t v : test::int_values(xi)) {
        expected.push_back(std::clamp<int64_t>(v, test::int_values(bound_lo)[0], 50));
      }
      EXPECT_EQ(test::int_values(out[0]), expected)
          << dtype_name(dtype) << (constant ? " constant" : " runtime");
      // One bound given: the other is the type's own limit.
      auto only_max = runtime::run_node(test::device(), node("Clip", 13),
                                        Inputs{NodeInput{xi}, std::nullopt, NodeInput{bound_hi, constant}});
      expected.clear();
      for (int64_t v : test::int_values(xi)) expected.push_back(std::min<int64_t>(v, 50));
      EXPECT_EQ(test::int_values(only_max[0]), expected) << dtype_name(dtype) << " max only";
    }
  }
}

TEST(ElementwiseUnaryGridFolding, FoldedGridCoversEveryElement) {
  // 3 * 1031 elements in 256-wide workgroups with at most 4 groups per dimension: a 2-D grid.
  gpu::Capabilities caps = test::device().capabilities();
  caps.limits.max_compute_workgroups_per_dimension = 4;
  Tensor x = test::random_tensor({3, 1031}, 9, -3, 3);
  runtime::NodeRunOptions options;
  options.capabilities = caps;
  runtime::PreparedNode prepared(test::device(), node("Tanh"), Inputs{NodeInput{x}}, options);
  ASSERT_GT(prepared.plan().launches.at(0).groups.y, 1u);
  auto out = prepared.run();
  std::vector<double> ref;
  for (float v : x.data<float>()) ref.push_back(std::tanh(static_cast<double>(v)));
  EXPECT_TRUE(test::all_close(out[0], x.shape(), ref, tolerance(2e-6, 0)));
}

TEST(ElementwiseUnaryPlan, Vec4WhenTheCountIsAMultipleOf4) {
  const gpu::Capabilities& caps = test::device().capabilities();
  auto label = [&](const Shape& shape) {
    Inputs in = {NodeInput{Tensor(DType::Float32, shape)}};
    return runtime::plan_node(caps, node("Exp"), in).launches.at(0).program.label;
  };
  EXPECT_NE(label({2, 8}).find("vec4"), std::string::npos);
  EXPECT_EQ(label({3, 5}).find("vec4"), std::string::npos);
  Inputs empty = {NodeInput{Tensor(DType::Float32, {0, 3})}};
  auto plan = runtime::plan_node(caps, node("Exp"), empty);
  EXPECT_TRUE(plan.launches.empty());
  EXPECT_EQ(plan.outputs.at(0).shape, (Shape{0, 3}));
}

TEST(ElementwiseUnaryHostFold, IntegersAndClipBounds) {
  const ops::OpRegistry& registry = ops::builtin_registry();
  auto fold = [&](const ops::NodeInfo& n, std::vector<const Tensor*> inputs) {
    ops::PlanContext ctx{n, {}, {}, test::device().capabilities()};
    for (const Tensor* t : inputs) {
      ctx.inputs.push_back(t ? std::optional<ops::TensorDesc>(ops::TensorDesc{t->dtype(), t->shape()})
                             : std::nullopt);
      ctx.constant_inputs.push_back(t);
    }
    return registry.find("", n.op_type, n.opset)->handler.evaluate_on_host(ctx, inputs);
  };
  Tensor big = Tensor::from_vector<int64_t>({3}, {-(int64_t{1} << 40), 7, int64_t{1} << 40});
  auto neg = fold(node("Neg"), {&big});
  ASSERT_EQ(neg.size(), 1u);
  EXPECT_EQ(test::int_values(neg[0]), (std::vector<int64_t>{int64_t{1} << 40, -7, -(int64_t{1} << 40)}));
  Tensor lo = Tensor::from_vector<int64_t>({}, {0});
  auto clipped = fold(node("Clip", 13), {&big, &lo, nullptr});
  ASSERT_EQ(clipped.size(), 1u);
  EXPECT_EQ(test::int_values(clipped[0]), (std::vector<int64_t>{0, 7, int64_t{1} << 40}));
  // An input that is not host-known: the handler declines (the GPU will run it).
  EXPECT_TRUE(fold(node("Relu"), {nullptr}).empty());
}

TEST(ElementwiseUnaryErrors, NameTheNodeAndWhatIsWrong) {
  auto expect_error = [](const ops::NodeInfo& n, const Inputs& in, std::vector<std::string> parts) {
    std::string msg = run_error(n, in);
    EXPECT_NE(msg.find("'unary_under_test'"), std::string::npos) << msg;
    for (const std::string& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
  };
  Tensor f = test::random_tensor({4}, 1);
  expect_error(node("Sigmoid"), {NodeInput{Tensor(DType::Int32, {4})}}, {"int32", "Sigmoid", "float32"});
  expect_error(node("Relu"), {NodeInput{Tensor(DType::UInt8, {4})}}, {"uint8", "Relu"});
  expect_error(node("Abs"), {NodeInput{Tensor(DType::Bool, {4})}}, {"bool"});
  ops::NodeInfo gelu = node("Gelu", 20);
  gelu.attributes.set("approximate", std::string("fast"));
  expect_error(gelu, {NodeInput{f}}, {"approximate", "fast", "tanh"});
  expect_error(node("Clip", 13), {NodeInput{f}, NodeInput{Tensor::from_vector<int64_t>({}, {0}), true}},
               {"min", "int64", "float32"});
  expect_error(node("Clip", 13), {NodeInput{f}, NodeInput{test::random_tensor({2}, 3), true}},
               {"min", "one element", "[2]"});
  expect_error(node("Clip", 11), {NodeInput{Tensor(DType::Int32, {4})}}, {"opset 12", "int32"});
  ops::NodeInfo celu = node("Celu", 12);
  celu.attributes.set("alpha", 0.0f);
  expect_error(celu, {NodeInput{f}}, {"alpha"});
}

}  // namespace
}  // namespace wgi
