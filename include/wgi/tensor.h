// wgi::Tensor: a host-side tensor (element type, shape, bytes) used for model inputs, outputs and constants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "wgi/error.h"

namespace wgi {

enum class DType { Float32, Float16, Int64, Int32, Int8, UInt8, Bool };

std::string_view dtype_name(DType dtype);  // "float32", "int64", ...
size_t dtype_size(DType dtype);            // bytes per element on the host

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::Float32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::Int64;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::Int32;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return DType::Int8;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::UInt8;
}

using Shape = std::vector<int64_t>;
std::string shape_to_string(const Shape& shape);  // "[2, 3, 4]"
// Product of the dims; throws wgi::Error on a negative dim or an overflowing count.
int64_t element_count(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor of the given type and shape; throws wgi::Error when its bytes do not fit in memory.
  Tensor(DType dtype, Shape shape);
  // Copies `bytes`, which must hold exactly element_count(shape) * dtype_size(dtype) bytes.
  Tensor(DType dtype, Shape shape, std::span<const std::byte> bytes);

  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values) {
    return Tensor(dtype_of<T>(), std::move(shape), std::as_bytes(std::span<const T>(values)));
  }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t element_count() const { return count_; }
  size_t byte_size() const { return bytes_.size(); }
  std::span<const std::byte> bytes() const { return bytes_; }
  std::span<std::byte> bytes() { return bytes_; }

  // Typed views; throw wgi::Error if T does not match the tensor's type.
  template <class T>
  std::span<const T> data() const {
    check_type(dtype_of<T>());
    return {reinterpret_cast<const T*>(bytes_.data()), static_cast<size_t>(count_)};
  }
  template <class T>
  std::span<T> data() {
    check_type(dtype_of<T>());
    return {reinterpret_cast<T*>(bytes_.data()), static_cast<size_t>(count_)};
  }

 private:
  void check_type(DType wanted) const;
  DType dtype_ = DType::Float32;
  Shape shape_;
  int64_t count_ = 0;
  std::vector<std::byte> bytes_;
};

}  // namespace wgi
