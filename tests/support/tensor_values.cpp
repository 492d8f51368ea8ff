#include "support/tensor_values.h"

#include <cmath>
#include <cstring>

namespace wgi::test {

double half_bits_to_double(uint16_t bits) {
  const int sign = bits >> 15, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double v;
  if (exponent == 0x1f) {
    v = mantissa ? NAN : INFINITY;
  } else if (exponent == 0) {
    v = std::ldexp(mantissa, -24);
  } else {
    v = std::ldexp(1024 + mantissa, exponent - 25);
  }
  return sign ? -v : v;
}

uint16_t double_to_half_bits(double value) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  if (std::isnan(value)) return 0x7e00;
  double a = std::abs(value);
  // The spacing of halves near a: 2^-24 below 2^-14, else 2^(floor(log2 a) - 10).
  int e = a > 0 ? std::ilogb(a) : -15;
  const double quantum = std::ldexp(1.0, std::max(e, -14) - 10);
  double r = std::nearbyint(a / quantum) * quantum;  // ties to even in the default rounding mode
  if (r >= 65520.0 || std::isinf(a)) return sign | 0x7c00;
  if (r == 0) return sign;
  e = std::ilogb(r);
  if (e < -14) return static_cast<uint16_t>(sign | static_cast<uint16_t>(r / std::ldexp(1.0, -24)));
  const auto mantissa = static_cast<uint16_t>((r / std::ldexp(1.0, e) - 1) * 1024);
  return static_cast<uint16_t>(sign | (e + 15) << 10 | mantissa);
}

double element_as_double(const Tensor& t, size_t i) {
  switch (t.dtype()) {
    case DType::Float32:
      return t.data<float>()[i];
    case DType::Float16: {
      uint16_t h;
      std::memcpy(&h, t.bytes().data() + 2 * i, 2);
      return half_bits_to_double(h);
    }
    default:
      return static_cast<double>(element_as_int(t, i));
  }
}

int64_t element_as_int(const Tensor& t, size_t i) {
  switch (t.dtype()) {
    case DType::Int64:
      return t.data<int64_t>()[i];
    case DType::Int32:
      return t.data<int32_t>()[i];
    case DType::Int8:
      return t.data<int8_t>()[i];
    case DType::UInt8:
      return t.data<uint8_t>()[i];
    case DType::Bool:
      return t.bytes()[i] != std::byte{0};
    default:
      return static_cast<int64_t>(element_as_double(t, i));
  }
}

std::vector<int64_t> int_values(const Tensor& t) {
  std::vector<int64_t> v;
  for (size_t i = 0; i < static_cast<size_t>(t.element_count()); ++i) v.push_back(element_as_int(t, i));
  return v;
}

std::vector<double> double_values(const Tensor& t) {
  std::vector<double> v;
  for (size_t i = 0; i < static_cast<size_t>(t.element_count()); ++i) v.push_back(element_as_double(t, i));
  return v;
}

Tensor int_tensor(DType dtype, const Shape& shape, const std::vector<int64_t>& values) {
  Tensor t(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t v = values[i];
    switch (dtype) {
      case DType::Int64:
        t.data<int64_t>()[i] = v;
        break;
      case DType::Int32:
        t.data<int32_t>()[i] = static_cast<int32_t>(v);
        break;
      case DType::Int8:
        t.data<int8_t>()[i] = static_cast<int8_t>(v);
        break;
      case DType::UInt8:
        t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
        break;
      case DType::Bool:
        t.bytes()[i] = std::byte{v != 0};
        break;
      case DType::Float32:
        t.data<float>()[i] = static_cast<float>(v);
        break;
      case DType::Float16: {
        uint16_t h = double_to_half_bits(static_cast<double>(v));
        std::memcpy(t.bytes().data() + 2 * i, &h, 2);
        break;
      }
    }
  }
  return t;
}

}  // namespace wgi::test
