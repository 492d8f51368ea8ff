// The float16 GEMM on subgroup matrices (ops/gemm_matrix_f16.h) without a GPU: which products it takes, the
// padded float16 B and bias rows it uploads (against element-by-element references); what a session computing
// in f16 plans for a model is in test_float16_plans.cpp. Its numerics need shader-f16 and
// subgroup matrices, which no CPU adapter here has: tests/web/node_f16.mjs runs them on the H200 through
// dawn.node.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gpu/large_gpu_capabilities.h"
#include "ops/float16.h"
#include "ops/gemm_matrix_f16.h"
#include "ops/registry.h"

namespace wgi {
namespace {

gpu::Capabilities f16_caps() {
  gpu::Capabilities caps = gpu::large_gpu_f16_capabilities();
  caps.f16_compute = true;
  return caps;
}

ops::GemmLaunchSpec product(uint32_t m, uint32_t n, uint32_t k) {
  ops::GemmLaunchSpec spec;
  spec.m = m;
  spec.n = n;
  spec.k = k;
  spec.b_nk = true;
  spec.b_prepacked = true;
  return spec;
}

TEST(GemmMatrixF16, TakesConstantWeightProductsOfMoreThanEightRowsWhenComputingInF16) {
  const gpu::Capabilities caps = f16_caps();
  EXPECT_EQ(ops::matrix_f16_gemm_problem(product(577, 768, 768), caps), "");
  EXPECT_EQ(ops::matrix_f16_gemm_problem(product(9, 3, 5), caps), "");
  EXPECT_NE(ops::matrix_f16_gemm_problem(product(8, 768, 768), caps), "");  // the GEMV's
  gpu::Capabilities f32 = caps;
  f32.f16_compute = false;
  EXPECT_NE(ops::matrix_f16_gemm_problem(product(577, 768, 768), f32), "");
  ops::GemmLaunchSpec batched = product(64, 64, 64);
  batched.batch = 2;
  EXPECT_NE(ops::matrix_f16_gemm_problem(batched, caps), "");
  ops::GemmLaunchSpec forced = product(64, 64, 64);
  forced.kernel = ops::GemmKernel::Fast128;
  EXPECT_NE(ops::matrix_f16_gemm_problem(forced, caps), "");
  ops::GemmLaunchSpec view = product(64, 64, 64);
  view.a_row_stride = 96;
  EXPECT_NE(ops::matrix_f16_gemm_problem(view, caps), "");
  ops::GemmLaunchSpec windows = product(64, 64, 64);  // DaViT's window partition and reverse: taken
  windows.a_row_map = ops::GemmRowMap{{1, 2, 4, 8}, {512, 256, 64, 8}};
  windows.out_row_map = windows.a_row_map;
  EXPECT_EQ(ops::matrix_f16_gemm_problem(windows, caps), "");
  ops::GemmLaunchSpec km = product(64, 64, 64);
  km.a_km = true;
  EXPECT_NE(ops::matrix_f16_gemm_problem(km, caps), "");
  ops::GemmLaunchSpec quantized = product(64, 64, 64);
  quantized.b_quantized.emplace();
  EXPECT_NE(ops::matrix_f16_gemm_problem(quantized, caps), "");
}

// B of K x N (stored [K, N] or [N, K], float32 or float16) comes out float16 [Kp, Np], Kp and Np rounded up
// to the slab (64) and the tile (128), the values rounded to nearest, zeros in the padding.
TEST(GemmMatrixF16, PrepacksBAsPaddedFloat16) {
  for (const bool stored_nk : {false, true}) {
    for (const bool half : {false, true}) {
      const int64_t k = 70, n = 130;
      Tensor b(half ? DType::Float16 : DType::Float32, stored_nk ? Shape{n, k} : Shape{k, n});
      for (int64_t i = 0; i < k * n; ++i) {
        const float v = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f + 1e-4f;
        if (half) {
          const uint16_t h = ops::float_to_half(v);
          std::memcpy(b.bytes().data() + 2 * i, &h, 2);
        } else {
          b.data<float>()[i] = v;
        }
      }
      const Tensor packed = ops::matrix_f16_b(b, k, n, stored_nk);
      ASSERT_EQ(packed.dtype(), DType::Float16);
      ASSERT_EQ(packed.shape(), (Shape{128, 256}));
      const uint16_t* got = reinterpret_cast<const uint16_t*>(packed.bytes().data());
      const uint16_t* halves = reinterpret_cast<const uint16_t*>(b.bytes().data());
      int nonzero = 0;
      for (int64_t kk = 0; kk < 128; ++kk) {
        for (int64_t nn = 0; nn < 256; ++nn) {
          uint16_t want = 0;
          if (kk < k && nn < n) {
            const int64_t at = stored_nk ? nn * k + kk : kk * n + nn;
            want = half ? halves[at] : ops::float_to_half(b.data<float>()[at]);
          }
          nonzero += got[kk * 256 + nn] != 0;
          ASSERT_EQ(got[kk * 256 + nn], want) << "k " << kk << " n " << nn << " nk " << stored_nk;
        }
      }
      EXPECT_GT(nonzero, k * n / 2);  // values, not a zero matrix
    }
  }
}

TEST(GemmMatrixF16, BiasRowsRepeatTheBiasSixteenTimes) {
  Tensor bias(DType::Float32, {5});
  for (int i = 0; i < 5; ++i) bias.data<float>()[i] = 0.25f * static_cast<float>(i + 1);
  const Tensor rows = ops::matrix_f16_bias_rows(bias, 5);
  ASSERT_EQ(rows.shape(), (Shape{16, 128}));
  const float* got = reinterpret_cast<const float*>(rows.bytes().data());
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 128; ++c) {
      ASSERT_EQ(got[r * 128 + c], c < 5 ? 0.25f * static_cast<float>(c + 1) : 0.0f) << r << "," << c;
    }
  }
}

