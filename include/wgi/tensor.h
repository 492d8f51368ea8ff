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

// A Tensor owns its bytes, or is a read-only view of the caller's memory (Tensor::view): Session::run then
// uploads straight from that memory, without a host copy. A view's memory must outlive the view and stay
// unchanged while a call reads it. A copy of a view owns its bytes (so anything that keeps a copy, such as a
// plan keyed by a small input's value, never points into the caller's memory); pass views by reference or
// move them (`inputs.emplace(name, Tensor::view(...))`) to avoid that copy.
class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor of the given type and shape; throws wgi::Error when its bytes do not fit in memory.
  Tensor(DType dtype, Shape shape);
  // Copies `bytes`, which must hold exactly element_count(shape) * dtype_size(dtype) bytes.
  Tensor(DType dtype, Shape shape, std::span<const std::byte> bytes);
  // A view of `bytes` (not copied): exactly element_count(shape) * dtype_size(dtype) bytes, aligned to
  // dtype_size(dtype). Throws wgi::Error otherwise.
  static Tensor view(DType dtype, Shape shape, std::span<const std::byte> bytes);
  template <class T>
  static Tensor view(Shape shape, std::span<const T> values) {
    return view(dtype_of<T>(), std::move(shape), std::as_bytes(values));
  }

  Tensor(const Tensor& other);  // a copy owns its bytes, also when `other` is a view
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&& other) noexcept = default;
  Tensor& operator=(Tensor&& other) noexcept = default;
  ~Tensor() = default;

  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values) {
    return Tensor(dtype_of<T>(), std::move(shape), std::as_bytes(std::span<const T>(values)));
  }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t element_count() const { return count_; }
  bool is_view() const { return view_ != nullptr; }
  size_t byte_size() const { return view_ ? view_size_ : bytes_.size(); }
  std::span<const std::byte> bytes() const {
    return view_ ? std::span<const std::byte>(view_, view_size_) : std::span<const std::byte>(bytes_);
  }
  // Throws wgi::Error for a view (its memory is the caller's, read-only).
  std::span<std::byte> bytes() {
    check_writable();
    return bytes_;
  }

  // Typed views; throw wgi::Error if T does not match the tensor's type (or, writable, for a view).
  template <class T>
  std::span<const T> data() const {
    check_type(dtype_of<T>());
    return {reinterpret_cast<const T*>(bytes().data()), static_cast<size_t>(count_)};
  }
  template <class T>
  std::span<T> data() {
    check_type(dtype_of<T>());
    check_writable();
    return {reinterpret_cast<T*>(bytes_.data()), static_cast<size_t>(count_)};
  }

 private:
  void check_type(DType wanted) const;
  void check_writable() const;
  DType dtype_ = DType::Float32;
  Shape shape_;
  int64_t count_ = 0;
  std::vector<std::byte> bytes_;
  const std::byte* view_ = nullptr;  // the caller's bytes when a view
  size_t view_size_ = 0;
};

}  // namespace wgi
