#include "gpu/uniform.h"

#include <algorithm>
#include <cstring>

namespace wgi::gpu {

UniformBuilder& UniformBuilder::put(const void* data, size_t size, size_t align) {
  size_t offset = (bytes_.size() + align - 1) / align * align;
  bytes_.resize(offset + size);
  std::memcpy(bytes_.data() + offset, data, size);
  last_offset_ = offset;
  return *this;
}

std::vector<std::byte> UniformBuilder::bytes() const {
  std::vector<std::byte> out = bytes_;
  out.resize(std::max<size_t>(16, (out.size() + 15) / 16 * 16));
  return out;
}

}  // namespace wgi::gpu
