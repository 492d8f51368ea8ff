// Quantization and integer ops (src/ops/quantize.cpp, integer_linear.cpp) against the spec's CPU references
// (tests/support/reference_integer.h): QuantizeLinear / DequantizeLinear per tensor, per axis on several axes
// and blocked, with ties (x.5 quotients), saturation and zero points at the ends of the range;
// DynamicQuantizeLinear over many workgroups; MatMulInteger and ConvInteger with exact int32 results
// (batched, broadcast, unaligned, uint8 / int8 mixes, per-row / per-column / per-channel zero points, packed
// constant and runtime B); QLinearMatMul and QLinearConv. Integers are compared exactly, and so are the float
// outputs: every float step is one correctly rounded f32 operation on both sides (software adapters divide
// correctly rounded).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "core/npy.h"
#include "gpu/commands.h"
#include "gpu/uniform.h"
#include "kernels/wgsl_library.h"
#include "onnxruntime_reference.h"
#include "ops/internal_ops.h"
#include "runtime/node_runner.h"
#include "support/model_reference.h"
#include "support/reference_integer.h"
#include "support/reference_normalization.h"
#include "support/run_node.h"
#include "support/tensor_check.h"
#include "support/test_device.h"
#include "wgi/session.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;
using test::run_error;

const test::NodeMaker node{"quantize_under_test"};

std::vector<Tensor> run(const ops::NodeInfo& n, const Inputs& in) {
  return runtime::run_node(test::device(), n, in);
}

template <class T>
Tensor random_ints(const Shape& shape, uint64_t seed, int lo, int hi) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(static_cast<size_t>(element_count(shape)));
  for (T& x : v) x = static_cast<T>(lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1)));
  return Tensor::from_vector<T>(shape, v);
}

Tensor random_8bit(DType t, const Shape& shape, uint64_t seed) {
  return t == DType::UInt8 ? random_ints<uint8_t>(shape, seed, 0, 255)
                           : random_ints<int8_t>(shape, seed, -128, 127);
}

// Exact equality of type, shape and bytes; reports the first difference.
::testing::AssertionResult identical(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure()
           << "got " << dtype_name(got.dtype()) << " " << shape_to_string(got.shape()) << ", want "
           << dtype_name(want.dtype()) << " " << shape_to_string(want.shape());
  }
  if (want.element_count() == 0) return ::testing::AssertionFailure() << "nothing compared";
  if (want.dtype() == DType::Float32) {
    auto g = got.data<float>(), w = want.data<float>();
    for (size_t i = 0; i < g.size(); ++i) {
      if (!(g[i] == w[i]))
        return ::testing::AssertionFailure() << "element " << i << ": " << g[i] << ", want " << w[i];
    }
    return ::testing::AssertionSuccess();
  }
  const std::vector<int64_t> g = test::integer_values(got), w = test::integer_values(want);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] != w[i] && bad++ == 0) first = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << g.size() << " differ; first at " << first << ": "
                                       << g[first] << ", want " << w[first];
}

// Scales that are powers of two times small odd numbers, so x / scale can be an exact half-integer.
Tensor scales(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(std::ldexp(static_cast<float>(1 + 2 * (rng() % 4)), -static_cast<int>(rng() % 6)));
  return Tensor::from_vector<float>({n}, v);
}

// x whose quotients are a mix of random values, exact ties k + 0.5 (both parities) and values past the range.
Tensor quantize_input(const Shape& shape, const Tensor& scale, const test::QuantAxis& q, uint64_t seed) {
  Tensor x = test::random_tensor(shape, seed, -40.0f, 40.0f);
  std::mt19937_64 rng(seed + 1);
  auto xs = x.data<float>();
  for (int64_t i = 0; i < x.element_count(); ++i) {
    const float s = scale.data<float>()[test::quant_param_index(shape, q, i)];
    switch (i % 4) {
      case 0:
        xs[static_cast<size_t>(i)] =
            (static_cast<float>(static_cast<int>(rng() % 301) - 150) + 0.5f) * s;  // tie
        break;
      case 1:
        xs[static_cast<size_t>(i)] =
            static_cast<float>(static_cast<int>(rng() % 2001) - 1000) * s;  // saturates
        break;
      default:
        xs[static_cast<size_t>(i)] *= s * 8;
    }
  }
  return x;
}

// quantize/divide.wgsl's correctly rounded division against the host's (IEEE) f32 division, bit for bit, on
// quotients of every magnitude, exact quotients, ties of the last bit's rounding and the fallbacks (zeros,
// infinities, NaN, subnormals, overflow).
TEST(Quantize, DivisionIsCorrectlyRounded) {
  constexpr const char* kWgsl = R"(
#include "common/dispatch_grid.wgsl"
#include "quantize/divide.wgsl"
struct Params { count: u32, _a: u32, _b: u32, _c: u32, }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> q: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, 64u);
  if (i < params.count) { q[i] = wgi_div_rn(x[i], y[i]); }
}
)";
  std::mt19937_64 rng(123);
  std::vector<float> xs, ys;
  auto bits = [](uint32_t b) { return std::bit_cast<float>(b); };
  for (int i = 0; i < 20000; ++i) {
    // Random significands and exponents over a wide range, both signs.
    const uint32_t ex = 64 + static_cast<uint32_t>(rng() % 128), ey = 64 + static_cast<uint32_t>(rng() % 128);
    xs.push_back(bits(static_cast<uint32_t>(rng() & 0x807fffffu) | (ex << 23)));
    ys.push_back(bits(static_cast<uint32_t>(rng() & 0x807fffffu) | (ey << 23)));
  }
  for (int k = -300; k <= 300; ++k) {  // x / s = k + 0.5 exactly, s = 3 * 2^-7 and 0.1f: the quantize ties
    for (float s : {0.0234375f, 0.1f, 7.0f}) {
      const float x = (static_cast<float>(k) + 0.5f) * s;
      if (x / s == static_cast<float>(k) + 0.5f) xs.push_back(x), ys.push_back(s);
    }
  }
  for (float v : {0.0f, -0.0f, 1.0f, 3.0f, 255.0f, 1e-40f, 3e38f, INFINITY, NAN}) {
    for (float w : {1.0f, 3.0f, 255.0f, 1e-40f, 1e-30f, INFINITY, 0.0f}) xs.push_back(v), ys.push_back(w);
  }
  gpu::Device& d = test::device();
  const uint32_t n = static_cast<uint32_t>(xs.size());
  auto upload = [&](const std::vector<float>& v, const char* label) {
    gpu::Buffer b = d.create_buffer(v.size() * 4, label);
    d.upload(b, 0, std::as_bytes(std::span<const float>(v)));
    return b;
  };
  gpu::Buffer bx = upload(xs, "x"), by = upload(ys, "y"), bq = upload(std::vector<float>(n, -1.0f), "q");
  gpu::ProgramSource program;
  program.label = "test_divide";
  program.wgsl = kernels::preprocess_wgsl("test_divide", kWgsl, {});
  program.bindings = {gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::ReadOnlyStorage,
                      gpu::BindingKind::Storage, gpu::BindingKind::Uniform};
  const gpu::DispatchGrid grid = gpu::compute_dispatch_grid(n, 64, d.limits());
  gpu::BufferSlice slices[] = {{&bx}, {&by}, {&bq}};
  gpu::BoundDispatch dispatch =
      gpu::bind_dispatch(d, d.pipelines().get(program), slices,
                         gpu::UniformBuilder().u32(n).u32(0).u32(0).u32(0).bytes(), grid.groups);
  gpu::CommandBatch batch(d);
  batch.dispatch(dispatch);
  batch.submit();
  std::vector<float> got(n);
  d.download(bq, 0, std::as_writable_bytes(std::span<float>(got)));
  size_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const float want = xs[i] / ys[i];
    // Subnormal quotients and operands take the hardware division, which may flush them to zero.
    if (std::fpclassify(want) == FP_SUBNORMAL || std::fpclassify(xs[i]) == FP_SUBNORMAL ||
        std::fpclassify(ys[i]) == FP_SUBNORMAL) {
      continue;
    }
    const bool same = std::isnan(want) ? std::isnan(got[i])
                                       : std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want);
    if (!same && bad++ < 5) ADD_FAILURE() << xs[i] << " / " << ys[i] << ": " << got[i] << ", want " << want;
  }
  EXPECT_EQ(bad, 0u) << "of " << n;
}

struct AxisCase {
  Shape shape;
  int64_t axis;
  DType type;
};

