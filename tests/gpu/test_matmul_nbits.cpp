// com.microsoft MatMulNBits and MatMulBnb4 (src/ops/matmul_nbits.cpp) against float64 references written from
// ONNX Runtime's spec (tests/support/reference_quantized.h): random packed codes (every code value occurs),
// random scales and zero points, every bits x zero-point form x several block sizes, K aligned and not to
// the block (a partial last block), N aligned and not to the tiles, M = 1, 3, 8 and a batch folded into M,
// bias, float16 scales / zero points / bias, both kernels (GEMV and tiled), a folded grid; that B stays
// packed on the GPU; the errors a user can cause; and the variant models of
// tests/models/variants_weight_only.py through wgi::Session against onnxruntime's CPU provider on the same
// files.
//
// Tolerance: the kernels dequantise exactly as the spec says ((code - zero) * scale, table[code] * absmax:
// one f32 rounding per weight) and accumulate in f32, so the only error is f32 rounding over K terms:
// relative L2 error ~1e-7 here; 1e-5 leaves room for reordered sums while any wrong code, block, scale or
// zero point (an error of at least one quantisation step in some weight, ~1e-2 relative) fails by orders of
// magnitude.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numbers>
#include <span>
#include <sstream>

#include "core/npy.h"
#include "gpu/large_gpu_capabilities.h"
#include "onnxruntime_reference.h"
#include "ops/internal_ops.h"
#include "ops/registry.h"
#include "runtime/node_runner.h"
#include "support/expect_text.h"
#include "support/model_reference.h"
#include "support/reference_quantized.h"
#include "support/run_node.h"
#include "support/tensor_check.h"
#include "support/test_device.h"
#include "wgi/session.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;
using test::run_error;

constexpr double kRelativeL2 = 1e-5;  // see the file comment

ops::NodeInfo nbits_node(int64_t k, int64_t n, int64_t bits, int64_t block_size) {
  ops::NodeInfo node{"nbits_under_test", "MatMulNBits", "com.microsoft", 1, {}, {}, {}};
  node.attributes.set("K", k);
  node.attributes.set("N", n);
  node.attributes.set("bits", bits);
  node.attributes.set("block_size", block_size);
  // Level 0: A stays float32, so every kernel must match the float64 reference to f32 rounding. Level 4
  // (the exports' own, int8 activations in the GEMV) has its tests below (Int8Activations*).
  node.attributes.set("accuracy_level", int64_t{0});
  return node;
}

ops::NodeInfo bnb4_node(int64_t k, int64_t n, int64_t block_size, int64_t quant_type) {
  ops::NodeInfo node{"bnb4_under_test", "MatMulBnb4", "com.microsoft", 1, {}, {}, {}};
  node.attributes.set("K", k);
  node.attributes.set("N", n);
  node.attributes.set("block_size", block_size);
  node.attributes.set("quant_type", quant_type);
  return node;
}

test::Float64Array as_array(const test::Reference& r) {
  return {r.shape, r.values};
}

enum class Zp { None, Packed, Float };

// One MatMulNBits problem with random data in the spec's layouts.
struct NbitsProblem {
  int64_t k, n, bits, block_size;
  Zp zp = Zp::None;
  bool half = false;  // scales, float zero points and bias as float16
  Tensor b, scales, zero_points, bias;

  NbitsProblem(int64_t k_, int64_t n_, int64_t bits_, int64_t block, Zp zp_, bool half_, uint64_t seed)
      : k(k_), n(n_), bits(bits_), block_size(block), zp(zp_), half(half_) {
    const int64_t blocks = (k + block_size - 1) / block_size;
    b = test::random_bytes({n, blocks, block_size * bits / 8}, seed);
    scales = test::random_scales({n, blocks}, seed + 1, half);
    if (zp == Zp::Packed) zero_points = test::random_bytes({n, (blocks * bits + 7) / 8}, seed + 2);
    // Float zero points anywhere in the code range, fractional.
    if (zp == Zp::Float)
      zero_points = test::random_scales({n, blocks}, seed + 2, half, 0.0f, float(1 << bits));
    bias = test::random_scales({n}, seed + 3, half, -1.0f, 1.0f);
  }

  Inputs inputs(const Tensor& a, bool with_bias) const {
    Inputs in = {NodeInput{a}, NodeInput{b, true}, NodeInput{scales, true}};
    if (zp != Zp::None || with_bias)
      in.push_back(zp != Zp::None ? std::optional(NodeInput{zero_points, true}) : std::nullopt);
    if (with_bias) {
      in.push_back(std::nullopt);  // g_idx
      in.push_back(NodeInput{bias, true});
    }
    return in;
  }

  test::Reference reference(const Tensor& a, bool with_bias) const {
    auto w = test::dequantize_matmul_nbits(b, scales, zp == Zp::None ? nullptr : &zero_points, k, n, bits,
                                           block_size);
    return test::quantized_matmul_reference(a, w, n, with_bias ? &bias : nullptr);
  }
};

struct Case {
  Shape a;  // [..., K]
  int64_t n;
};

std::string describe(const NbitsProblem& p, const Shape& a, const char* kernel, bool bias) {
  std::ostringstream s;
  s << "bits " << p.bits << " block " << p.block_size << " zp " << static_cast<int>(p.zp) << " A "
    << shape_to_string(a) << " N " << p.n << " kernel " << kernel << (bias ? " bias" : "")
    << (p.half ? " f16" : "");
  return s.str();
}

void check_nbits(const NbitsProblem& p, const Shape& a_shape, bool with_bias, uint64_t seed) {
  Tensor a = test::random_tensor(a_shape, seed);
  const int64_t m = a.element_count() / p.k;
  auto ref = p.reference(a, with_bias);
  // "gemv4": GEMV with 4 threads per column, so that columns of 16+ words run its four-loads step too.
  // "gemv_columns": GEMV with as many columns per thread as its rows allow (4, or 2 from 3 rows), which the
  // planner takes only for thousands of columns (the LM head), with N rarely a multiple of the workgroup's.
  // "fast": the fast GEMM tiles dequantising B's slab (B_QUANT), for the products of more than 8 rows, with
  // blocks of 32 (the exports') or float16 inputs (the CI time of barrier-heavy kernels on SwiftShader).
  for (const std::string kernel : {"gemv", "gemv4", "gemv_columns", "tiled", "fast"}) {
    if (kernel.starts_with("gemv") && m > 8) continue;
    if (kernel == "gemv_columns" && m > 4) continue;
    if (kernel == "fast" && (m <= 8 || (p.block_size != 32 && !p.half))) continue;
    ops::NodeInfo node = nbits_node(p.k, p.n, p.bits, p.block_size);
    node.attributes.set("wgi.kernel", kernel.starts_with("gemv") ? std::string("gemv") : kernel);
    if (kernel == "gemv4") node.attributes.set("wgi.gemv_lanes", int64_t{4});
    if (kernel == "gemv_columns") node.attributes.set("wgi.gemv_thread_columns", int64_t{m <= 2 ? 4 : 2});
    auto out = runtime::run_node(test::device(), node, p.inputs(a, with_bias));
    EXPECT_TRUE(test::close_in_l2(out[0], as_array(ref), kRelativeL2))
        << describe(p, a_shape, kernel.c_str(), with_bias);
  }
}

