// An owned WebGPU buffer (move-only RAII) and the slices of it that kernels bind.
#pragma once

#include <cstdint>
#include <string>

#include "gpu/handles.h"

namespace wgi::gpu {

enum class BufferUsage {
  Storage,      // storage binding + copy source + copy destination: every tensor
  Uniform,      // uniform binding + copy destination: kernel parameters
  Readback,     // map for reading + copy destination: staging for downloads
  QueryResolve  // query resolve target + copy source: timestamp queries
};

class Buffer {
 public:
  Buffer() = default;
  Buffer(WGPUBufferImpl* handle, uint64_t size, BufferUsage usage)
      : handle_(handle), size_(size), usage_(usage) {}
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  WGPUBufferImpl* handle() const { return handle_; }
  uint64_t size() const { return size_; }
  BufferUsage usage() const { return usage_; }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  WGPUBufferImpl* handle_ = nullptr;
  uint64_t size_ = 0;
  BufferUsage usage_ = BufferUsage::Storage;
};

// A byte range of a buffer as bound to a shader. size == kWholeBuffer means "to the end".
inline constexpr uint64_t kWholeBuffer = ~uint64_t{0};
struct BufferSlice {
  const Buffer* buffer = nullptr;
  uint64_t offset = 0;
  uint64_t size = kWholeBuffer;

  uint64_t resolved_size() const { return size == kWholeBuffer ? buffer->size() - offset : size; }
};

}  // namespace wgi::gpu
