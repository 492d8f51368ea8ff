// Float64 CPU references for MatMul (numpy semantics) and Gemm (ONNX semantics).
#pragma once

#include <cmath>
#include <optional>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

struct Reference {
  Shape shape;
  std::vector<double> values;
};

Reference matmul_reference(const Tensor& a, const Tensor& b);

// act(alpha * op(A) op(B) + beta * C); activation clamps to [lo, hi].
Reference gemm_reference(const Tensor& a, const Tensor& b, const Tensor* c, bool trans_a, bool trans_b,
                         double alpha, double beta, double lo = -INFINITY, double hi = INFINITY);

}  // namespace wgi::test
