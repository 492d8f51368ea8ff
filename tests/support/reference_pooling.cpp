#include "support/reference_pooling.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "support/tensor_values.h"

namespace wgi::test {

PoolReference pool_reference(const Tensor& x, bool is_max, const PoolReferenceParams& p) {
  const Shape& shape = x.shape();
  const size_t spatial = shape.size() - 2;
  const std::vector<double> xv = double_values(x);
  auto get = [&](const std::vector<int64_t>& v, size_t i, int64_t fallback) {
    return v.empty() ? fallback : v[i];
  };
  Shape in(shape.begin() + 2, shape.end()), out;
  std::vector<int64_t> k(spatial), s(spatial), d(spatial), pb(spatial), pe(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    k[i] = p.kernel[i];
    s[i] = get(p.strides, i, 1);
    d[i] = get(p.dilations, i, 1);
    pb[i] = get(p.pads, i, 0);
    pe[i] = get(p.pads, spatial + i, 0);
    const double span = static_cast<double>(in[i] + pb[i] + pe[i] - ((k[i] - 1) * d[i] + 1));
    int64_t o = static_cast<int64_t>((p.ceil_mode ? std::ceil(span / static_cast<double>(s[i]))
                                                  : std::floor(span / static_cast<double>(s[i]))) +
                                     1);
    if (p.ceil_mode && (o - 1) * s[i] >= in[i] + pb[i]) --o;
    out.push_back(o);
  }
  PoolReference r;
  r.shape = {shape[0], shape[1]};
  for (int64_t o : out) r.shape.push_back(o);
  int64_t plane_in = 1, plane_out = 1, taps = 1;
  for (size_t i = 0; i < spatial; ++i) {
    plane_in *= in[i];
    plane_out *= out[i];
    taps *= k[i];
  }
  for (int64_t nc = 0; nc < shape[0] * shape[1]; ++nc) {
    for (int64_t o = 0; o < plane_out; ++o) {
      std::vector<int64_t> oc(spatial);
      for (size_t i = spatial, rest = static_cast<size_t>(o); i-- > 0;) {
        oc[i] = static_cast<int64_t>(rest) % out[i];
        rest /= static_cast<size_t>(out[i]);
      }
      double best = -INFINITY, sum = 0;
      int64_t best_index = -1, inside = 0, inside_padded = 0;
      for (int64_t t = 0; t < taps; ++t) {
        int64_t rest = t, flat = 0;
        bool in_input = true, in_padded = true;
        std::vector<int64_t> kc(spatial);
        for (size_t i = spatial; i-- > 0;) {
          kc[i] = rest % k[i];
          rest /= k[i];
        }
        for (size_t i = 0; i < spatial; ++i) {
          const int64_t pos = oc[i] * s[i] - pb[i] + kc[i] * d[i];
          in_input = in_input && pos >= 0 && pos < in[i];
          in_padded = in_padded && pos >= -pb[i] && pos < in[i] + pe[i];
          flat = flat * in[i] + pos;
        }
        if (in_padded) ++inside_padded;
        if (!in_input) continue;
        ++inside;
        const double v = xv[static_cast<size_t>(nc * plane_in + flat)];
        sum += v;
        if (v > best || best_index < 0) {
          best = v;
          best_index = nc * plane_in + flat;
        }
      }
      if (is_max) {
        r.values.push_back(best);
        r.indices.push_back(best_index);
      } else {
        r.values.push_back(sum / static_cast<double>(p.count_include_pad ? inside_padded : inside));
      }
    }
  }
  return r;
}

namespace {

using Coeffs = std::function<std::vector<double>(double ratio)>;

// The n nearest indexes to x in [0, limit), ties to the smaller, in ascending order.
std::vector<int64_t> neighbor_indexes(double x, int64_t n, int64_t limit) {
  std::vector<int64_t> idx(static_cast<size_t>(limit));
  for (int64_t i = 0; i < limit; ++i) idx[static_cast<size_t>(i)] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
    const double da = std::abs(x - static_cast<double>(a)), db = std::abs(x - static_cast<double>(b));
    return da != db ? da < db : a < b;
  });
  idx.resize(static_cast<size_t>(n));
  std::sort(idx.begin(), idx.end());
  return idx;
}

