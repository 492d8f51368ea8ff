// The integer float16 -> float32 conversion the kernels apply to packed float16 weights
// (src/kernels/common/f16_bits.wgsl), over all 65536 float16 bit patterns, against a decoder written from
// IEEE 754's binary16 definition (tests/support/tensor_values.h):
//   - the helper itself through a two-binding kernel that stores its results: bit-exact, the sign of -0 and
//     NaN payloads included;
//   - the GEMM kernels reading a float16 B (B_F16: tiled, fast64 with vec4 loads, GEMV) with one-hot rows of
//     A, so that each output is one weight, and the inf / NaN patterns (which would turn a whole column to
//     NaN, 0 * inf) through a K = 1 product by 1 and -1: bit-exact, except that a NaN need only be a NaN
//     and a zero's sign cannot show (the sums start at +0, and +0 + -0 is +0);
//   - the implicit-GEMM convolution reading a float16 weight (W_F16), a 1x1 kernel over one-hot channels,
//     the output packed back to float16 (exact for values that came from float16; a copy scaled by 1024
//     for the subnormals).
// No tolerance anywhere: every finite float16 has an exact float32, and the sums of one weight and zeros
// are exact.
// The other way, float32 -> float16: the layout change that the float16-compute convolutions read
// (conv/nchw_to_nhwc_f16.wgsl), against a CPU transpose: each value one of its two float16 neighbours (WGSL
// lets a conversion round either way), values beyond the float16 range exactly +-65504.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <sstream>

#include "kernels/wgsl_library.h"
#include "ops/conv/conv.h"
#include "ops/gemm_launch.h"
#include "ops/registry.h"
#include "runtime/node_runner.h"
#include "support/run_node.h"
#include "support/tensor_values.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;

constexpr int64_t kPatterns = 65536;

// binary16 bits -> float (exact: every value is a float32) by the tests' decoder written from the format's
// definition (tests/support/tensor_values.h); a NaN keeps its sign and payload, the mantissa's bits at the
// top of float32's, as IEEE 754's widening conversions do.
float decode_half(uint16_t h) {
  if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0)
    return std::bit_cast<float>((uint32_t{h} & 0x8000u) << 16 | 0x7F800000u | (uint32_t{h} & 0x3FFu) << 13);
  return static_cast<float>(test::half_bits_to_double(h));
}

// Every bit pattern once, pattern i at element i.
Tensor all_halves(const Shape& shape) {
  Tensor t(DType::Float16, shape);
  for (int64_t i = 0; i < kPatterns; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    std::memcpy(t.bytes().data() + 2 * i, &h, 2);
  }
  return t;
}

std::string hex(uint32_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// `got` against `want`: the same bits if `exact`; otherwise any NaN for a NaN (arithmetic and float16
// packing need not keep a NaN's sign or payload) and any zero for a zero. Reports the first few mismatches.
struct Mismatches {
  int count = 0;
  std::string first;
  void check(uint16_t pattern, float want, float got, bool exact, const char* what) {
    const uint32_t w = std::bit_cast<uint32_t>(want), g = std::bit_cast<uint32_t>(got);
    bool same = w == g;
    if (!exact && std::isnan(want)) same = std::isnan(got);
    if (!exact && want == 0.0f) same = got == 0.0f;
    if (same) return;
    if (++count <= 8)
      first += std::string(" ") + what + " half " + hex(pattern) + ": " + hex(g) + " not " + hex(w);
  }
};

// ---- the helper itself ----

// Row 0: unpack_f16x2 of each word; row 1: unpack_f16 of each half.
constexpr const char* kHelperKernel = R"(#include "common/f16_bits.wgsl"
@group(0) @binding(0) var<storage, read> halves: array<u32>;
@group(0) @binding(1) var<storage, read_write> output: array<f32>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let i = id.x;
  let w = halves[i];
  let pair = unpack_f16x2(w);
  output[2u * i] = pair.x;
  output[2u * i + 1u] = pair.y;
  output[65536u + 2u * i] = unpack_f16(w, 0u);
  output[65536u + 2u * i + 1u] = unpack_f16(w, 1u);
}
)";

// A test op that takes its float16 input as stored (plans_float16: no float32 wrapper around it).
ops::OpRegistry registry_with(const char* op_type, std::function<ops::OpPlan(const ops::PlanContext&)> plan) {
  ops::OpHandler handler;
  handler.plan = std::move(plan);
  handler.plans_float16 = true;
  ops::OpRegistry r;
  r.add("wgi.test", op_type, 1, ops::kLatestOpset, handler);
  return r;
}

