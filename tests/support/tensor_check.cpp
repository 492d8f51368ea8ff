#include "support/tensor_check.h"

#include <cmath>
#include <random>
#include <sstream>

namespace wgi::test {

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t(DType::Float32, shape);
  std::mt19937_64 rng(seed);
  // Drawn from the raw 64-bit stream so the values do not depend on the standard library's distributions.
  for (float& v : t.data<float>()) {
    double u = static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
    v = static_cast<float>(lo + (hi - lo) * u);
  }
  return t;
}

Tolerance fp32_tolerance(int64_t terms) {
  double scale = std::sqrt(static_cast<double>(std::max<int64_t>(terms, 1)));
  return [scale](double ref) { return 1e-4 * (1.0 + std::abs(ref)) * scale; };
}

::testing::AssertionResult all_close(const Tensor& actual, const Shape& expected_shape,
                                     const std::vector<double>& expected, const Tolerance& tolerance) {
  if (actual.shape() != expected_shape) {
    return ::testing::AssertionFailure()
           << "shape " << shape_to_string(actual.shape()) << ", expected " << shape_to_string(expected_shape);
  }
  if (actual.dtype() != DType::Float32) {
    return ::testing::AssertionFailure() << "dtype " << dtype_name(actual.dtype()) << ", expected float32";
  }
  auto got = actual.data<float>();
  if (got.size() != expected.size()) {
    return ::testing::AssertionFailure() << got.size() << " elements, reference has " << expected.size();
  }
  size_t bad = 0, nans = 0, worst = 0;
  double worst_ratio = 0, max_abs = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::abs(static_cast<double>(got[i]) - expected[i]);
    if (std::isnan(got[i])) {
      ++nans;
      ++bad;
      if (worst_ratio != INFINITY) worst = i;
      worst_ratio = INFINITY;
      continue;
    }
    max_abs = std::max(max_abs, err);
    double ratio = err / tolerance(expected[i]);
    if (ratio > 1) ++bad;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess() << "max abs error " << max_abs;
  std::ostringstream s;
  s << bad << " of " << got.size() << " elements out of tolerance (" << nans
    << " NaN, e.g. unwritten); worst at " << worst << ": got " << got[worst] << ", expected "
    << expected[worst] << " (tolerance " << tolerance(expected[worst]) << "); max abs error " << max_abs;
  return ::testing::AssertionFailure() << s.str();
}

}  // namespace wgi::test
