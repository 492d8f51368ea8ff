// The float16 GEMM on subgroup matrices (tensor cores through WebGPU), for sessions that compute in f16
// (gpu::Capabilities::f16_compute, SessionOptions::precision "f16"): a MatMul or Gemm whose B is a constant
// runs as the product (linear/gemm_matrix_f16.wgsl), which reads A as float32 and converts it as it stages
// it where K is a multiple of 8, else after a launch that casts A to a zero-padded float16 matrix
// (linear/gemm_a_to_f16.wgsl); B is converted to a padded float16 matrix once, at load. f16 operands, f32
// accumulation, the GEMM epilogue (bias, alpha / beta, residual, activation) in f32.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "ops/gemm_launch.h"
#include "ops/op.h"
#include "wgi/tensor.h"

namespace wgi::ops {

// The matrix kernel's workgroup tile (rows and columns) and K slab: A is padded to whole tiles of rows and to
// whole slabs of K, B to whole slabs of K and whole tiles of columns.
inline constexpr uint32_t kMatrixF16Tile = 128;
inline constexpr uint32_t kMatrixF16Slab = 64;
// Output tiles that fill one wave of a large GPU (the H100's and H200's 132 SMs): fewer leave SMs idle.
inline constexpr uint64_t kMatrixF16WaveTiles = 132;

// The tall tile: 256 rows x 128 columns, 512 invocations, K slabs of 32 (the kernel's TALL_TILE), for
// products of at least kMatrixF16TallMinTiles 128x128 tiles: a product loads a quarter fewer operand bytes
// (what bounds the kernel) and half as many workgroups pay the prologue and the bounced stores
// (docs/performance.md, "The f16 GEMM's tall tile"); smaller grids keep the 128-row tile, whose workgroups
// fill the waves more evenly.
inline constexpr uint32_t kMatrixF16TallRows = 256;
inline constexpr uint32_t kMatrixF16TallSlab = 32;
inline constexpr uint32_t kMatrixF16TallInvocations = 512;  // 16 subgroups of 32
inline constexpr uint64_t kMatrixF16TallMinTiles = 4 * kMatrixF16WaveTiles;
// Workgroup memory of the tall tile: A's slab (256 rows of 32 + 8 halves), B's (32 rows of 128 + 8 halves)
// and one 16x16 f32 accumulator per subgroup.
inline constexpr uint32_t kMatrixF16TallStorageBytes = kMatrixF16TallRows * (kMatrixF16TallSlab + 8) * 2 +
                                                       kMatrixF16TallSlab * (kMatrixF16Tile + 8) * 2 +
                                                       kMatrixF16TallInvocations / 32 * 16 * 16 * 4;

// Whether a product of `tiles` 128x128 tiles, not split, takes the tall tile on a device with `limits`.
bool matrix_f16_tall_tile(uint64_t tiles, uint32_t splits, const gpu::Limits& limits);

// Why `spec` (a constant B given to the op, as gemm_launch_spec plans it) does not run on the matrix kernel
// on `caps` ("" if it does): f16 compute off, a forced kernel, a quantized B, a batch of products, strided
// views (row maps are taken), A stored [K, M], or M <= 8 (the GEMV reads the weight once, which is what
// bounds those).
std::string matrix_f16_gemm_problem(const GemmLaunchSpec& spec, const gpu::Capabilities& caps);

// K chunks for a product of `tiles` 128x128 output tiles over `k`: a grid of fewer tiles than the SMs of a
// large GPU (132) leaves most of them idle, so K is split into up to 2 x 132 / tiles chunks of at least four
// slabs (K >= 512), each writing raw partial sums that gemm_split_reduce.wgsl adds through the epilogue; 1
// (no split) otherwise.
uint32_t matrix_f16_split_count(uint64_t tiles, uint32_t k);

// B ([K, N], or [N, K] when `stored_nk`; float32 or float16) as the kernel reads it: float16 [Kp, Np], zeros
// past K and N (Kp, Np: K and N rounded up to the slab and the tile).
Tensor matrix_f16_b(const Tensor& b, int64_t k, int64_t n, bool stored_nk);
// A bias of N values as the kernel's accumulators start: float32 [16, Np], every row the bias, zeros past N.
Tensor matrix_f16_bias_rows(const Tensor& bias, int64_t n);
// A float32 bias of N values (each within the float16 range) as the residual-starting accumulators add it
// (the kernel's BIAS_SPLIT): float16 [32, Np], a 16x16 block of ones in rows 0-15, the bias rounded to
// float16 in row 16 and the rest of each value, rounded, in row 17 (their sum is the bias within 2^-22),
// zeros elsewhere.
Tensor matrix_f16_bias_split(const Tensor& bias, int64_t n);

// A 2-D convolution run as the product (the kernel's A_CONV, ops/conv/matrix_f16.cpp): rows are output
// pixels, columns output channels; A is gathered from spec.a as the product stages it, and the output is
// written through spec.out_row_map plus `out_col_stride` per column. spec.a is the float32 NCHW input with K
// the weight's (c, kh, kw), or with `nhwc_f16` the input as float16 NHWC (C a multiple of 8) with K (kh, kw,
// c); B's K order must match.
struct MatrixF16Conv {
  std::array<uint32_t, 4> input{};   // C, H, W, H * W
  std::array<uint32_t, 4> kernel{};  // KH, KW, dilation along H, along W
  std::array<uint32_t, 4> step{};    // stride along H, along W, leading pad along H, along W
  std::array<uint32_t, 4> output{};  // OH, OW, OH * OW, KH * KW
  uint32_t out_col_stride = 0;       // OH * OW: one output channel's plane
  bool nhwc_f16 = false;
};

// Appends the launches for `spec` (the cast of A where needed, the product, the reduction of a K split) and
// their scratch and constants to `plan`: `b` is the constant B (`b_nk`: stored [N, K]); `bias`, when not
// null, the constant bias that spec.bias binds. With `conv`, spec describes the convolution's product (A the
// NCHW input, an output row map): no cast, no K split, every tile through the bounce and gemm_epilogue.
void append_matrix_f16_gemm(const PlanContext& ctx, const GemmLaunchSpec& spec, const Tensor& b, bool b_nk,
                            const Tensor* bias, OpPlan& plan, const MatrixF16Conv* conv = nullptr);

}  // namespace wgi::ops
