// How host tensors live on the GPU.
//
// WGSL has no 64-bit or 8-bit integers, so tensors are stored with these element types on the device:
//   float32 -> f32;  int64, int32 -> i32 (int64 values must fit, else wgi::Error);  bool, uint8, int8 ->
//   u32/i32.
// float16 storage arrives with the shader-f16 precision mode.
#pragma once

#include <cstdint>

#include "gpu/buffer.h"
#include "gpu/device.h"
#include "ops/op.h"
#include "wgi/tensor.h"

namespace wgi::runtime {

// Bytes a tensor of this description occupies on the device (at least 4: WebGPU has no empty bindings).
uint64_t device_byte_size(const ops::TensorDesc& desc);

// Converts a host tensor to its device element layout.
std::vector<std::byte> to_device_bytes(const Tensor& tensor, const std::string& what);
// Converts device bytes back to a host tensor of `desc`.
Tensor from_device_bytes(const ops::TensorDesc& desc, std::span<const std::byte> bytes);

gpu::Buffer upload_tensor(gpu::Device& device, const Tensor& tensor, const std::string& label);
void write_tensor(gpu::Device& device, const gpu::BufferSlice& slice, const Tensor& tensor,
                  const std::string& what);
Tensor read_tensor(gpu::Device& device, const gpu::BufferSlice& slice, const ops::TensorDesc& desc);

}  // namespace wgi::runtime