TEST(Quantize, QuantizeLinearPerAxisMatchesSpec) {
  const AxisCase cases[] = {{{3, 5, 7}, 0, DType::UInt8},
                            {{3, 5, 7}, 1, DType::Int8},
                            {{2, 3, 5, 9}, 3, DType::UInt8},
                            {{2, 3, 5, 9}, -2, DType::Int8},
                            {{1027}, 0, DType::UInt8}};
  uint64_t seed = 100;
  for (const AxisCase& c : cases) {
    SCOPED_TRACE(shape_to_string(c.shape) + " axis " + std::to_string(c.axis));
    const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis;
    const int64_t len = c.shape[static_cast<size_t>(axis)];
    const Tensor scale = scales(len, seed++);
    // Zero points include both ends of the type's range.
    Tensor zp = random_8bit(c.type, {len}, seed++);
    if (c.type == DType::UInt8) zp.data<uint8_t>()[0] = 0, zp.data<uint8_t>()[len - 1] = 255;
    if (c.type == DType::Int8) zp.data<int8_t>()[0] = -128, zp.data<int8_t>()[len - 1] = 127;
    const test::QuantAxis q{axis, 0};
    const Tensor x = quantize_input(c.shape, scale, q, seed++);
    ops::Attributes attrs;
    attrs.set("axis", int64_t{c.axis});
    auto y =
        run(node("QuantizeLinear", 13, attrs), {NodeInput{x}, NodeInput{scale, true}, NodeInput{zp, true}});
    EXPECT_TRUE(identical(y.at(0), test::quantize_linear_reference(x, scale, zp, q)));
    // And back: DequantizeLinear of the quantized values.
    auto back = run(node("DequantizeLinear", 13, attrs),
                    {NodeInput{y[0]}, NodeInput{scale, true}, NodeInput{zp, true}});
    EXPECT_TRUE(identical(back.at(0), test::dequantize_linear_reference(y[0], scale, zp, q)));
  }
}

TEST(Quantize, PerTensorTiesRoundHalfToEvenAndSaturate) {
  // x / 0.5 = -3, -2.5, ..., exact halves; 1000 and -1000 saturate; zero point 0 and 255 and int8's ends.
  std::vector<float> values;
  for (int i = -41; i <= 41; ++i) values.push_back(0.25f * static_cast<float>(i));
  values.push_back(1000.0f);
  values.push_back(-1000.0f);
  const Tensor x = Tensor::from_vector<float>({static_cast<int64_t>(values.size())}, values);
  const Tensor scale = Tensor::from_vector<float>({}, {0.5f});
  for (const Tensor& zp : {Tensor::from_vector<uint8_t>({}, {0}), Tensor::from_vector<uint8_t>({}, {255}),
                           Tensor::from_vector<int8_t>({}, {-128}), Tensor::from_vector<int8_t>({}, {127}),
                           Tensor::from_vector<int8_t>({}, {3})}) {
    for (int opset : {10, 13, 21}) {
      auto y = run(node("QuantizeLinear", opset), {NodeInput{x}, NodeInput{scale}, NodeInput{zp}});
      EXPECT_TRUE(identical(y.at(0), test::quantize_linear_reference(x, scale, zp, {}))) << opset;
    }
  }
  // A [1] zero point with a scalar scale is per tensor too.
  const Tensor zp1 = Tensor::from_vector<int8_t>({1}, {-3});
  auto y1 = run(node("QuantizeLinear", 13), {NodeInput{x}, NodeInput{scale}, NodeInput{zp1}});
  EXPECT_TRUE(identical(y1.at(0), test::quantize_linear_reference(x, scale, zp1, {})));
  // No zero point: uint8 with 0.
  auto y = run(node("QuantizeLinear", 13), {NodeInput{x}, NodeInput{scale}});
  EXPECT_TRUE(identical(
      y.at(0), test::quantize_linear_reference(x, scale, Tensor::from_vector<uint8_t>({}, {0}), {})));
}

TEST(Quantize, BlockedQuantizationOfOpset21) {
  const Shape shape = {3, 10, 4};
  for (int64_t axis : {1, 2}) {
    const int64_t block = axis == 1 ? 4 : 3;  // 10 / 4 and 4 / 3: the last block is partial
    Shape scale_shape = shape;
    scale_shape[static_cast<size_t>(axis)] = (shape[static_cast<size_t>(axis)] + block - 1) / block;
    Tensor scale = scales(element_count(scale_shape), 7 + static_cast<uint64_t>(axis));
    scale = Tensor(DType::Float32, scale_shape, scale.bytes());
    const Tensor zp = random_8bit(DType::Int8, scale_shape, 9);
    const test::QuantAxis q{axis, block};
    const Tensor x = quantize_input(shape, scale, q, 11);
    ops::Attributes attrs;
    attrs.set("axis", int64_t{axis});
    attrs.set("block_size", int64_t{block});
    auto y =
        run(node("QuantizeLinear", 21, attrs), {NodeInput{x}, NodeInput{scale, true}, NodeInput{zp, true}});
    EXPECT_TRUE(identical(y.at(0), test::quantize_linear_reference(x, scale, zp, q)));
    auto back = run(node("DequantizeLinear", 21, attrs),
                    {NodeInput{y[0]}, NodeInput{scale, true}, NodeInput{zp, true}});
    EXPECT_TRUE(identical(back.at(0), test::dequantize_linear_reference(y[0], scale, zp, q)));
  }
}

TEST(Quantize, DequantizeLinearInt8AndInt32) {
  const Tensor x = random_8bit(DType::Int8, {4, 33}, 21);
  const Tensor scale = scales(33, 22);
  const Tensor zp = random_8bit(DType::Int8, {33}, 23);
  ops::Attributes attrs;
  attrs.set("axis", int64_t{1});
  auto y = run(node("DequantizeLinear", 13, attrs), {NodeInput{x}, NodeInput{scale}, NodeInput{zp}});
  EXPECT_TRUE(identical(y.at(0), test::dequantize_linear_reference(x, scale, zp, {1, 0})));
  const Tensor xi = random_ints<int32_t>({37}, 24, -100000, 100000);
  const Tensor s = Tensor::from_vector<float>({}, {0.0625f});
  auto yi = run(node("DequantizeLinear", 10), {NodeInput{xi}, NodeInput{s}});
  EXPECT_TRUE(identical(yi.at(0),
                        test::dequantize_linear_reference(xi, s, Tensor::from_vector<int32_t>({}, {0}), {})));
}

TEST(Quantize, DynamicQuantizeLinearOverManyWorkgroups) {
  struct Case {
    Shape shape;
    float lo, hi;
  };
  // Mixed signs over several range workgroups (4096 elements each: two launches, the range's partials, then
  // each workgroup finishing the range and quantizing its chunk) and in one chunk (one launch, up to exactly
  // 4096 elements), all positive (min adjusted to 0), all negative (max adjusted to 0),
  // and all zero (scale 1 / 255, as the spec's reference sets it).
  const Case cases[] = {{{3, 7, 613}, -2.5f, 7.0f}, {{1, 300}, 0.5f, 3.0f}, {{17}, -9.0f, -1.0f},
                        {{5, 5}, 0.0f, 0.0f},       {{4096}, -1.0f, 4.0f},  {{4097}, -3.0f, 0.5f}};
  uint64_t seed = 31;
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_to_string(c.shape));
    const Tensor x =
        c.lo == c.hi ? Tensor(DType::Float32, c.shape) : test::random_tensor(c.shape, seed++, c.lo, c.hi);
    const test::DynamicQuantized want = test::dynamic_quantize_reference(x);
    const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(),
                                                node("DynamicQuantizeLinear", 11), {{NodeInput{x}}});
    EXPECT_EQ(plan.launches.size(), x.element_count() <= 4096 ? 1u : 2u);
    auto y = run(node("DynamicQuantizeLinear", 11), {NodeInput{x}});
    ASSERT_EQ(y.size(), 3u);
    EXPECT_EQ(y[1].data<float>()[0], want.scale);
    EXPECT_EQ(y[2].data<uint8_t>()[0], want.zero_point);
    EXPECT_TRUE(identical(y[0], want.y));
  }
}

struct MatMulCase {
  Shape a, b;
  DType a_type, b_type;
  int a_zp;  // 0 none, 1 scalar, 2 per row
  int b_zp;  // 0 none, 1 scalar, 2 per column
  bool b_constant;
};

std::vector<int64_t> zp_values(const std::optional<NodeInput>& t) {
  return t ? test::integer_values(t->value) : std::vector<int64_t>{};
}