ops::OpRegistry helper_registry() {
  return registry_with("F16Bits", [](const ops::PlanContext&) {
    ops::OpPlan plan;
    plan.outputs.push_back({DType::Float32, {2, kPatterns}});
    ops::KernelLaunch launch;
    launch.program.label = "f16_bits_test";
    launch.program.wgsl = gpu::ShaderText(kernels::preprocess_wgsl("f16_bits_test", kHelperKernel, {}));
    launch.program.bindings = {gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::Storage};
    launch.bindings = {ops::TensorRef::input(0), ops::TensorRef::output(0)};
    launch.groups = {kPatterns / 2 / 64, 1, 1};
    plan.launches.push_back(std::move(launch));
    return plan;
  });
}

TEST(F16Bits, EveryHalfConvertsBitExactly) {
  const ops::OpRegistry registry = helper_registry();
  const ops::NodeInfo node{"f16_bits", "F16Bits", "wgi.test", 1, {}, {}, {}};
  auto out =
      runtime::run_node(test::device(), node, Inputs{NodeInput{all_halves({kPatterns})}}, {}, registry);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].element_count(), 2 * kPatterns);
  auto got = out[0].data<float>();
  Mismatches bad;
  for (int64_t i = 0; i < kPatterns; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    bad.check(h, decode_half(h), got[i], true, "unpack_f16x2");
    bad.check(h, decode_half(h), got[kPatterns + i], true, "unpack_f16");
  }
  EXPECT_EQ(bad.count, 0) << bad.first;
}

// ---- the GEMM kernels' B_F16 ----

// One-hot rows: A the identity [8, 8] and B the patterns with column n holding patterns 8n .. 8n + 7 (B [8,
// 8192], or [8192, 8] with b_nk: then simply in order), so out[m, n] = B[m, n]. A column holding an inf or a
// NaN (exponents 31 fill whole columns) is NaN throughout (0 * inf), so those 2048 patterns also go through
// a K = 1 product: A (1, -1) times B [1, 2048] (or [2048, 1]), out = +-B.
constexpr int64_t kRows = 8, kColumns = kPatterns / kRows, kSpecials = 2048;

bool special(uint16_t h) {
  return (h & 0x7C00) == 0x7C00;
}

// The patterns with B[k, n] = pattern kRows * n + k, as [kRows, kColumns] (or [kColumns, kRows] if `nk`).
Tensor one_hot_b(bool nk) {
  Tensor t(DType::Float16, nk ? Shape{kColumns, kRows} : Shape{kRows, kColumns});
  for (int64_t n = 0; n < kColumns; ++n) {
    for (int64_t k = 0; k < kRows; ++k) {
      const uint16_t h = static_cast<uint16_t>(kRows * n + k);
      std::memcpy(t.bytes().data() + 2 * (nk ? n * kRows + k : k * kColumns + n), &h, 2);
    }
  }
  return t;
}

// The 2048 patterns of exponent 31 (inf and NaN, both signs), in order.
Tensor special_b(const Shape& shape) {
  Tensor t(DType::Float16, shape);
  int64_t i = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    if (!special(static_cast<uint16_t>(h))) continue;
    const uint16_t half = static_cast<uint16_t>(h);
    std::memcpy(t.bytes().data() + 2 * i++, &half, 2);
  }
  return t;
}

// Output 0 = input 0 [8, 8] times input 1 (one_hot_b), output 1 = input 2 [2, 1] times input 3 (special_b).
ops::OpRegistry gemm_registry(ops::GemmKernel kernel, bool b_nk) {
  ops::GemmLaunchSpec one_hot;
  one_hot.m = kRows;
  one_hot.n = kColumns;
  one_hot.k = kRows;
  one_hot.b_nk = b_nk;
  one_hot.b_f16 = true;
  one_hot.kernel = kernel;
  one_hot.split_k = 1;
  one_hot.a = ops::TensorRef::input(0);
  one_hot.b = ops::TensorRef::input(1);
  one_hot.out = ops::TensorRef::output(0);
  ops::GemmLaunchSpec specials = one_hot;
  specials.m = 2;
  specials.n = kSpecials;
  specials.k = 1;
  specials.a = ops::TensorRef::input(2);
  specials.b = ops::TensorRef::input(3);
  specials.out = ops::TensorRef::output(1);
  return registry_with("HalfWeightGemm", [one_hot, specials](const ops::PlanContext& ctx) {
    ops::OpPlan plan;
    plan.outputs.push_back({DType::Float32, {kRows, kColumns}});
    plan.outputs.push_back({DType::Float32, {2, kSpecials}});
    ops::append_gemm_launches(ctx, one_hot, plan);
    ops::append_gemm_launches(ctx, specials, plan);
    return plan;
  });
}