double interpolate_1d(const std::vector<double>& data, double scale, double x, const Coeffs& coeffs,
                      double roi_start, double roi_end, const ResizeReferenceParams& p) {
  const auto in = static_cast<double>(data.size());
  const double out = scale * in;
  const std::string& mode = p.coordinate_transformation_mode;
  double xo = 0;
  if (mode == "align_corners") {
    xo = out == 1 ? 0 : x * (in - 1) / (out - 1);
  } else if (mode == "asymmetric") {
    xo = x / scale;
  } else if (mode == "tf_crop_and_resize") {
    xo = out == 1 ? (roi_end - roi_start) * (in - 1) / 2 : x * (roi_end - roi_start) * (in - 1) / (out - 1);
    xo += roi_start * (in - 1);
    if (xo < 0 || xo > in - 1) return p.extrapolation_value;
  } else if (mode == "pytorch_half_pixel") {
    xo = out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  } else if (mode == "half_pixel") {
    xo = (x + 0.5) / scale - 0.5;
  } else if (mode == "tf_half_pixel_for_nn") {
    xo = (x + 0.5) / scale;
  } else {
    throw std::invalid_argument("resize reference: mode " + mode);
  }
  const double ratio = xo == std::floor(xo) ? 1.0 : xo - std::floor(xo);
  std::vector<double> c = coeffs(ratio);
  const auto n = static_cast<int64_t>(c.size());
  const int64_t pad = (n + 1) / 2;
  std::vector<double> padded;
  for (int64_t i = 0; i < pad; ++i) padded.push_back(data.front());
  padded.insert(padded.end(), data.begin(), data.end());
  for (int64_t i = 0; i < pad; ++i) padded.push_back(data.back());
  const auto idx = neighbor_indexes(xo + static_cast<double>(pad), n, static_cast<int64_t>(padded.size()));
  if (p.exclude_outside) {
    double sum = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      const int64_t original = idx[i] - pad;
      if (original < 0 || original >= static_cast<int64_t>(data.size())) c[i] = 0;
      sum += c[i];
    }
    for (double& v : c) v /= sum;
  }
  double r = 0;
  for (size_t i = 0; i < c.size(); ++i) r += c[i] * padded[static_cast<size_t>(idx[i])];
  return r;
}

// data: a row-major block of `shape`; x: the output coordinates along those axes.
double interpolate_nd(const std::vector<double>& data, const Shape& shape, size_t axis,
                      const std::vector<double>& x, const Coeffs& coeffs, const ResizeReferenceParams& p) {
  const size_t rank = p.output.size();
  const double roi_start = p.roi.empty() ? 0 : p.roi[axis];
  const double roi_end = p.roi.empty() ? 1 : p.roi[rank + axis];
  if (shape.size() == 1) return interpolate_1d(data, p.scales[axis], x[axis], coeffs, roi_start, roi_end, p);
  const Shape inner(shape.begin() + 1, shape.end());
  int64_t block = 1;
  for (int64_t d : inner) block *= d;
  std::vector<double> line;
  for (int64_t i = 0; i < shape[0]; ++i) {
    std::vector<double> sub(data.begin() + i * block, data.begin() + (i + 1) * block);
    line.push_back(interpolate_nd(sub, inner, axis + 1, x, coeffs, p));
  }
  return interpolate_1d(line, p.scales[axis], x[axis], coeffs, roi_start, roi_end, p);
}

}  // namespace

std::vector<double> resize_reference(const Tensor& x, const ResizeReferenceParams& p) {
  const std::vector<double> xv = double_values(x);
  Coeffs coeffs;
  if (p.mode == "nearest") {
    const std::string m = p.nearest_mode;
    coeffs = [m](double r) -> std::vector<double> {
      if (r == std::floor(r)) return {0, 1};
      if (m == "round_prefer_floor") return {r <= 0.5 ? 1.0 : 0.0, r > 0.5 ? 1.0 : 0.0};
      if (m == "round_prefer_ceil") return {r < 0.5 ? 1.0 : 0.0, r >= 0.5 ? 1.0 : 0.0};
      if (m == "floor") return {1, 0};
      return {0, 1};
    };
  } else if (p.mode == "linear") {
    coeffs = [](double r) -> std::vector<double> { return {1 - r, r}; };
  } else {
    const double A = p.cubic_coeff_a;
    coeffs = [A](double r) -> std::vector<double> {
      return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
              ((A + 2) * r - (A + 3)) * r * r + 1, ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
              ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A};
    };
  }
  int64_t total = 1;
  for (int64_t d : p.output) total *= d;
  std::vector<double> out;
  std::vector<double> coord(p.output.size());
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i;
    for (size_t a = p.output.size(); a-- > 0;) {
      coord[a] = static_cast<double>(rest % p.output[a]);
      rest /= p.output[a];
    }
    out.push_back(interpolate_nd(xv, x.shape(), 0, coord, coeffs, p));
  }
  return out;
}

}  // namespace wgi::test