TEST(Quantize, MatMulIntegerIsExact) {
  const MatMulCase cases[] = {
      {{19, 37}, {37, 23}, DType::UInt8, DType::UInt8, 1, 1, true},
      {{2, 3, 19, 37}, {3, 37, 23}, DType::UInt8, DType::Int8, 1, 2, true},
      {{2, 1, 5, 70}, {4, 70, 33}, DType::Int8, DType::Int8, 2, 2, false},
      {{2, 6, 64}, {64, 64}, DType::Int8, DType::UInt8, 0, 2, true},
      {{37}, {37, 9}, DType::UInt8, DType::Int8, 1, 0, true},
      {{3, 40, 31}, {31}, DType::UInt8, DType::UInt8, 1, 1, false},
      {{20, 70}, {70, 45}, DType::Int8, DType::Int8, 2, 2, true},  // the packed tile, int8 both sides
  };
  uint64_t seed = 50;
  for (const MatMulCase& c : cases) {
    SCOPED_TRACE(shape_to_string(c.a) + " x " + shape_to_string(c.b));
    const Tensor a = random_8bit(c.a_type, c.a, seed++);
    const Tensor b = random_8bit(c.b_type, c.b, seed++);
    const int64_t m = c.a.size() > 1 ? c.a[c.a.size() - 2] : 1;
    const int64_t n = c.b.size() > 1 ? c.b.back() : 1;
    Inputs in = {NodeInput{a}, NodeInput{b, c.b_constant}, std::nullopt, std::nullopt};
    if (c.a_zp) in[2] = NodeInput{random_8bit(c.a_type, c.a_zp == 1 ? Shape{} : Shape{m}, seed++)};
    if (c.b_zp) in[3] = NodeInput{random_8bit(c.b_type, c.b_zp == 1 ? Shape{} : Shape{n}, seed++), true};
    Tensor want = test::matmul_integer_reference(
        c.a.size() == 1 ? Tensor(a.dtype(), {1, c.a[0]}, a.bytes()) : a,
        c.b.size() == 1 ? Tensor(b.dtype(), {c.b[0], 1}, b.bytes()) : b, zp_values(in[2]), zp_values(in[3]));
    Shape want_shape = want.shape();
    if (c.a.size() == 1) want_shape.erase(want_shape.end() - 2);
    if (c.b.size() == 1) want_shape.pop_back();
    want = Tensor(DType::Int32, want_shape, want.bytes());
    auto y = run(node("MatMulInteger", 10), in);
    EXPECT_TRUE(identical(y.at(0), want));
  }
}

// The GEMV for a few rows and the tile kernel (integer_gemv.wgsl, integer_matmul.wgsl with a constant B:
// bytes taken unsigned, the zero points' terms added from A's and B's sums; each with and without packed dot
// products) against the exact reference: every mix of
// uint8 and int8, zero points none / per tensor / per row / per column at both ends of the range, one to
// eight rows, A's batch dims folded in, K not a multiple of 4 and K over several staged chunks, N unaligned.
TEST(Quantize, MatMulIntegerGemvIsExact) {
  const MatMulCase cases[] = {
      {{1, 37}, {37, 23}, DType::UInt8, DType::UInt8, 1, 1, true},
      {{3, 64}, {64, 70}, DType::UInt8, DType::Int8, 2, 2, true},
      {{2, 3, 45}, {45, 33}, DType::Int8, DType::Int8, 1, 2, true},
      {{8, 30}, {30, 129}, DType::Int8, DType::UInt8, 2, 0, true},
      {{5, 1}, {1, 7}, DType::UInt8, DType::UInt8, 0, 1, true},
      {{1, 4500}, {4500, 9}, DType::UInt8, DType::Int8, 1, 2, true},
      {{2, 2100}, {2100, 5}, DType::Int8, DType::UInt8, 2, 1, true},
  };
  uint64_t seed = 150;
  for (const MatMulCase& c : cases) {
    SCOPED_TRACE(shape_to_string(c.a) + " x " + shape_to_string(c.b));
    const Tensor a = random_8bit(c.a_type, c.a, seed++);
    const Tensor b = random_8bit(c.b_type, c.b, seed++);
    const int64_t m = c.a[c.a.size() - 2], n = c.b.back();
    Inputs in = {NodeInput{a}, NodeInput{b, true}, std::nullopt, std::nullopt};
    if (c.a_zp) in[2] = NodeInput{random_8bit(c.a_type, c.a_zp == 1 ? Shape{} : Shape{m}, seed++)};
    if (c.b_zp) in[3] = NodeInput{random_8bit(c.b_type, c.b_zp == 1 ? Shape{} : Shape{n}, seed++), true};
    const Tensor want = test::matmul_integer_reference(a, b, zp_values(in[2]), zp_values(in[3]));
    // "_bytes": planned as for a device without WGSL's packed 4x8 dot products (byte by byte).
    for (const std::string kernel : {"gemv", "gemv_bytes", "tiled", "tiled_bytes"}) {
      const bool tiled = kernel.starts_with("tiled"), bytes = kernel.ends_with("_bytes");
      ops::NodeInfo n_node = node("MatMulInteger", 10);
      n_node.attributes.set(ops::kForcedKernelAttribute, std::string(tiled ? "tiled" : "gemv"));
      runtime::NodeRunOptions options;
      options.capabilities = test::device().capabilities();
      if (bytes) options.capabilities->features.packed_int8_dot = false;
      const ops::OpPlan plan = runtime::plan_node(*options.capabilities, n_node, in);
      ASSERT_EQ(plan.launches.size(), 1u);
      const std::string& label = plan.launches[0].program.label;
      EXPECT_EQ(label.find("gemv") != std::string::npos, !tiled) << label;
      EXPECT_EQ(label.find("_dot4") != std::string::npos, !bytes && test::device().features().packed_int8_dot)
          << label;
      EXPECT_TRUE(identical(runtime::run_node(test::device(), n_node, in, options).at(0), want)) << kernel;
    }
  }
  // Where it cannot run: a per-row zero point of A with batch dims, a runtime B, more than 8 rows.
  const Tensor a = random_8bit(DType::UInt8, {2, 3, 8}, 170), b = random_8bit(DType::UInt8, {8, 4}, 171);
  ops::NodeInfo forced = node("MatMulInteger", 10);
  forced.attributes.set(ops::kForcedKernelAttribute, std::string("gemv"));
  EXPECT_NE(
      run_error(forced, {NodeInput{a}, NodeInput{b, true}, NodeInput{random_8bit(DType::UInt8, {3}, 172)}})
          .find("the gemv kernel takes a constant 2-D B and at most 8 rows of A"),
      std::string::npos);
  EXPECT_NE(run_error(forced, {NodeInput{a}, NodeInput{b}}).find("the gemv kernel takes"), std::string::npos);
  EXPECT_NE(run_error(forced, {NodeInput{random_8bit(DType::UInt8, {9, 8}, 173)}, NodeInput{b, true}})
                .find("this product has 9 rows"),
            std::string::npos);
}

