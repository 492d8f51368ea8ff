#include "support/reference_normalization.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "support/tensor_values.h"

namespace wgi::test {

namespace {

// Row-major coordinates of flat index i.
std::vector<int64_t> coords_of(int64_t i, const Shape& shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t a = shape.size(); a-- > 0;) {
    c[a] = i % shape[a];
    i /= shape[a];
  }
  return c;
}

int64_t flat_of(const std::vector<int64_t>& c, const Shape& shape) {
  int64_t i = 0;
  for (size_t a = 0; a < shape.size(); ++a) i = i * shape[a] + c[a];
  return i;
}

int64_t product(const Shape& s, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e; ++i) p *= s[i];
  return p;
}

// Numpy broadcasting of a parameter onto the shape `target` (right-aligned).
double broadcast_at(const Tensor& p, const std::vector<double>& pv,
                    const std::vector<int64_t>& target_coords) {
  const Shape& ps = p.shape();
  int64_t i = 0;
  const size_t offset = target_coords.size() - ps.size();
  for (size_t a = 0; a < ps.size(); ++a) i = i * ps[a] + (ps[a] == 1 ? 0 : target_coords[offset + a]);
  return pv[static_cast<size_t>(i)];
}

}  // namespace

NormReference reduce_reference(const Tensor& x, const std::string& op, const std::vector<int64_t>& axes,
                               bool keepdims, bool select_last_index) {
  const Shape& shape = x.shape();
  const std::vector<double> xv = double_values(x);
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  Shape kept, out_shape;
  for (size_t a = 0; a < shape.size(); ++a) {
    if (!reduced[a]) kept.push_back(shape[a]);
    if (!reduced[a])
      out_shape.push_back(shape[a]);
    else if (keepdims)
      out_shape.push_back(1);
  }
  Shape red;
  for (size_t a = 0; a < shape.size(); ++a) {
    if (reduced[a]) red.push_back(shape[a]);
  }
  const int64_t outputs = product(kept, 0, kept.size());
  const int64_t count = product(red, 0, red.size());
  NormReference r{out_shape, {}};
  for (int64_t o = 0; o < outputs; ++o) {
    const auto kc = coords_of(o, kept);
    std::vector<double> vals;
    for (int64_t k = 0; k < count; ++k) {
      const auto rc = coords_of(k, red);
      std::vector<int64_t> c(shape.size());
      size_t ki = 0, ri = 0;
      for (size_t a = 0; a < shape.size(); ++a) c[a] = reduced[a] ? rc[ri++] : kc[ki++];
      vals.push_back(xv[static_cast<size_t>(flat_of(c, shape))]);
    }
    double v = 0;
    if (op == "ReduceSum") {
      for (double e : vals) v += e;
    } else if (op == "ReduceMean") {
      for (double e : vals) v += e;
      v /= static_cast<double>(vals.size());
    } else if (op == "ReduceMax") {
      v = -INFINITY;
      for (double e : vals) v = std::max(v, e);
    } else if (op == "ReduceMin") {
      v = INFINITY;
      for (double e : vals) v = std::min(v, e);
    } else if (op == "ReduceProd") {
      v = 1;
      for (double e : vals) v *= e;
    } else if (op == "ReduceL1") {
      for (double e : vals) v += std::abs(e);
    } else if (op == "ReduceL2") {
      for (double e : vals) v += e * e;
      v = std::sqrt(v);
    } else if (op == "ReduceSumSquare") {
      for (double e : vals) v += e * e;
    } else if (op == "ReduceLogSum") {
      for (double e : vals) v += e;
      v = std::log(v);
    } else if (op == "ReduceLogSumExp") {
      for (double e : vals) v += std::exp(e);
      v = std::log(v);
    } else if (op == "ArgMax" || op == "ArgMin") {
      size_t best = 0;
      for (size_t k = 1; k < vals.size(); ++k) {
        const bool better = op == "ArgMax" ? vals[k] > vals[best] : vals[k] < vals[best];
        if (better || (vals[k] == vals[best] && select_last_index)) best = k;
      }
      v = static_cast<double>(best);
    } else {
      throw std::invalid_argument("reduce_reference: unknown op " + op);
    }
    r.values.push_back(v);
  }
  return r;
}

NormReference softmax_reference(const Tensor& x, int64_t axis, bool flatten, bool log) {
  const Shape& shape = x.shape();
  const std::vector<double> xv = double_values(x);
  const auto a = static_cast<size_t>(axis);
  const int64_t outer = product(shape, 0, a);
  const int64_t length = flatten ? product(shape, a, shape.size()) : shape[a];
  const int64_t inner = flatten ? 1 : product(shape, a + 1, shape.size());
  NormReference r{shape, std::vector<double>(xv.size())};
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * length + k) * inner + i); };
      double m = -INFINITY;
      for (int64_t k = 0; k < length; ++k) m = std::max(m, xv[at(k)]);
      double s = 0;
      for (int64_t k = 0; k < length; ++k) s += std::exp(xv[at(k)] - m);
      for (int64_t k = 0; k < length; ++k) {
        r.values[at(k)] = log ? xv[at(k)] - m - std::log(s) : std::exp(xv[at(k)] - m) / s;
      }
    }
  }
  return r;
}

