// CPU references for the mask-building ops (src/ops/masks.cpp), written from the ONNX definitions; exact
// (they copy element bytes).
#pragma once

#include <cstdint>

#include "wgi/tensor.h"

namespace wgi::test {

// Trilu: element [..., i, j] kept where j - i >= k (upper) or j - i <= k (lower), zero elsewhere.
Tensor trilu_reference(const Tensor& x, int64_t k, bool upper);
// EyeLike: a rows x cols matrix of `dtype` with ones where col - row == k.
Tensor eye_like_reference(int64_t rows, int64_t cols, int64_t k, DType dtype);

}  // namespace wgi::test