// MatMulInteger with wgi.scaled_output (graph::fuse_dynamically_quantized_products): the exact int32 product,
// then f32(sum) * (a_scale * b_scale[n]) (+ bias[n]) in float32, the operations of the Cast, Mul and Add it
// replaces; against those computed on the host in float32 from the exact sums (|sum| < 2^24 here, so the
// conversion is exact). The GPU may contract the multiply and the bias add into one FMA (one rounding instead
// of two): half an ULP of the result's magnitude apart at most, so one ULP is allowed; anything else (a wrong
// scale, column or zero point) is off by far more.
TEST(Quantize, ScaledMatMulIntegerIsItsCastMulAndAdd) {
  struct ScaledCase {
    Shape a;
    int64_t n;
    DType b_type;
    bool b_scale_per_column, bias;
    // The epilogue graph::fuse_residual_adds / fuse_activations add: a residual R of the output's shape, or
    // one of [N] (broadcast: the product, then one Add), and Relu, after the bias.
    enum class Residual { None, Same, Broadcast } residual = Residual::None;
    bool relu = false;
  };
  uint64_t seed = 80;
  for (const ScaledCase& c :
       {ScaledCase{{1, 40}, 24, DType::UInt8, false, true},
        ScaledCase{{2, 3, 37}, 33, DType::Int8, true, true},
        ScaledCase{{5, 64}, 7, DType::UInt8, true, false},
        ScaledCase{{3, 40}, 24, DType::UInt8, true, true, ScaledCase::Residual::Same, true},
        ScaledCase{{2, 40}, 9, DType::Int8, false, true, ScaledCase::Residual::Broadcast, true}}) {
    // all on both kernels
    const int64_t k = c.a.back(), m = element_count(c.a) / k;
    SCOPED_TRACE(shape_to_string(c.a) + " N " + std::to_string(c.n));
    const Tensor a = random_8bit(DType::UInt8, c.a, seed++);
    const Tensor b = random_8bit(c.b_type, {k, c.n}, seed++);
    const Tensor a_zp = random_8bit(DType::UInt8, {}, seed++);
    const Tensor b_zp = random_8bit(c.b_type, {c.n}, seed++);
    const Tensor a_scale = Tensor::from_vector<float>({}, {0.0173f});
    const Tensor b_scale = test::random_tensor({c.b_scale_per_column ? c.n : 1}, seed++, 1e-3f, 2e-2f);
    const Tensor bias = test::random_tensor({c.n}, seed++);
    ops::NodeInfo n = node("MatMulInteger", 10);
    n.attributes.set(ops::kIntegerScaledOutputAttribute, int64_t{1});
    Inputs in = {NodeInput{a},          NodeInput{b, true}, NodeInput{a_zp},
                 NodeInput{b_zp, true}, NodeInput{a_scale}, NodeInput{b_scale, true}};
    if (c.bias) in.push_back(NodeInput{bias, true});
    Shape out_shape = c.a;
    out_shape.back() = c.n;
    const Tensor residual =
        test::random_tensor(c.residual == ScaledCase::Residual::Broadcast ? Shape{c.n} : out_shape, seed++);
    if (c.residual != ScaledCase::Residual::None) {
      in.resize(ops::ScaledIntegerInput::kResidual);
      in.push_back(NodeInput{residual});
      n.attributes.set(ops::kFusedResidualAttribute, int64_t{1});
    }
    if (c.relu) n.attributes.set(ops::kFusedActivationAttribute, std::string("Relu"));
    const Tensor sums = test::matmul_integer_reference(Tensor(DType::UInt8, {m, k}, a.bytes()), b,
                                                       zp_values(in[2]), zp_values(in[3]));
    for (const char* kernel : {"gemv", "tiled"}) {
      SCOPED_TRACE(kernel);
      n.attributes.set(ops::kForcedKernelAttribute, std::string(kernel));
      const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), n, in);
      ASSERT_EQ(plan.launches.size(), c.residual == ScaledCase::Residual::Broadcast ? 2u : 1u);
      const std::string& label = plan.launches[0].program.label;
      EXPECT_TRUE(label.starts_with(std::string(kernel) == "gemv" ? "matmul_integer_gemv"
                                                                  : "matmul_integer_packed_scaled"))
          << label;
      if (c.residual == ScaledCase::Residual::Same) {
        EXPECT_NE(label.find("_relu_res"), std::string::npos) << label;
      }
      const auto y = run(n, in);
      ASSERT_EQ(y.at(0).dtype(), DType::Float32);
      ASSERT_EQ(y.at(0).shape(), out_shape);
      int64_t nonzero = 0;
      for (int64_t i = 0; i < m * c.n; ++i) {
        const int64_t col = i % c.n;
        const float scale = a_scale.data<float>()[0] * b_scale.data<float>()[c.b_scale_per_column ? col : 0];
        float want = static_cast<float>(sums.data<int32_t>()[i]) * scale;
        if (c.bias) want = want + bias.data<float>()[col];
        if (c.residual != ScaledCase::Residual::None)
          want = want + residual.data<float>()[c.residual == ScaledCase::Residual::Same ? i : col];
        if (c.relu) want = std::max(want, 0.0f);
        const float got = y[0].data<float>()[i];
        nonzero += want != 0.0f;
        // One ULP, or two with the residual (a second add the GPU may contract).
        const float ulps = c.residual == ScaledCase::Residual::None ? 1.0f : 2.0f;
        ASSERT_LE(std::abs(got - want), ulps * std::abs(want) * 0x1p-23f)
            << "element " << i << ": " << got << ", want " << want;
      }
      EXPECT_GT(nonzero, 0);
    }
  }
  // B's scale must be a constant (it goes into the kernel's column constants).
  ops::NodeInfo n = node("MatMulInteger", 10);
  n.attributes.set(ops::kIntegerScaledOutputAttribute, int64_t{1});
  const Tensor a = random_8bit(DType::UInt8, {2, 8}, 90), b = random_8bit(DType::UInt8, {8, 4}, 91);
  EXPECT_NE(run_error(n, {NodeInput{a}, NodeInput{b, true}, std::nullopt, std::nullopt,
                          NodeInput{Tensor::from_vector<float>({}, {0.5f})},
                          NodeInput{Tensor::from_vector<float>({}, {0.5f})}})
                .find("input 5 (B's scale) must be a float32 constant of 1 or 4 values"),
            std::string::npos);
}

// A MatMulInteger that quantizes its own A (wgi.quantize_a, graph::fuse_dynamic_quantization_into_products):
// DynamicQuantizeLinear of the float A on the host (ONNX's reference, float32), the exact int32 product, the
// rescale in float32 (one ULP for a contracted multiply-add, as above). Up to 8 rows on the GEMV, which
// quantizes A as it stages it (one launch; A over one and several staging chunks), more on the tile kernel
// after DynamicQuantizeLinear's launches; A with mixed signs, all positive, and all zero (scale 1 / 255).
TEST(Quantize, MatMulIntegerQuantizingItsOwnAIsDynamicQuantizeLinearThenTheProduct) {
  struct Case {
    Shape a;
    int64_t n;
    DType b_type;
    float lo, hi;
    bool gemv;
  };
  uint64_t seed = 400;
  for (const Case& c : {Case{{1, 40}, 24, DType::UInt8, -2.0f, 3.5f, true},
                        Case{{2, 3, 37}, 33, DType::Int8, 0.25f, 4.0f, true},
                        Case{{1, 4400}, 9, DType::UInt8, -1.0f, 1.0f, true},  // K over two chunks
                        Case{{4, 16}, 5, DType::Int8, 0.0f, 0.0f, true},
                        Case{{3, 5, 29}, 17, DType::UInt8, -6.0f, 0.5f, false}}) {
    const int64_t k = c.a.back(), m = element_count(c.a) / k;
    SCOPED_TRACE(shape_to_string(c.a) + " N " + std::to_string(c.n));
    const Tensor a =
        c.lo == c.hi ? Tensor(DType::Float32, c.a) : test::random_tensor(c.a, seed++, c.lo, c.hi);
    const Tensor b = random_8bit(c.b_type, {k, c.n}, seed++);
    const Tensor b_zp = random_8bit(c.b_type, {c.n}, seed++);
    const Tensor b_scale = test::random_tensor({c.n}, seed++, 1e-3f, 2e-2f);
    const Tensor bias = test::random_tensor({c.n}, seed++);
    ops::NodeInfo n = node("MatMulInteger", 10);
    n.attributes.set(ops::kIntegerScaledOutputAttribute, int64_t{1});
    n.attributes.set(ops::kIntegerQuantizeAAttribute, int64_t{1});
    const Inputs in = {NodeInput{a}, NodeInput{b, true},       std::nullopt,         NodeInput{b_zp, true},
                       std::nullopt, NodeInput{b_scale, true}, NodeInput{bias, true}};
    const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), n, in);
    if (c.gemv) {
      ASSERT_EQ(plan.launches.size(), 1u);
      EXPECT_NE(plan.launches[0].program.label.find("_quantize_a"), std::string::npos)
          << plan.launches[0].program.label;
    } else {
      ASSERT_EQ(plan.launches.size(), 2u);  // DynamicQuantizeLinear in one launch, then the tile kernel
      EXPECT_EQ(plan.launches[0].program.label, "dynamic_quantize_single");
    }
    const test::DynamicQuantized q = test::dynamic_quantize_reference(a);
    const Tensor sums = test::matmul_integer_reference(Tensor(DType::UInt8, {m, k}, q.y.bytes()), b,
                                                       {q.zero_point}, zp_values(in[3]));
    const auto y = run(n, in);
    ASSERT_EQ(y.at(0).dtype(), DType::Float32);
    Shape out_shape = c.a;
    out_shape.back() = c.n;
    ASSERT_EQ(y.at(0).shape(), out_shape);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < m * c.n; ++i) {
      const int64_t col = i % c.n;
      const float want =
          static_cast<float>(sums.data<int32_t>()[i]) * (q.scale * b_scale.data<float>()[col]) +
          bias.data<float>()[col];
      const float got = y[0].data<float>()[i];
      nonzero += sums.data<int32_t>()[i] != 0;
      ASSERT_LE(std::abs(got - want), std::abs(want) * 0x1p-23f)
          << "element " << i << ": " << got << ", want " << want;
    }
    if (c.lo != c.hi) {
      EXPECT_GT(nonzero, m * c.n / 2);
    }
  }
  // The product computes A's zero point and scale: inputs 2 and 4 must be empty, and A float32.
  ops::NodeInfo n = node("MatMulInteger", 10);
  n.attributes.set(ops::kIntegerScaledOutputAttribute, int64_t{1});
  n.attributes.set(ops::kIntegerQuantizeAAttribute, int64_t{1});
  const Tensor b = random_8bit(DType::UInt8, {8, 4}, 430);
  const NodeInput b_scale{Tensor::from_vector<float>({}, {0.5f}), true};
  EXPECT_NE(
      run_error(n, {NodeInput{test::random_tensor({2, 8}, 431)}, NodeInput{b, true},
                    NodeInput{Tensor::from_vector<uint8_t>({}, {3})}, std::nullopt, std::nullopt, b_scale})
          .find("inputs 2 and 4 must be empty"),
      std::string::npos);
  EXPECT_NE(run_error(n, {NodeInput{random_8bit(DType::UInt8, {2, 8}, 432)}, NodeInput{b, true}, std::nullopt,
                          std::nullopt, std::nullopt, b_scale})
                .find("quantizes a float32 A"),
            std::string::npos);
}

