#include "support/reference_integer.h"

#include <algorithm>
#include <cfenv>
#include <cmath>

namespace wgi::test {

namespace {

// std::nearbyint in the default rounding mode rounds half to even, as ONNX's round does.
double round_half_even(double v) {
  return std::nearbyint(v);
}

std::pair<int64_t, int64_t> range_of(DType t) {
  return t == DType::Int8 ? std::pair<int64_t, int64_t>{-128, 127} : std::pair<int64_t, int64_t>{0, 255};
}

Tensor integer_tensor(DType type, const Shape& shape, const std::vector<int64_t>& values) {
  Tensor t(type, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DType::UInt8) t.data<uint8_t>()[i] = static_cast<uint8_t>(values[i]);
    if (type == DType::Int8) t.data<int8_t>()[i] = static_cast<int8_t>(values[i]);
    if (type == DType::Int32) t.data<int32_t>()[i] = static_cast<int32_t>(static_cast<uint32_t>(values[i]));
  }
  return t;
}

}  // namespace

std::vector<int64_t> integer_values(const Tensor& t) {
  std::vector<int64_t> v;
  if (t.dtype() == DType::UInt8) {
    for (uint8_t x : t.data<uint8_t>()) v.push_back(x);
  } else if (t.dtype() == DType::Int8) {
    for (int8_t x : t.data<int8_t>()) v.push_back(x);
  } else {
    for (int32_t x : t.data<int32_t>()) v.push_back(x);
  }
  return v;
}

size_t quant_param_index(const Shape& shape, const QuantAxis& q, int64_t element) {
  if (q.axis < 0) return 0;
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(q.axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t len = shape[static_cast<size_t>(q.axis)];
  const int64_t a = (element / inner) % len, outer = element / (inner * len);
  if (q.block == 0) return static_cast<size_t>(a);
  const int64_t blocks = (len + q.block - 1) / q.block;
  return static_cast<size_t>((outer * blocks + a / q.block) * inner + element % inner);
}

Tensor quantize_linear_reference(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                                 const QuantAxis& q) {
  const auto [lo, hi] = range_of(zero_point.dtype());
  const std::vector<int64_t> zp = integer_values(zero_point);
  std::vector<int64_t> out;
  auto xs = x.data<float>();
  for (int64_t i = 0; i < x.element_count(); ++i) {
    const size_t p = quant_param_index(x.shape(), q, i);
    const float quotient = xs[static_cast<size_t>(i)] / scale.data<float>()[p];  // float32, as the spec
    const double v = round_half_even(quotient) + static_cast<double>(zp[p]);
    out.push_back(
        static_cast<int64_t>(std::clamp<double>(v, static_cast<double>(lo), static_cast<double>(hi))));
  }
  return integer_tensor(zero_point.dtype(), x.shape(), out);
}

Tensor dequantize_linear_reference(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                                   const QuantAxis& q) {
  const std::vector<int64_t> xv = integer_values(x), zp = integer_values(zero_point);
  Tensor y(DType::Float32, x.shape());
  for (int64_t i = 0; i < x.element_count(); ++i) {
    const size_t p = quant_param_index(x.shape(), q, i);
    y.data<float>()[static_cast<size_t>(i)] =
        static_cast<float>(xv[static_cast<size_t>(i)] - zp[p]) * scale.data<float>()[p];
  }
  return y;
}

DynamicQuantized dynamic_quantize_reference(const Tensor& x) {
  float lo = 0, hi = 0;
  for (float v : x.data<float>()) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  DynamicQuantized r;
  r.scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  const float zp = std::clamp(0.0f - lo / r.scale, 0.0f, 255.0f);
  r.zero_point = static_cast<uint8_t>(round_half_even(zp));
  Tensor scale = Tensor::from_vector<float>({}, {r.scale});
  Tensor zero = Tensor::from_vector<uint8_t>({}, {r.zero_point});
  r.y = quantize_linear_reference(x, scale, zero, {});
  return r;
}

Tensor matmul_integer_reference(const Tensor& a, const Tensor& b, const std::vector<int64_t>& a_zp,
                                const std::vector<int64_t>& b_zp) {
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const size_t rank = std::max(ab.size(), bb.size());
  auto dim = [rank](const Shape& s, size_t i) -> int64_t {
    return i < rank - s.size() ? 1 : s[i - (rank - s.size())];
  };
  Shape out_shape;
  for (size_t i = 0; i < rank; ++i) out_shape.push_back(std::max(dim(ab, i), dim(bb, i)));
  const int64_t batches = element_count(out_shape);
  out_shape.push_back(m);
  out_shape.push_back(n);
  const std::vector<int64_t> av = integer_values(a), bv = integer_values(b);
  auto zp = [](const std::vector<int64_t>& z, int64_t i) {
    return z.empty() ? 0 : z[z.size() == 1 ? 0 : static_cast<size_t>(i)];
  };
  std::vector<int64_t> out;
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t rest = bi, ai = 0, bj = 0, a_step = 1, b_step = 1;
    for (size_t i = rank; i-- > 0;) {
      const int64_t extent = std::max(dim(ab, i), dim(bb, i));
      const int64_t idx = rest % extent;
      rest /= extent;
      if (dim(ab, i) != 1) ai += idx * a_step;
      if (dim(bb, i) != 1) bj += idx * b_step;
      a_step *= dim(ab, i);
      b_step *= dim(bb, i);
    }
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        int64_t sum = 0;
        for (int64_t j = 0; j < k; ++j) {
          sum += (av[static_cast<size_t>((ai * m + r) * k + j)] - zp(a_zp, r)) *
                 (bv[static_cast<size_t>((bj * k + j) * n + c)] - zp(b_zp, c));
        }
        out.push_back(static_cast<int64_t>(static_cast<uint32_t>(sum)));  // int32 wrap-around
      }
    }
  }
  return integer_tensor(DType::Int32, out_shape, out);
}

