// Small conversions between webgpu.h and C++ types. Internal to src/gpu/.
#pragma once

#include <webgpu/webgpu.h>

#include <cstring>
#include <string>
#include <string_view>

namespace wgi::gpu {

inline WGPUStringView to_string_view(std::string_view s) {
  return WGPUStringView{s.data(), s.size()};
}

inline std::string to_std_string(WGPUStringView s) {
  if (!s.data) return {};
  if (s.length == WGPU_STRLEN) return std::string(s.data);
  return std::string(s.data, s.length);
}

}  // namespace wgi::gpu