// A LayerNormalization taken into a product that quantizes its own A (graph::fuse_layer_norm_into_products on
// wgi.quantize_a): the normalised rows, its last output, against float64 (relative L2 1e-6: float32
// statistics); the products against the host's ONNX quantization of those same rows (the values the kernel
// quantized: it writes the rows it normalised), their exact sums and the rescale, one ULP. On the GEMV (one
// launch; with one output and three blocks, where the device has the bindings) and after a LayerNorm launch
// (the tile kernel: LayerNorm, DynamicQuantizeLinear, the product).
TEST(Quantize, MatMulIntegerNormalizingAndQuantizingItsOwnA) {
  struct Case {
    Shape a;
    std::vector<int64_t> split;
    const char* kernel;
  };
  const float epsilon = 1e-5f;
  uint64_t seed = 600;
  for (const Case& c : {Case{{1, 96}, {}, "gemv"}, Case{{3, 70}, {}, "gemv"},
                        Case{{1, 768}, {8, 16, 9}, "gemv"}, Case{{10, 40}, {}, "tiled"}}) {
    const int64_t k = c.a.back(), m = element_count(c.a) / k;
    int64_t n = 21;
    if (!c.split.empty()) n = c.split[0] + c.split[1] + c.split[2];
    SCOPED_TRACE(shape_to_string(c.a) + " " + c.kernel + (c.split.empty() ? "" : " split"));
    const Tensor x = test::random_tensor(c.a, seed++, -2.0f, 3.0f);
    const Tensor scale = test::random_tensor({k}, seed++, 0.5f, 1.5f);
    const Tensor ln_bias = test::random_tensor({k}, seed++);
    const Tensor b = random_8bit(DType::UInt8, {k, n}, seed++);
    const Tensor b_zp = random_8bit(DType::UInt8, {n}, seed++);
    const Tensor b_scale = test::random_tensor({n}, seed++, 1e-3f, 2e-2f);
    const Tensor bias = test::random_tensor({n}, seed++);
    ops::NodeInfo n_info = node("MatMulInteger", 10);
    n_info.attributes.set(ops::kIntegerScaledOutputAttribute, int64_t{1});
    n_info.attributes.set(ops::kIntegerQuantizeAAttribute, int64_t{1});
    n_info.attributes.set(ops::kMatMulLayerNormEpsilonAttribute, epsilon);
    n_info.attributes.set(ops::kForcedKernelAttribute, std::string(c.kernel));
    if (!c.split.empty()) n_info.attributes.set(ops::kSplitColumnsAttribute, c.split);
    const size_t products = c.split.empty() ? 1 : c.split.size();
    n_info.output_names.assign(products + 1, "");
    Inputs in = {
        NodeInput{x},           NodeInput{b, true},       std::nullopt,          NodeInput{b_zp, true},
        std::nullopt,           NodeInput{b_scale, true}, NodeInput{bias, true}, std::nullopt,
        NodeInput{scale, true}, NodeInput{ln_bias, true}};
    const gpu::Capabilities& caps = test::device().capabilities();
    const bool in_gemv = std::string(c.kernel) == "gemv" &&
                         5 + products + 2 <= caps.limits.max_storage_buffers_per_shader_stage;
    const ops::OpPlan plan = runtime::plan_node(caps, n_info, in);
    EXPECT_EQ(plan.launches.back().program.label.find("_ln") != std::string::npos, in_gemv)
        << plan.launches.back().program.label;
    if (in_gemv) {
      EXPECT_EQ(plan.launches.size(), 1u);
      // What the planner counted before fusing (ops/integer_linear.cpp, integer_gemv_storage_buffers) is
      // what the launch binds: a, b, B's zero point, the column sums and parameters, each output, the
      // LayerNorm's parameters and the normalised rows.
      EXPECT_EQ(plan.launches.back().bindings.size(), 5 + products + 2);
    }

    const auto out = run(n_info, in);
    ASSERT_EQ(out.size(), products + 1);
    const Tensor& normalized = out.back();
    const test::NormReference ln =
        test::layer_norm_reference(x, static_cast<int64_t>(c.a.size()) - 1, scale, &ln_bias, epsilon).y;
    const test::Float64Array y{ln.shape, ln.values};
    EXPECT_TRUE(test::close_in_l2(normalized, y, 1e-6)) << "normalised X";
    const test::DynamicQuantized q = test::dynamic_quantize_reference(normalized);
    const Tensor sums = test::matmul_integer_reference(Tensor(DType::UInt8, {m, k}, q.y.bytes()), b,
                                                       {q.zero_point}, zp_values(in[3]));
    int64_t begin = 0, compared = 0;
    for (size_t block = 0; block < products; ++block) {
      const int64_t width = c.split.empty() ? n : c.split[block];
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t j = 0; j < width; ++j) {
          const int64_t col = begin + j;
          const float want =
              static_cast<float>(sums.data<int32_t>()[r * n + col]) * (q.scale * b_scale.data<float>()[col]) +
              bias.data<float>()[col];
          const float got = out[block].data<float>()[r * width + j];
          ASSERT_LE(std::abs(got - want), std::abs(want) * 0x1p-23f)
              << "block " << block << " row " << r << " column " << j << ": " << got << ", want " << want;
          compared += sums.data<int32_t>()[r * n + col] != 0;
        }
      }
      begin += width;
    }
    EXPECT_GT(compared, m * n / 2);
  }
}

// Sibling products merged (graph::merge_sibling_products: wgi.split_columns on a rescaled MatMulInteger):
// each output block holds its columns of the whole product, bit for bit, on the GEMV (which writes the blocks
// itself, here also quantizing A) and on the tile kernel (the product, then one copy into the blocks); two
// and three blocks, widths not multiples of four.
TEST(Quantize, MergedScaledMatMulIntegerWritesEachBlock) {
  struct Case {
    int64_t rows;
    std::vector<int64_t> widths;
    const char* kernel;
  };
  uint64_t seed = 500;
  for (const Case& c : {Case{2, {5, 7, 4}, "gemv"}, Case{1, {9, 8}, "gemv"}, Case{12, {5, 7, 4}, "tiled"},
                        Case{11, {6, 3}, "tiled"}}) {
    SCOPED_TRACE(std::to_string(c.rows) + " rows, " + c.kernel);
    const int64_t k = 37;
    int64_t n = 0;
    for (int64_t w : c.widths) n += w;
    const Tensor a = test::random_tensor({c.rows, k}, seed++, -2.0f, 3.0f);
    const Tensor b = random_8bit(DType::Int8, {k, n}, seed++);
    const Tensor b_zp = random_8bit(DType::Int8, {n}, seed++);
    const Tensor b_scale = test::random_tensor({n}, seed++, 1e-3f, 2e-2f);
    const Tensor bias = test::random_tensor({n}, seed++);
    const Inputs in = {NodeInput{a}, NodeInput{b, true},       std::nullopt,         NodeInput{b_zp, true},
                       std::nullopt, NodeInput{b_scale, true}, NodeInput{bias, true}};
    ops::NodeInfo whole = node("MatMulInteger", 10);
    whole.attributes.set(ops::kIntegerScaledOutputAttribute, int64_t{1});
    whole.attributes.set(ops::kIntegerQuantizeAAttribute, int64_t{1});
    whole.attributes.set(ops::kForcedKernelAttribute, std::string(c.kernel));
    ops::NodeInfo split = whole;
    split.attributes.set(ops::kSplitColumnsAttribute, c.widths);
    const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), split, in);
    const bool gemv = std::string(c.kernel) == "gemv";
    // GEMV: one launch; tile: DynamicQuantizeLinear, the product, the copy into the blocks.
    EXPECT_EQ(plan.launches.size(), gemv ? 1u : 3u);
    const Tensor want = run(whole, in).at(0);
    const auto got = run(split, in);
    ASSERT_EQ(got.size(), c.widths.size());
    int64_t start = 0, compared = 0;
    for (size_t block = 0; block < c.widths.size(); ++block) {
      const int64_t w = c.widths[block];
      ASSERT_EQ(got[block].shape(), (Shape{c.rows, w}));
      for (int64_t r = 0; r < c.rows; ++r) {
        for (int64_t j = 0; j < w; ++j) {
          ASSERT_EQ(got[block].data<float>()[r * w + j], want.data<float>()[r * n + start + j])
              << "block " << block << " row " << r << " column " << j;
          compared += want.data<float>()[r * n + start + j] != 0.0f;
        }
      }
      start += w;
    }
    EXPECT_GT(compared, c.rows * n / 2);
  }
}

