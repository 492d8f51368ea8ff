// A CPU reference for TopK (src/ops/topk.cpp) from the ONNX definition: each row of x along `axis` sorted
// stably by value (largest or smallest first, NaN above every number), equal values by lower index; the
// first K values and their indices (int64). Exact.
#pragma once

#include <cstdint>
#include <utility>

#include "wgi/tensor.h"

namespace wgi::test {

std::pair<Tensor, Tensor> topk_reference(const Tensor& x, int64_t k, int64_t axis, bool largest);

}  // namespace wgi::test
