#include "wgi/tensor.h"

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

void Tensor::check_type(DType wanted) const {
  if (wanted != dtype_) {
    throw Error("tensor holds " + std::string(dtype_name(dtype_)) + ", accessed as " +
                std::string(dtype_name(wanted)));
  }
}

}  // namespace wgi