TEST(Quantize, MatMulIntegerWrapsLikeInt32) {
  // 255 * 255 * 40000 > 2^31: ONNX Runtime's int32 accumulator wraps, and so does wgi's (no float, no clamp).
  const int64_t k = 40000;
  const Tensor a = Tensor::from_vector<uint8_t>({1, k}, std::vector<uint8_t>(k, 255));
  const Tensor b = Tensor::from_vector<uint8_t>({k, 2}, std::vector<uint8_t>(2 * k, 255));
  auto y = run(node("MatMulInteger", 10), {NodeInput{a}, NodeInput{b, true}});
  EXPECT_TRUE(identical(y.at(0), test::matmul_integer_reference(a, b, {}, {})));
}

TEST(Quantize, ConvIntegerIsExact) {
  struct Case {
    Shape x, w;
    DType x_type, w_type;
    test::ConvIntegerParams p;
    bool per_channel;
  };
  const Case cases[] = {
      {{2, 3, 11, 9}, {5, 3, 3, 3}, DType::UInt8, DType::UInt8, {1, {1, 1}, {1, 1}, {1, 1, 1, 1}}, false},
      {{1, 4, 13, 10}, {6, 2, 3, 2}, DType::UInt8, DType::Int8, {2, {2, 1}, {1, 2}, {0, 1, 2, 0}}, true},
      {{3, 2, 7, 7}, {4, 2, 1, 1}, DType::Int8, DType::Int8, {1, {1, 1}, {1, 1}, {0, 0, 0, 0}}, true},
  };
  uint64_t seed = 70;
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_to_string(c.x) + " * " + shape_to_string(c.w));
    const Tensor x = random_8bit(c.x_type, c.x, seed++);
    const Tensor w = random_8bit(c.w_type, c.w, seed++);
    const Tensor x_zp = random_8bit(c.x_type, {}, seed++);
    const Tensor w_zp = random_8bit(c.w_type, c.per_channel ? Shape{c.w[0]} : Shape{}, seed++);
    ops::Attributes attrs;
    attrs.set("group", int64_t{c.p.group});
    attrs.set("strides", c.p.strides);
    attrs.set("dilations", c.p.dilations);
    attrs.set("pads", c.p.pads);
    const Tensor want =
        test::conv_integer_reference(x, w, test::integer_values(x_zp)[0], test::integer_values(w_zp), c.p);
    // The weight prepacked (an initializer) and read as a runtime tensor.
    for (bool constant : {true, false}) {
      auto y = run(node("ConvInteger", 10, attrs),
                   {NodeInput{x}, NodeInput{w, constant}, NodeInput{x_zp}, NodeInput{w_zp, true}});
      EXPECT_TRUE(identical(y.at(0), want)) << (constant ? "packed" : "runtime") << " weight";
    }
  }
}

// ConvInteger with wgi.scaled_output (graph::fuse_dynamically_quantized_products on a conv): the exact int32
// sums, then f32(sum) * (x_scale * w_scale[m]) (+ bias[m]) (+ R) and the activation, per output channel m,
// as the Cast, Muls and Adds it replaces compute them in float32; against those on the host from the exact
// sums (< 2^24 here). One ULP for the contraction the GPU may make, two with a residual (a second add).
TEST(Quantize, ScaledConvIntegerIsItsCastMulAndAdd) {
  struct ScaledConvCase {
    Shape x, w;
    DType w_type;
    test::ConvIntegerParams p;
    bool per_channel_scale, bias;
    enum class Residual { None, Same, Broadcast } residual = Residual::None;  // Broadcast: [M, 1, 1]
    bool relu = false;
  };
  const ScaledConvCase cases[] = {
      {{1, 3, 9, 7}, {5, 3, 3, 3}, DType::UInt8, {1, {1, 1}, {1, 1}, {1, 1, 1, 1}}, false, true},
      {{2, 4, 10, 9}, {6, 2, 3, 2}, DType::Int8, {2, {2, 1}, {1, 2}, {0, 1, 2, 0}}, true, false},
      {{2, 8, 5, 5},
       {8, 1, 3, 3},
       DType::UInt8,
       {8, {1, 1}, {1, 1}, {1, 1, 1, 1}},
       true,
       true,
       ScaledConvCase::Residual::Same,
       true},  // depthwise, with ConvPosEnc's residual
      {{1, 6, 6, 6},
       {4, 6, 1, 1},
       DType::Int8,
       {1, {1, 1}, {1, 1}, {0, 0, 0, 0}},
       true,
       true,
       ScaledConvCase::Residual::Broadcast,
       true},
  };
  uint64_t seed = 300;
  for (const ScaledConvCase& c : cases) {
    SCOPED_TRACE(shape_to_string(c.x) + " * " + shape_to_string(c.w));
    const int64_t channels = c.w[0];
    const Tensor x = random_8bit(DType::UInt8, c.x, seed++);
    const Tensor w = random_8bit(c.w_type, c.w, seed++);
    const Tensor x_zp = random_8bit(DType::UInt8, {}, seed++);
    const Tensor w_zp = random_8bit(c.w_type, {channels}, seed++);
    const Tensor x_scale = Tensor::from_vector<float>({}, {0.0219f});
    const Tensor w_scale = test::random_tensor({c.per_channel_scale ? channels : 1}, seed++, 1e-3f, 2e-2f);
    const Tensor bias = test::random_tensor({channels}, seed++);
    ops::Attributes attrs;
    attrs.set("group", int64_t{c.p.group});
    attrs.set("strides", c.p.strides);
    attrs.set("dilations", c.p.dilations);
    attrs.set("pads", c.p.pads);
    ops::NodeInfo n = node("ConvInteger", 10, attrs);
    n.attributes.set(ops::kIntegerScaledOutputAttribute, int64_t{1});
    Inputs in = {NodeInput{x},          NodeInput{w, true}, NodeInput{x_zp},
                 NodeInput{w_zp, true}, NodeInput{x_scale}, NodeInput{w_scale, true}};
    if (c.bias) in.push_back(NodeInput{bias, true});
    const Tensor sums =
        test::conv_integer_reference(x, w, test::integer_values(x_zp)[0], test::integer_values(w_zp), c.p);
    const Shape& out_shape = sums.shape();
    const int64_t plane = out_shape[2] * out_shape[3];
    const Tensor residual = test::random_tensor(
        c.residual == ScaledConvCase::Residual::Broadcast ? Shape{channels, 1, 1} : out_shape, seed++);
    if (c.residual != ScaledConvCase::Residual::None) {
      in.resize(ops::ScaledIntegerInput::kResidual);
      in.push_back(NodeInput{residual});
      n.attributes.set(ops::kFusedResidualAttribute, int64_t{1});
    }
    if (c.relu) n.attributes.set(ops::kFusedActivationAttribute, std::string("Relu"));
    const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), n, in);
    // A broadcast residual: the conv, then one Add.
    ASSERT_EQ(plan.launches.size(), c.residual == ScaledConvCase::Residual::Broadcast ? 2u : 1u);
    EXPECT_TRUE(plan.launches[0].program.label.starts_with("conv_integer_packed_scaled"))
        << plan.launches[0].program.label;
    const auto y = run(n, in);
    ASSERT_EQ(y.at(0).dtype(), DType::Float32);
    ASSERT_EQ(y.at(0).shape(), out_shape);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < element_count(out_shape); ++i) {
      const int64_t m = (i / plane) % channels;
      const float scale = x_scale.data<float>()[0] * w_scale.data<float>()[c.per_channel_scale ? m : 0];
      float want = static_cast<float>(sums.data<int32_t>()[i]) * scale;
      if (c.bias) want = want + bias.data<float>()[m];
      if (c.residual != ScaledConvCase::Residual::None)
        want = want + residual.data<float>()[c.residual == ScaledConvCase::Residual::Same ? i : m];
      if (c.relu) want = std::max(want, 0.0f);
      const float got = y[0].data<float>()[i];
      nonzero += want != 0.0f;
      const float ulps = c.residual == ScaledConvCase::Residual::None ? 1.0f : 2.0f;
      ASSERT_LE(std::abs(got - want), ulps * std::abs(want) * 0x1p-23f)
          << "element " << i << ": " << got << ", want " << want;
    }
    EXPECT_GT(nonzero, element_count(out_shape) / 4);
  }
  // A fused activation on the int32 output is an error, not a silently dropped Relu.
  ops::NodeInfo relu_only = node("ConvInteger", 10);
  relu_only.attributes.set(ops::kFusedActivationAttribute, std::string("Relu"));
  EXPECT_NE(run_error(relu_only, {NodeInput{random_8bit(DType::UInt8, {1, 2, 4, 4}, 320)},
                                  NodeInput{random_8bit(DType::UInt8, {3, 2, 1, 1}, 321), true}})
                .find("a fused residual or activation needs wgi.scaled_output"),
            std::string::npos);
}