Tensor identity(int64_t n) {
  Tensor t(DType::Float32, {n, n});
  for (int64_t i = 0; i < n * n; ++i) t.data<float>()[i] = i / n == i % n ? 1.0f : 0.0f;
  return t;
}

TEST(F16Bits, EveryHalfThroughTheGemmKernels) {
  Tensor plus_minus(DType::Float32, {2, 1});
  plus_minus.data<float>()[0] = 1.0f;
  plus_minus.data<float>()[1] = -1.0f;
  struct Variant {
    ops::GemmKernel kernel;
    bool b_nk;
    const char* label;  // part of the launches' labels
  };
  for (const Variant& v :
       {Variant{ops::GemmKernel::Tiled, false, "tiled"}, Variant{ops::GemmKernel::Fast64, false, "fast64"},
        Variant{ops::GemmKernel::Gemv, true, "gemv"}}) {
    SCOPED_TRACE(v.label);
    const ops::OpRegistry registry = gemm_registry(v.kernel, v.b_nk);
    const ops::NodeInfo node{"half_weight_gemm", "HalfWeightGemm", "wgi.test", 1, {}, {}, {}};
    const Inputs in = {NodeInput{identity(kRows)}, NodeInput{one_hot_b(v.b_nk)}, NodeInput{plus_minus},
                       NodeInput{special_b(v.b_nk ? Shape{kSpecials, 1} : Shape{1, kSpecials})}};
    const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), node, in, registry);
    ASSERT_EQ(plan.launches.size(), 2u);
    for (const ops::KernelLaunch& launch : plan.launches) {
      const std::string& label = launch.program.label;
      EXPECT_NE(label.find(v.label), std::string::npos) << label;
      EXPECT_NE(label.find("_bf16"), std::string::npos) << label;
      // fast64 over B [K, N] loads B four halves at a time (b_quad), the others one at a time (b_elem).
      if (v.kernel == ops::GemmKernel::Fast64) {
        EXPECT_EQ(label.find("_bscalar"), std::string::npos) << label;
      }
    }
    auto out = runtime::run_node(test::device(), node, in, {}, registry);
    ASSERT_EQ(out.size(), 2u);
    auto got = out[0].data<float>();
    Mismatches bad;
    for (int64_t n = 0; n < kColumns; ++n) {
      bool nan_column = false;
      for (int64_t k = 0; k < kRows; ++k) nan_column |= special(static_cast<uint16_t>(kRows * n + k));
      for (int64_t m = 0; m < kRows; ++m) {
        const uint16_t h = static_cast<uint16_t>(kRows * n + m);
        bad.check(h, nan_column ? NAN : decode_half(h), got[m * kColumns + n], false, "one-hot");
      }
    }
    auto got_specials = out[1].data<float>();
    const Tensor specials = special_b({kSpecials});
    for (int64_t i = 0; i < kSpecials; ++i) {
      uint16_t h = 0;
      std::memcpy(&h, specials.bytes().data() + 2 * i, 2);
      bad.check(h, decode_half(h), got_specials[i], false, "A = 1");
      bad.check(h, -decode_half(h), got_specials[kSpecials + i], false, "A = -1");
    }
    EXPECT_EQ(bad.count, 0) << bad.first;
  }
}

// ---- the implicit-GEMM convolution's W_F16 ----

