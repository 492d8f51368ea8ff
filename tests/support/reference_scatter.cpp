#include "support/reference_scatter.h"

#include <algorithm>
#include <vector>

namespace wgi::test {

namespace {

std::vector<int64_t> index_values(const Tensor& t) {
  if (t.dtype() == DType::Int32) {
    auto v = t.data<int32_t>();
    return {v.begin(), v.end()};
  }
  auto v = t.data<int64_t>();
  return {v.begin(), v.end()};
}

template <class T>
T combine(T v, T u, const std::string& reduction) {
  if (reduction == "add") return static_cast<T>(v + u);
  if (reduction == "mul") return static_cast<T>(v * u);
  if (reduction == "max") return std::max(v, u);
  if (reduction == "min") return std::min(v, u);
  return u;
}

// Calls apply(out_offset, update_offset) for each update, in order.
template <class T, class Each>
Tensor scatter(const Tensor& data, const Tensor& updates, const std::string& reduction, Each each) {
  Tensor out = data;
  auto o = out.data<T>();
  auto u = updates.data<T>();
  each([&](int64_t out_at, int64_t update_at) {
    o[static_cast<size_t>(out_at)] =
        combine(o[static_cast<size_t>(out_at)], u[static_cast<size_t>(update_at)], reduction);
  });
  return out;
}

template <class Each>
Tensor scatter_any(const Tensor& data, const Tensor& updates, const std::string& reduction, Each each) {
  switch (data.dtype()) {
    case DType::Float32:
      return scatter<float>(data, updates, reduction, each);
    case DType::Int64:
      return scatter<int64_t>(data, updates, reduction, each);
    case DType::Int32:
      return scatter<int32_t>(data, updates, reduction, each);
    case DType::Int8:
      return scatter<int8_t>(data, updates, reduction, each);
    case DType::UInt8:
      return scatter<uint8_t>(data, updates, reduction, each);
    case DType::Bool: {  // one byte per element on the host, like uint8
      const Tensor as_bytes =
          scatter<uint8_t>(Tensor(DType::UInt8, data.shape(), data.bytes()),
                           Tensor(DType::UInt8, updates.shape(), updates.bytes()), reduction, each);
      return Tensor(DType::Bool, data.shape(), as_bytes.bytes());
    }
    default:
      throw Error("scatter reference: unsupported dtype");
  }
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

}  // namespace

Tensor scatter_elements_reference(const Tensor& data, const Tensor& indices, const Tensor& updates,
                                  int64_t axis, const std::string& reduction) {
  const int64_t rank = data.rank();
  if (axis < 0) axis += rank;
  const std::vector<int64_t> idx = index_values(indices);
  const std::vector<int64_t> data_strides = strides_of(data.shape());
  const Shape& ushape = updates.shape();
  return scatter_any(data, updates, reduction, [&](auto apply) {
    for (int64_t e = 0; e < updates.element_count(); ++e) {
      int64_t rest = e, at = 0;
      for (int64_t d = rank - 1; d >= 0; --d) {
        int64_t c = rest % ushape[static_cast<size_t>(d)];
        rest /= ushape[static_cast<size_t>(d)];
        if (d == axis) {
          c = idx[static_cast<size_t>(e)];
          if (c < 0) c += data.shape()[static_cast<size_t>(axis)];
        }
        at += c * data_strides[static_cast<size_t>(d)];
      }
      apply(at, e);
    }
  });
}

Tensor scatter_nd_reference(const Tensor& data, const Tensor& indices, const Tensor& updates,
                            const std::string& reduction) {
  const std::vector<int64_t> idx = index_values(indices);
  const size_t q = static_cast<size_t>(indices.shape().back());
  int64_t slice = 1;
  for (size_t d = q; d < data.shape().size(); ++d) slice *= data.shape()[d];
  const std::vector<int64_t> data_strides = strides_of(data.shape());
  const int64_t tuples = static_cast<int64_t>(idx.size() / q);
  return scatter_any(data, updates, reduction, [&](auto apply) {
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t at = 0;
      for (size_t l = 0; l < q; ++l) {
        int64_t c = idx[static_cast<size_t>(t) * q + l];
        if (c < 0) c += data.shape()[l];
        at += c * data_strides[l];
      }
      for (int64_t s = 0; s < slice; ++s) apply(at + s, t * slice + s);
    }
  });
}

}  // namespace wgi::test
