// The GEMM planner on strided operand and output views (GemmLaunchSpec's row strides, offsets and output
// strides; attention's Q, K, V read in place): which kernels may run them, when their loads are vec4s, and
// the errors for what cannot run. Pure: no GPU.
#include <gtest/gtest.h>

#include <string>

#include "gpu/device.h"
#include "ops/gemm_launch.h"
#include "support/planner_devices.h"

namespace wgi {
namespace {

gpu::Capabilities device(uint32_t invocations = 1024, bool costly_barriers = false) {
  gpu::Capabilities caps = test::model_device(48 * 1024, invocations);
  caps.costly_barriers = costly_barriers;
  return caps;
}

// DaViT's channel attention scores on a small scale: Q^T [D, N] and K [N, D] read in the packed projection
// [N, 3 * C] (row stride 3 * C), K at offset C.
ops::GemmLaunchSpec channel_scores(uint32_t c = 64, uint32_t d = 32, uint32_t tokens = 4096) {
  ops::GemmLaunchSpec s;
  s.m = d;
  s.n = d;
  s.k = tokens;
  s.a_km = true;
  s.a_row_stride = 3 * c;
  s.b_row_stride = 3 * c;
  s.b_offset = c;
  return s;
}

TEST(GemmViews, ZeroAndPackedValuesAreNoViews) {
  ops::GemmLaunchSpec s;
  s.m = 5;
  s.n = 6;
  s.k = 7;
  s.batch = 4;
  s.batch_dims = {1, 1, 2, 2};
  EXPECT_FALSE(ops::gemm_has_views(s));
  EXPECT_EQ(ops::gemm_a_row_stride(s), 7u);
  EXPECT_EQ(ops::gemm_b_row_stride(s), 6u);
  EXPECT_EQ(ops::gemm_out_row_stride(s), 6u);
  EXPECT_EQ(ops::gemm_out_batch_strides(s), (std::array<uint32_t, 4>{120, 120, 60, 30}));
  // The packed values written out are still the packed layout.
  s.a_row_stride = 7;
  s.b_row_stride = 6;
  s.out_row_stride = 6;
  s.out_batch_strides = {0, 0, 60, 30};
  EXPECT_FALSE(ops::gemm_has_views(s));
  s.a_km = true;  // A [K, M]: its packed row stride is M
  EXPECT_TRUE(ops::gemm_has_views(s));
  s.a_row_stride = 5;
  EXPECT_FALSE(ops::gemm_has_views(s));
  for (auto edit :
       {+[](ops::GemmLaunchSpec& v) { v.a_offset = 1; }, +[](ops::GemmLaunchSpec& v) { v.b_offset = 4; },
        +[](ops::GemmLaunchSpec& v) { v.b_row_stride = 8; },
        +[](ops::GemmLaunchSpec& v) { v.out_row_stride = 12; },
        +[](ops::GemmLaunchSpec& v) {
          v.out_batch_strides = {0, 0, 6, 60};
        }}) {
    ops::GemmLaunchSpec v = s;
    edit(v);
    EXPECT_TRUE(ops::gemm_has_views(v));
  }
}

TEST(GemmViews, OnlyTheFastKernelsRunThem) {
  // The planner's choice on every device kind that can: a fast kernel, even where barriers are costly
  // (SwiftShader otherwise gets the seeds' kernels) and for a few rows (otherwise GEMV).
  for (bool costly : {false, true}) {
    const ops::GemmConfig c = ops::choose_gemm_config(channel_scores(), device(1024, costly));
    EXPECT_EQ(c.kernel, ops::GemmKernel::Fast64) << costly;
  }
  ops::GemmLaunchSpec few_rows = channel_scores();
  few_rows.m = 4;
  few_rows.a_km = false;
  few_rows.b_nk = true;
  few_rows.a_row_stride = few_rows.b_row_stride = 4096 + 4;
  EXPECT_EQ(ops::choose_gemm_config(few_rows, device()).kernel, ops::GemmKernel::Fast64);
  few_rows.a_row_stride = few_rows.b_row_stride = few_rows.b_offset = 0;
  EXPECT_EQ(ops::choose_gemm_config(few_rows, device()).kernel, ops::GemmKernel::Gemv);  // packed again
  // Forced seeds' kernels and GEMV: an error saying what to run instead.
  for (ops::GemmKernel k : {ops::GemmKernel::Tiled, ops::GemmKernel::Vec4, ops::GemmKernel::Gemv}) {
    ops::GemmLaunchSpec s = channel_scores();
    s.kernel = k;
    const std::string e = test::gemm_choice_error(s, device());
    EXPECT_NE(e.find(std::string("the ") + ops::gemm_kernel_name(k) + " GEMM kernel reads and writes packed"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("fast64 or fast128"), std::string::npos) << e;
  }
  // A forced split keeps the fast kernel (a packed product's forced split moves to the tiled one).
  ops::GemmLaunchSpec split = channel_scores();
  split.split_k = 4;
  const ops::GemmPlanned planned = ops::plan_gemm_rules(split, device(1024, true), true);
  EXPECT_EQ(planned.config.kernel, ops::GemmKernel::Fast64);
  EXPECT_EQ(planned.splits, 4u);
  // A device without 256-invocation workgroups (compat) cannot run views at all: callers copy their
  // operands packed instead (gemm_views_supported), and a view asked for anyway is an error.
  EXPECT_TRUE(ops::gemm_views_supported(device()));
  EXPECT_FALSE(ops::gemm_views_supported(device(128)));
  const std::string e = test::gemm_choice_error(channel_scores(), device(128));
  EXPECT_NE(e.find("256 invocations"), std::string::npos) << e;
  EXPECT_NE(e.find("strided views"), std::string::npos) << e;
}

TEST(GemmViews, Vec4LoadsNeedAlignedStridesAndOffsets) {
  const ops::GemmConfig aligned = ops::choose_gemm_config(channel_scores(), device());
  EXPECT_TRUE(aligned.a_vec4);
  EXPECT_TRUE(aligned.b_vec4);
  auto loads = [](void (*edit)(ops::GemmLaunchSpec&)) {
    ops::GemmLaunchSpec s = channel_scores();
    edit(s);
    const ops::GemmConfig c = ops::choose_gemm_config(s, device());
    return std::make_pair(c.a_vec4, c.b_vec4);
  };
  EXPECT_EQ(loads([](ops::GemmLaunchSpec& s) { s.a_row_stride = 3 * 64 + 1; }), std::make_pair(false, true));
  EXPECT_EQ(loads([](ops::GemmLaunchSpec& s) { s.a_offset = 2; }), std::make_pair(false, true));
  EXPECT_EQ(loads([](ops::GemmLaunchSpec& s) { s.b_row_stride = 3 * 64 + 2; }), std::make_pair(true, false));
  EXPECT_EQ(loads([](ops::GemmLaunchSpec& s) { s.b_offset = 65; }), std::make_pair(true, false));
  EXPECT_EQ(loads([](ops::GemmLaunchSpec& s) {
              s.batch = 2;
              s.batch_dims = {1, 1, 1, 2};
              s.a_batch_strides = {0, 0, 0, 30};
              s.b_batch_strides = {0, 0, 0, 32};
            }),
            std::make_pair(false, true));
  // The contiguous extent still decides: A [K, M] with M = 30 reads scalars whatever its stride.
  EXPECT_EQ(loads([](ops::GemmLaunchSpec& s) {
              s.m = 30;
              s.a_row_stride = 192;
            }),
            std::make_pair(false, true));
}

TEST(GemmViews, AResidualWithAStridedOutputIsRejected) {
  ops::GemmLaunchSpec s = channel_scores();
  s.residual = ops::TensorRef::input(2);
  EXPECT_EQ(test::gemm_choice_error(s, device()),
            "no error");  // strided operands, packed output: read at its index
  s.out_row_stride = 40;
  const std::string e = test::gemm_choice_error(s, device());
  EXPECT_NE(e.find("residual"), std::string::npos) << e;
  EXPECT_NE(e.find("row stride 40"), std::string::npos) << e;
  s.out_row_stride = 0;
  s.batch = 2;
  s.batch_dims = {1, 1, 1, 2};
  s.out_batch_strides = {0, 0, 0, 2 * 32 * 32};
  EXPECT_NE(test::gemm_choice_error(s, device()).find("residual"), std::string::npos);
}

}  // namespace
}  // namespace wgi
