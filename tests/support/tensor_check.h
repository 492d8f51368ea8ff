// Seeded random tensors and comparison against float64 references, for the kernel tests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wgi/tensor.h"

namespace wgi::test {

// Uniform values in [lo, hi), from a seeded generator: the same seed gives the same tensor everywhere.
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// Tolerance for one element given its float64 reference value.
using Tolerance = std::function<double(double reference)>;

// fp32 results of a sum over `terms` products of values in [-1, 1]: rounding grows like sqrt(terms).
Tolerance fp32_tolerance(int64_t terms);

// Checks shape and every element; NaN (e.g. the poison of an unwritten output) always fails. Reports the
// count of bad elements, the worst one with its index, and the largest absolute error.
::testing::AssertionResult all_close(const Tensor& actual, const Shape& expected_shape,
                                     const std::vector<double>& expected, const Tolerance& tolerance);

}  // namespace wgi::test