TEST(Quantize, ConvInteger1DWithAutoPad) {
  // 1-D: the 2-D reference over a height of one. SAME_LOWER with a kernel of 4 pads 2 before and 1 after.
  const Tensor x = random_8bit(DType::Int8, {2, 3, 10}, 80);
  const Tensor w = random_8bit(DType::UInt8, {4, 3, 4}, 81);
  const Tensor x_zp = Tensor::from_vector<int8_t>({}, {-5});
  ops::Attributes attrs;
  attrs.set("auto_pad", std::string("SAME_LOWER"));
  auto y = run(node("ConvInteger", 10, attrs), {NodeInput{x}, NodeInput{w, true}, NodeInput{x_zp}});
  test::ConvIntegerParams p;
  p.pads = {0, 2, 0, 1};
  Tensor want = test::conv_integer_reference(Tensor(x.dtype(), {2, 3, 1, 10}, x.bytes()),
                                             Tensor(w.dtype(), {4, 3, 1, 4}, w.bytes()), -5, {}, p);
  EXPECT_TRUE(identical(y.at(0), Tensor(DType::Int32, {2, 4, 10}, want.bytes())));
}

TEST(Quantize, QLinearMatMulAndConvRequantizeTheExactSum) {
  const Tensor a = random_8bit(DType::UInt8, {2, 13, 29}, 90);
  const Tensor b = random_8bit(DType::Int8, {29, 11}, 91);
  const Tensor a_zp = Tensor::from_vector<uint8_t>({}, {131});
  const Tensor b_zp = random_8bit(DType::Int8, {11}, 92);
  const Tensor a_scale = Tensor::from_vector<float>({}, {0.02f});
  const Tensor b_scale = test::random_tensor({11}, 93, 0.001f, 0.01f);
  const Tensor y_scale = Tensor::from_vector<float>({}, {0.05f});
  const Tensor y_zp = Tensor::from_vector<int8_t>({}, {-7});
  auto y =
      run(node("QLinearMatMul", 10),
          {NodeInput{a}, NodeInput{a_scale, true}, NodeInput{a_zp, true}, NodeInput{b, true},
           NodeInput{b_scale, true}, NodeInput{b_zp, true}, NodeInput{y_scale, true}, NodeInput{y_zp, true}});
  const Tensor acc =
      test::matmul_integer_reference(a, b, test::integer_values(a_zp), test::integer_values(b_zp));
  const std::vector<float> sb(b_scale.data<float>().begin(), b_scale.data<float>().end());
  EXPECT_TRUE(identical(y.at(0), test::requantize_reference(acc, 0.02f, sb, 0.05f, -7, DType::Int8, 1, 11)));

  const Tensor x = random_8bit(DType::UInt8, {2, 3, 8, 9}, 94);
  const Tensor w = random_8bit(DType::Int8, {4, 3, 3, 3}, 95);
  const Tensor x_zp = Tensor::from_vector<uint8_t>({}, {128});
  const Tensor w_zp = Tensor::from_vector<int8_t>({}, {0});
  const Tensor w_scale = Tensor::from_vector<float>({4}, {0.004f, 0.002f, 0.003f, 0.001f});
  const Tensor bias = random_ints<int32_t>({4}, 96, -3000, 3000);
  const Tensor out_zp = Tensor::from_vector<uint8_t>({}, {100});
  ops::Attributes attrs;
  attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  auto yc = run(node("QLinearConv", 10, attrs),
                {NodeInput{x}, NodeInput{a_scale, true}, NodeInput{x_zp, true}, NodeInput{w, true},
                 NodeInput{w_scale, true}, NodeInput{w_zp, true}, NodeInput{y_scale, true},
                 NodeInput{out_zp, true}, NodeInput{bias, true}});
  test::ConvIntegerParams p;
  p.pads = {1, 1, 1, 1};
  Tensor conv = test::conv_integer_reference(x, w, 128, {0}, p);
  auto cv = conv.data<int32_t>();
  for (size_t i = 0; i < cv.size(); ++i) cv[i] += bias.data<int32_t>()[(i / (8 * 9)) % 4];
  const std::vector<float> ws(w_scale.data<float>().begin(), w_scale.data<float>().end());
  EXPECT_TRUE(
      identical(yc.at(0), test::requantize_reference(conv, 0.02f, ws, 0.05f, 100, DType::UInt8, 8 * 9, 4)));
}

TEST(Quantize, ConstantWeightsArePackedFourPerWord) {
  // The widened 8-bit initializer is never bound (so a Session never uploads it); the kernel reads the packed
  // copy: ceil(K / 4) words per column of B, per output channel of W.
  const Tensor a = random_8bit(DType::UInt8, {5, 37}, 1);
  const Tensor b = random_8bit(DType::Int8, {37, 23}, 2);
  std::vector<std::optional<NodeInput>> in = {NodeInput{a}, NodeInput{b, true}};
  const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), node("MatMulInteger", 10), in);
  ASSERT_EQ(plan.launches.size(), 1u);
  for (const ops::TensorRef& ref : plan.launches[0].bindings) {
    EXPECT_FALSE(ref.kind == ops::TensorRef::Kind::Input && ref.index == 1) << "B bound widened";
  }
  ASSERT_FALSE(plan.constants.empty());
  EXPECT_EQ(plan.constants[0].byte_size(), size_t{23} * 10 * 4);  // 23 columns x ceil(37 / 4) words

  const Tensor x = random_8bit(DType::UInt8, {1, 6, 9, 9}, 3);
  const Tensor w = random_8bit(DType::UInt8, {8, 6, 3, 3}, 4);
  std::vector<std::optional<NodeInput>> conv_in = {NodeInput{x}, NodeInput{w, true}};
  const ops::OpPlan conv =
      runtime::plan_node(test::device().capabilities(), node("ConvInteger", 10), conv_in);
  for (const ops::TensorRef& ref : conv.launches.at(0).bindings) {
    EXPECT_FALSE(ref.kind == ops::TensorRef::Kind::Input && ref.index == 1) << "W bound widened";
  }
  EXPECT_EQ(conv.constants.at(0).byte_size(), size_t{8} * 14 * 4);  // 8 channels x ceil(54 / 4) words

  // So the binding limit applies to the packed size: a B whose widened form exceeds the device's
  // maxStorageBufferBindingSize plans where its packed one fits (a uint8 LM head on WebGPU's default limits).
  gpu::Capabilities small = test::device().capabilities();
  small.limits.max_storage_buffer_binding_size = 4096;
  const Tensor wide = random_8bit(DType::UInt8, {64, 24}, 3);  // 6144 bytes widened, 1536 packed
  std::vector<std::optional<NodeInput>> wide_in = {NodeInput{random_8bit(DType::UInt8, {2, 64}, 4)},
                                                   NodeInput{wide, true}};
  EXPECT_EQ(runtime::plan_node(small, node("MatMulInteger", 10), wide_in).launches.size(), 1u);
  wide_in[1] = NodeInput{wide};  // a runtime B is read widened: refused, naming it
  try {
    runtime::plan_node(small, node("MatMulInteger", 10), wide_in);
    ADD_FAILURE() << "a widened B over the binding limit planned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("maxStorageBufferBindingSize"), std::string::npos) << e.what();
  }
}

TEST(Quantize, DynamicQuantizeLinearOfAnEmptyTensor) {
  auto y = run(node("DynamicQuantizeLinear", 11), {NodeInput{Tensor(DType::Float32, {0, 5})}});
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[0].shape(), (Shape{0, 5}));
  EXPECT_EQ(y[1].data<float>()[0], 1.0f / 255.0f);  // the spec reference's scale for an empty range
  EXPECT_EQ(y[2].data<uint8_t>()[0], 0);
}

TEST(Quantize, ErrorsNameTheProblem) {
  const Tensor x = test::random_tensor({4, 6}, 1);
  EXPECT_NE(run_error(node("QuantizeLinear", 13), {NodeInput{x}, NodeInput{scales(5, 2)}})
                .find("needs a 1-D scale of 6"),
            std::string::npos);
  EXPECT_NE(
      run_error(node("QuantizeLinear", 10), {NodeInput{x}, NodeInput{scales(6, 2)}}).find("before opset 13"),
      std::string::npos);
  ops::Attributes f8;
  f8.set("output_dtype", int64_t{17});
  EXPECT_NE(run_error(node("QuantizeLinear", 21, f8),
                      {NodeInput{x}, NodeInput{Tensor::from_vector<float>({}, {1.0f})}})
                .find("output_dtype is 17"),
            std::string::npos);
  const Tensor xq = random_8bit(DType::UInt8, {1, 2, 5, 5}, 3);
  const Tensor wq = random_8bit(DType::UInt8, {3, 3, 2, 2}, 4);  // 3 input channels for x's 2
  EXPECT_NE(run_error(node("ConvInteger", 10), {NodeInput{xq}, NodeInput{wq}}).find("w's dim 1 = C / group"),
            std::string::npos);
  const Tensor a = random_8bit(DType::UInt8, {3, 4}, 5);
  const Tensor b = random_8bit(DType::UInt8, {4, 5}, 6);
  EXPECT_NE(run_error(node("MatMulInteger", 10), {NodeInput{a}, NodeInput{b}, std::nullopt,
                                                  NodeInput{random_8bit(DType::UInt8, {4}, 7)}})
                .find("1-D tensor of 5 (one per column of B)"),
            std::string::npos);
  EXPECT_NE(run_error(node("MatMulInteger", 10),
                      {NodeInput{a}, NodeInput{b}, NodeInput{random_8bit(DType::Int8, {}, 8)}})
                .find("they must match"),
            std::string::npos);
}