LayerNormReference layer_norm_reference(const Tensor& x, int64_t axis, const Tensor& scale,
                                        const Tensor* bias, double epsilon) {
  const Shape& shape = x.shape();
  const auto a = static_cast<size_t>(axis);
  const std::vector<double> xv = double_values(x), sv = double_values(scale);
  const std::vector<double> bv = bias ? double_values(*bias) : std::vector<double>{};
  const Shape normalized(shape.begin() + static_cast<std::ptrdiff_t>(a), shape.end());
  const int64_t rows = product(shape, 0, a);
  const int64_t length = product(shape, a, shape.size());
  Shape stat_shape(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(a));
  stat_shape.resize(shape.size(), 1);
  LayerNormReference r{{shape, std::vector<double>(xv.size())}, {stat_shape, {}}, {stat_shape, {}}};
  for (int64_t row = 0; row < rows; ++row) {
    double mean = 0;
    for (int64_t k = 0; k < length; ++k) mean += xv[static_cast<size_t>(row * length + k)];
    mean /= static_cast<double>(length);
    double var = 0;
    for (int64_t k = 0; k < length; ++k) {
      const double d = xv[static_cast<size_t>(row * length + k)] - mean;
      var += d * d;
    }
    var /= static_cast<double>(length);
    const double inv_std = 1 / std::sqrt(var + epsilon);
    for (int64_t k = 0; k < length; ++k) {
      const auto nc = coords_of(k, normalized);
      const size_t i = static_cast<size_t>(row * length + k);
      r.y.values[i] =
          (xv[i] - mean) * inv_std * broadcast_at(scale, sv, nc) + (bias ? broadcast_at(*bias, bv, nc) : 0);
    }
    r.mean.values.push_back(mean);
    r.inv_std_dev.values.push_back(inv_std);
  }
  return r;
}

NormReference group_norm_reference(const Tensor& x, int64_t groups, const Tensor& scale, const Tensor& bias,
                                   double epsilon, bool per_channel) {
  const Shape& shape = x.shape();
  const std::vector<double> xv = double_values(x), sv = double_values(scale), bv = double_values(bias);
  const int64_t n = shape[0], c = shape[1], spatial = product(shape, 2, shape.size());
  const int64_t cpg = c / groups;
  NormReference r{shape, std::vector<double>(xv.size())};
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t first = (b * c + g * cpg) * spatial;
      const int64_t length = cpg * spatial;
      double mean = 0, var = 0;
      for (int64_t k = 0; k < length; ++k) mean += xv[static_cast<size_t>(first + k)];
      mean /= static_cast<double>(length);
      for (int64_t k = 0; k < length; ++k) var += std::pow(xv[static_cast<size_t>(first + k)] - mean, 2);
      var /= static_cast<double>(length);
      for (int64_t k = 0; k < length; ++k) {
        const int64_t channel = g * cpg + k / spatial;
        const size_t p = static_cast<size_t>(per_channel ? channel : g);
        const size_t i = static_cast<size_t>(first + k);
        r.values[i] = (xv[i] - mean) / std::sqrt(var + epsilon) * sv[p] + bv[p];
      }
    }
  }
  return r;
}

NormReference instance_norm_reference(const Tensor& x, const Tensor& scale, const Tensor& bias,
                                      double epsilon) {
  // Instance normalisation is group normalisation with one channel per group.
  return group_norm_reference(x, x.shape()[1], scale, bias, epsilon, true);
}

NormReference batch_norm_reference(const Tensor& x, const Tensor& scale, const Tensor& bias,
                                   const Tensor& mean, const Tensor& var, double epsilon) {
  const Shape& shape = x.shape();
  const std::vector<double> xv = double_values(x), sv = double_values(scale), bv = double_values(bias),
                            mv = double_values(mean), vv = double_values(var);
  const int64_t c = shape[1], spatial = product(shape, 2, shape.size());
  NormReference r{shape, std::vector<double>(xv.size())};
  for (size_t i = 0; i < xv.size(); ++i) {
    const auto ch = static_cast<size_t>((static_cast<int64_t>(i) / spatial) % c);
    r.values[i] = (xv[i] - mv[ch]) / std::sqrt(vv[ch] + epsilon) * sv[ch] + bv[ch];
  }
  return r;
}

}  // namespace wgi::test
