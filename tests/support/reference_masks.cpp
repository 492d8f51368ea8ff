#include "support/reference_masks.h"

#include <cstring>

namespace wgi::test {

Tensor trilu_reference(const Tensor& x, int64_t k, bool upper) {
  Tensor y(x.dtype(), x.shape());  // zero-initialised
  const int64_t rank = x.rank();
  const int64_t rows = x.shape()[static_cast<size_t>(rank - 2)],
                cols = x.shape()[static_cast<size_t>(rank - 1)];
  const size_t element = dtype_size(x.dtype());
  for (int64_t e = 0; e < x.element_count(); ++e) {
    const int64_t j = e % cols, i = (e / cols) % rows;
    if (upper ? j - i >= k : j - i <= k) {
      std::memcpy(y.bytes().data() + e * element, x.bytes().data() + e * element, element);
    }
  }
  return y;
}

Tensor eye_like_reference(int64_t rows, int64_t cols, int64_t k, DType dtype) {
  Tensor y(dtype, {rows, cols});
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j = i + k;
    if (j < 0 || j >= cols) continue;
    const size_t e = static_cast<size_t>(i * cols + j);
    switch (dtype) {
      case DType::Float32:
        y.data<float>()[e] = 1.0f;
        break;
      case DType::Int64:
        y.data<int64_t>()[e] = 1;
        break;
      case DType::Int32:
        y.data<int32_t>()[e] = 1;
        break;
      default:  // one byte per element: uint8, int8, bool
        y.bytes()[e] = std::byte{1};
    }
  }
  return y;
}

}  // namespace wgi::test
