#include "support/reference_masks.h"

#include <cmath>
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

Tensor one_hot_reference(const Shape& indices_shape, const std::vector<int64_t>& index_values, int64_t depth,
                         int64_t axis, const Tensor& values) {
  const int64_t rank = static_cast<int64_t>(indices_shape.size()) + 1;
  if (axis < 0) axis += rank;
  Shape shape = indices_shape;
  shape.insert(shape.begin() + axis, depth);
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis); d < indices_shape.size(); ++d) inner *= indices_shape[d];
  Tensor y(values.dtype(), shape);
  const size_t element = dtype_size(values.dtype());
  for (int64_t o = 0; o < y.element_count(); ++o) {
    const int64_t i = o % inner, d = (o / inner) % depth, outer = o / (inner * depth);
    int64_t index = index_values[static_cast<size_t>(outer * inner + i)];
    if (index < 0) index += depth;
    const size_t which = index == d ? 1 : 0;
    std::memcpy(y.bytes().data() + static_cast<size_t>(o) * element, values.bytes().data() + which * element,
                element);
  }
  return y;
}

Tensor hardmax_reference(const Tensor& x, int64_t len, int64_t inner) {
  Tensor y(DType::Float32, x.shape());
  auto v = x.data<float>();
  const int64_t rows = x.element_count() / len;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = (r / inner) * len * inner + r % inner;
    int64_t best = 0;
    for (int64_t j = 1; j < len; ++j) {
      const float a = v[static_cast<size_t>(base + j * inner)],
                  b = v[static_cast<size_t>(base + best * inner)];
      if (!std::isnan(b) && (std::isnan(a) || a > b)) best = j;
    }
    y.data<float>()[static_cast<size_t>(base + best * inner)] = 1.0f;
  }
  return y;
}

}  // namespace wgi::test
