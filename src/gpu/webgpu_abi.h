// Where the Dawn library wgi links differs from the webgpu.h it compiles against. Internal to src/gpu/.
//
// The library (npm bun-webgpu-linux-x64 0.1.7) numbers WGPUFeatureName as webgpu.h did before
// CoreFeaturesAndLimits moved to the front of the enum; the header (npm react-native-webgpu 0.5.17) has the
// new numbering, in which every value up to Subgroups is one higher. Asking the library for the header's
// WGPUFeatureName_TimestampQuery (0x9) really asks for IndirectFirstInstance. Measured on SwiftShader: a
// device given 0x3 creates timestamp query sets and one given 0x9 cannot; 0x11 enables `enable subgroups;`
// and 0x12 does not; a request for 0xA fails with "Requested feature FeatureName::ShaderF16 is not
// supported". tests/gpu/test_device.cpp checks each feature wgi uses by what it does, not by its number.
#pragma once

#include <webgpu/webgpu.h>

#include <cstdint>
#include <string>

namespace wgi::gpu::abi {

// The library's values for the features wgi requests.
inline constexpr WGPUFeatureName kTimestampQuery = static_cast<WGPUFeatureName>(0x3);
inline constexpr WGPUFeatureName kShaderF16 = static_cast<WGPUFeatureName>(0xA);
inline constexpr WGPUFeatureName kSubgroups = static_cast<WGPUFeatureName>(0x11);
// Dawn's chromium-experimental-subgroup-matrix (0x50034 in the header): only the WebAssembly build asks for
// it (src/gpu/web/webgpu.js reports it only with the f16 x f16 -> f32 16x16x16 configuration wgi's kernel
// uses); the pinned native Dawn never exposes it on the H200 (docs/devices.md).
inline constexpr WGPUFeatureName kSubgroupMatrix = static_cast<WGPUFeatureName>(0x50037);

// WGPUWGSLLanguageFeatureName_Packed4x8IntegerDotProduct, the same number in the library and the header
// (checked by what it does: MatMulNBits.Int8Activations* in tests/gpu/test_matmul_nbits.cpp need the device
// to report it and run dot4I8Packed).
inline constexpr WGPUWGSLLanguageFeatureName kPacked4x8IntegerDotProduct =
    static_cast<WGPUWGSLLanguageFeatureName>(0x2);

// The WebGPU name of a feature value as the library numbers it ("0x5000c" for Dawn's own features).
std::string feature_name(uint32_t library_value);

}  // namespace wgi::gpu::abi