Tensor conv_integer_reference(const Tensor& x, const Tensor& w, int64_t x_zp,
                              const std::vector<int64_t>& w_zp, const ConvIntegerParams& p) {
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  const int64_t batch = xs[0], c_in = xs[1], h = xs[2], wd = xs[3];
  const int64_t m = ws[0], cg = ws[1], kh = ws[2], kw = ws[3];
  const int64_t oh = (h + p.pads[0] + p.pads[2] - ((kh - 1) * p.dilations[0] + 1)) / p.strides[0] + 1;
  const int64_t ow = (wd + p.pads[1] + p.pads[3] - ((kw - 1) * p.dilations[1] + 1)) / p.strides[1] + 1;
  const std::vector<int64_t> xv = integer_values(x), wv = integer_values(w);
  std::vector<int64_t> out;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t oc = 0; oc < m; ++oc) {
      const int64_t g = oc / (m / p.group);
      const int64_t zw = w_zp.empty() ? 0 : w_zp[w_zp.size() == 1 ? 0 : static_cast<size_t>(oc)];
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t xo = 0; xo < ow; ++xo) {
          int64_t sum = 0;
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t i = 0; i < kh; ++i) {
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t iy = y * p.strides[0] - p.pads[0] + i * p.dilations[0];
                const int64_t ix = xo * p.strides[1] - p.pads[1] + j * p.dilations[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                sum += (xv[static_cast<size_t>(((b * c_in + g * cg + c) * h + iy) * wd + ix)] - x_zp) *
                       (wv[static_cast<size_t>(((oc * cg + c) * kh + i) * kw + j)] - zw);
              }
            }
          }
          out.push_back(static_cast<int64_t>(static_cast<uint32_t>(sum)));
        }
      }
    }
  }
  (void)c_in;
  return integer_tensor(DType::Int32, {batch, m, oh, ow}, out);
}

Tensor requantize_reference(const Tensor& acc, float sa, const std::vector<float>& sb, float sy, int64_t y_zp,
                            DType out_type, int64_t channel_stride, int64_t channels) {
  const auto [lo, hi] = range_of(out_type);
  std::vector<int64_t> out;
  auto values = acc.data<int32_t>();
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t c = static_cast<size_t>((static_cast<int64_t>(i) / channel_stride) % channels);
    const float multiplier = (sa * sb[sb.size() == 1 ? 0 : c]) / sy;
    const double v = round_half_even(static_cast<float>(values[i]) * multiplier) + static_cast<double>(y_zp);
    out.push_back(
        static_cast<int64_t>(std::clamp<double>(v, static_cast<double>(lo), static_cast<double>(hi))));
  }
  return integer_tensor(out_type, acc.shape(), out);
}

}  // namespace wgi::test