std::string nbits_case_name(const std::tuple<int64_t, Zp>& param) {
  static const char* const forms[] = {"symmetric", "packed_zero_points", "float_zero_points"};
  return "bits" + std::to_string(std::get<0>(param)) + "_" + forms[static_cast<int>(std::get<1>(param))];
}

class MatMulNBitsTest : public ::testing::TestWithParam<std::tuple<int64_t, Zp>> {};

TEST_P(MatMulNBitsTest, MatchesFloat64ReferenceOnBothKernels) {
  const auto [bits, zp] = GetParam();
  // K: whole blocks, a partial last block, fewer codes than one block; N: tile-aligned and not.
  const std::vector<Case> cases = {{{1, 64}, 64}, {{3, 100}, 37}, {{8, 45}, 33}, {{2, 3, 5, 80}, 70}};
  uint64_t seed = 100 * static_cast<uint64_t>(bits) + 10 * static_cast<uint64_t>(zp);
  for (int64_t block : {16, 32, 128}) {
    for (const Case& c : cases) {
      NbitsProblem p(c.a.back(), c.n, bits, block, zp, false, ++seed);
      const bool with_bias = seed % 2 == 0;
      check_nbits(p, c.a, with_bias, ++seed);
    }
  }
}

// accuracy_level 4 (the exports' attribute): the GEMV quantises A to int8 per block of B and multiplies
// codes and int8s in integer dot products (A_INT8). Against the float64 product of the int8 A that ONNX
// Runtime's level 4 also computes (int8_block_quantized): relative L2 1e-4 (f32 scales and sums; the GPU's
// 127 / max|a| may be an ulp off the CPU's and move a value on a rounding tie by one int8 step, seen ~1e-6
// otherwise). Against the float32 A's product: 2e-2 (int8 rounding, ~3e-3 seen), where a wrong code, zero
// point or block scale is 1e-1 or more. 4- and 8-bit codes, zero points default and packed (both ends of the
// 8-bit range through random bytes), blocks 16 (two flushes a quad), 32 and 128, K unaligned and over two
// chunks, one to eight rows, the lane and column counts; more than 8 rows keep float32 A (the fast GEMM).
constexpr double kInt8ReferenceRelativeL2 = 1e-4;
constexpr double kInt8AgainstFloatRelativeL2 = 2e-2;

TEST(MatMulNBits, Int8ActivationsMatchTheInt8Reference) {
  if (!test::device().features().packed_int8_dot)
    GTEST_SKIP() << "the device lacks WGSL's packed_4x8_integer_dot_product (the int8 products need it)";
  uint64_t seed = 1200;
  for (int64_t bits : {4, 8}) {
    for (Zp zp : {Zp::None, Zp::Packed}) {
      for (int64_t block : {16, 32, 128}) {
        for (const Shape& a_shape : {Shape{1, 64}, Shape{3, 100}, Shape{8, 45}, Shape{2, 3072}}) {
          const int64_t k = a_shape.back();
          NbitsProblem p(k, 37, bits, block, zp, false, ++seed);
          const Tensor a = test::random_tensor(a_shape, ++seed);
          const auto int8_ref = p.reference(test::int8_block_quantized(a, block), true);
          const auto float_ref = p.reference(a, true);
          for (const char* kernel : {"gemv", "gemv4", "gemv_columns"}) {
            ops::NodeInfo node = nbits_node(k, p.n, bits, block);
            node.attributes.set("accuracy_level", int64_t{4});
            node.attributes.set("wgi.kernel", std::string("gemv_int8"));
            if (std::string(kernel) == "gemv4") node.attributes.set("wgi.gemv_lanes", int64_t{4});
            if (std::string(kernel) == "gemv_columns")
              node.attributes.set("wgi.gemv_thread_columns", int64_t{a_shape[0] <= 2 ? 4 : 1});
            const auto inputs = p.inputs(a, true);
            const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), node, inputs);
            ASSERT_EQ(plan.launches.size(), 1u);
            ASSERT_NE(plan.launches[0].program.label.find("_i8a"), std::string::npos)
                << plan.launches[0].program.label;
            auto out = runtime::run_node(test::device(), node, inputs);
            const std::string what = describe(p, a_shape, kernel, true) + " int8 A";
            EXPECT_TRUE(test::close_in_l2(out[0], as_array(int8_ref), kInt8ReferenceRelativeL2)) << what;
            EXPECT_TRUE(test::close_in_l2(out[0], as_array(float_ref), kInt8AgainstFloatRelativeL2)) << what;
          }
        }
      }
    }
  }
}

// Where the int8 path applies: accuracy_level 4, 4- or 8-bit codes, integer zero points, a GEMV whose threads
// have at least 8 quads of words to multiply (the LM head's width; a 768-wide product has 2), and a device
// with WGSL's packed int8 dot products; anything else keeps float32 A. wgi.kernel "gemv_int8" forces it where
// it applies and is refused, with the reason, where it does not.
TEST(MatMulNBits, Int8ActivationsOnlyWhereTheyApply) {
  constexpr int64_t k = 768, wide = 51289;
  auto label = [&](int64_t bits, Zp zp, int64_t level, int64_t rows, int64_t n, bool feature) {
    NbitsProblem p(k, n, bits, 32, zp, false, 1300);
    ops::NodeInfo node = nbits_node(k, n, bits, 32);
    node.attributes.set("accuracy_level", level);
    gpu::Capabilities caps = gpu::large_gpu_capabilities();
    caps.features.packed_int8_dot = feature;
    const ops::OpPlan plan =
        runtime::plan_node(caps, node, p.inputs(test::random_tensor({rows, k}, 1301), false));
    return plan.launches.at(0).program.label;
  };
  EXPECT_NE(label(4, Zp::None, 4, 1, wide, true).find("_i8a"), std::string::npos);
  EXPECT_NE(label(8, Zp::Packed, 4, 4, wide, true).find("_i8a"), std::string::npos);
  for (const std::string& l : {label(4, Zp::None, 4, 1, 768, true), label(4, Zp::None, 0, 1, wide, true),
                               label(4, Zp::None, 4, 1, wide, false), label(2, Zp::None, 4, 1, wide, true),
                               label(4, Zp::Float, 4, 1, wide, true), label(4, Zp::None, 4, 9, wide, true)}) {
    EXPECT_EQ(l.find("_i8a"), std::string::npos) << l;
  }
  NbitsProblem p(64, 16, 4, 32, Zp::Float, false, 1302);
  ops::NodeInfo forced = nbits_node(64, 16, 4, 32);
  forced.attributes.set("accuracy_level", int64_t{4});
  forced.attributes.set("wgi.kernel", std::string("gemv_int8"));
  EXPECT_HAS(run_error(forced, p.inputs(test::random_tensor({1, 64}, 1303), false)),
             "the gemv_int8 kernel takes accuracy_level 4, 4- or 8-bit codes, integer zero points");
}

