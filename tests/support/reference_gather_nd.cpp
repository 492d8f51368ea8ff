#include "support/reference_gather_nd.h"

#include <cstring>
#include <vector>

namespace wgi::test {

Tensor gather_nd_reference(const Tensor& data, const Tensor& indices, int64_t batch_dims) {
  const Shape& ds = data.shape();
  const Shape& is = indices.shape();
  const size_t b = static_cast<size_t>(batch_dims), q = static_cast<size_t>(is.back());
  Shape out_shape(is.begin(), is.end() - 1);
  out_shape.insert(out_shape.end(), ds.begin() + static_cast<std::ptrdiff_t>(b + q), ds.end());
  Tensor out(data.dtype(), out_shape);
  std::vector<int64_t> idx(static_cast<size_t>(indices.element_count()));
  for (size_t i = 0; i < idx.size(); ++i) {
    idx[i] = indices.dtype() == DType::Int32 ? indices.data<int32_t>()[i] : indices.data<int64_t>()[i];
  }
  int64_t slice = 1, tuples_per_batch = 1;
  for (size_t d = b + q; d < ds.size(); ++d) slice *= ds[d];
  for (size_t d = b; d + 1 < is.size(); ++d) tuples_per_batch *= is[d];
  std::vector<int64_t> strides(ds.size(), 1);
  for (size_t d = ds.size(); d-- > 1;) strides[d - 1] = strides[d] * ds[d];
  const int64_t batch_stride = b == 0 ? data.element_count() : strides[b - 1];
  const size_t element = dtype_size(data.dtype());
  const int64_t tuples = static_cast<int64_t>(idx.size() / q);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t at = (t / tuples_per_batch) * batch_stride;
    for (size_t l = 0; l < q; ++l) {
      int64_t c = idx[static_cast<size_t>(t) * q + l];
      if (c < 0) c += ds[b + l];
      at += c * strides[b + l];
    }
    std::memcpy(out.bytes().data() + static_cast<size_t>(t * slice) * element,
                data.bytes().data() + static_cast<size_t>(at) * element,
                static_cast<size_t>(slice) * element);
  }
  return out;
}

}  // namespace wgi::test
