#include "support/reference_quantized.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "support/reference_elementwise.h"
#include "support/tensor_check.h"
#include "support/tensor_values.h"

namespace wgi::test {

namespace {

// Code `index` of a stream of `bits`-bit codes packed lowest bits first.
uint32_t code_at(const uint8_t* bytes, int64_t index, int64_t bits) {
  const int64_t bit = index * bits;
  return (bytes[bit / 8] >> (bit % 8)) & ((1u << bits) - 1u);
}

// NF4: the 16 quantiles of QLoRA (arXiv 2305.14314, appendix E). FP4: bitsandbytes' sign + 3-bit magnitude
// (magnitudes 0, 0.0625, 8, 12, 4, 6, 2, 3 for codes 0..7), normalised by 12.
double bnb4_code_value(uint32_t code, int64_t quant_type) {
  static const double nf4[16] = {-1.0,
                                 -0.6961928009986877,
                                 -0.5250730514526367,
                                 -0.39491748809814453,
                                 -0.28444138169288635,
                                 -0.18477343022823334,
                                 -0.09105003625154495,
                                 0.0,
                                 0.07958029955625534,
                                 0.16093020141124725,
                                 0.24611230194568634,
                                 0.33791524171829224,
                                 0.44070982933044434,
                                 0.5626170039176941,
                                 0.7229568362236023,
                                 1.0};
  static const double fp4_magnitude[8] = {0, 0.0625, 8, 12, 4, 6, 2, 3};
  if (quant_type == 1) return nf4[code];
  const double v = fp4_magnitude[code & 7u] / 12.0;
  return (code & 8u) ? -v : v;
}

}  // namespace

std::vector<double> dequantize_matmul_nbits(const Tensor& b, const Tensor& scales, const Tensor* zero_points,
                                            int64_t k, int64_t n, int64_t bits, int64_t block_size) {
  const int64_t blocks = (k + block_size - 1) / block_size;
  const int64_t col_bytes = blocks * block_size * bits / 8;
  const int64_t zp_col_bytes = (blocks * bits + 7) / 8;
  const auto* codes = reinterpret_cast<const uint8_t*>(b.bytes().data());
  std::vector<double> w(static_cast<size_t>(n * k));
  for (int64_t col = 0; col < n; ++col) {
    for (int64_t kk = 0; kk < k; ++kk) {
      const int64_t block = kk / block_size;
      double zero = static_cast<double>(int64_t{1} << (bits - 1));
      if (zero_points && zero_points->dtype() == DType::UInt8) {
        const auto* zp = reinterpret_cast<const uint8_t*>(zero_points->bytes().data()) + col * zp_col_bytes;
        zero = code_at(zp, block, bits);
      } else if (zero_points) {
        zero = element_as_double(*zero_points, static_cast<size_t>(col * blocks + block));
      }
      const double code = code_at(codes + col * col_bytes, kk, bits);
      w[static_cast<size_t>(col * k + kk)] =
          (code - zero) * element_as_double(scales, static_cast<size_t>(col * blocks + block));
    }
  }
  return w;
}

std::vector<double> dequantize_matmul_bnb4(const Tensor& b, const Tensor& absmax, int64_t k, int64_t n,
                                           int64_t block_size, int64_t quant_type) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(b.bytes().data());
  std::vector<double> w(static_cast<size_t>(n * k));
  for (int64_t i = 0; i < n * k; ++i) {
    const uint32_t code = i % 2 == 0 ? bytes[i / 2] >> 4 : bytes[i / 2] & 0xfu;
    w[static_cast<size_t>(i)] =
        bnb4_code_value(code, quant_type) * element_as_double(absmax, static_cast<size_t>(i / block_size));
  }
  return w;
}

Reference quantized_matmul_reference(const Tensor& a, const std::vector<double>& w_nk, int64_t n,
                                     const Tensor* bias) {
  const int64_t k = a.shape().back();
  const int64_t m = a.element_count() / k;
  if (static_cast<int64_t>(w_nk.size()) != n * k)
    throw std::runtime_error("weight size does not match N * K");
  Reference r;
  r.shape = a.shape();
  r.shape.back() = n;
  r.values.resize(static_cast<size_t>(m * n));
  auto av = a.data<float>();
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t col = 0; col < n; ++col) {
      double sum = bias ? element_as_double(*bias, static_cast<size_t>(col)) : 0.0;
      for (int64_t kk = 0; kk < k; ++kk)
        sum += double(av[static_cast<size_t>(row * k + kk)]) * w_nk[static_cast<size_t>(col * k + kk)];
      r.values[static_cast<size_t>(row * n + col)] = sum;
    }
  }
  return r;
}

Tensor int8_block_quantized(const Tensor& a, int64_t block_size) {
  const int64_t k = a.shape().back();
  Tensor out(DType::Float32, a.shape());
  auto in = a.data<float>();
  auto q = out.data<float>();
  for (int64_t row = 0; row < a.element_count() / k; ++row) {
    for (int64_t first = 0; first < k; first += block_size) {
      const int64_t end = std::min(k, first + block_size);
      float largest = 0.0f;
      for (int64_t i = first; i < end; ++i) largest = std::max(largest, std::abs(in[size_t(row * k + i)]));
      const float to_int8 = largest > 0.0f ? 127.0f / largest : 0.0f;
      const float scale = largest / 127.0f;
      for (int64_t i = first; i < end; ++i) {
        const size_t at = static_cast<size_t>(row * k + i);
        q[at] = std::nearbyint(in[at] * to_int8) * scale;
      }
    }
  }
  return out;
}

Tensor random_bytes(const Shape& shape, uint64_t seed) {
  Tensor t(DType::UInt8, shape);
  std::mt19937_64 rng(seed);
  for (uint8_t& v : t.data<uint8_t>()) v = static_cast<uint8_t>(rng() >> 56);
  return t;
}

Tensor random_scales(const Shape& shape, uint64_t seed, bool half, float lo, float hi) {
  Tensor f = random_tensor(shape, seed, lo, hi);
  if (!half) return f;
  Tensor h(DType::Float16, shape);
  auto* bits = reinterpret_cast<uint16_t*>(h.bytes().data());
  for (size_t i = 0; i < f.data<float>().size(); ++i) bits[i] = double_to_half_bits(f.data<float>()[i]);
  return h;
}

}  // namespace wgi::test
