// CPU references for the mask-building ops (src/ops/masks.cpp), written from the ONNX definitions; exact
// (they copy element bytes).
#pragma once

#include <cstdint>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

// Trilu: element [..., i, j] kept where j - i >= k (upper) or j - i <= k (lower), zero elsewhere.
Tensor trilu_reference(const Tensor& x, int64_t k, bool upper);
// EyeLike: a rows x cols matrix of `dtype` with ones where col - row == k.
Tensor eye_like_reference(int64_t rows, int64_t cols, int64_t k, DType dtype);
// Hardmax: 1 at the first maximum (NaN above every number, as numpy's argmax) of each row of x viewed as
// [outer, len, inner], 0 elsewhere (the caller picks the view: one axis, or the pre-13 flattening).
Tensor hardmax_reference(const Tensor& x, int64_t len, int64_t inner);
// OneHot: depth inserted at `axis` of the indices' shape; on where the index (negative: + depth) equals the
// position, off elsewhere. `index_values` already converted to integers; values = [off, on] of any dtype.
Tensor one_hot_reference(const Shape& indices_shape, const std::vector<int64_t>& index_values, int64_t depth,
                         int64_t axis, const Tensor& values);

}  // namespace wgi::test
