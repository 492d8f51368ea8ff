#include "support/reference_lrn.h"

#include <algorithm>
#include <cmath>

namespace wgi::test {

std::vector<double> lrn_reference(const Tensor& x, int64_t size, double alpha, double beta, double bias) {
  const int64_t channels = x.shape()[1];
  int64_t inner = 1;
  for (size_t d = 2; d < x.shape().size(); ++d) inner *= x.shape()[d];
  auto v = x.data<float>();
  std::vector<double> y(v.size());
  for (int64_t e = 0; e < x.element_count(); ++e) {
    const int64_t c = (e / inner) % channels;
    const int64_t lo = std::max<int64_t>(0, c - (size - 1) / 2), hi = std::min(channels - 1, c + size / 2);
    double sum = 0;
    for (int64_t j = lo; j <= hi; ++j) {
      const double t = v[static_cast<size_t>(e + (j - c) * inner)];
      sum += t * t;
    }
    y[static_cast<size_t>(e)] =
        v[static_cast<size_t>(e)] / std::pow(bias + alpha / static_cast<double>(size) * sum, beta);
  }
  return y;
}

}  // namespace wgi::test
