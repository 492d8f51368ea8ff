// Float64 CPU references for the weight-only quantized matmuls of the com.microsoft domain, written from ONNX
// Runtime's operator specs (docs/ContribOperators.md): the weight dequantised to doubles, then a plain
// product. Also seeded random packed weights in those layouts, for the kernel tests.
#pragma once

#include <cstdint>
#include <vector>

#include "support/reference_linear.h"
#include "wgi/tensor.h"

namespace wgi::test {

// MatMulNBits' weight W [N, K] (row n = output feature n): B uint8 [N, ceil(K / block_size), block_size *
// bits / 8], codes packed along K, the first code of a byte in its lowest bits; scales [N, blocks] float32 or
// float16; zero_points null (2^(bits - 1)), uint8 packed like B per column ([N, ceil(blocks * bits / 8)]), or
// float32 / float16 [N, blocks]. W[n, k] = (code - zero_point) * scale of block k / block_size.
std::vector<double> dequantize_matmul_nbits(const Tensor& b, const Tensor& scales, const Tensor* zero_points,
                                            int64_t k, int64_t n, int64_t bits, int64_t block_size);

// MatMulBnb4's weight W [N, K]: B uint8 [(N * K + 1) / 2], the flattened W in pairs, the first code of a byte
// in its HIGH nibble; absmax [ceil(N * K / block_size)] per block of the flattened W; quant_type 0 = FP4, 1
// = NF4. W = table[code] * absmax.
std::vector<double> dequantize_matmul_bnb4(const Tensor& b, const Tensor& absmax, int64_t k, int64_t n,
                                           int64_t block_size, int64_t quant_type);

// A [..., K] times W^T ([N, K] as above) plus bias [N] (float32 or float16; null: none): [..., N].
Reference quantized_matmul_reference(const Tensor& a, const std::vector<double>& w_nk, int64_t n,
                                     const Tensor* bias);

// A [..., K] as MatMulNBits at accuracy_level 4 sees it (ONNX Runtime's int8 activations): each row's
// blocks of `block_size` elements along K scaled to int8 by 127 / max|a| in float32, rounded to nearest even,
// and scaled back by max|a| / 127 (float32). The kernel divides on the GPU, which may round 127 / max|a| an
// ulp apart and so move a value on a rounding tie by one step.
Tensor int8_block_quantized(const Tensor& a, int64_t block_size);

// Seeded random bytes (every code value occurs) of `shape`.
Tensor random_bytes(const Shape& shape, uint64_t seed);
// Seeded random scales in [lo, hi) as float32, or as float16 when `half`.
Tensor random_scales(const Shape& shape, uint64_t seed, bool half, float lo = 0.01f, float hi = 0.1f);

}  // namespace wgi::test
