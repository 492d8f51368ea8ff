#include "support/reference_scan.h"

#include <cmath>

namespace wgi::test {

namespace {

double value_at(const Tensor& x, int64_t i) {
  const size_t k = static_cast<size_t>(i);
  switch (x.dtype()) {
    case DType::Float32:
      return x.data<float>()[k];
    case DType::Int32:
      return x.data<int32_t>()[k];
    case DType::Int64:
      return static_cast<double>(x.data<int64_t>()[k]);
    default:
      throw Error("cumsum reference: unsupported dtype");
  }
}

}  // namespace

CumSumReference cumsum_reference(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  if (axis < 0) axis += x.rank();
  const int64_t len = x.shape()[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  CumSumReference r;
  r.values.assign(static_cast<size_t>(x.element_count()), 0.0);
  r.magnitude.assign(r.values.size(), 0.0);
  for (int64_t e = 0; e < x.element_count(); ++e) {
    const int64_t j = (e / inner) % len;
    const int64_t row_start = e - j * inner;
    double sum = 0, mag = 0;
    for (int64_t t = 0; t < len; ++t) {
      const bool in = reverse ? (exclusive ? t > j : t >= j) : (exclusive ? t < j : t <= j);
      if (!in) continue;
      const double v = value_at(x, row_start + t * inner);
      sum += v;
      mag += std::abs(v);
    }
    r.values[static_cast<size_t>(e)] = sum;
    r.magnitude[static_cast<size_t>(e)] = mag;
  }
  return r;
}

}  // namespace wgi::test
