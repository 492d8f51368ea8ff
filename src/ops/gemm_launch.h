// Building a launch of the GEMM kernel family (src/kernels/linear/), shared by the ops that reduce to a matrix
// product: MatMul and Gemm (linear.cpp) and 1x1 convolutions (conv.cpp).
//   out[b, m, n] = act(alpha * sum_k A[b, m, k] * B[b, k, n] + beta * C[m * bias_stride_m + n * bias_stride_n])
#pragma once

#include <array>
#include <cstdint>

#include "ops/fused_activation.h"
#include "ops/op.h"

namespace wgi::ops {

enum class GemmKernel { Tiled, Vec4 };

struct GemmLaunchSpec {
  uint32_t m = 0, n = 0, k = 0;
  uint32_t batch = 1;                             // output matrices, decoded from batch_dims
  std::array<uint32_t, 4> batch_dims = {1, 1, 1, 1};  // outermost first, padded with 1s in front
  std::array<uint32_t, 4> a_batch_strides = {0, 0, 0, 0};
  std::array<uint32_t, 4> b_batch_strides = {0, 0, 0, 0};
  bool a_km = false;  // A stored [K, M] instead of [M, K]
  bool b_nk = false;  // B stored [N, K] instead of [K, N]
  GemmKernel kernel = GemmKernel::Tiled;  // Vec4 needs !a_km, b_nk and k % 4 == 0
  TensorRef a, b, out;
  std::optional<TensorRef> bias;
  uint32_t bias_stride_m = 0, bias_stride_n = 0;
  float alpha = 1.0f, beta = 1.0f;
  FusedActivation activation;
};

// Throws wgi::Error (via ctx.fail) if a Vec4 kernel is asked for a layout it cannot read.
KernelLaunch make_gemm_launch(const PlanContext& ctx, const GemmLaunchSpec& spec);

}  // namespace wgi::ops
