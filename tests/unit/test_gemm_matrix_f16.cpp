// The float16 GEMM on subgroup matrices (ops/gemm_matrix_f16.h) without a GPU: which products it takes, the
// padded float16 B and bias rows it uploads (against element-by-element references); what a session computing
// in f16 plans for a model is in test_float16_plans.cpp. Its numerics need shader-f16 and
// subgroup matrices, which no CPU adapter here has: tests/web/node_f16.mjs runs them on the H200 through
// dawn.node.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "gpu/large_gpu_capabilities.h"
#include "ops/float16.h"
#include "ops/gemm_matrix_f16.h"
#include "ops/registry.h"

namespace wgi {
namespace {

gpu::Capabilities f16_caps() {
  gpu::Capabilities caps = gpu::large_gpu_capabilities();
  caps.features.shader_f16 = caps.features.subgroups = caps.features.subgroup_matrix_f16 = true;
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
  // K = 770: rows of A are not whole 16-byte chunks, so A is cast first (and K still splits).
  EXPECT_EQ(labels(plan(197, 3072, 770)),
            (std::vector<std::string>{"gemm_a_to_f16", "gemm_matrix_f16_split", "gemm_split_reduce"}));
  EXPECT_EQ(labels(plan(1576, 3072, 100)), (std::vector<std::string>{"gemm_a_to_f16", "gemm_matrix_f16"}));
}

}  // namespace
}  // namespace wgi
