#include "ops/kernel_interface.h"

#include <algorithm>
#include <cstring>

#include "gpu/uniform.h"
#include "wgi/error.h"

namespace wgi::ops {

namespace {

// The WGSL spelling of a uniform member's type.
const char* wgsl_name(UniformType type) {
  switch (type) {
    case UniformType::U32:
    case UniformType::Pad:
      return "u32";
    case UniformType::I32:
      return "i32";
    case UniformType::F32:
      return "f32";
    case UniformType::Vec2U:
      return "vec2<u32>";
    case UniformType::Vec4U:
      return "vec4<u32>";
    case UniformType::Vec4I:
      return "vec4<i32>";
    case UniformType::Vec4F:
      return "vec4<f32>";
  }
  throw Error("unknown uniform type");
}

// Appends one element of a member (its bytes as UniformValues stored them) to `b`, which owns the layout.
void put_element(gpu::UniformBuilder& b, UniformType type, const std::byte* p) {
  auto load = [p](auto value) {
    std::memcpy(&value, p, sizeof(value));
    return value;
  };
  switch (type) {
    case UniformType::U32:
      b.u32(load(uint32_t{}));
      return;
    case UniformType::Pad:
      b.u32(0);
      return;
    case UniformType::I32:
      b.i32(load(int32_t{}));
      return;
    case UniformType::F32:
      b.f32(load(float{}));
      return;
    case UniformType::Vec2U:
      b.vec2u(load(std::array<uint32_t, 2>{}));
      return;
    case UniformType::Vec4U:
      b.vec4u(load(std::array<uint32_t, 4>{}));
      return;
    case UniformType::Vec4I:
      b.vec4i(load(std::array<int32_t, 4>{}));
      return;
    case UniformType::Vec4F:
      b.vec4f(load(std::array<float, 4>{}));
      return;
  }
  throw Error("unknown uniform type");
}

bool is_vec4(UniformType type) {
  return type == UniformType::Vec4U || type == UniformType::Vec4I || type == UniformType::Vec4F;
}

std::string member_wgsl_type(const UniformMember& m) {
  std::string t = wgsl_name(m.type);
  return m.array_count > 0 ? "array<" + t + ", " + std::to_string(m.array_count) + ">" : t;
}

}  // namespace

KernelInterface& KernelInterface::read(std::string name, std::string element, TensorRef ref) {
  return storage(std::move(name), "array<" + element + ">", false, ref);
}

KernelInterface& KernelInterface::read_write(std::string name, std::string element, TensorRef ref) {
  return storage(std::move(name), "array<" + element + ">", true, ref);
}

KernelInterface& KernelInterface::storage_list(const std::vector<StorageBinding>& bindings, size_t writes) {
  for (size_t b = 0; b < bindings.size(); ++b) {
    if (b + writes >= bindings.size()) {
      read_write(bindings[b].name, bindings[b].element, bindings[b].ref);
    } else {
      read(bindings[b].name, bindings[b].element, bindings[b].ref);
    }
  }
  return *this;
}

KernelInterface& KernelInterface::storage(std::string name, std::string wgsl_type, bool writable,
                                          TensorRef ref) {
  for (const Binding& b : bindings_) {
    if (b.name == name) throw Error("kernel interface: binding '" + name + "' declared twice");
  }
  bindings_.push_back({std::move(name), std::move(wgsl_type),
                       writable ? gpu::BindingKind::Storage : gpu::BindingKind::ReadOnlyStorage, ref});
  return *this;
}

KernelInterface& KernelInterface::run_status() {
  return storage("run_status", "array<atomic<u32>, 8>", true, TensorRef::run_status());
}

KernelInterface& KernelInterface::uniforms(std::vector<UniformMember> members, std::string struct_name) {
  if (has_uniform_) throw Error("kernel interface: a second uniform block");
  if (members.empty()) throw Error("kernel interface: a uniform block without members");
  for (size_t i = 0; i < members.size(); ++i) {
    const UniformMember& m = members[i];
    if (m.array_count > 0 && !is_vec4(m.type)) {
      throw Error("kernel interface: uniform '" + m.name + "': arrays of vec4 only");
    }
    for (size_t j = 0; j < i; ++j) {
      if (members[j].name == m.name) throw Error("kernel interface: uniform '" + m.name + "' declared twice");
    }
  }
  has_uniform_ = true;
  members_ = std::move(members);
  bindings_.push_back({"params", std::move(struct_name), gpu::BindingKind::Uniform, {}});
  return *this;
}

std::string KernelInterface::declarations() const {
  std::string out;
  for (const Binding& b : bindings_) {
    if (b.kind != gpu::BindingKind::Uniform) continue;
    out += "struct " + b.wgsl_type + " {\n";
    for (const UniformMember& m : members_) out += "  " + m.name + ": " + member_wgsl_type(m) + ",\n";
    out += "}\n";
  }
  for (size_t i = 0; i < bindings_.size(); ++i) {
    const Binding& b = bindings_[i];
    out += "@group(0) @binding(" + std::to_string(i) + ") var<";
    switch (b.kind) {
      case gpu::BindingKind::ReadOnlyStorage:
        out += "storage, read";
        break;
      case gpu::BindingKind::Storage:
        out += "storage, read_write";
        break;
      case gpu::BindingKind::Uniform:
        out += "uniform";
        break;
    }
    out += "> " + b.name + ": " + b.wgsl_type + ";\n";
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

void KernelInterface::bind(KernelLaunch& launch) const {
  if (!launch.program.bindings.empty() || !launch.bindings.empty()) {
    throw Error("kernel interface: launch '" + launch.program.label + "' already has bindings");
  }
  for (const Binding& b : bindings_) {
    launch.program.bindings.push_back(b.kind);
    if (b.kind != gpu::BindingKind::Uniform) launch.bindings.push_back(b.ref);
  }
}

gpu::ShaderText KernelInterface::load_wgsl(std::string_view path, kernels::Defines defines) const {
  if (!defines.emplace(kernels::kInterfaceDefine, declarations()).second) {
    throw Error("kernel interface: " + std::string(path) + " was given its own " +
                std::string(kernels::kInterfaceDefine) + " define");
  }
  return kernels::load_wgsl(path, defines);
}

UniformValues::UniformValues(const KernelInterface& iface)
    : iface_(iface), values_(iface.uniform_members().size()) {}

UniformValues& UniformValues::set(std::string_view name, UniformType type, uint32_t count, const void* data,
                                  size_t size) {
  const auto& members = iface_.uniform_members();
  for (size_t i = 0; i < members.size(); ++i) {
    const UniformMember& m = members[i];
    if (m.name != name) continue;
    if (m.type != type || m.array_count != count) {
      throw Error("kernel interface: uniform '" + m.name + "' is " + member_wgsl_type(m) +
                  ", set with a value of another type");
    }
    if (!values_[i].empty()) throw Error("kernel interface: uniform '" + m.name + "' set twice");
    values_[i].resize(size);
    std::memcpy(values_[i].data(), data, size);
    return *this;
  }
  throw Error("kernel interface: no uniform '" + std::string(name) + "' declared");
}

UniformValues& UniformValues::u32(std::string_view name, uint32_t v) {
  return set(name, UniformType::U32, 0, &v, 4);
}
UniformValues& UniformValues::i32(std::string_view name, int32_t v) {
  return set(name, UniformType::I32, 0, &v, 4);
}
UniformValues& UniformValues::f32(std::string_view name, float v) {
  return set(name, UniformType::F32, 0, &v, 4);
}
UniformValues& UniformValues::vec2u(std::string_view name, std::array<uint32_t, 2> v) {
  return set(name, UniformType::Vec2U, 0, v.data(), 8);
}
UniformValues& UniformValues::vec4u(std::string_view name, std::array<uint32_t, 4> v) {
  return set(name, UniformType::Vec4U, 0, v.data(), 16);
}
UniformValues& UniformValues::vec4i(std::string_view name, std::array<int32_t, 4> v) {
  return set(name, UniformType::Vec4I, 0, v.data(), 16);
}
UniformValues& UniformValues::vec4f(std::string_view name, std::array<float, 4> v) {
  return set(name, UniformType::Vec4F, 0, v.data(), 16);
}
UniformValues& UniformValues::vec4u_array(std::string_view name, std::span<const std::array<uint32_t, 4>> v) {
  return set(name, UniformType::Vec4U, static_cast<uint32_t>(v.size()), v.data(), v.size_bytes());
}
UniformValues& UniformValues::vec4i_array(std::string_view name, std::span<const std::array<int32_t, 4>> v) {
  return set(name, UniformType::Vec4I, static_cast<uint32_t>(v.size()), v.data(), v.size_bytes());
}
UniformValues& UniformValues::vec4f_array(std::string_view name, std::span<const std::array<float, 4>> v) {
  return set(name, UniformType::Vec4F, static_cast<uint32_t>(v.size()), v.data(), v.size_bytes());
}

// Packed by gpu::UniformBuilder, member by member (an array as its elements), so the layout is its.
std::vector<std::byte> UniformValues::bytes() const {
  const auto& members = iface_.uniform_members();
  gpu::UniformBuilder b;
  for (size_t i = 0; i < members.size(); ++i) {
    const UniformMember& m = members[i];
    if (m.type == UniformType::Pad) {
      put_element(b, m.type, nullptr);
      continue;
    }
    if (values_[i].empty()) throw Error("kernel interface: uniform '" + m.name + "' not set");
    const size_t count = std::max<uint32_t>(1, m.array_count);
    const size_t element = values_[i].size() / count;
    for (size_t e = 0; e < count; ++e) put_element(b, m.type, values_[i].data() + e * element);
  }
  return b.bytes();
}

}  // namespace wgi::ops
