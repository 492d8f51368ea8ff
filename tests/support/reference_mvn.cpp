#include "support/reference_mvn.h"

#include <cmath>

namespace wgi::test {

std::vector<double> mvn_reference(const Tensor& x, const std::vector<int64_t>& axes) {
  const Shape& shape = x.shape();
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + x.rank() : a)] = true;
  // Group of each element: its kept coordinates, row-major.
  auto group_of = [&](int64_t e) {
    int64_t g = 0, scale = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t c = e % shape[d];
      e /= shape[d];
      if (!reduced[d]) {
        g += c * scale;
        scale *= shape[d];
      }
    }
    return g;
  };
  int64_t groups = 1;
  for (size_t d = 0; d < shape.size(); ++d) groups *= reduced[d] ? 1 : shape[d];
  std::vector<double> sum(static_cast<size_t>(groups)), sum_sq(sum.size()), n(sum.size());
  auto v = x.data<float>();
  for (int64_t e = 0; e < x.element_count(); ++e) {
    const size_t g = static_cast<size_t>(group_of(e));
    sum[g] += v[static_cast<size_t>(e)];
    sum_sq[g] += static_cast<double>(v[static_cast<size_t>(e)]) * v[static_cast<size_t>(e)];
    n[g] += 1;
  }
  std::vector<double> y(v.size());
  for (int64_t e = 0; e < x.element_count(); ++e) {
    const size_t g = static_cast<size_t>(group_of(e));
    const double mean = sum[g] / n[g];
    const double variance = sum_sq[g] / n[g] - mean * mean;
    y[static_cast<size_t>(e)] = (v[static_cast<size_t>(e)] - mean) / (std::sqrt(variance) + 1e-9);
  }
  return y;
}

}  // namespace wgi::test