// The residual-starting accumulators add the bias as ones x [hi; lo]: the two halves of each value sum to it
// within 2^-22 relative (f32 accumulation of f16 products of 1 is exact), the ones fill one 16x16 block.
TEST(GemmMatrixF16, BiasSplitIsTheBiasInTwoHalves) {
  const int64_t n = 133;
  Tensor bias(DType::Float32, {n});
  for (int64_t i = 0; i < n; ++i)
    bias.data<float>()[i] =
        std::ldexp(static_cast<float>(i % 17) * 0.123457f - 1.0f, static_cast<int>(i % 29) - 14);
  bias.data<float>()[5] = 65504.0f;
  bias.data<float>()[6] = 3.1e-6f;  // a float16 subnormal's range
  const Tensor split = ops::matrix_f16_bias_split(bias, n);
  ASSERT_EQ(split.shape(), (Shape{32, 256}));
  const auto* h = reinterpret_cast<const uint16_t*>(split.bytes().data());
  for (int64_t r = 0; r < 32; ++r) {
    for (int64_t c = 0; c < 256; ++c) {
      const double v = ops::half_to_float(h[r * 256 + c]);
      if (r < 16) {
        ASSERT_EQ(v, c < 16 ? 1.0 : 0.0) << r << "," << c;
      } else if (r == 16 && c < n) {
        const double want = bias.data<float>()[c];
        const double sum = v + ops::half_to_float(h[17 * 256 + c]);
        ASSERT_LE(std::abs(sum - want), std::max(std::abs(want) * std::ldexp(1.0, -22), std::ldexp(1.0, -25)))
            << c << ": " << sum << " for " << want;
      } else if (r > 17 || c >= n) {
        ASSERT_EQ(v, 0.0) << r << "," << c;
      }
    }
  }
}

// K is split where the grid of 128x128 tiles is smaller than a large GPU's 132 SMs, into chunks of at least
// four slabs (256): SigLIP-B's 197-token products (2 x 24 and 2 x 6 tiles) split, large grids and short K
// do not.
TEST(GemmMatrixF16, SplitsKOverSmallGridsOnly) {
  EXPECT_EQ(ops::matrix_f16_split_count(2 * 24, 768), 3u);   // 197 x 3072 x 768: 6 wanted, 3 chunks of K
  EXPECT_EQ(ops::matrix_f16_split_count(2 * 6, 3072), 12u);  // 197 x 768 x 3072
  EXPECT_EQ(ops::matrix_f16_split_count(100, 4096), 3u);     // ceil(264 / 100)
  EXPECT_EQ(ops::matrix_f16_split_count(13 * 24, 768), 1u);  // 1576 x 3072 x 768: enough tiles
  EXPECT_EQ(ops::matrix_f16_split_count(132, 4096), 1u);
  EXPECT_EQ(ops::matrix_f16_split_count(2, 511), 1u);  // less than two chunks of four slabs
  EXPECT_EQ(ops::matrix_f16_split_count(2, 512), 2u);
  EXPECT_EQ(ops::matrix_f16_split_count(0, 4096), 1u);
}

