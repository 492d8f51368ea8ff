// ops::KernelInterface: one declaration of a kernel's bindings and uniforms, from which the launch's
// bindings, the uniform bytes and the WGSL declarations are derived.
#include <gtest/gtest.h>

#include <cstring>

#include "gpu/uniform.h"
#include "ops/kernel_interface.h"
#include "wgi/error.h"

namespace wgi::ops {
namespace {

KernelInterface residual_interface() {
  KernelInterface iface;
  iface.read("a", "vec4<f32>", TensorRef::input(0))
      .read("bias", "f32", TensorRef::zero())
      .read_write("output", "f32", TensorRef::output(0))
      .uniforms({{"m", UniformType::U32},
                 {"alpha", UniformType::F32},
                 {"shape", UniformType::Vec4U, 2},
                 {"offset", UniformType::I32},
                 {"_pad", UniformType::Pad}})
      .read("residual", "f32", TensorRef::input(3));
  return iface;
}

TEST(KernelInterface, DeclaresBindingsInOrderWithTheUniformWhereDeclared) {
  EXPECT_EQ(residual_interface().declarations(),
            "struct Params {\n"
            "  m: u32,\n"
            "  alpha: f32,\n"
            "  shape: array<vec4<u32>, 2>,\n"
            "  offset: i32,\n"
            "  _pad: u32,\n"
            "}\n"
            "@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;\n"
            "@group(0) @binding(1) var<storage, read> bias: array<f32>;\n"
            "@group(0) @binding(2) var<storage, read_write> output: array<f32>;\n"
            "@group(0) @binding(3) var<uniform> params: Params;\n"
            "@group(0) @binding(4) var<storage, read> residual: array<f32>;");
}

TEST(KernelInterface, BindsTheLaunchSkippingTheUniformSlot) {
  KernelLaunch launch;
  residual_interface().bind(launch);
  using K = gpu::BindingKind;
  EXPECT_EQ(launch.program.bindings, (std::vector<K>{K::ReadOnlyStorage, K::ReadOnlyStorage, K::Storage,
                                                     K::Uniform, K::ReadOnlyStorage}));
  ASSERT_EQ(launch.bindings.size(), 4u);
  EXPECT_EQ(launch.bindings[0].kind, TensorRef::Kind::Input);
  EXPECT_EQ(launch.bindings[1].kind, TensorRef::Kind::Zero);
  EXPECT_EQ(launch.bindings[2].kind, TensorRef::Kind::Output);
  EXPECT_EQ(launch.bindings[3].kind, TensorRef::Kind::Input);
  EXPECT_EQ(launch.bindings[3].index, 3u);
  EXPECT_THROW(residual_interface().bind(launch), Error);  // already bound
}

TEST(KernelInterface, PacksLikeUniformBuilder) {
  const std::array<std::array<uint32_t, 4>, 2> shape{{{1, 2, 3, 4}, {5, 6, 7, 8}}};
  KernelInterface iface = residual_interface();
  std::vector<std::byte> packed =
      iface.values().f32("alpha", 0.5f).u32("m", 9).vec4u_array("shape", shape).i32("offset", -2).bytes();
  std::vector<std::byte> expected =
      gpu::UniformBuilder().u32(9).f32(0.5f).vec4u(shape[0]).vec4u(shape[1]).i32(-2).u32(0).bytes();
  EXPECT_EQ(packed, expected);

  KernelInterface vectors;
  vectors.uniforms({{"n", UniformType::U32}, {"v", UniformType::Vec2U}, {"w", UniformType::Vec4F}});
  EXPECT_EQ(vectors.values().u32("n", 1).vec2u("v", {2, 3}).vec4f("w", {1, 2, 3, 4}).bytes(),
            gpu::UniformBuilder().u32(1).vec2u({2, 3}).vec4f({1, 2, 3, 4}).bytes());
}

TEST(KernelInterface, UniformValuesMustMatchTheDeclaration) {
  KernelInterface iface;
  iface.read_write("y", "u32", TensorRef::output(0))
      .uniforms({{"n", UniformType::U32}, {"_pad", UniformType::Pad}});
  EXPECT_THROW(iface.values().u32("count", 1), Error);          // not declared
  EXPECT_THROW(iface.values().i32("n", 1), Error);              // another type
  EXPECT_THROW(iface.values().u32("_pad", 0), Error);           // padding packs itself
  EXPECT_THROW(iface.values().u32("n", 1).u32("n", 2), Error);  // twice
  EXPECT_THROW(iface.values().bytes(), Error);                  // n not set
  EXPECT_EQ(iface.values().u32("n", 7).bytes(), gpu::UniformBuilder().u32(7).u32(0).bytes());
}

TEST(KernelInterface, RefusesDuplicatesAndASecondUniformBlock) {
  KernelInterface iface;
  iface.read("x", "f32", TensorRef::input(0));
  EXPECT_THROW(iface.read_write("x", "f32", TensorRef::output(0)), Error);
  iface.uniforms({{"n", UniformType::U32}});
  EXPECT_THROW(iface.uniforms({{"m", UniformType::U32}}), Error);
  KernelInterface other;
  EXPECT_THROW(other.uniforms({{"n", UniformType::U32}, {"n", UniformType::F32}}), Error);
  EXPECT_THROW(other.uniforms({{"s", UniformType::U32, 2}}), Error);  // arrays of vec4 only
}

TEST(KernelInterface, LoadsTheKernelWithItsDeclarations) {
  KernelInterface iface;
  iface.read_write("y", "u32", TensorRef::output(0)).uniforms({{"count", UniformType::U32}});
  const std::string text = iface.load_wgsl("lrn/lrn.wgsl").str();
  EXPECT_NE(text.find(iface.declarations()), std::string::npos);
  EXPECT_THROW(iface.load_wgsl("lrn/lrn.wgsl", {{std::string(kernels::kInterfaceDefine), ""}}), Error);
}

}  // namespace
}  // namespace wgi::ops
