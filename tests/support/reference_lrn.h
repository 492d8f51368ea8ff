// A float64 CPU reference for LRN (src/ops/lrn.cpp), from the ONNX definition: for X [N, C, ...],
// square_sum[n, c, ...] = sum of x[n, j, ...]^2 for j in [max(0, c - floor((size - 1) / 2)),
// min(C - 1, c + ceil((size - 1) / 2))], y = x / (bias + alpha / size * square_sum) ^ beta.
#pragma once

#include <cstdint>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

std::vector<double> lrn_reference(const Tensor& x, int64_t size, double alpha, double beta, double bias);

}  // namespace wgi::test
