// A float64 / int64 CPU reference for CumSum (src/ops/scan.cpp): each output element summed serially from
// the ONNX definition, with the sum of magnitudes beside it (the rounding bound of a float32 scan).
#pragma once

#include <cstdint>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

struct CumSumReference {
  std::vector<double> values;
  std::vector<double> magnitude;  // per element: the sum of |x| of the terms it adds
};

// x float32, int32 or int64; axis may be negative.
CumSumReference cumsum_reference(const Tensor& x, int64_t axis, bool exclusive, bool reverse);

}  // namespace wgi::test
