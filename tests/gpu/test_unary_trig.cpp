// Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh (rows of elementwise_unary.cpp's table) against
// float64 std:: functions: seeded inputs over each domain, vec4 and scalar paths (sizes with and without a
// multiple of 4), and the tails where the textbook formulas cancel or overflow (tiny arguments, the ends of
// the float32 range, acosh near 1, atanh near +-1, outside the domain: NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "runtime/node_runner.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;

struct TrigCase {
  const char* op;
  float lo, hi;
  double (*reference)(double);
  double rel;  // relative tolerance (reason beside each case)
};

Tensor run(const char* op, const Tensor& x) {
  const ops::NodeInfo node{"trig_under_test", op, "", 13, {}, {}, {}};
  return runtime::run_node(test::device(), node, Inputs{NodeInput{x}})[0];
}

TEST(UnaryTrig, MatchesFloat64OverTheDomain) {
  const TrigCase cases[] = {
      // wgi_sin / wgi_cos are accurate to a few ulp after octant reduction; tan's quotient doubles that, and
      // the reference's condition number (x / (sin x cos x) <= 6 on [-1.4, 1.4]) scales it.
      {"Tan", -1.4f, 1.4f, [](double x) { return std::tan(x); }, 4e-6},
      // wgi's Cephes reductions and polynomials (math.wgsl): a few ulp. (WGSL's builtins promise 4096 ulp
      // and measured up to 4e-4 absolute error on the CPU adapters, which this bound catches.)
      {"Asin", -1.0f, 1.0f, [](double x) { return std::asin(x); }, 4e-6},
      {"Acos", -1.0f, 1.0f, [](double x) { return std::acos(x); }, 4e-6},
      {"Atan", -20.0f, 20.0f, [](double x) { return std::atan(x); }, 4e-6},
      // exp's few-ulp error times the exponent's magnitude (|x| <= 20: ~20 ulp).
      {"Sinh", -20.0f, 20.0f, [](double x) { return std::sinh(x); }, 4e-6},
      {"Cosh", -20.0f, 20.0f, [](double x) { return std::cosh(x); }, 4e-6},
      // log's absolute error (2^-21 near 1) relative to results >= 0.48 where log is used; log1p_unit below.
      {"Asinh", -200.0f, 200.0f, [](double x) { return std::asinh(x); }, 4e-6},
      {"Acosh", 1.0f, 200.0f, [](double x) { return std::acosh(x); }, 4e-6},
      {"Atanh", -0.999f, 0.999f, [](double x) { return std::atanh(x); }, 4e-6},
  };
  for (const TrigCase& c : cases) {
    for (const Shape& shape : {Shape{3}, Shape{2, 3, 5}, Shape{4, 64}, Shape{3, 1031}}) {
      SCOPED_TRACE(std::string(c.op) + " " + shape_to_string(shape));
      Tensor x =
          test::random_tensor(shape, 90 + shape.size() + static_cast<uint64_t>(shape.back()), c.lo, c.hi);
      std::vector<double> ref;
      for (float v : x.data<float>()) ref.push_back(c.reference(v));
      const double rel = c.rel;
      EXPECT_TRUE(
          test::all_close(run(c.op, x), shape, ref, [rel](double r) { return 1e-37 + rel * std::abs(r); }));
    }
  }
}

TEST(UnaryTrig, TailsKeepTheirRelativeAccuracy) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Tail {
    const char* op;
    std::vector<float> xs;
    double (*reference)(double);
  };
  const Tail tails[] = {
      {"Sinh",
       {-89.0f, -30.0f, -1e-3f, -1e-6f, 1e-7f, 1e-3f, 0.7f, 30.0f, 89.0f},
       [](double x) { return std::sinh(x); }},
      {"Cosh", {-89.0f, -1e-6f, 0.0f, 1e-3f, 89.0f}, [](double x) { return std::cosh(x); }},
      {"Asinh",
       {-1e30f, -1e5f, -3.0f, -1e-3f, -1e-7f, 1e-7f, 1e-3f, 0.49f, 0.51f, 1e5f, 1e30f},
       [](double x) { return std::asinh(x); }},
      {"Acosh", {1.0f, 1.0000001f, 1.001f, 1.2f, 1.3f, 1e5f, 1e30f}, [](double x) { return std::acosh(x); }},
      {"Atanh",
       {-0.9999999f, -0.5f, -1e-7f, 1e-4f, 0.33f, 0.34f, 0.9999999f},
       [](double x) { return std::atanh(x); }},
  };
  for (const Tail& t : tails) {
    SCOPED_TRACE(t.op);
    Tensor x = Tensor::from_vector<float>({static_cast<int64_t>(t.xs.size())}, t.xs);
    std::vector<double> ref;
    for (float v : t.xs) ref.push_back(t.reference(v));
    // A few ulp of float32 (the helpers' own error) plus the argument's rounding, which the references see
    // exactly; 1e-37 for subnormal flushing.
    EXPECT_TRUE(
        test::all_close(run(t.op, x), x.shape(), ref, [](double r) { return 1e-37 + 4e-6 * std::abs(r); }));
  }
  // Outside the domains: NaN; at atanh's poles: infinities.
  const std::pair<const char*, std::vector<float>> outside[] = {
      {"Acosh", {0.5f, -3.0f}}, {"Asin", {1.5f, -1.0001f}}, {"Acos", {1.0001f, -3.0f}}};
  for (const auto& [op, xs] : outside) {
    const Tensor y = run(op, Tensor::from_vector<float>({2}, xs));
    for (float v : y.data<float>()) EXPECT_TRUE(std::isnan(v)) << op << " " << v;
  }
  const Tensor atanh = run("Atanh", Tensor::from_vector<float>({4}, {1.0f, -1.0f, 1.5f, -2.0f}));
  EXPECT_EQ(atanh.data<float>()[0], inf);
  EXPECT_EQ(atanh.data<float>()[1], -inf);
  EXPECT_TRUE(std::isnan(atanh.data<float>()[2]) && std::isnan(atanh.data<float>()[3]));
}

}  // namespace
}  // namespace wgi
