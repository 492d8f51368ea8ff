// A kernel's interface declared once, in C++: its storage bindings (each with the TensorRef it binds) and its
// uniform block, in @binding order. From that one list it fills a launch's program.bindings and bindings,
// packs the uniform bytes from named values (the layout gpu::UniformBuilder produces) and writes the WGSL
// declarations (`struct Params {...}` and the `@group(0) @binding(i)` lines) that the kernel file places with
// the `#interface` directive, so that bindings, binding numbers and Params are spelled in one place.
//
//   KernelInterface iface;
//   iface.read("input", "T", TensorRef::input(0))
//       .read_write("output", "T", TensorRef::output(0))
//       .uniforms({{"count", UniformType::U32}, {"alpha", UniformType::F32}});
//   launch.program.wgsl = iface.load_wgsl("elementwise/unary.wgsl", defines);
//   iface.bind(launch);
//   launch.uniform = iface.values().u32("count", n).f32("alpha", a).bytes();
//
// Storage bindings declared after the uniform block are bound after it (a fused residual, which keeps the
// kernels' other binding numbers: ops/fused_residual.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/wgsl_library.h"
#include "ops/op.h"

namespace wgi::ops {

// A uniform member's WGSL type; Pad is an unnamed-in-spirit u32 member that always packs 0.
enum class UniformType { U32, I32, F32, Pad, Vec2U, Vec4U, Vec4I, Vec4F };

struct UniformMember {
  std::string name;
  UniformType type;
  uint32_t array_count = 0;  // > 0: `array<type, array_count>` (vec4 types only)
};

class KernelInterface;

// The uniform block's values, set by name; bytes() packs them. Setting a name the block does not declare,
// setting one twice, giving a value of another type or array length, or leaving a member unset throws.
class UniformValues {
 public:
  explicit UniformValues(const KernelInterface& iface);

  UniformValues& u32(std::string_view name, uint32_t v);
  UniformValues& i32(std::string_view name, int32_t v);
  UniformValues& f32(std::string_view name, float v);
  UniformValues& vec2u(std::string_view name, std::array<uint32_t, 2> v);
  UniformValues& vec4u(std::string_view name, std::array<uint32_t, 4> v);
  UniformValues& vec4i(std::string_view name, std::array<int32_t, 4> v);
  UniformValues& vec4f(std::string_view name, std::array<float, 4> v);
  // An array member: exactly array_count vec4s.
  UniformValues& vec4u_array(std::string_view name, std::span<const std::array<uint32_t, 4>> v);
  UniformValues& vec4i_array(std::string_view name, std::span<const std::array<int32_t, 4>> v);
  UniformValues& vec4f_array(std::string_view name, std::span<const std::array<float, 4>> v);

  std::vector<std::byte> bytes() const;

 private:
  UniformValues& set(std::string_view name, UniformType type, uint32_t count, const void* data, size_t size);

  const KernelInterface& iface_;
  std::vector<std::vector<std::byte>> values_;  // per member, empty until set
};

// One storage binding of a list (KernelInterface::storage_list): name and element type in the kernel, and
// what it binds.
struct StorageBinding {
  const char* name;
  const char* element;
  TensorRef ref;
};

class KernelInterface {
 public:
  // Storage bindings, `var<storage, read> name: array<element>` / `var<storage, read_write> ...`.
  KernelInterface& read(std::string name, std::string element, TensorRef ref);
  KernelInterface& read_write(std::string name, std::string element, TensorRef ref);
  // The bindings in order, read except the last `writes`, which are read_write (the stages of a multi-pass
  // kernel file: each reads what earlier stages wrote and writes its own results).
  KernelInterface& storage_list(const std::vector<StorageBinding>& bindings, size_t writes);
  // Any other storage type (e.g. "array<atomic<u32>>"), declared as given.
  KernelInterface& storage(std::string name, std::string wgsl_type, bool writable, TensorRef ref);
  // The run status (runtime/run_status.h) that kernels including common/run_status.wgsl record errors in.
  KernelInterface& run_status();
  // The uniform block `var<uniform> params: <struct_name>` with these members in order, bound here (at most
  // one per kernel). An empty member list is not allowed: a kernel without uniforms declares none.
  KernelInterface& uniforms(std::vector<UniformMember> members, std::string struct_name = "Params");

  // The WGSL declarations, in @binding order, the struct first.
  std::string declarations() const;
  // Fills program.bindings and bindings (which must be empty).
  void bind(KernelLaunch& launch) const;
  // kernels::load_wgsl with the declarations as the INTERFACE define that `#interface` places.
  gpu::ShaderText load_wgsl(std::string_view path, kernels::Defines defines = {}) const;

  UniformValues values() const { return UniformValues(*this); }

  const std::vector<UniformMember>& uniform_members() const { return members_; }

 private:
  struct Binding {
    std::string name;
    std::string wgsl_type;  // storage: the variable's type; uniform: the struct's name
    gpu::BindingKind kind;
    TensorRef ref;
  };
  std::vector<Binding> bindings_;
  std::vector<UniformMember> members_;
  bool has_uniform_ = false;
};

}  // namespace wgi::ops
