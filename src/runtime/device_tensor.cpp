#include "runtime/device_tensor.h"

#include <cstring>
#include <limits>

namespace wgi::runtime {

namespace {

size_t device_element_size(DType dtype) {
  return dtype == DType::Float16 ? 2 : 4;
}

}  // namespace

uint64_t device_byte_size(const ops::TensorDesc& desc) {
  uint64_t bytes = static_cast<uint64_t>(element_count(desc.shape)) * device_element_size(desc.dtype);
  return std::max<uint64_t>(4, (bytes + 3) / 4 * 4);
}

std::vector<std::byte> to_device_bytes(const Tensor& tensor, const std::string& what) {
  const size_t n = static_cast<size_t>(tensor.element_count());
  std::vector<std::byte> out(n * device_element_size(tensor.dtype()));
  auto src = tensor.bytes();
  switch (tensor.dtype()) {
    case DType::Float32:
    case DType::Int32:
    case DType::Float16:
      if (!src.empty()) std::memcpy(out.data(), src.data(), src.size());
      break;
    case DType::Int64: {
      auto values = tensor.data<int64_t>();
      for (size_t i = 0; i < n; ++i) {
        int64_t v = values[i];
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
          throw Error(what + ": int64 value " + std::to_string(v) + " at element " + std::to_string(i) +
                      " does not fit the GPU's 32-bit integers");
        }
        int32_t v32 = static_cast<int32_t>(v);
        std::memcpy(out.data() + 4 * i, &v32, 4);
      }
      break;
    }
    case DType::Bool:
    case DType::UInt8:
      for (size_t i = 0; i < n; ++i) {
        uint32_t v = static_cast<uint8_t>(src[i]);
        if (tensor.dtype() == DType::Bool) v = v != 0;
        std::memcpy(out.data() + 4 * i, &v, 4);
      }
      break;
    case DType::Int8:
      for (size_t i = 0; i < n; ++i) {
        int32_t v = static_cast<int8_t>(src[i]);
        std::memcpy(out.data() + 4 * i, &v, 4);
      }
      break;
  }
  return out;
}

Tensor from_device_bytes(const ops::TensorDesc& desc, std::span<const std::byte> bytes) {
  Tensor t(desc.dtype, desc.shape);
  const size_t n = static_cast<size_t>(t.element_count());
  auto dst = t.bytes();
  switch (desc.dtype) {
    case DType::Float32:
    case DType::Int32:
    case DType::Float16:
      if (!dst.empty()) std::memcpy(dst.data(), bytes.data(), dst.size());
      break;
    case DType::Int64: {
      auto values = t.data<int64_t>();
      for (size_t i = 0; i < n; ++i) {
        int32_t v;
        std::memcpy(&v, bytes.data() + 4 * i, 4);
        values[i] = v;
      }
      break;
    }
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      for (size_t i = 0; i < n; ++i) {
        uint32_t v;
        std::memcpy(&v, bytes.data() + 4 * i, 4);
        dst[i] = static_cast<std::byte>(desc.dtype == DType::Bool ? (v != 0) : (v & 0xff));
      }
      break;
  }
  return t;
}

gpu::Buffer upload_tensor(gpu::Device& device, const Tensor& tensor, const std::string& label) {
  gpu::Buffer buffer = device.create_buffer(device_byte_size({tensor.dtype(), tensor.shape()}), label);
  write_tensor(device, {&buffer}, tensor, label);
  return buffer;
}

void write_tensor(gpu::Device& device, const gpu::BufferSlice& slice, const Tensor& tensor,
                  const std::string& what) {
  auto bytes = to_device_bytes(tensor, what);
  if (bytes.size() > slice.resolved_size()) {
    throw Error(what + ": " + std::to_string(bytes.size()) + " bytes do not fit a device region of " +
                std::to_string(slice.resolved_size()));
  }
  device.upload(*slice.buffer, slice.offset, bytes);
}

Tensor read_tensor(gpu::Device& device, const gpu::BufferSlice& slice, const ops::TensorDesc& desc) {
  std::vector<std::byte> bytes(static_cast<size_t>(element_count(desc.shape)) *
                               device_element_size(desc.dtype));
  device.download(*slice.buffer, slice.offset, bytes);
  return from_device_bytes(desc, bytes);
}

}  // namespace wgi::runtime
