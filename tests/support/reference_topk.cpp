#include "support/reference_topk.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "support/tensor_values.h"

namespace wgi::test {

std::pair<Tensor, Tensor> topk_reference(const Tensor& x, int64_t k, int64_t axis, bool largest) {
  if (axis < 0) axis += x.rank();
  const int64_t len = x.shape()[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  Shape shape = x.shape();
  shape[static_cast<size_t>(axis)] = k;
  Tensor values(x.dtype(), shape), indices(DType::Int64, shape);
  const size_t element = dtype_size(x.dtype());
  const int64_t rows = x.element_count() / len;
  std::vector<int64_t> order(static_cast<size_t>(len));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = (r / inner) * len * inner + r % inner;
    const int64_t out_base = (r / inner) * k * inner + r % inner;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const double va = element_as_double(x, static_cast<size_t>(base + a * inner)),
                   vb = element_as_double(x, static_cast<size_t>(base + b * inner));
      if (std::isnan(va) || std::isnan(vb))
        return std::isnan(va) == largest && !(std::isnan(va) && std::isnan(vb));
      return largest ? va > vb : va < vb;
    });
    for (int64_t t = 0; t < k; ++t) {
      const int64_t src = base + order[static_cast<size_t>(t)] * inner, dst = out_base + t * inner;
      std::memcpy(values.bytes().data() + static_cast<size_t>(dst) * element,
                  x.bytes().data() + static_cast<size_t>(src) * element, element);
      indices.data<int64_t>()[static_cast<size_t>(dst)] = order[static_cast<size_t>(t)];
    }
  }
  return {values, indices};
}

}  // namespace wgi::test
