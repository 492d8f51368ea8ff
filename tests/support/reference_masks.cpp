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

}  // namespace wgi::test
