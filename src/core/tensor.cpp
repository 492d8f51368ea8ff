#include "wgi/tensor.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <new>

namespace wgi {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "float32";
    case DType::Float16:
      return "float16";
    case DType::Int64:
      return "int64";
    case DType::Int32:
      return "int32";
    case DType::Int8:
      return "int8";
    case DType::UInt8:
      return "uint8";
    case DType::Bool:
      return "bool";
  }
  return "?";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32:
    case DType::Int32:
      return 4;
    case DType::Float16:
      return 2;
    case DType::Int64:
      return 8;
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool:
      return 1;
  }
  return 0;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("shape " + shape_to_string(shape) + " has a negative dimension");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      throw Error("shape " + shape_to_string(shape) + " has more elements than fit in int64");
    }
    n *= d;
  }
  return n;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  count_ = wgi::element_count(shape_);
  const size_t item = dtype_size(dtype_);
  if (static_cast<uint64_t>(count_) > std::numeric_limits<size_t>::max() / item) {
    throw Error("tensor of " + std::string(dtype_name(dtype_)) + " " + shape_to_string(shape_) +
                " has more bytes than fit in memory");
  }
  const size_t bytes = static_cast<size_t>(count_) * item;
  try {
    bytes_.resize(bytes);
  } catch (const std::bad_alloc&) {
    throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes for a tensor of " +
                std::string(dtype_name(dtype_)) + " " + shape_to_string(shape_));
  }
}

Tensor::Tensor(DType dtype, Shape shape, std::span<const std::byte> bytes) : Tensor(dtype, std::move(shape)) {
  if (bytes.size() != bytes_.size()) {
    throw Error("tensor of " + std::string(dtype_name(dtype_)) + " " + shape_to_string(shape_) + " needs " +
                std::to_string(bytes_.size()) + " bytes, got " + std::to_string(bytes.size()));
  }
  if (!bytes.empty()) std::memcpy(bytes_.data(), bytes.data(), bytes.size());
}

Tensor Tensor::view(DType dtype, Shape shape, std::span<const std::byte> bytes) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.count_ = wgi::element_count(t.shape_);
  const size_t item = dtype_size(dtype);
  const std::string what = "a view of " + std::string(dtype_name(dtype)) + " " + shape_to_string(t.shape_);
  if (static_cast<uint64_t>(t.count_) > std::numeric_limits<size_t>::max() / item ||
      bytes.size() != static_cast<size_t>(t.count_) * item) {
    throw Error(what + " needs " + std::to_string(static_cast<uint64_t>(t.count_) * item) + " bytes, got " +
                std::to_string(bytes.size()));
  }
  if (reinterpret_cast<uintptr_t>(bytes.data()) % item != 0) {
    throw Error(what + " needs its data aligned to " + std::to_string(item) + " bytes (address " +
                std::to_string(reinterpret_cast<uintptr_t>(bytes.data())) + ")");
  }
  // An empty view needs no memory: it is an owning tensor of no bytes.
  if (!bytes.empty()) {
    t.view_ = bytes.data();
    t.view_size_ = bytes.size();
  }
  return t;
}

Tensor::Tensor(const Tensor& other) : dtype_(other.dtype_), shape_(other.shape_), count_(other.count_) {
  const std::span<const std::byte> source = other.bytes();
  bytes_.assign(source.begin(), source.end());
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

void Tensor::check_writable() const {
  if (view_) {
    throw Error("tensor of " + std::string(dtype_name(dtype_)) + " " + shape_to_string(shape_) +
                " is a read-only view of the caller's memory (copy it to write)");
  }
}

void Tensor::check_type(DType wanted) const {
  if (wanted != dtype_) {
    throw Error("tensor holds " + std::string(dtype_name(dtype_)) + ", accessed as " +
                std::string(dtype_name(wanted)));
  }
}

}  // namespace wgi
