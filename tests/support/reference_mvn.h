// A float64 CPU reference for MeanVarianceNormalization (src/ops/mvn.cpp), ONNX's function body:
// (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9), means over `axes`.
#pragma once

#include <cstdint>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

std::vector<double> mvn_reference(const Tensor& x, const std::vector<int64_t>& axes);

}  // namespace wgi::test
