// Uniform packing must match WGSL's layout rules for the uniform address space.
#include <gtest/gtest.h>

#include <cstring>

#include "gpu/uniform.h"

namespace wgi::gpu {
namespace {

TEST(UniformBuilder, ScalarsArePacked4ByteAligned) {
  UniformBuilder u;
  u.u32(7);
  EXPECT_EQ(u.last_offset(), 0u);
  u.f32(1.5f);
  EXPECT_EQ(u.last_offset(), 4u);
  u.i32(-3);
  EXPECT_EQ(u.last_offset(), 8u);
  auto bytes = u.bytes();
  ASSERT_EQ(bytes.size(), 16u);  // struct size rounds up to 16
  uint32_t a;
  float b;
  int32_t c;
  std::memcpy(&a, bytes.data(), 4);
  std::memcpy(&b, bytes.data() + 4, 4);
  std::memcpy(&c, bytes.data() + 8, 4);
  EXPECT_EQ(a, 7u);
  EXPECT_EQ(b, 1.5f);
  EXPECT_EQ(c, -3);
}

TEST(UniformBuilder, VectorsFollowWgslAlignment) {
  // struct { a: u32, b: vec2<u32>, c: vec4<f32>, d: u32, e: vec3<u32>, f: u32 }
  // offsets:     0          8           16          32         48          60   size 64
  UniformBuilder u;
  u.u32(1);
  u.vec2u({2, 3});
  EXPECT_EQ(u.last_offset(), 8u);
  u.vec4f({1, 2, 3, 4});
  EXPECT_EQ(u.last_offset(), 16u);
  u.u32(5);
  EXPECT_EQ(u.last_offset(), 32u);
  u.vec3u({6, 7, 8});
  EXPECT_EQ(u.last_offset(), 48u);
  u.u32(9);  // a scalar may sit in vec3's trailing 4 bytes
  EXPECT_EQ(u.last_offset(), 60u);
  EXPECT_EQ(u.bytes().size(), 64u);
}

TEST(UniformBuilder, EmptyBlockIsStill16Bytes) {
  EXPECT_EQ(UniformBuilder().bytes().size(), 16u);
}

}  // namespace
}  // namespace wgi::gpu