// Models that tests/models/variants_dynamic.py made from the committed float models (DynamicQuantizeLinear ->
// MatMulInteger / ConvInteger -> Cast -> Mul, weights uint8 or int8), with the first integer product exposed
// as an int32 output; wgi against onnxruntime's CPU provider on the same file and input.
struct QuantizedModel {
  const char* file;
  const char* input_folder;
  double max_relative_l2 = 1e-3;  // on the first output; the reason at the check and at the BART entry
};

class QuantizedModelTest : public ::testing::TestWithParam<QuantizedModel> {};

TEST_P(QuantizedModelTest, AgreesWithOnnxRuntime) {
  namespace fs = std::filesystem;
  const fs::path data = WGI_TEST_DATA_DIR;
  const fs::path model = data / "quantized" / GetParam().file;
  Session session = Session::from_file(model);
  std::map<std::string, Tensor> inputs;
  for (const TensorInfo& info : session.inputs()) {
    inputs[info.name] =
        npy::load(data / "models" / GetParam().input_folder / ("input_" + info.name + ".npy"));
  }
  // The model's first output (y, logits) and its last, the exposed integer product.
  ASSERT_GE(session.outputs().size(), 2u);
  const std::string y = session.outputs().front().name, integers = session.outputs().back().name;
  auto got = session.run(inputs);
  auto want = test::run_onnxruntime(model, inputs, {y, integers});
  // The first product quantizes the input (the CNN) or a LayerNorm (the transformers), which both runtimes
  // compute alike to within an ULP or so: the same uint8 activations (unless a quotient sits within an ULP of
  // a rounding boundary, which none does here), the same weights, so the same int32 sums, exactly. (With
  // full-range int8 weights onnxruntime's x86 kernels saturate pairs of products in int16 and do not give the
  // exact sums: the int8 variants use reduce_range, as onnxruntime advises;
  // tests/models/variants_dynamic.py.)
  EXPECT_TRUE(identical(got.at(integers), want.at(integers))) << integers;
  // The float output: later layers quantize activations that the runtimes computed in float32 with different
  // roundings (LayerNorm, GELU, Softmax: relative differences ~1e-7); one that rounds to the neighbouring
  // quantization step changes its products by one step (1 / 255 of its range). 1e-3 of relative L2 allows a
  // few such flips on any adapter; on SwiftShader the outputs agree to ~1e-7.
  const Tensor& ref = want.at(y);
  test::Float64Array ref64{ref.shape(),
                           std::vector<double>(ref.data<float>().begin(), ref.data<float>().end())};
  auto result = test::close_in_l2(got.at(y), ref64, GetParam().max_relative_l2);
  EXPECT_TRUE(result) << GetParam().file;
  std::cerr << "[ " << GetParam().file << ": " << result.message() << " ]\n";
}

// The rescale taken into the products and convs (graph::fuse_dynamically_quantized_products): each fused one
// loses its Cast, its Mul and its scale product's Mul (and its bias Add where it has one), so the fused
// session plans at least 3 dispatches fewer per fused product; its outputs against the session with the pass
// off within the model's tolerance against onnxruntime (the same float32 operations; a contracted FMA can
// move a later activation's quantization by one step, as in AgreesWithOnnxRuntime).
TEST(QuantizedModel, RescaleInsideTheProductsSavesTheirLaunches) {
  namespace fs = std::filesystem;
  const fs::path data = WGI_TEST_DATA_DIR;
  // Every product but the first, which the files expose as an output (tests/models/variants_dynamic.py).
  struct Fused {
    QuantizedModel model;
    int products;
  };
  for (const Fused& f : {Fused{{"tiny_transformer_uint8.onnx", "tiny_transformer_opset17"}, 3},
                         Fused{{"bart_decoder_tiny_uint8.onnx", "bart_decoder_tiny_opset17", 1e-2}, 20},
                         Fused{{"small_cnn_uint8.onnx", "small_cnn_opset17"}, 2}}) {  // ConvIntegers
    const QuantizedModel& c = f.model;
    SCOPED_TRACE(c.file);
    SessionOptions unfused_options;
    unfused_options.disabled_passes = {"fuse_dynamically_quantized_products"};
    Session fused = Session::from_file(data / "quantized" / c.file);
    Session unfused = Session::from_file(data / "quantized" / c.file, unfused_options);
    std::map<std::string, Tensor> inputs;
    for (const TensorInfo& info : fused.inputs())
      inputs[info.name] = npy::load(data / "models" / c.input_folder / ("input_" + info.name + ".npy"));
    const std::string y = fused.outputs().front().name;
    const Tensor got = fused.run(inputs).at(y), want = unfused.run(inputs).at(y);
    test::Float64Array want64{want.shape(),
                              std::vector<double>(want.data<float>().begin(), want.data<float>().end())};
    EXPECT_TRUE(test::close_in_l2(got, want64, c.max_relative_l2));
    EXPECT_GE(unfused.stats().plans.dispatches, fused.stats().plans.dispatches + 3 * f.products);
    std::cerr << "[ " << c.file << ": " << fused.stats().plans.dispatches << " dispatches fused ("
              << f.products << " products), " << unfused.stats().plans.dispatches << " unfused ]\n";
  }
}

TEST(QuantizedModel, WeightsTakeAQuarterOfTheirFloatSize) {
  // The transformer's four linear weights (3072 values) are its only large constants: 12288 bytes as float32,
  // 3072 packed four per u32 in the uint8 variant, whose widened initializers are never uploaded. The rest
  // (LayerNorm parameters, biases, scales and zero points, shape constants) is under 1 KB in both (measured:
  // 12992 and 3936 bytes), so the quantized model must hold less than a third.
  namespace fs = std::filesystem;
  const fs::path data = WGI_TEST_DATA_DIR;
  const Tensor x = npy::load(data / "models" / "tiny_transformer_opset17" / "input_x.npy");
  uint64_t bytes[2] = {};
  int i = 0;
  for (const fs::path& model : {data / "models" / "tiny_transformer_opset17" / "model.onnx",
                                data / "quantized" / "tiny_transformer_uint8.onnx"}) {
    Session session = Session::from_file(model);
    session.run({{session.inputs()[0].name, x}});
    bytes[i++] = session.stats().memory.weight_bytes;
  }
  std::cerr << "[ weight bytes: float " << bytes[0] << ", uint8 " << bytes[1] << " ]\n";
  EXPECT_GT(bytes[1], 0u);
  EXPECT_LT(bytes[1] * 3, bytes[0]);
}

INSTANTIATE_TEST_SUITE_P(
    DynamicQuantization, QuantizedModelTest,
    ::testing::Values(
        QuantizedModel{"tiny_transformer_uint8.onnx", "tiny_transformer_opset17"},
        QuantizedModel{"tiny_transformer_int8.onnx", "tiny_transformer_opset17"},
        QuantizedModel{"small_cnn_uint8.onnx", "small_cnn_opset17"},
        QuantizedModel{"small_cnn_int8.onnx", "small_cnn_opset17"},
        // Traced node by node: every integer product of the first layer and most of the second
        // agree exactly, until one element of one activation (of 192) quantizes one step apart
        // (its scale differs by an ULP after the float32 attention); in a 2-layer decoder of
        // width 32 that moves the logits by 2.9e-3 of relative L2 on SwiftShader and GLES.
        QuantizedModel{"bart_decoder_tiny_uint8.onnx", "bart_decoder_tiny_opset17", 1e-2},
        // The tiny vision encoders and the ResNet (ConvInteger: stem, strided, downsample,
        // depthwise; MatMulInteger on the tile kernel for their dozens of rows): ~1e-7 measured.
        QuantizedModel{"florence2_vision_tiny_uint8.onnx", "florence2_vision_tiny_opset17"},
        QuantizedModel{"siglip_vision_tiny_uint8.onnx", "siglip_vision_tiny_opset17"},
        QuantizedModel{"resnet_tiny_uint8.onnx", "resnet_tiny_opset17"}),
    [](const auto& param_info) { return std::filesystem::path(param_info.param.file).stem().string(); });

}  // namespace
}  // namespace wgi