// The tall tile (256 x 128, 512 invocations) for grids of at least four waves of 128x128 tiles, unsplit, on a
// device that allows its workgroup; the 128-row tile otherwise.
TEST(GemmMatrixF16, TakesTheTallTileForLargeGridsOnly) {
  const gpu::Limits large = f16_caps().limits;
  EXPECT_TRUE(ops::matrix_f16_tall_tile(32 * 32, 1, large));  // 4096^3
  EXPECT_TRUE(ops::matrix_f16_tall_tile(4 * 132, 1, large));
  EXPECT_FALSE(ops::matrix_f16_tall_tile(4 * 132 - 1, 1, large));
  EXPECT_FALSE(ops::matrix_f16_tall_tile(13 * 24, 1, large));  // 1576 x 3072: 2.4 waves
  EXPECT_FALSE(ops::matrix_f16_tall_tile(32 * 32, 2, large));
  gpu::Limits narrow = large;
  narrow.max_compute_invocations_per_workgroup = 256;
  EXPECT_FALSE(ops::matrix_f16_tall_tile(32 * 32, 1, narrow));
  gpu::Limits small_memory = large;
  small_memory.max_compute_workgroup_storage_size = 44032;  // the 128-row tile's
  EXPECT_FALSE(ops::matrix_f16_tall_tile(32 * 32, 1, small_memory));
  EXPECT_LE(ops::kMatrixF16TallStorageBytes, 48u * 1024u);
}

// A MatMul with a constant B as an f16 session plans it: the product (reading A as float32 where K is a
// multiple of 8, else after a cast of A to float16), and with a K split the reduction, which then applies the
// epilogue (here the bias of a Gemm) to [splits][M][N] partial sums.
TEST(GemmMatrixF16, PlansTheProductWithTheReductionOfASplitAndACastOfAWhereNeeded) {
  const gpu::Capabilities caps = f16_caps();
  auto plan = [&caps](int64_t m, int64_t n, int64_t k) {
    ops::NodeInfo node;
    node.name = "gemm";
    node.op_type = "Gemm";
    node.opset = 17;
    const std::vector<std::optional<ops::TensorDesc>> descs{ops::TensorDesc{DType::Float32, {m, k}},
                                                            ops::TensorDesc{DType::Float32, {k, n}},
                                                            ops::TensorDesc{DType::Float32, {n}}};
    static std::vector<Tensor> constants;
    constants = {Tensor(DType::Float32, {k, n}), Tensor(DType::Float32, {n})};
    ops::PlanContext ctx{node, descs, {nullptr, &constants[0], &constants[1]}, caps};
    return ops::builtin_registry().find("", "Gemm", 17)->handler.plan(ctx);
  };
  auto labels = [](const ops::OpPlan& p) {
    std::vector<std::string> out;
    for (const ops::KernelLaunch& l : p.launches) out.push_back(l.program.label);
    return out;
  };
  const ops::OpPlan split = plan(197, 3072, 768);
  EXPECT_EQ(labels(split), (std::vector<std::string>{"gemm_matrix_f16_split", "gemm_split_reduce"}));
  const uint64_t partials = uint64_t{3} * 197 * 3072 * sizeof(float);
  EXPECT_NE(std::find(split.scratch_bytes.begin(), split.scratch_bytes.end(), partials),
            split.scratch_bytes.end());
  EXPECT_EQ(uint64_t{split.launches[0].groups.x} * split.launches[0].groups.y * split.launches[0].groups.z,
            uint64_t{2 * 24 * 3});
  EXPECT_EQ(labels(plan(1576, 3072, 768)), std::vector<std::string>{"gemm_matrix_f16"});
  // 33 x 18 tiles of 128 rows (4.5 waves): 17 x 18 tiles of 256 rows.
  const ops::OpPlan tall = plan(4100, 2304, 512);
  EXPECT_EQ(labels(tall), std::vector<std::string>{"gemm_matrix_f16_tall"});
  EXPECT_EQ(uint64_t{tall.launches[0].groups.x} * tall.launches[0].groups.y * tall.launches[0].groups.z,
            uint64_t{17 * 18});
  EXPECT_NE(tall.launches[0].program.wgsl.str().find("const TILE_M: u32 = 256u;"), std::string::npos);
  EXPECT_EQ(labels(plan(4100, 2304, 510)),
            (std::vector<std::string>{"gemm_a_to_f16", "gemm_matrix_f16_tall"}));
  // K = 770: rows of A are not whole 16-byte chunks, so A is cast first (and K still splits).
  EXPECT_EQ(labels(plan(197, 3072, 770)),
            (std::vector<std::string>{"gemm_a_to_f16", "gemm_matrix_f16_split", "gemm_split_reduce"}));
  EXPECT_EQ(labels(plan(1576, 3072, 100)), (std::vector<std::string>{"gemm_a_to_f16", "gemm_matrix_f16"}));
  // No tile inside M x N: every tile bounces (a direct store's output must hold a whole 16x16 matrix, which
  // Dawn checks when binding), and a split's partial sums are at least one matrix.
  EXPECT_EQ(labels(plan(100, 200, 72)), std::vector<std::string>{"gemm_matrix_f16_bounce"});
  const ops::OpPlan tiny_split = plan(9, 4, 1024);
  EXPECT_EQ(labels(tiny_split), (std::vector<std::string>{"gemm_matrix_f16_split", "gemm_split_reduce"}));
  EXPECT_NE(std::find(tiny_split.scratch_bytes.begin(), tiny_split.scratch_bytes.end(), uint64_t{1024}),
            tiny_split.scratch_bytes.end());
}

