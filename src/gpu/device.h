// The WebGPU device: adapter selection, capabilities, buffers, and error reporting.
//
// src/gpu/ is the only part of wgi that includes webgpu.h. Everything above it sees the opaque handle types
// declared in gpu/handles.h and the plain C++ types declared here.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/handles.h"

namespace wgi::gpu {

class PipelineCache;

// How wgi reaches a GPU. The automatic order is Vulkan (a real GPU), then SwiftShader (Vulkan on the CPU,
// from Debian's chromium package), then Dawn's OpenGL ES backend (Mesa llvmpipe, compatibility level).
// Browser: the page's navigator.gpu, the only backend of the WebAssembly build (docs/browser.md).
enum class BackendKind { Vulkan, SwiftShader, Gles, Browser };
std::string_view to_string(BackendKind kind);
// Accepts "vulkan", "swiftshader", "gles" ("browser" in the WebAssembly build); throws wgi::Error naming the
// accepted values otherwise.
BackendKind parse_backend(std::string_view name);

struct AdapterInfo {
  std::string backend;       // "Vulkan", "OpenGLES", ... as Dawn reports it
  std::string adapter_type;  // "discrete GPU", "integrated GPU", "CPU", "unknown"
  std::string vendor;
  std::string architecture;
  std::string device;
  std::string description;  // usually the driver description
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t subgroup_min_size = 0;
  uint32_t subgroup_max_size = 0;
  bool compatibility_mode = false;  // feature level Compatibility (GL ES) instead of Core
};

// The limits granted to the device (wgi always asks for the adapter's maximum).
struct Limits {
  uint64_t max_buffer_size = 0;
  uint64_t max_storage_buffer_binding_size = 0;
  uint64_t max_uniform_buffer_binding_size = 0;
  uint32_t max_storage_buffers_per_shader_stage = 0;
  uint32_t max_bind_groups = 0;
  uint32_t max_bindings_per_bind_group = 0;
  uint32_t min_storage_buffer_offset_alignment = 0;
  uint32_t min_uniform_buffer_offset_alignment = 0;
  uint32_t max_compute_workgroup_storage_size = 0;
  uint32_t max_compute_invocations_per_workgroup = 0;
  uint32_t max_compute_workgroup_size_x = 0;
  uint32_t max_compute_workgroup_size_y = 0;
  uint32_t max_compute_workgroup_size_z = 0;
  uint32_t max_compute_workgroups_per_dimension = 0;
};

// Optional features wgi asks for whenever the adapter has them.
struct Features {
  bool shader_f16 = false;
  bool subgroups = false;
  bool timestamp_query = false;
  // chromium-experimental-subgroup-matrix with the f16 x f16 -> f32 16x16x16 configuration, on an adapter
  // whose subgroups are exactly 32 invocations (the layout of linear/gemm_matrix_f16.wgsl): the WebAssembly
  // build only (gpu/webgpu_abi.h).
  bool subgroup_matrix_f16 = false;
  // WGSL's packed_4x8_integer_dot_product language feature (dot4I8Packed, pack4xI8): the int8 products of the
  // quantized GEMV at accuracy_level 4 (linear/matmul_nbits_gemv.wgsl, A_INT8).
  bool packed_int8_dot = false;
};

// Everything the planner needs to know about a device, without touching it.
struct Capabilities {
  Limits limits;
  Features features;
  bool compatibility_mode = false;
  // Workgroup barriers cost more than the data reuse they buy: SwiftShader (it runs a workgroup's
  // invocations as coroutines that switch at every barrier). The GEMM and conv planners then take the seeds'
  // and the direct kernels unless one is forced: one OCR read of examples/ocr/sample.png took 213 s on the
  // barrier-heavy kernels and 52 s without them (2 cores). Mesa's llvmpipe runs them well (24 s with them,
  // 45 s without).
  bool costly_barriers = false;
  // The session computes in float16 where a kernel can (SessionOptions::precision "f16"): f16 operands, f32
  // accumulation. Set only on a device with shader-f16, subgroups and subgroup_matrix_f16; a device's own
  // capabilities say false.
  bool f16_compute = false;
};

// The limits every WebGPU implementation guarantees (the specification's defaults) and no optional features:
// what `wgi check` plans against when no device is at hand.
Capabilities default_capabilities();

struct DeviceOptions {
  // Unset: the WGI_BACKEND environment variable if set, else the automatic order.
  std::optional<BackendKind> backend;
  // Case-insensitive substring that the adapter's vendor, device or description must contain.
  // Unset: the WGI_ADAPTER environment variable if set.
  std::optional<std::string> adapter_filter;
  // Dawn's shader robustness (every array index clamped in the generated code) and workgroup-memory
  // zero-initialisation, on native devices. Off unless this is true or WGI_SHADER_ROBUSTNESS=1: wgi's kernels
  // check their own bounds and write workgroup memory before reading it (docs/robustness_audit.md), as ONNX
  // Runtime's WebGPU EP also assumes of its own. A browser keeps both whatever this says.
  bool shader_robustness = false;
};

// One step of adapter selection, kept so that a failure can say what was tried and what each backend said.
struct SelectionAttempt {
  BackendKind backend;
  bool accepted = false;
  std::string detail;
};

class Device {
 public:
  // Selects an adapter and creates a device; throws wgi::Error listing every backend tried and why each
  // was rejected. Never returns Dawn's Null backend.
  static std::shared_ptr<Device> create(const DeviceOptions& options = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  BackendKind backend() const { return backend_; }
  const AdapterInfo& adapter_info() const { return adapter_info_; }
  const Limits& limits() const { return capabilities_.limits; }
  const Features& features() const { return capabilities_.features; }
  const Capabilities& capabilities() const { return capabilities_; }
  const std::vector<SelectionAttempt>& selection_log() const { return selection_log_; }
  // Whether Dawn clamps array indices in shaders and zero-fills workgroup memory (DeviceOptions).
  bool shader_robustness() const { return shader_robustness_; }
  // Names of every feature the device was granted, as WebGPU spells them (unknown ones as hex).
  const std::vector<std::string>& granted_feature_names() const { return granted_feature_names_; }

  // A storage buffer (also copy source and destination). Size is rounded up to a multiple of 16 bytes.
  Buffer create_buffer(uint64_t size, std::string_view label, BufferUsage usage = BufferUsage::Storage);
  void upload(const Buffer& buffer, uint64_t offset, std::span<const std::byte> data);
  // Copies the bytes back to the host; blocks until the GPU has finished all work submitted before.
  void download(const Buffer& buffer, uint64_t offset, std::span<std::byte> out);
  // The same for several regions in one copy and one map (one wait instead of one per region).
  struct DownloadRegion {
    const Buffer* buffer;
    uint64_t offset;
    std::span<std::byte> out;
  };
  void download(std::span<const DownloadRegion> regions);
  // A download whose copy is queued now, after the work submitted so far, and whose bytes finish() waits
  // for: work submitted in between is not waited for (a generation loop reads a step's token while the GPU
  // runs the next step). The regions' `out` spans must stay valid until finish() or destruction.
  class PendingDownload {
   public:
    PendingDownload(Device& device, std::span<const DownloadRegion> regions);
    ~PendingDownload();  // waits for a mapping still in flight (its callback writes here)
    PendingDownload(const PendingDownload&) = delete;
    PendingDownload& operator=(const PendingDownload&) = delete;
    // Waits for the copy, then fills the regions' `out` spans (once; later calls do nothing).
    void finish();

   private:
    Device& device_;
    std::vector<DownloadRegion> regions_;
    std::vector<uint64_t> begins_, places_;  // each region's aligned start, and its place in the staging
    uint64_t bytes_ = 0;
    Buffer staging_;
    bool mapped_ = false, done_ = false, finished_ = false, map_ok_ = false;
    std::string message_;
  };
  // A small zero-filled buffer bound where a shader declares an input that the op does not have (e.g. an
  // absent bias). Shaders gate such reads on a uniform flag; the zeros make a stray read harmless.
  const Buffer& zero_buffer();

  PipelineCache& pipelines() { return *pipelines_; }
  // Buffers created so far (tests check that repeated runs allocate nothing).
  uint64_t buffers_created() const { return buffers_created_; }

  // Blocks until all submitted work has finished, then throws if any error was reported meanwhile.
  void wait_idle();
  // Throws wgi::Error if WebGPU reported an uncaptured error or the device was lost since the last check.
  void check_errors();

  // Raw handles for the rest of src/gpu/.
  WGPUDeviceImpl* handle() const { return device_; }
  WGPUQueueImpl* queue() const { return queue_; }
  WGPUInstanceImpl* instance() const { return instance_; }
  // Drives WebGPU callbacks until `done` returns true (used by every blocking wait in src/gpu/).
  void wait_until(const bool& done);

  // Called from the WebGPU callbacks; not for general use.
  void report_error(std::string message);
  void report_device_lost(std::string message);

 private:
  Device() = default;

  BackendKind backend_ = BackendKind::Vulkan;
  bool shader_robustness_ = true;
  WGPUInstanceImpl* instance_ = nullptr;
  WGPUAdapterImpl* adapter_ = nullptr;
  WGPUDeviceImpl* device_ = nullptr;
  WGPUQueueImpl* queue_ = nullptr;
  AdapterInfo adapter_info_;
  Capabilities capabilities_;
  std::vector<SelectionAttempt> selection_log_;
  std::vector<std::string> granted_feature_names_;
  std::unique_ptr<PipelineCache> pipelines_;
  std::optional<Buffer> zero_buffer_;
  std::vector<Buffer> readback_pool_;  // staging buffers of finished downloads, for the next ones

  std::mutex error_mutex_;
  std::vector<std::string> pending_errors_;
  bool lost_ = false;
  uint64_t buffers_created_ = 0;
  bool destroying_ = false;

  friend class DeviceFactory;
};

}  // namespace wgi::gpu