// x [1, 8, 1, 16] one-hot: channel c is 1 at pixel c and 1024 at pixel 8 + c; W [8192, 8, 1, 1] the patterns
// in order: y[0, o, 0, p] = W[o, p] and y[0, o, 0, 8 + p] = 1024 W[o, p] (exact in f32; the scaled copy
// lifts float16's subnormals, whose errors the float16 output would round away, into its normal range; the
// expected float16 from the tests' own encoder, inf beyond 65504). An output channel holding an inf or NaN is
// NaN throughout (0 * inf).
TEST(F16Bits, EveryHalfThroughTheImplicitGemmConv) {
  constexpr int64_t kPixels = 2 * kRows;
  Tensor x(DType::Float16, {1, kRows, 1, kPixels});
  for (int64_t c = 0; c < kRows; ++c) {
    for (int64_t p = 0; p < kPixels; ++p) {
      const uint16_t v = p % kRows != c ? 0 : p < kRows ? 0x3C00 : 0x6400;  // +0, 1.0, 1024.0
      std::memcpy(x.bytes().data() + 2 * (c * kPixels + p), &v, 2);
    }
  }
  ops::NodeInfo conv{"half_weight_conv", "Conv", "", 11, {}, {}, {}};
  conv.attributes.set("wgi.kernel", std::string("implicit_gemm64"));
  const Inputs in = {NodeInput{x}, NodeInput{all_halves({kColumns, kRows, 1, 1}), true}};
  const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), conv, in);
  bool packed = false;
  for (const ops::KernelLaunch& launch : plan.launches)
    packed |= launch.program.label.find("_wf16") != std::string::npos;
  EXPECT_TRUE(packed) << "no launch reads the float16 weight packed";
  auto out = runtime::run_node(test::device(), conv, in);
  ASSERT_EQ(out.at(0).dtype(), DType::Float16);
  ASSERT_EQ(out[0].element_count(), kPixels * kColumns);
  Mismatches bad;
  for (int64_t o = 0; o < kColumns; ++o) {
    bool nan_channel = false;
    for (int64_t c = 0; c < kRows; ++c) nan_channel |= special(static_cast<uint16_t>(kRows * o + c));
    for (int64_t p = 0; p < kPixels; ++p) {
      const uint16_t h = static_cast<uint16_t>(kRows * o + p % kRows);
      const float scaled = decode_half(test::double_to_half_bits(1024.0 * decode_half(h)));
      const float want = nan_channel ? NAN : p < kRows ? decode_half(h) : scaled;
      uint16_t y = 0;
      std::memcpy(&y, out[0].bytes().data() + 2 * (kPixels * o + p), 2);
      bad.check(h, want, decode_half(y), false, p < kRows ? "x = 1" : "x = 1024");
    }
  }
  EXPECT_EQ(bad.count, 0) << bad.first;
}

// ---- float32 NCHW -> float16 NHWC (the float16-compute convolutions' input) ----

TEST(F16Bits, NchwInputToHalfNhwc) {
  constexpr uint32_t kImages = 2, kChannels = 16, kHeight = 5, kWidth = 7, kPlane = kHeight * kWidth;
  const ops::OpRegistry registry = registry_with("NchwToNhwcF16", [](const ops::PlanContext& ctx) {
    ops::OpPlan plan;
    plan.outputs.push_back({DType::Float16, {kImages, kHeight, kWidth, kChannels}});
    plan.launches.push_back(ops::nchw_to_nhwc_f16_launch(
        ctx, ops::TensorRef::input(0), ops::TensorRef::output(0), kImages, kChannels, kPlane));
    return plan;
  });
  // Seeded values of several magnitudes (subnormal halves included), and some beyond the float16 range.
  Tensor x(DType::Float32, {kImages, kChannels, kHeight, kWidth});
  auto values = x.data<float>();
  uint32_t state = 12345;
  for (size_t i = 0; i < values.size(); ++i) {
    state = state * 1664525u + 1013904223u;
    const float unit = static_cast<float>(state >> 8) / 16777216.0f - 0.5f;  // [-0.5, 0.5)
    values[i] = unit * std::ldexp(1.0f, static_cast<int>(i % 37) - 20);      // 2^-21 .. 2^15
  }
  values[3] = 70000.0f;
  values[100] = -1e30f;
  values[200] = 65519.0f;
  const ops::NodeInfo node{"nchw_to_nhwc", "NchwToNhwcF16", "wgi.test", 1, {}, {}, {}};
  auto out = runtime::run_node(test::device(), node, Inputs{NodeInput{x}}, {}, registry);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].element_count(), x.element_count());
  int bad = 0;
  std::string first;
  for (uint32_t n = 0; n < kImages; ++n) {
    for (uint32_t c = 0; c < kChannels; ++c) {
      for (uint32_t p = 0; p < kPlane; ++p) {
        const double v = values[(n * kChannels + c) * kPlane + p];
        uint16_t h = 0;
        std::memcpy(&h, out[0].bytes().data() + 2 * ((n * kPlane + p) * kChannels + c), 2);
        const double got = test::half_bits_to_double(h);
        // One float16 step at v: 2^(e - 10) for normal halves, 2^-24 below.
        const double step = std::ldexp(1.0, std::max(std::ilogb(std::max(std::abs(v), 1e-30)), -14) - 10);
        const bool ok = std::abs(v) > 65504.0 ? got == std::copysign(65504.0, v) : std::abs(got - v) < step;
        if (!ok && ++bad <= 8)
          first += " (" + std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(p) +
                   "): " + std::to_string(got) + " for " + std::to_string(v);
      }
    }
  }
  EXPECT_EQ(bad, 0) << first;
}

}  // namespace
}  // namespace wgi
