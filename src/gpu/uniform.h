// Packs kernel parameters into a byte block laid out exactly like a WGSL uniform struct.
//
// WGSL alignment (uniform address space): f32/i32/u32 align 4; vec2 align 8; vec3 and vec4 align 16 (vec3
// occupies 12 bytes); the struct's size is rounded up to 16. Members must be appended in declaration order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace wgi::gpu {

class UniformBuilder {
 public:
  UniformBuilder& u32(uint32_t v) { return put(&v, 4, 4); }
  UniformBuilder& i32(int32_t v) { return put(&v, 4, 4); }
  UniformBuilder& f32(float v) { return put(&v, 4, 4); }
  UniformBuilder& vec2u(std::array<uint32_t, 2> v) { return put(v.data(), 8, 8); }
  UniformBuilder& vec3u(std::array<uint32_t, 3> v) { return put(v.data(), 12, 16); }
  UniformBuilder& vec4u(std::array<uint32_t, 4> v) { return put(v.data(), 16, 16); }
  UniformBuilder& vec4i(std::array<int32_t, 4> v) { return put(v.data(), 16, 16); }
  UniformBuilder& vec4f(std::array<float, 4> v) { return put(v.data(), 16, 16); }

  // Offset at which the most recently appended member starts (for tests and debugging).
  size_t last_offset() const { return last_offset_; }
  // The packed block, padded to a multiple of 16 bytes (never empty: a uniform binding needs a size).
  std::vector<std::byte> bytes() const;

 private:
  UniformBuilder& put(const void* data, size_t size, size_t align);
  std::vector<std::byte> bytes_;
  size_t last_offset_ = 0;
};

}  // namespace wgi::gpu