// A fused residual (wgi.residual, input 3) and at most a constant row bias: interior tiles start their
// accumulators from the residual (and the bias, as float16 halves) and store directly, so the label has no
// "_bounce"; a bias beyond the float16 range, or an activation after the residual, keeps every tile bouncing.
TEST(GemmMatrixF16, TakesAResidualAndBiasIntoTheAccumulators) {
  const gpu::Capabilities caps = f16_caps();
  auto plan = [&caps](float bias_value, const char* activation) {
    ops::NodeInfo node;
    node.name = "gemm_residual";
    node.op_type = "Gemm";
    node.opset = 17;
    node.attributes.set("wgi.residual", int64_t{1});
    if (*activation) node.attributes.set("wgi.activation", std::string(activation));
    const int64_t m = 4096, n = 768, k = 3072;  // 32 x 6 tiles: no K split
    const std::vector<std::optional<ops::TensorDesc>> descs{
        ops::TensorDesc{DType::Float32, {m, k}}, ops::TensorDesc{DType::Float32, {k, n}},
        ops::TensorDesc{DType::Float32, {n}}, ops::TensorDesc{DType::Float32, {m, n}}};
    static std::vector<Tensor> constants;
    constants = {Tensor(DType::Float32, {k, n}), Tensor(DType::Float32, {n})};
    for (float& v : constants[1].data<float>()) v = bias_value;
    ops::PlanContext ctx{node, descs, {nullptr, &constants[0], &constants[1], nullptr}, caps};
    return ops::builtin_registry().find("", "Gemm", 17)->handler.plan(ctx);
  };
  const ops::OpPlan direct = plan(0.5f, "");
  ASSERT_EQ(direct.launches.size(), 1u);
  EXPECT_EQ(direct.launches[0].program.label, "gemm_matrix_f16_res");
  const bool split_table = std::any_of(direct.constants.begin(), direct.constants.end(), [](const Tensor& t) {
    return t.dtype() == DType::Float16 && t.shape() == Shape{32, 768};
  });
  EXPECT_TRUE(split_table) << "no [32, Np] float16 bias table";
  EXPECT_EQ(plan(1e5f, "").launches.at(0).program.label, "gemm_matrix_f16_bounce_res");
  EXPECT_EQ(plan(0.5f, "Relu").launches.at(0).program.label, "gemm_matrix_f16_bounce_res_relu");
}

}  // namespace
}  // namespace wgi
