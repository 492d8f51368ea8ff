#include "gpu/webgpu_abi.h"

#include <array>
#include <cstdio>

namespace wgi::gpu::abi {

std::string feature_name(uint32_t value) {
  // The library's numbering (see webgpu_abi.h), 0x1 to 0x12.
  static constexpr std::array<const char*, 19> kNames = {
      nullptr,
      "depth-clip-control",
      "depth32float-stencil8",
      "timestamp-query",
      "texture-compression-bc",
      "texture-compression-bc-sliced-3d",
      "texture-compression-etc2",
      "texture-compression-astc",
      "texture-compression-astc-sliced-3d",
      "indirect-first-instance",
      "shader-f16",
      "rg11b10ufloat-renderable",
      "bgra8unorm-storage",
      "float32-filterable",
      "float32-blendable",
      "clip-distances",
      "dual-source-blending",
      "subgroups",
      "core-features-and-limits",
  };
  if (value > 0 && value < kNames.size()) return kNames[value];
  if (value == static_cast<uint32_t>(kSubgroupMatrix)) return "chromium-experimental-subgroup-matrix";
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%05x", value);
  return buf;
}

}  // namespace wgi::gpu::abi