// The GEMV over a long K (whole quads per column): more than one staged chunk of A (2048 elements for one
// row, 1024 for two), and more quads per thread than the 8 it loads before staging A, so that both of its
// loops and the chunk steps run; 1 and 2 rows, 4 lanes and the planner's choice.
TEST(MatMulNBits, GemvOverALongKMatchesFloat64Reference) {
  uint64_t seed = 900;
  for (int64_t bits : {2, 4, 8}) {
    for (const Shape& a : {Shape{1, 3072}, Shape{2, 2560}}) {
      NbitsProblem p(a.back(), 24, bits, 32, bits == 4 ? Zp::Packed : Zp::None, false, ++seed);
      const bool with_bias = seed % 2 == 0;
      check_nbits(p, a, with_bias, ++seed);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BitsAndZeroPoints, MatMulNBitsTest,
                         ::testing::Combine(::testing::Values(2, 4, 8),
                                            ::testing::Values(Zp::None, Zp::Packed, Zp::Float)),
                         [](const auto& param_info) { return nbits_case_name(param_info.param); });

// Every code value of each width against integer zero points at both ends of the code range (0 and
// 2^bits - 1, alternating by block and column) and the default zero 2^(bits - 1): with A the identity [K, K]
// (K = 64, or 256 for 8 bits: every code in every column) each output is one dequantised weight, which must
// be the float64 (code - zero) * scale within the one f32 rounding of that product (the tiled and fast
// kernels); GEMV, for at most 8 rows, takes a random A [3, K] at the file's L2 bound.
TEST(MatMulNBits, EveryCodeAgainstZeroPointsAtBothEnds) {
  constexpr int64_t n = 5, block = 32;
  const test::Tolerance one_rounding = [](double ref) { return std::ldexp(std::abs(ref), -24); };
  auto put = [](std::span<std::byte> bytes, int64_t bit, int64_t value) {
    bytes[bit / 8] |= static_cast<std::byte>(value << (bit % 8));
  };
  for (int64_t bits : {2, 4, 8}) {
    const int64_t k = std::max<int64_t>(64, int64_t{1} << bits), blocks = k / block;
    const int64_t top = (int64_t{1} << bits) - 1;
    Tensor identity(DType::Float32, {k, k});
    for (int64_t i = 0; i < k * k; ++i) identity.data<float>()[i] = i / k == i % k ? 1.0f : 0.0f;
    for (Zp zp : {Zp::None, Zp::Packed}) {
      NbitsProblem p(k, n, bits, block, zp, false, 700 + 10 * static_cast<uint64_t>(bits));
      const int64_t col_bytes = k * bits / 8, zp_col_bytes = (blocks * bits + 7) / 8;
      std::fill(p.b.bytes().begin(), p.b.bytes().end(), std::byte{0});
      for (int64_t c = 0; c < n; ++c)
        for (int64_t i = 0; i < k; ++i)
          put(p.b.bytes().subspan(c * col_bytes, col_bytes), i * bits, (i + 3 * c) & top);  // every code
      if (zp == Zp::Packed) {
        std::fill(p.zero_points.bytes().begin(), p.zero_points.bytes().end(), std::byte{0});
        for (int64_t c = 0; c < n; ++c)
          for (int64_t j = 0; j < blocks; ++j)
            put(p.zero_points.bytes().subspan(c * zp_col_bytes, zp_col_bytes), j * bits,
                (j + c) % 2 ? top : 0);
      }
      const std::string what = describe(p, {k, k}, "", false);
      const test::Reference ref = p.reference(identity, false);
      for (const char* kernel : {"tiled", "fast"}) {
        ops::NodeInfo node = nbits_node(k, n, bits, block);
        node.attributes.set("wgi.kernel", std::string(kernel));
        auto out = runtime::run_node(test::device(), node, p.inputs(identity, false));
        EXPECT_TRUE(test::all_close(out.at(0), ref.shape, ref.values, one_rounding)) << what << kernel;
      }
      const Tensor a = test::random_tensor({3, k}, 800 + static_cast<uint64_t>(bits));
      ops::NodeInfo node = nbits_node(k, n, bits, block);
      node.attributes.set("wgi.kernel", std::string("gemv"));
      auto out = runtime::run_node(test::device(), node, p.inputs(a, false));
      EXPECT_TRUE(test::close_in_l2(out.at(0), as_array(p.reference(a, false)), kRelativeL2))
          << what << "gemv";
    }
  }
}

TEST(MatMulNBits, Float16ScalesZeroPointsAndBias) {
  for (Zp zp : {Zp::None, Zp::Float}) {
    NbitsProblem p(96, 41, 4, 32, zp, true, 7 + static_cast<uint64_t>(zp));
    check_nbits(p, {3, 96}, true, 8);
    check_nbits(p, {2, 9, 96}, true, 9);
  }
}

TEST(MatMulNBits, VectorAGivesOneRow) {
  NbitsProblem p(96, 50, 4, 32, Zp::Packed, false, 91);
  check_nbits(p, {96}, true, 92);
}

TEST(MatMulNBits, BlockSize256AndLongK) {
  NbitsProblem p(600, 20, 4, 256, Zp::Packed, false, 31);
  check_nbits(p, {1, 600}, true, 32);
  check_nbits(p, {12, 600}, false, 33);
}

TEST(MatMulNBits, GemvLaneCountsAndAFoldedGrid) {
  NbitsProblem p(200, 300, 4, 32, Zp::Packed, false, 41);
  Tensor a = test::random_tensor({2, 200}, 42);
  auto ref = p.reference(a, true);
  for (int64_t lanes : {4, 32, 128}) {
    ops::NodeInfo node = nbits_node(p.k, p.n, p.bits, p.block_size);
    node.attributes.set("wgi.gemv_lanes", lanes);
    runtime::NodeRunOptions options;
    options.capabilities = test::device().capabilities();
    options.capabilities->limits.max_compute_workgroups_per_dimension = 8;  // 10, 75, 300 groups: 2-D and 3-D
    auto out = runtime::run_node(test::device(), node, p.inputs(a, true), options);
    EXPECT_TRUE(test::close_in_l2(out[0], as_array(ref), kRelativeL2)) << "lanes " << lanes;
  }
  ops::NodeInfo tiled = nbits_node(p.k, p.n, p.bits, p.block_size);
  tiled.attributes.set("wgi.kernel", std::string("tiled"));
  runtime::NodeRunOptions options;
  options.capabilities = test::device().capabilities();
  options.capabilities->limits.max_compute_workgroups_per_dimension = 3;
  auto out = runtime::run_node(test::device(), tiled, p.inputs(a, true), options);
  EXPECT_TRUE(test::close_in_l2(out[0], as_array(ref), kRelativeL2)) << "tiled, folded grid";
}

// GEMV up to 8 rows; more rows on the fast GEMM tiles with B dequantised while loading, except where the
// device cannot run them or its barriers are costly (SwiftShader): the 32x32 tiled kernel.
TEST(MatMulNBits, PlannerTakesGemvUpToEightRowsThenTheFastTiles) {
  NbitsProblem p(64, 16, 4, 32, Zp::None, false, 81);
  gpu::Capabilities cheap_barriers = test::device().capabilities();
  cheap_barriers.costly_barriers = false;
  cheap_barriers.limits.max_compute_invocations_per_workgroup =
      std::max<uint32_t>(256, cheap_barriers.limits.max_compute_invocations_per_workgroup);
  cheap_barriers.limits.max_compute_workgroup_size_x =
      std::max<uint32_t>(256, cheap_barriers.limits.max_compute_workgroup_size_x);
  cheap_barriers.limits.max_compute_workgroup_storage_size =
      std::max<uint32_t>(16384, cheap_barriers.limits.max_compute_workgroup_storage_size);
  gpu::Capabilities costly = cheap_barriers;
  costly.costly_barriers = true;
  for (const gpu::Capabilities* caps : {&cheap_barriers, &costly}) {
    for (int64_t rows : {1, 8, 9, 40}) {
      ops::OpPlan plan = runtime::plan_node(*caps, nbits_node(64, 16, 4, 32),
                                            p.inputs(test::random_tensor({rows, 64}, 82), false));
      ASSERT_EQ(plan.launches.size(), 1u);
      const char* want = rows <= 8 ? "matmul_nbits_gemv" : caps->costly_barriers ? "tiled" : "gemm_fast64";
      EXPECT_NE(plan.launches[0].program.label.find(want), std::string::npos)
          << rows << " rows" << (caps->costly_barriers ? ", costly barriers" : "") << ": "
          << plan.launches[0].program.label;
      if (rows > 8 && !caps->costly_barriers) {
        EXPECT_NE(plan.launches[0].program.label.find("_q4"), std::string::npos);
      }
    }
  }
}

// Columns per thread: 4 for an LM-head-wide 8-bit product and one row of 4-bit codes, 2 with 2-bit codes and
// NF4, fewer as the rows grow (rows x columns <= 8), 1 where the grid would fall under the minimum
// workgroups; the attribute is checked; only 8-bit codes prefetch.
TEST(MatMulNBits, PlannerGivesWideGemvsSeveralColumnsPerThread) {
  constexpr int64_t k = 64, n = 51289;
  const gpu::Capabilities caps = test::device().capabilities();
  for (auto [bits, rows, n_used, want] : {std::tuple{4, 1, n, "_c4"},
                                          {4, 2, n, "_c2"},
                                          {4, 4, n, "_c2"},
                                          {4, 8, n, "_c1"},
                                          {4, 1, int64_t{300}, "_c1"},
                                          {8, 1, n, "_c4"},
                                          {8, 2, n, "_c4"},
                                          {8, 4, n, "_c2"},
                                          {2, 1, n, "_c2"}}) {
    NbitsProblem q(k, n_used, bits, 32, Zp::None, false, 84);
    ops::OpPlan plan = runtime::plan_node(caps, nbits_node(k, n_used, bits, 32),
                                          q.inputs(test::random_tensor({rows, k}, 85), false));
    ASSERT_EQ(plan.launches.size(), 1u);
    EXPECT_NE(plan.launches[0].program.label.find(want), std::string::npos)
        << bits << " bits, " << rows << " rows, N " << n_used << ": " << plan.launches[0].program.label;
    // 8-bit codes load the next step's quads first (PREFETCH_QUAD), the others do not.
    EXPECT_EQ(plan.launches[0].program.label.find("_prefetch") != std::string::npos, bits == 8)
        << plan.launches[0].program.label;
  }
  Tensor codes = test::random_bytes({n * k / 2}, 88);
  Tensor absmax = test::random_scales({n * k / 64}, 89, false, 0.5f, 2.0f);
  ops::OpPlan nf4 = runtime::plan_node(
      caps, bnb4_node(k, n, 64, 1),
      Inputs{NodeInput{test::random_tensor({1, k}, 90)}, NodeInput{codes, true}, NodeInput{absmax, true}});
  ASSERT_EQ(nf4.launches.size(), 1u);
  EXPECT_NE(nf4.launches[0].program.label.find("_c2"), std::string::npos) << nf4.launches[0].program.label;
  ops::NodeInfo bad = nbits_node(k, 300, 4, 32);
  bad.attributes.set("wgi.gemv_thread_columns", int64_t{4});
  NbitsProblem small(k, 300, 4, 32, Zp::None, false, 86);
  EXPECT_HAS(run_error(bad, small.inputs(test::random_tensor({4, k}, 87), false)),
             "wgi.gemv_thread_columns = 4 must be 1, 2 or 4 with at most 8 rows x columns (4 rows)");
}

// The fast tiles' other paths with a quantized B: the 128 tile, a split K (partial sums, then the reduction
// applies bias, residual and activation), a folded grid, a wave tail (the later rows a launch of their own,
// bound further into A, the residual and the output); K and N unaligned to the tiles and to 4, a partial
// last block; against the same float64 reference and 1e-5.
TEST(MatMulNBits, FastTilesSplitKAndFoldedGrid) {
  NbitsProblem p(69, 133, 4, 32, Zp::Packed, false, 71);
  const Tensor a = test::random_tensor({2, 67, 69}, 72);  // M = 134: two 128-row tiles
  const Tensor r = test::random_tensor({2, 67, 133}, 73);
  const test::Reference product = p.reference(a, true);
  test::Float64Array want{{2, 67, 133}, {}};
  for (size_t i = 0; i < product.values.size(); ++i)
    want.values.push_back(std::max(0.0, product.values[i] + r.data<float>()[i]));
  struct Variant {
    const char* tile;
    int64_t splits;
    uint32_t max_groups;
    int64_t head_rows = 0;  // wgi.gemm_head_rows, 0: not set
  };
  for (const Variant& v : {Variant{"fast128", 1, 65535}, Variant{"fast64", 3, 65535}, Variant{"fast64", 1, 3},
                           Variant{"fast64", 1, 65535, 64}}) {
    ops::NodeInfo node = nbits_node(p.k, p.n, p.bits, p.block_size);
    node.attributes.set("wgi.kernel", std::string("fast"));
    node.attributes.set("wgi.gemm_kernel", std::string(v.tile));
    if (v.splits > 1) node.attributes.set("wgi.gemm_split_k", v.splits);
    if (v.head_rows) node.attributes.set("wgi.gemm_head_rows", v.head_rows);
    node.attributes.set("wgi.residual", int64_t{1});
    node.attributes.set("wgi.activation", std::string("Relu"));
    Inputs in = p.inputs(a, true);
    in.push_back(NodeInput{r});
    runtime::NodeRunOptions options;
    options.capabilities = test::device().capabilities();
    options.capabilities->limits.max_compute_workgroups_per_dimension = v.max_groups;
    const auto out = runtime::run_node(test::device(), node, in, options);
    const auto result = test::close_in_l2(out[0], want, kRelativeL2);
    EXPECT_TRUE(result) << v.tile << " split " << v.splits << " groups " << v.max_groups << " head "
                        << v.head_rows << ": " << result.message();
    const ops::OpPlan plan = runtime::plan_node(*options.capabilities, node, in);
    ASSERT_EQ(plan.launches.size(), v.splits > 1 || v.head_rows ? 2u : 1u);
    EXPECT_NE(plan.launches[0].program.label.find(std::string("gemm_") + v.tile), std::string::npos)
        << plan.launches[0].program.label;
    EXPECT_EQ(plan.launches[0].program.label.find("_head") != std::string::npos, v.head_rows != 0)
        << plan.launches[0].program.label;
  }
}

// B stays packed on the GPU: its uint8 initializer is never bound (the device stores uint8 tensors one per
// u32), the kernels read a copy of its bytes as words: an eighth of the float32 weight for 4 bits.
TEST(MatMulNBits, WeightStaysPacked) {
  NbitsProblem p(768, 96, 4, 32, Zp::Packed, false, 51);
  Tensor a = test::random_tensor({1, 768}, 52);
  ops::OpPlan plan =
      runtime::plan_node(test::device().capabilities(), nbits_node(p.k, p.n, 4, 32), p.inputs(a, false));
  for (const auto& launch : plan.launches) {
    for (const ops::TensorRef& ref : launch.bindings)
      EXPECT_FALSE(ref.kind == ops::TensorRef::Kind::Input && ref.index == 1) << "B bound as uint8";
  }
  ASSERT_FALSE(plan.constants.empty());
  const double fp32_bytes = 768.0 * 96 * 4;
  EXPECT_LE(plan.constants[0].byte_size(), 0.13 * fp32_bytes);
  uint64_t all = 0;
  for (const Tensor& c : plan.constants) all += c.byte_size();
  all += p.scales.byte_size();  // bound as stored
  EXPECT_LE(static_cast<double>(all), 0.16 * fp32_bytes + static_cast<double>(p.scales.byte_size()));
}

TEST(MatMulBnb4, Nf4AndFp4MatchFloat64Reference) {
  struct BnbCase {
    Shape a;
    int64_t n, block;
  };
  // K = 100 with block 64 and K = 37 (odd: columns start mid-byte): blocks straddle columns.
  const std::vector<BnbCase> cases = {{{1, 128}, 40, 64}, {{3, 100}, 33, 64}, {{2, 4, 37}, 21, 16},
                                      {{1, 37}, 70, 256}, {{40, 64}, 35, 32}, {{5, 200}, 9, 128}};
  uint64_t seed = 500;
  for (int64_t quant_type : {0, 1}) {
    for (const BnbCase& c : cases) {
      const int64_t k = c.a.back();
      for (bool half : {false, true}) {
        Tensor b = test::random_bytes({(c.n * k + 1) / 2}, ++seed);
        Tensor absmax = test::random_scales({(c.n * k + c.block - 1) / c.block}, ++seed, half, 0.5f, 2.0f);
        Tensor a = test::random_tensor(c.a, ++seed);
        auto ref = test::quantized_matmul_reference(
            a, test::dequantize_matmul_bnb4(b, absmax, k, c.n, c.block, quant_type), c.n, nullptr);
        const int64_t m = a.element_count() / k;
        for (const std::string kernel : {"gemv", "gemv4", "tiled", "fast"}) {
          if ((kernel == "gemv" || kernel == "gemv4") && m > 8) continue;
          if (kernel == "fast" && (m < 3 || half)) continue;
          ops::NodeInfo node = bnb4_node(k, c.n, c.block, quant_type);
          node.attributes.set("wgi.kernel", kernel == "gemv4" ? std::string("gemv") : kernel);
          if (kernel == "gemv4") node.attributes.set("wgi.gemv_lanes", int64_t{4});
          auto out = runtime::run_node(test::device(), node,
                                       Inputs{NodeInput{a}, NodeInput{b, true}, NodeInput{absmax, true}});
          EXPECT_TRUE(test::close_in_l2(out[0], as_array(ref), kRelativeL2))
              << (quant_type ? "NF4" : "FP4") << " A " << shape_to_string(c.a) << " N " << c.n << " block "
              << c.block << " " << kernel << (half ? " f16 absmax" : "");
        }
      }
    }
  }
}

TEST(MatMulNBits, BadInputsFailNamingNodeInputAndExpectation) {
  NbitsProblem p(64, 8, 4, 32, Zp::Packed, false, 61);
  Tensor a = test::random_tensor({2, 64}, 62);
  auto with = [&](auto edit) {
    ops::NodeInfo node = nbits_node(64, 8, 4, 32);
    Inputs in = p.inputs(a, false);
    edit(node, in);
    return run_error(node, in);
  };
  std::string e = with([](ops::NodeInfo&, Inputs& in) {
    in[1] = NodeInput{test::random_bytes({8, 2, 15}, 1), true};
  });
  EXPECT_HAS(e, "node 'nbits_under_test' (MatMulNBits, domain com.microsoft");
  EXPECT_HAS(e, "(B) is [8, 2, 15]; expected [8, 2, 16]");
  e = with([](ops::NodeInfo&, Inputs& in) { in[3] = NodeInput{test::random_bytes({8, 2}, 1), true}; });
  EXPECT_HAS(e, "(zero_points) is [8, 2]; expected [8, 1]");
  e = with([](ops::NodeInfo&, Inputs& in) { in[2] = NodeInput{test::random_tensor({8, 3}, 1), true}; });
  EXPECT_HAS(e, "(scales) is [8, 3] (24 elements); expected [8, 2] (16 elements)");
  e = with([](ops::NodeInfo& n, Inputs&) { n.attributes.set("bits", int64_t{3}); });
  EXPECT_HAS(e, "bits = 3 is unsupported: wgi takes 2, 4 or 8");
  for (int64_t block : {8, 48, 512}) {
    e = with([&](ops::NodeInfo& n, Inputs&) { n.attributes.set("block_size", block); });
    EXPECT_HAS(e, "block_size = " + std::to_string(block) + " is unsupported");
  }
  e = with([&](ops::NodeInfo&, Inputs& in) { in[0] = NodeInput{test::random_tensor({2, 63}, 1)}; });
  EXPECT_HAS(e, "(A) is [2, 63]; its last dim must be K = 64");
  e = with([](ops::NodeInfo&, Inputs& in) {
    in.resize(5);
    in[4] = NodeInput{Tensor(DType::Int32, {64}), true};
  });
  EXPECT_HAS(e, "(g_idx");
  e = with([](ops::NodeInfo&, Inputs& in) { in[1]->constant = false; });
  EXPECT_HAS(e, "(B) is not a constant");
  e = with([](ops::NodeInfo& n, Inputs&) { n.attributes.set("weight_prepacked", int64_t{1}); });
  EXPECT_HAS(e, "weight_prepacked = 1");
  e = with([](ops::NodeInfo& n, Inputs&) { n.attributes.set("wgi.kernel", std::string("gemv")); });
  EXPECT_EQ(e, "no error");
  ops::NodeInfo tall = nbits_node(64, 8, 4, 32);
  tall.attributes.set("wgi.kernel", std::string("gemv"));
  EXPECT_HAS(run_error(tall, p.inputs(test::random_tensor({9, 64}, 1), false)),
             "gemv kernel takes at most 8 rows");
  ops::NodeInfo no_k = nbits_node(64, 8, 4, 32);
  no_k.attributes = {};
  no_k.attributes.set("N", int64_t{8});
  EXPECT_HAS(run_error(no_k, p.inputs(a, false)), "attribute K is required");
}

TEST(MatMulBnb4, BadInputsFail) {
  Tensor a = test::random_tensor({2, 37}, 71);
  Tensor b = test::random_bytes({(37 * 5 + 1) / 2}, 72);
  Tensor absmax = test::random_scales({3}, 73, false);
  Inputs in = {NodeInput{a}, NodeInput{b, true}, NodeInput{absmax, true}};
  EXPECT_EQ(run_error(bnb4_node(37, 5, 64, 1), in), "no error");
  EXPECT_HAS(run_error(bnb4_node(37, 5, 64, 2), in), "quant_type = 2 is unknown");
  EXPECT_HAS(run_error(bnb4_node(37, 6, 64, 1), in), "(B) is [93]; expected [111]");
  EXPECT_HAS(run_error(bnb4_node(37, 5, 16, 1), in), "(absmax) is [3] (3 elements); expected [12]");
  ops::NodeInfo t = bnb4_node(37, 5, 64, 1);
  t.attributes.set("transB", int64_t{0});
  EXPECT_HAS(run_error(t, in), "transB = 0 is unsupported");
}

// ---- models: tests/data/models/variants/<variant>/ (tests/models/variants_weight_only.py) ----

const fs::path kVariants = fs::path(WGI_TEST_DATA_DIR) / "models" / "variants";

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  if (!fs::exists(kVariants)) return names;
  for (const auto& entry : fs::directory_iterator(kVariants)) {
    if (fs::exists(entry.path() / "model.onnx") && entry.path().filename() != "unknown_contrib")
      names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class WeightOnlyVariantTest : public ::testing::TestWithParam<std::string> {};

// Tolerance vs onnxruntime: both dequantise the same codes exactly and accumulate in f32 (ORT's MLAS in its
// own order), through a few layers of LayerNorm / Softmax / GELU each side: relative L2 1e-5 (seen: ~1e-7).
// A wrong code, block, scale or zero point in any layer gives 1e-2 or more (a whole quantisation step).
// At accuracy_level 4 (the "_acc4" files) ORT quantises A to int8 per block before its products: ~3e-3
// relative L2 from that alone on these models, so 1e-2 there (still below a wrong dequantisation).
constexpr double kOrtRelativeL2 = 1e-5;
constexpr double kOrtInt8ActivationRelativeL2 = 1e-2;
// q4f16 ("_q4f16": float16 scales and activations between ops) rounds every activation to float16 on both
// sides, in different places (wgi unpacks to f32 inside each op): the fp16 models' bound (test_float16.cpp),
// 2e-3, about 4x what these files show (~5e-4); a wrong dequantisation still gives 1e-2 or more.
constexpr double kOrtFloat16RelativeL2 = 2e-3;

TEST_P(WeightOnlyVariantTest, MatchesOnnxRuntimeOnTheSameFile) {
  const fs::path dir = kVariants / GetParam();
  Session session = Session::from_file(dir / "model.onnx");
  std::map<std::string, Tensor> inputs;
  for (const TensorInfo& in : session.inputs())
    inputs[in.name] = npy::load(dir / ("input_" + in.name + ".npy"));
  std::vector<std::string> names;
  for (const TensorInfo& out : session.outputs()) names.push_back(out.name);
  auto ours = session.run(inputs);
  auto theirs = test::run_onnxruntime(dir / "model.onnx", inputs, names);
  size_t compared = 0;
  for (const std::string& name : names) {
    const Tensor& want = theirs.at(name);
    test::Float64Array ref{want.shape(), {}};
    for (float v : want.data<float>()) ref.values.push_back(v);
    const double limit = GetParam().ends_with("_acc4")    ? kOrtInt8ActivationRelativeL2
                         : GetParam().ends_with("_q4f16") ? kOrtFloat16RelativeL2
                                                          : kOrtRelativeL2;
    auto result = test::close_in_l2(ours.at(name), ref, limit);
    EXPECT_TRUE(result) << GetParam() << " output '" << name << "'";
    std::cerr << "[ variant " << GetParam() << " / " << name << " vs onnxruntime: " << result.message()
              << " ]\n";
    ++compared;
  }
  EXPECT_GT(compared, 0u);
}

// The variants approximate their fp32 source (variants_weight_only.py's quantisers work): wgi's output
// against the source folder's float64 expected_*.npy, within the round-to-nearest quantisation error of the
// recipe propagated through the model: bounds about 2-4x what these models show (q8 ~4e-3; 4-bit 4e-2 to
// 1e-1; 2-bit with zero points ~0.2), far below the ~1 of a scrambled layout or a wrong scale.
double quantisation_bound(const std::string& variant) {
  if (variant.find("_q8") != std::string::npos) return 1e-2;
  if (variant.find("_q2") != std::string::npos) return 0.5;
  return 0.25;
}

TEST_P(WeightOnlyVariantTest, ApproximatesItsFloat32Source) {
  const std::string variant = GetParam();
  const fs::path dir = kVariants / variant;
  const fs::path source =
      fs::path(WGI_TEST_DATA_DIR) / "models" / variant.substr(0, variant.find("_opset") + 8);
  ASSERT_TRUE(fs::exists(source / "model.onnx")) << source;
  Session session = Session::from_file(dir / "model.onnx");
  std::map<std::string, Tensor> inputs;
  for (const TensorInfo& in : session.inputs())
    inputs[in.name] = npy::load(dir / ("input_" + in.name + ".npy"));
  auto ours = session.run(inputs);
  size_t compared = 0;
  for (const TensorInfo& out : session.outputs()) {
    const fs::path expected = source / ("expected_" + out.name + ".npy");
    if (!fs::exists(expected)) continue;
    auto result =
        test::close_in_l2(ours.at(out.name), test::load_float64_npy(expected), quantisation_bound(variant));
    EXPECT_TRUE(result) << variant << " output '" << out.name << "'";
    std::cerr << "[ variant " << variant << " / " << out.name << " vs fp32 source: " << result.message()
              << " ]\n";
    ++compared;
  }
  EXPECT_GT(compared, 0u);
}

INSTANTIATE_TEST_SUITE_P(Variants, WeightOnlyVariantTest, ::testing::ValuesIn(variant_names()),
                         [](const auto& p) { return p.param; });

// A whole q4 model's device weights against its fp32 source, run on the same inputs: the 4-bit codes are
// 0.125x of each MatMul weight and the float32 scales of blocks of 32 another 0.125x; embeddings, LayerNorm
// parameters and biases stay float32 (bart_decoder_tiny: ~0.2x in all). If B's uint8 initializer were
// uploaded too (one u32 per byte), the q4 file would need more than the fp32 one.
TEST(MatMulNBits, QuantizedModelHoldsAQuarterOfTheWeightBytes) {
  const fs::path fp32 = fs::path(WGI_TEST_DATA_DIR) / "models" / "bart_decoder_tiny_opset17";
  const fs::path q4 = kVariants / "bart_decoder_tiny_opset17_q4";
  uint64_t bytes[2] = {0, 0};
  int i = 0;
  for (const fs::path& dir : {fp32, q4}) {
    Session session = Session::from_file(dir / "model.onnx");
    std::map<std::string, Tensor> inputs;
    for (const TensorInfo& in : session.inputs())
      inputs[in.name] = npy::load(dir / ("input_" + in.name + ".npy"));
    session.run(inputs);
    bytes[i++] = session.stats().memory.weight_bytes;
  }
  EXPECT_GT(bytes[1], 0u);
  EXPECT_LE(static_cast<double>(bytes[1]), 0.25 * static_cast<double>(bytes[0]))
      << "q4 " << bytes[1] << " bytes, fp32 " << bytes[0];
  std::cerr << "[ bart_decoder_tiny weights: fp32 " << bytes[0] << " bytes, q4 " << bytes[1] << " ]\n";
}

// com.microsoft is an op domain like any other: a contrib op wgi does not implement still fails at load,
// by name, while the quantized matmul beside it is accepted.
TEST(ComMicrosoftDomain, UnknownContribOpsFailAtLoadByName) {
  try {
    Session::from_file(kVariants / "unknown_contrib" / "model.onnx");
    ADD_FAILURE() << "loaded a model with an unknown com.microsoft op";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_HAS(message, "FancyContribOp");
    EXPECT_HAS(message, "com.microsoft");
    EXPECT_EQ(message.find("MatMulNBits"), std::string::npos) << message;
  }
}

// The epilogue the graph passes fuse into MatMulNBits (fuse_bias_adds: input 5; fuse_residual_adds: input 6,
// wgi.residual; fuse_activations: wgi.activation), on both kernels, against
// act(A dequant(B)^T + bias + R) in float64: the same 1e-5 (the kernels add bias and R to the f32 sum and
// apply the activation once, in f32). A residual that broadcasts runs as the product then one Add.
TEST(MatMulNBits, FusedBiasResidualAndActivationOnBothKernels) {
  NbitsProblem p(100, 37, 4, 32, Zp::Packed, false, 61);
  for (const Shape& a_shape : {Shape{3, 100}, Shape{2, 11, 100}}) {
    const Tensor a = test::random_tensor(a_shape, 62);
    const test::Reference product = p.reference(a, true);
    Shape out_shape(a_shape.begin(), a_shape.end() - 1);
    out_shape.push_back(p.n);
    for (const bool broadcast : {false, true}) {
      const Tensor r = test::random_tensor(broadcast ? Shape{p.n} : out_shape, 63);
      for (const std::string activation : {"Relu", "Gelu", "GeluTanh", ""}) {
        test::Float64Array want{out_shape, {}};
        for (size_t i = 0; i < product.values.size(); ++i) {
          double v = product.values[i] + r.data<float>()[broadcast ? i % static_cast<size_t>(p.n) : i];
          if (activation == "Relu") v = std::max(v, 0.0);
          if (activation == "Gelu") v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
          if (activation == "GeluTanh")
            v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
          want.values.push_back(v);
        }
        for (const std::string kernel : {"gemv", "tiled", "fast"}) {
          if (kernel == "gemv" && element_count(a_shape) / p.k > 8) continue;
          if (kernel == "fast" && (activation == "Relu" || activation == "GeluTanh")) continue;  // CI time
          ops::NodeInfo node = nbits_node(p.k, p.n, p.bits, p.block_size);
          node.attributes.set("wgi.kernel", kernel);
          node.attributes.set("wgi.residual", int64_t{1});
          if (!activation.empty()) node.attributes.set("wgi.activation", activation);
          Inputs in = p.inputs(a, true);
          in.push_back(NodeInput{r});
          const auto out = runtime::run_node(test::device(), node, in);
          const auto result = test::close_in_l2(out[0], want, kRelativeL2);
          EXPECT_TRUE(result) << kernel << " " << activation << " A " << shape_to_string(a_shape)
                              << (broadcast ? " R broadcast" : "") << ": " << result.message();
          if (!broadcast) {
            const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), node, in);
            EXPECT_EQ(plan.launches.size(), 1u) << kernel << " " << activation;  // all in the epilogue
          }
        }
      }
    }
  }
}

// The fusion passes on a q4 model (tests/models/variants_weight_only.py): the 4 bias Adds, 2 residual Adds
// and the GELU after the MLP's first MatMulNBits land in the MatMulNBits epilogues, 7 dispatches fewer than
// with those passes disabled; both runs equal onnxruntime within the variants' 1e-5.
TEST(MatMulNBits, FusedEpiloguesOfAQ4ModelMatchOnnxRuntime) {
  const fs::path dir = kVariants / "tiny_transformer_opset17_q4";
  const std::map<std::string, Tensor> inputs = {{"x", npy::load(dir / "input_x.npy")}};
  const Tensor want = test::run_onnxruntime(dir / "model.onnx", inputs, {"y"}).at("y");
  test::Float64Array ref{want.shape(), {}};
  for (float v : want.data<float>()) ref.values.push_back(v);
  SessionOptions unfused_options;
  unfused_options.disabled_passes = {"fuse_bias_adds", "fuse_residual_adds", "fuse_activations"};
  Session fused = Session::from_file(dir / "model.onnx");
  Session unfused = Session::from_file(dir / "model.onnx", unfused_options);
  for (Session* s : {&fused, &unfused}) {
    const auto result = test::close_in_l2(s->run(inputs).at("y"), ref, kOrtRelativeL2);
    EXPECT_TRUE(result) << (s == &fused ? "fused" : "unfused") << ": " << result.message();
  }
  EXPECT_EQ(unfused.stats().plans.dispatches, fused.stats().plans.dispatches + 7);
  std::cerr << "[ q4 tiny_transformer: " << fused.stats().plans.dispatches << " dispatches fused, "
            << unfused.stats().plans.dispatches << " unfused ]\n";
}

// A MatMulNBits merged from siblings (graph::merge_sibling_products: codes, scales, zero points and biases
// side by side along N) writes each sibling's columns to an output of its own: the GEMV itself, the tiled
// and fast kernels through a scratch product and one split copy. Each block against its columns of the
// float64 product; every zero-point form, 2 and 3 blocks, float16 scales and bias.
TEST(MatMulNBits, SplitColumnsOnEveryKernel) {
  uint64_t seed = 3100;
  for (const Zp zp : {Zp::None, Zp::Packed, Zp::Float}) {
    for (const std::vector<int64_t>& widths :
         {std::vector<int64_t>{16, 8, 24}, std::vector<int64_t>{13, 20}}) {
      int64_t n = 0;
      for (int64_t w : widths) n += w;
      const bool half = zp == Zp::Float;
      NbitsProblem p(72, n, 4, 32, zp, half, seed += 10);
      for (const Shape& a_shape : {Shape{1, 72}, Shape{2, 3, 72}, Shape{12, 72}}) {
        const Tensor a = test::random_tensor(a_shape, seed + 5);
        const test::Reference ref = p.reference(a, true);
        for (const std::string kernel : {"gemv", "tiled", "fast"}) {
          if (kernel == "gemv" && a.element_count() / p.k > 8) continue;
          if (kernel == "fast" && a.element_count() / p.k <= 8) continue;  // CI time: the rows it is for
          ops::NodeInfo node = nbits_node(p.k, p.n, p.bits, p.block_size);
          node.output_names.assign(widths.size(), "");
          node.attributes.set("wgi.kernel", kernel);
          node.attributes.set("wgi.split_columns", widths);
          const auto out = runtime::run_node(test::device(), node, p.inputs(a, true));
          ASSERT_EQ(out.size(), widths.size());
          int64_t begin = 0;
          for (size_t i = 0; i < widths.size(); ++i) {
            test::Float64Array block{a_shape, {}};
            block.shape.back() = widths[i];
            for (size_t row = 0; row < ref.values.size() / static_cast<size_t>(n); ++row)
              for (int64_t c = begin; c < begin + widths[i]; ++c)
                block.values.push_back(ref.values[row * n + c]);
            const auto result = test::close_in_l2(out[i], block, kRelativeL2);
            EXPECT_TRUE(result) << kernel << " block " << i << " zp " << static_cast<int>(zp) << " A "
                                << shape_to_string(a_shape) << ": " << result.message();
            begin += widths[i];
          }
        }
      }
    }
  }
}

// A LayerNormalization taken into MatMulNBits (wgi.layer_norm_epsilon, as
// graph::fuse_layer_norm_into_products makes it): input 0 is X, the scale and bias inputs 7 and 8, the
// normalised X the last output. The GEMV normalises A as it stages it (one launch, "_ln"; int8 activations
// quantise the normalised values), over K in one chunk and in several, K % 4 != 0, with a split output where
// its bindings fit the device; every other kernel gets a LayerNormalization launch first. Both outputs
// against float64: Y = (X - mean) / sqrt(var + eps) * scale + bias per row, then the quantized product of Y
// rounded to f32 (what the kernels multiply, to within f32 rounding: the same 1e-5).
TEST(MatMulNBits, LayerNormInProductOnEveryKernel) {
  struct LayerNormCase {
    Shape a;
    const char* kernel;
    std::vector<int64_t> split;  // wgi.split_columns, empty for one output
    bool ln_bias = true;
    Zp zp = Zp::Packed;
  };
  const float epsilon = 1e-5f;
  uint64_t seed = 3300;
  for (const LayerNormCase& c :
       {LayerNormCase{{1, 96}, "gemv", {}}, LayerNormCase{{3, 70}, "gemv", {}, false},
        LayerNormCase{{1, 2100}, "gemv", {}}, LayerNormCase{{2, 1100}, "gemv", {}},
        LayerNormCase{{2, 96}, "gemv_int8", {}}, LayerNormCase{{1, 96}, "gemv", {8, 16, 8}, true, Zp::None},
        LayerNormCase{{3, 96}, "tiled", {}}, LayerNormCase{{12, 96}, "fast", {}, false}}) {
    const int64_t k = c.a.back(), m = element_count(c.a) / k;
    int64_t n = 37;
    if (!c.split.empty()) n = c.split[0] + c.split[1] + c.split[2];
    const std::string kernel = c.kernel;
    const std::string what = kernel + " A " + shape_to_string(c.a) + (c.split.empty() ? "" : " split");
    SCOPED_TRACE(what);
    if (kernel == "gemv_int8" && !test::device().features().packed_int8_dot) {
      std::cerr << "[ skipped " << what << ": the device lacks packed_4x8_integer_dot_product ]\n";
      continue;
    }
    NbitsProblem p(k, n, 4, 32, c.zp, false, seed += 10);
    // Rows with an offset and a spread of their own, so that the mean and the variance both matter.
    const Tensor x = test::random_tensor(c.a, seed + 1, -2.0f, 3.0f);
    const Tensor scale = test::random_tensor({k}, seed + 2, 0.5f, 1.5f);
    const Tensor ln_bias = test::random_tensor({k}, seed + 3);
    test::Float64Array y{c.a, {}};
    Tensor y32(DType::Float32, c.a);
    for (int64_t r = 0; r < m; ++r) {
      const float* row = x.data<float>().data() + r * k;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < k; ++i) mean += row[i];
      mean /= static_cast<double>(k);
      for (int64_t i = 0; i < k; ++i) var += (row[i] - mean) * (row[i] - mean);
      const double inv_std = 1.0 / std::sqrt(var / static_cast<double>(k) + epsilon);
      for (int64_t i = 0; i < k; ++i) {
        y.values.push_back((row[i] - mean) * inv_std * scale.data<float>()[i] +
                           (c.ln_bias ? ln_bias.data<float>()[i] : 0.0));
        y32.data<float>()[r * k + i] = static_cast<float>(y.values.back());
      }
    }
    ops::NodeInfo node = nbits_node(k, n, 4, 32);
    node.attributes.set(ops::kMatMulLayerNormEpsilonAttribute, epsilon);
    node.attributes.set("wgi.kernel", kernel);
    if (kernel == "gemv_int8") node.attributes.set("accuracy_level", int64_t{4});
    if (!c.split.empty()) node.attributes.set("wgi.split_columns", c.split);
    const size_t products = c.split.empty() ? 1 : c.split.size();
    node.output_names.assign(products + 1, "");
    Inputs in = p.inputs(x, true);
    in.resize(ops::NBitsLayerNormInput::kScale);  // no residual
    in.push_back(NodeInput{scale, true});
    in.push_back(c.ln_bias ? std::optional(NodeInput{ln_bias, true}) : std::nullopt);

    // One launch where the GEMV normalises A: on the GEMV, unless its bindings (A, B, scales, zero points
    // where given, bias, the outputs, the LayerNorm's parameters and rows) exceed the device's.
    const gpu::Capabilities& caps = test::device().capabilities();
    const size_t bindings = 5 + (c.zp != Zp::None ? 1 : 0) + products + 2;
    const bool in_gemv =
        kernel.starts_with("gemv") && bindings <= caps.limits.max_storage_buffers_per_shader_stage;
    const ops::OpPlan plan = runtime::plan_node(caps, node, in);
    ASSERT_EQ(plan.launches.size(), in_gemv ? 1u : 2u);
    EXPECT_EQ(plan.launches.back().program.label.find("_ln") != std::string::npos, in_gemv)
        << plan.launches.back().program.label;
    if (!in_gemv) {
      EXPECT_TRUE(plan.launches[0].program.label.starts_with("layer_norm_rows") ||
                  plan.launches[0].program.label.starts_with("row_norm"))
          << plan.launches[0].program.label;
    }

    const auto out = runtime::run_node(test::device(), node, in);
    ASSERT_EQ(out.size(), products + 1);
    EXPECT_TRUE(test::close_in_l2(out.back(), y, kRelativeL2)) << "normalised X";
    const Tensor multiplied = kernel == "gemv_int8" ? test::int8_block_quantized(y32, 32) : y32;
    const test::Reference ref = p.reference(multiplied, true);
    const double tolerance = kernel == "gemv_int8" ? kInt8ReferenceRelativeL2 : kRelativeL2;
    int64_t begin = 0;
    for (size_t i = 0; i < products; ++i) {
      const int64_t width = c.split.empty() ? n : c.split[i];
      test::Float64Array block{c.a, {}};
      block.shape.back() = width;
      for (int64_t row = 0; row < m; ++row)
        for (int64_t col = begin; col < begin + width; ++col)
          block.values.push_back(ref.values[row * n + col]);
      const auto result = test::close_in_l2(out[i], block, tolerance);
      EXPECT_TRUE(result) << "product " << i << ": " << result.message();
      begin += width;
    }
  }
}

// The fused LayerNormalization's scale and bias must be float32 constants of K values: an error naming them.
TEST(MatMulNBits, LayerNormScaleOfTheWrongLengthIsAnError) {
  NbitsProblem p(64, 16, 4, 32, Zp::None, false, 3400);
  ops::NodeInfo node = nbits_node(64, 16, 4, 32);
  node.attributes.set(ops::kMatMulLayerNormEpsilonAttribute, 1e-5f);
  node.output_names.assign(2, "");
  Inputs in = p.inputs(test::random_tensor({1, 64}, 3401), false);
  in.resize(ops::NBitsLayerNormInput::kScale);
  in.push_back(NodeInput{test::random_tensor({63}, 3402), true});
  EXPECT_HAS(run_error(node, in), "the fused LayerNormalization's scale (input 7");
}

}  // namespace
}  // namespace wgi
