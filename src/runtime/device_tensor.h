// How host tensors live on the GPU.
//
// WGSL has no 64-bit or 8-bit integers, so tensors are stored with these element types on the device:
//   float32 -> f32;  int64, int32 -> i32 (int64 values must fit, else wgi::Error);  bool, uint8, int8 ->
//   u32/i32.
// float16 storage arrives with the shader-f16 precision mode.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/device.h"
#include "ops/op.h"
#include "wgi/device_tensor.h"
#include "wgi/tensor.h"

namespace wgi::runtime {

// Bytes a tensor of this description occupies on the device (at least 4: WebGPU has no empty bindings).
uint64_t device_byte_size(const ops::TensorDesc& desc);
// The bytes of its elements alone (no rounding up), as downloaded.
size_t device_payload_bytes(const ops::TensorDesc& desc);

// Converts a host tensor to its device element layout.
std::vector<std::byte> to_device_bytes(const Tensor& tensor, const std::string& what);
// Converts device bytes back to a host tensor of `desc`.
Tensor from_device_bytes(const ops::TensorDesc& desc, std::span<const std::byte> bytes);

gpu::Buffer upload_tensor(gpu::Device& device, const Tensor& tensor, const std::string& label);
void write_tensor(gpu::Device& device, const gpu::BufferSlice& slice, const Tensor& tensor,
                  const std::string& what);
Tensor read_tensor(gpu::Device& device, const gpu::BufferSlice& slice, const ops::TensorDesc& desc);

// Why a DeviceTensor cannot serve a session: the error's end, after "its DeviceTensor" / "it".
inline constexpr const char* kOtherDevice =
    "belongs to a session on another device (sessions share DeviceTensors only when made on one "
    "wgi::Environment: download it, or upload it with this session)";

// The device memory behind a session's DeviceTensors. Buffers of released tensors are kept for reuse (a
// decoder loop drops last step's key/values as it gets this step's, one row longer): sizes are rounded up to
// classes 1/8 of a power of two apart, a request takes a pooled buffer at most 1/4 larger than it needs, and
// the pool holds at most kMaxPooledBuffers buffers and kMaxPooledBytes bytes (oldest dropped first).
class DeviceMemory : public std::enable_shared_from_this<DeviceMemory> {
 public:
  static constexpr size_t kMaxPooledBuffers = 64;
  static constexpr uint64_t kMaxPooledBytes = uint64_t{256} << 20;

  explicit DeviceMemory(std::shared_ptr<gpu::Device> device) : device_(std::move(device)) {}
  gpu::Device& device() const { return *device_; }

  // A buffer of at least `bytes` (rounded up to its size class), from the pool if one fits.
  gpu::Buffer acquire(uint64_t bytes);
  // Returns a buffer to the pool.
  void recycle(gpu::Buffer buffer);
  // Bytes held by live DeviceTensors.
  uint64_t live_bytes() const { return live_bytes_; }

  // A new DeviceTensor of this description with uninitialised contents (the caller fills it).
  DeviceTensor allocate(const ops::TensorDesc& desc);
  // A new DeviceTensor holding `tensor`.
  DeviceTensor upload(const Tensor& tensor);
  // A new DeviceTensor whose row i along axis 0 is row rows[i] of `source` (which this memory holds),
  // copied on the GPU after the work already submitted: Session::gather_rows.
  DeviceTensor gather_rows(const DeviceTensor& source, std::span<const int64_t> rows);
  // The same for several tensors with the same rows, in one submission.
  std::vector<DeviceTensor> gather_rows(std::span<const DeviceTensor> sources, std::span<const int64_t> rows);

 private:
  friend struct wgi::detail::DeviceTensorState;
  std::shared_ptr<gpu::Device> device_;
  std::vector<gpu::Buffer> pool_;  // oldest first
  uint64_t pooled_bytes_ = 0;
  uint64_t live_bytes_ = 0;
};

// Rounds a request up to its pool size class (exposed for tests).
uint64_t pooled_size_class(uint64_t bytes);

}  // namespace wgi::runtime

namespace wgi::detail {

// What a DeviceTensor handle refers to. `memory` is null once released.
struct DeviceTensorState {
  std::shared_ptr<runtime::DeviceMemory> memory;
  gpu::Buffer buffer;
  ops::TensorDesc desc;
  uint64_t id = 0;  // unique for the process: identifies the (immutable) contents
  // The value of a small tensor (runtime::kHostVisibleInputElements), which the planner needs: kept from
  // the upload, or read back the first time it is used as an input.
  std::optional<Tensor> small_value;
  // DeviceTensor::start_download's copy in flight, and the bytes it fills.
  std::unique_ptr<gpu::Device::PendingDownload> pending;
  std::vector<std::byte> pending_bytes;

  ~DeviceTensorState();
  void release();
  // The device bytes (the tensor's device layout, at offset 0 of its buffer).
  gpu::BufferSlice slice() const { return {&buffer, 0, runtime::device_byte_size(desc)}; }

  static DeviceTensor wrap(std::shared_ptr<DeviceTensorState> state) {
    return DeviceTensor(std::move(state));
  }
  static const std::shared_ptr<DeviceTensorState>& of(const DeviceTensor& tensor) { return tensor.state_; }
};

}  // namespace wgi::detail
