#include "support/reference_scan.h"

#include <cmath>

#include "support/tensor_values.h"

namespace wgi::test {

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
      const double v = element_as_double(x, static_cast<size_t>(row_start + t * inner));
      sum += v;
      mag += std::abs(v);
    }
    r.values[static_cast<size_t>(e)] = sum;
    r.magnitude[static_cast<size_t>(e)] = mag;
  }
  return r;
}

}  // namespace wgi::test
