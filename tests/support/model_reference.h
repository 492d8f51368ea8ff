// Reference outputs of the test models (tests/data/models/*/expected_*.npy, float64 written by
// tests/models/generate_models.py) and the comparison the model tests use.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wgi/tensor.h"

namespace wgi::test {

struct Float64Array {
  Shape shape;
  std::vector<double> values;
};

// Reads a float64 (or float32) .npy file.
Float64Array load_float64_npy(const std::filesystem::path& path);

// Relative L2 error ||got - want|| / ||want|| within `max_relative_l2`, shapes equal, no NaN; the message
// reports the relative L2 and the max abs error either way.
::testing::AssertionResult close_in_l2(const Tensor& got, const Float64Array& want, double max_relative_l2);

}  // namespace wgi::test
