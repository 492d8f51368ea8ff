#include "gpu/buffer.h"

#include <webgpu/webgpu.h>

#include <utility>

namespace wgi::gpu {

Buffer::~Buffer() {
  if (handle_) wgpuBufferRelease(handle_);
}

Buffer::Buffer(Buffer&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), size_(other.size_), usage_(other.usage_) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    if (handle_) wgpuBufferRelease(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    size_ = other.size_;
    usage_ = other.usage_;
  }
  return *this;
}

}  // namespace wgi::gpu
