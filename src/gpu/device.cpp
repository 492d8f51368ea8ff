#include "gpu/device.h"

#include <webgpu/webgpu.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#ifdef __EMSCRIPTEN__
#include "gpu/web/web_wait.h"
#endif

#include "gpu/large_gpu_capabilities.h"
#include "gpu/pipeline_cache.h"
#include "gpu/webgpu_abi.h"
#include "gpu/webgpu_util.h"
#include "wgi/error.h"

namespace wgi::gpu {

std::string_view to_string(BackendKind kind) {
  switch (kind) {
    case BackendKind::Vulkan:
      return "vulkan";
    case BackendKind::SwiftShader:
      return "swiftshader";
    case BackendKind::Gles:
      return "gles";
    case BackendKind::Browser:
      return "browser";
  }
  return "?";
}

BackendKind parse_backend(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "vulkan") return BackendKind::Vulkan;
  if (lower == "swiftshader") return BackendKind::SwiftShader;
  if (lower == "gles") return BackendKind::Gles;
#ifdef __EMSCRIPTEN__
  if (lower == "browser") return BackendKind::Browser;
  throw Error("unknown backend '" + std::string(name) + "': the browser build has only 'browser'");
#else
  throw Error("unknown backend '" + std::string(name) + "': expected vulkan, swiftshader or gles");
#endif
}

Capabilities default_capabilities() {
  Capabilities c;
  Limits& l = c.limits;
  l.max_buffer_size = 256ull << 20;
  l.max_storage_buffer_binding_size = 128ull << 20;
  l.max_uniform_buffer_binding_size = 64ull << 10;
  l.max_storage_buffers_per_shader_stage = 8;
  l.max_bind_groups = 4;
  l.max_bindings_per_bind_group = 1000;
  l.min_storage_buffer_offset_alignment = 256;
  l.min_uniform_buffer_offset_alignment = 256;
  l.max_compute_workgroup_storage_size = 16384;
  l.max_compute_invocations_per_workgroup = 256;
  l.max_compute_workgroup_size_x = 256;
  l.max_compute_workgroup_size_y = 256;
  l.max_compute_workgroup_size_z = 64;
  l.max_compute_workgroups_per_dimension = 65535;
  return c;
}

Capabilities large_gpu_capabilities() {
  Capabilities c = default_capabilities();
  Limits& l = c.limits;
  l.max_buffer_size = (uint64_t{4} << 30) - 1;
  l.max_storage_buffer_binding_size = (uint64_t{4} << 30) - 1;
  l.max_storage_buffers_per_shader_stage = 10;
  l.max_compute_workgroup_storage_size = 49152;
  l.max_compute_invocations_per_workgroup = 1024;
  l.max_compute_workgroup_size_x = 1024;
  l.max_compute_workgroup_size_y = 1024;
  c.features.subgroups = true;
  c.features.timestamp_query = true;
  c.features.packed_int8_dot = true;
  return c;
}

Capabilities large_gpu_f16_capabilities() {
  Capabilities c = large_gpu_capabilities();
  c.features.shader_f16 = c.features.subgroup_matrix_f16 = true;
  return c;
}

namespace {

std::string lower_case(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string backend_type_name(WGPUBackendType type) {
  switch (type) {
    case WGPUBackendType_Null:
      return "Null";
    case WGPUBackendType_WebGPU:
      return "WebGPU";
    case WGPUBackendType_D3D11:
      return "D3D11";
    case WGPUBackendType_D3D12:
      return "D3D12";
    case WGPUBackendType_Metal:
      return "Metal";
    case WGPUBackendType_Vulkan:
      return "Vulkan";
    case WGPUBackendType_OpenGL:
      return "OpenGL";
    case WGPUBackendType_OpenGLES:
      return "OpenGLES";
    default:
      return "Undefined";
  }
}

std::string adapter_type_name(WGPUAdapterType type) {
  switch (type) {
    case WGPUAdapterType_DiscreteGPU:
      return "discrete GPU";
    case WGPUAdapterType_IntegratedGPU:
      return "integrated GPU";
    case WGPUAdapterType_CPU:
      return "CPU";
    default:
      return "unknown";
  }
}

#ifndef __EMSCRIPTEN__
// Sets environment variables for the duration of one adapter request and restores them afterwards, so that
// trying SwiftShader does not change what the rest of the process sees.
class ScopedEnv {
 public:
  void set(const char* name, const std::string& value) {
    const char* old = std::getenv(name);
    saved_.push_back({name, old != nullptr, old ? old : ""});
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had_value) {
        setenv(it->name, it->value.c_str(), 1);
      } else {
        unsetenv(it->name);
      }
    }
  }

 private:
  struct Saved {
    const char* name;
    bool had_value;
    std::string value;
  };
  std::vector<Saved> saved_;
};
#endif

struct AdapterRequest {
  bool done = false;
  WGPUAdapter adapter = nullptr;
  std::string message;
};

struct DeviceRequest {
  bool done = false;
  WGPUDevice device = nullptr;
  std::string message;
};

void spin_until(WGPUInstance instance, const bool& done) {
#ifdef __EMSCRIPTEN__
  // The browser settles WebGPU promises only when control returns to its event loop: suspend (Asyncify)
  // until one has settled, then run the callbacks it queued. No thread, no busy loop.
  while (!done) {
    wgpuInstanceProcessEvents(instance);
    if (done) break;
    web::wait_for_webgpu_event();
  }
#else
  for (int spins = 0; !done; ++spins) {
    wgpuInstanceProcessEvents(instance);
    if (done) break;
    // Short waits (a small dispatch, a map) spin; long ones back off to not burn a core.
    if (spins < 2000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
#endif
}

WGPUAdapter request_adapter(WGPUInstance instance, const WGPURequestAdapterOptions& options,
                            std::string& message) {
  AdapterRequest request;
  WGPURequestAdapterCallbackInfo callback = {};
  callback.mode = WGPUCallbackMode_AllowProcessEvents;
  callback.callback = [](WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView msg, void* user,
                         void*) {
    auto* r = static_cast<AdapterRequest*>(user);
    r->adapter = status == WGPURequestAdapterStatus_Success ? adapter : nullptr;
    r->message = to_std_string(msg);
    r->done = true;
  };
  callback.userdata1 = &request;
  wgpuInstanceRequestAdapter(instance, &options, callback);
  spin_until(instance, request.done);
  message = request.message;
  return request.adapter;
}

AdapterInfo read_adapter_info(WGPUAdapter adapter, WGPUBackendType& backend_type, WGPUAdapterType& type) {
  WGPUAdapterInfo info = {};
  AdapterInfo out;
  if (wgpuAdapterGetInfo(adapter, &info) != WGPUStatus_Success) {
    throw Error("wgpuAdapterGetInfo failed");
  }
  out.backend = backend_type_name(info.backendType);
  out.adapter_type = adapter_type_name(info.adapterType);
  out.vendor = to_std_string(info.vendor);
  out.architecture = to_std_string(info.architecture);
  out.device = to_std_string(info.device);
  out.description = to_std_string(info.description);
  out.vendor_id = info.vendorID;
  out.device_id = info.deviceID;
  out.subgroup_min_size = info.subgroupMinSize;
  out.subgroup_max_size = info.subgroupMaxSize;
  backend_type = info.backendType;
  type = info.adapterType;
  wgpuAdapterInfoFreeMembers(info);
  return out;
}

std::string describe(const AdapterInfo& info) {
  std::string s = info.device.empty() ? "(unnamed adapter)" : info.device;
  if (!info.description.empty() && info.description != info.device) s += " [" + info.description + "]";
  s += " on " + info.backend + ", " + info.adapter_type;
  return s;
}

bool matches_filter(const AdapterInfo& info, const std::string& filter) {
  std::string needle = lower_case(filter);
  for (const std::string* field : {&info.vendor, &info.device, &info.description, &info.architecture}) {
    if (lower_case(*field).find(needle) != std::string::npos) return true;
  }
  return false;
}

// Capabilities::costly_barriers: SwiftShader, by name. Not by adapter type: Dawn may report other CPU
// implementations as CPU adapters too, and Mesa's llvmpipe (cheap barriers) comes through GL ES as "unknown".
bool has_costly_barriers(const AdapterInfo& info) {
  return lower_case(info.device + " " + info.description).find("swiftshader") != std::string::npos;
}

#ifndef __EMSCRIPTEN__
// Whether the Vulkan loader has any driver manifest to load. Asking Dawn when there is none only makes it
// print loader warnings, so the automatic order skips Vulkan then.
bool vulkan_driver_manifests_present() {
  for (const char* var : {"VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES"}) {
    if (const char* v = std::getenv(var); v && *v) return true;
  }
  std::vector<std::string> dirs = {"/etc/vulkan/icd.d", "/usr/share/vulkan/icd.d",
                                   "/usr/local/share/vulkan/icd.d", "/usr/local/etc/vulkan/icd.d"};
  for (const char* var : {"XDG_DATA_DIRS", "XDG_CONFIG_DIRS"}) {
    if (const char* v = std::getenv(var); v && *v) {
      std::string list = v;
      for (size_t start = 0; start <= list.size();) {
        size_t end = list.find(':', start);
        if (end == std::string::npos) end = list.size();
        if (end > start) dirs.push_back(list.substr(start, end - start) + "/vulkan/icd.d");
        start = end + 1;
      }
    }
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    dirs.push_back(std::string(home) + "/.local/share/vulkan/icd.d");
  }
  std::error_code ec;
  for (const auto& dir : dirs) {
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".json") return true;
    }
  }
  return false;
}
#endif

#ifndef __EMSCRIPTEN__
// WGI_DAWN_LOG=<file> appends Dawn's log messages to the file: its warnings, and with
// WGI_DAWN_TOGGLES=dump_shaders every shader's WGSL and the code it became (SPIR-V disassembly on Vulkan) —
// what bench/shader_stats.sh feeds to the driver to read register counts. Off by default: Dawn logs nothing
// a user acts on in a normal run.
void forward_dawn_log(WGPUDevice device) {
  const char* path = std::getenv("WGI_DAWN_LOG");
  if (path == nullptr || *path == '\0') return;
  static FILE* dawn_log = nullptr;  // one per process: every device appends to it; closed at exit
  if (dawn_log == nullptr) dawn_log = std::fopen(path, "a");
  if (dawn_log == nullptr) throw Error(std::string("WGI_DAWN_LOG: cannot open ") + path + " for appending");
  WGPULoggingCallbackInfo info = WGPU_LOGGING_CALLBACK_INFO_INIT;
  info.callback = [](WGPULoggingType type, WGPUStringView message, void*, void*) {
    const char* kind = type == WGPULoggingType_Error     ? "error"
                       : type == WGPULoggingType_Warning ? "warning"
                       : type == WGPULoggingType_Info    ? "info"
                                                         : "verbose";
    std::fprintf(dawn_log, "[dawn %s]\n%s\n", kind, to_std_string(message).c_str());
    std::fflush(dawn_log);
  };
  wgpuDeviceSetLoggingCallback(device, info);
}
#endif

// The optional features wgi asks for: those the adapter has.
std::vector<WGPUFeatureName> wanted_features(WGPUAdapter adapter) {
  std::vector<WGPUFeatureName> wanted;
  for (WGPUFeatureName f : {abi::kShaderF16, abi::kSubgroups, abi::kTimestampQuery}) {
    if (wgpuAdapterHasFeature(adapter, f)) wanted.push_back(f);
  }
#ifdef __EMSCRIPTEN__
  if (wgpuAdapterHasFeature(adapter, abi::kSubgroupMatrix)) wanted.push_back(abi::kSubgroupMatrix);
#endif
  return wanted;
}

#ifndef __EMSCRIPTEN__  // a browser has no Dawn toggles
// The Dawn toggles the device is asked for, with the names the descriptor points to: it must outlive the
// device request (and not move once filled).
struct DawnToggles {
  DawnToggles() = default;
  DawnToggles(const DawnToggles&) = delete;
  DawnToggles& operator=(const DawnToggles&) = delete;

  const char* disabled[1] = {"timestamp_quantization"};
  std::vector<const char*> enabled;
  std::vector<std::string> extra;  // WGI_DAWN_TOGGLES's names, which `enabled` points into
  WGPUDawnTogglesDescriptor descriptor = WGPU_DAWN_TOGGLES_DESCRIPTOR_INIT;
};

void choose_dawn_toggles(DawnToggles& t, bool timestamp_query, bool shader_robustness) {
  // Dawn rounds timestamps down to multiples of 65.536 µs by default (a browser's guard against timing
  // attacks), which made per-node profiles of short kernels read 0 or 65.5 µs. A native engine's own profiler
  // has no such threat to guard against. Checked by what it does (tests/gpu/test_device.cpp): with this
  // descriptor, durations stop being multiples of 65536 ns; a wrong sType would fail the device request.
  WGPUDawnTogglesDescriptor& toggles = t.descriptor;
  if (timestamp_query) {
    toggles.disabledToggleCount = 1;
    toggles.disabledToggles = t.disabled;
  }
  // Without shader robustness (DeviceOptions::shader_robustness), as ONNX Runtime's WebGPU EP runs natively:
  // Tint's index clamps cost time (docs/performance.md, "Measurements behind the planner's rules"), and
  // zero-filling workgroup memory costs a pass and a barrier per workgroup.
  std::vector<const char*>& enabled_toggles = t.enabled;
  if (!shader_robustness) {
    enabled_toggles.push_back("disable_robustness");
    enabled_toggles.push_back("disable_workgroup_init");
  }
  // WGI_DAWN_TOGGLES=a,b enables more Dawn toggles (e.g. skip_validation), for measuring what they change;
  // announced on stderr so that no result is read without knowing.
  std::vector<std::string>& extra_toggles = t.extra;
  if (const char* env = std::getenv("WGI_DAWN_TOGGLES"); env != nullptr && *env != '\0') {
    std::string list = env;
    for (size_t start = 0; start <= list.size();) {
      const size_t end = std::min(list.find(',', start), list.size());
      if (end > start) extra_toggles.push_back(list.substr(start, end - start));
      start = end + 1;
    }
    for (const std::string& name : extra_toggles) enabled_toggles.push_back(name.c_str());
    std::fprintf(stderr, "[wgi] WGI_DAWN_TOGGLES: enabling Dawn toggles %s\n", env);
  }
  toggles.enabledToggleCount = enabled_toggles.size();
  toggles.enabledToggles = enabled_toggles.data();
}
#endif

// Device loss and uncaptured errors reported to `device` (Device::check_errors throws them).
void set_error_callbacks(WGPUDeviceDescriptor& desc, Device& device) {
  desc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  desc.deviceLostCallbackInfo.callback = [](WGPUDevice const*, WGPUDeviceLostReason reason,
                                            WGPUStringView msg, void* user, void*) {
    if (reason == WGPUDeviceLostReason_Destroyed || reason == WGPUDeviceLostReason_CallbackCancelled) return;
    static_cast<Device*>(user)->report_device_lost(to_std_string(msg));
  };
  desc.deviceLostCallbackInfo.userdata1 = &device;
  desc.uncapturedErrorCallbackInfo.callback = [](WGPUDevice const*, WGPUErrorType type, WGPUStringView msg,
                                                 void* user, void*) {
    std::string kind = type == WGPUErrorType_Validation    ? "validation error"
                       : type == WGPUErrorType_OutOfMemory ? "out of memory"
                       : type == WGPUErrorType_Internal    ? "internal error"
                                                           : "error";
    static_cast<Device*>(user)->report_error("WebGPU " + kind + ": " + to_std_string(msg));
  };
  desc.uncapturedErrorCallbackInfo.userdata1 = &device;
}

// Requests the device and waits for it; throws where the adapter refuses.
WGPUDevice request_device(WGPUInstance instance, WGPUAdapter adapter, const WGPUDeviceDescriptor& desc) {
  DeviceRequest request;
  WGPURequestDeviceCallbackInfo callback = {};
  callback.mode = WGPUCallbackMode_AllowProcessEvents;
  callback.callback = [](WGPURequestDeviceStatus status, WGPUDevice dev, WGPUStringView msg, void* user,
                         void*) {
    auto* r = static_cast<DeviceRequest*>(user);
    r->device = status == WGPURequestDeviceStatus_Success ? dev : nullptr;
    r->message = to_std_string(msg);
    r->done = true;
  };
  callback.userdata1 = &request;
  wgpuAdapterRequestDevice(adapter, &desc, callback);
  spin_until(instance, request.done);
  if (!request.device) throw Error("requestDevice failed: " + request.message);
  return request.device;
}

void read_granted_limits(WGPUDevice device, Limits& l) {
  WGPULimits granted = WGPU_LIMITS_INIT;
  if (wgpuDeviceGetLimits(device, &granted) != WGPUStatus_Success) {
    throw Error("wgpuDeviceGetLimits failed");
  }
  l.max_buffer_size = granted.maxBufferSize;
  l.max_storage_buffer_binding_size = granted.maxStorageBufferBindingSize;
  l.max_uniform_buffer_binding_size = granted.maxUniformBufferBindingSize;
  l.max_storage_buffers_per_shader_stage = granted.maxStorageBuffersPerShaderStage;
  l.max_bind_groups = granted.maxBindGroups;
  l.max_bindings_per_bind_group = granted.maxBindingsPerBindGroup;
  l.min_storage_buffer_offset_alignment = granted.minStorageBufferOffsetAlignment;
  l.min_uniform_buffer_offset_alignment = granted.minUniformBufferOffsetAlignment;
  l.max_compute_workgroup_storage_size = granted.maxComputeWorkgroupStorageSize;
  l.max_compute_invocations_per_workgroup = granted.maxComputeInvocationsPerWorkgroup;
  l.max_compute_workgroup_size_x = granted.maxComputeWorkgroupSizeX;
  l.max_compute_workgroup_size_y = granted.maxComputeWorkgroupSizeY;
  l.max_compute_workgroup_size_z = granted.maxComputeWorkgroupSizeZ;
  l.max_compute_workgroups_per_dimension = granted.maxComputeWorkgroupsPerDimension;
}

void read_granted_features(WGPUDevice device, std::vector<std::string>& names, Features& f) {
  WGPUSupportedFeatures features = {};
  wgpuDeviceGetFeatures(device, &features);
  for (size_t i = 0; i < features.featureCount; ++i) {
    names.push_back(abi::feature_name(static_cast<uint32_t>(features.features[i])));
  }
  wgpuSupportedFeaturesFreeMembers(features);
  f.shader_f16 = wgpuDeviceHasFeature(device, abi::kShaderF16);
  f.subgroups = wgpuDeviceHasFeature(device, abi::kSubgroups);
  f.timestamp_query = wgpuDeviceHasFeature(device, abi::kTimestampQuery);
}

}  // namespace

class DeviceFactory {
 public:
  static std::shared_ptr<Device> create(const DeviceOptions& options);

 private:
  // Tries one backend. On success fills `device` and returns true; otherwise records why in `attempt`.
  static bool try_backend(Device& device, BackendKind kind, bool explicit_choice,
                          const std::optional<std::string>& filter, SelectionAttempt& attempt);
  static void create_device(Device& device, WGPUAdapter adapter);
};

std::shared_ptr<Device> Device::create(const DeviceOptions& options) {
  return DeviceFactory::create(options);
}

#ifndef __EMSCRIPTEN__
// The Vulkan loader loads a driver's libraries for each VkInstance and unloads them with the last one. The
// NVIDIA driver's take static TLS, which glibc does not give back on unloading, so a process that creates and
// destroys devices one after another (sessions made one after another, each with a device of its own) ran out
// after a few dozen on the H200: "libnvidia-tls.so: cannot allocate memory in static TLS block", then no
// adapter (docs/devices.md). One instance per Vulkan backend kept for the process's life keeps the driver
// loaded; the devices still make instances of their own.
namespace {
void keep_driver_loaded(BackendKind kind, WGPUInstance instance) {
  static std::mutex mutex;
  static WGPUInstance kept[2] = {nullptr, nullptr};  // Vulkan, SwiftShader
  const std::lock_guard<std::mutex> lock(mutex);
  WGPUInstance& slot = kept[kind == BackendKind::Vulkan ? 0 : 1];
  if (slot) return;
  wgpuInstanceAddRef(instance);
  slot = instance;  // never released
}
}  // namespace
#endif

std::shared_ptr<Device> DeviceFactory::create(const DeviceOptions& options) {
  std::optional<BackendKind> backend = options.backend;
  if (!backend) {
    if (const char* env = std::getenv("WGI_BACKEND"); env && *env) backend = parse_backend(env);
  }
  std::optional<std::string> filter = options.adapter_filter;
  if (!filter) {
    if (const char* env = std::getenv("WGI_ADAPTER"); env && *env) filter = std::string(env);
  }
  std::vector<BackendKind> order;
  if (backend) {
    order = {*backend};
  } else {
#ifdef __EMSCRIPTEN__
    order = {BackendKind::Browser};
#else
    order = {BackendKind::Vulkan, BackendKind::SwiftShader, BackendKind::Gles};
#endif
  }

  std::shared_ptr<Device> device(new Device());
#ifndef __EMSCRIPTEN__
  const char* robustness_env = std::getenv("WGI_SHADER_ROBUSTNESS");
  device->shader_robustness_ =
      options.shader_robustness || (robustness_env != nullptr && std::string_view(robustness_env) == "1");
#endif
  for (BackendKind kind : order) {
    SelectionAttempt attempt{kind, false, ""};
    bool ok = false;
    try {
      ok = try_backend(*device, kind, backend.has_value(), filter, attempt);
    } catch (const Error& e) {
      attempt.detail = e.what();
    }
    attempt.accepted = ok;
    device->selection_log_.push_back(attempt);
    if (ok) return device;
  }
  std::string message = "no usable WebGPU adapter found";
  if (backend) message += " (WGI_BACKEND/backend option = " + std::string(to_string(*backend)) + ")";
  if (filter) {
    message += std::string(" matching ") + (options.adapter_filter ? "the adapter filter" : "WGI_ADAPTER") +
               " '" + *filter + "'";
  }
  message += ". Tried:";
  for (const auto& a : device->selection_log_) {
    message += "\n  " + std::string(to_string(a.backend)) + ": " + a.detail;
  }
  message += "\nDawn's Null backend is never used: it would silently produce zeros.";
  throw Error(message);
}

bool DeviceFactory::try_backend(Device& device, BackendKind kind, bool explicit_choice,
                                const std::optional<std::string>& filter, SelectionAttempt& attempt) {
  WGPURequestAdapterOptions options = {};
  options.powerPreference = WGPUPowerPreference_HighPerformance;
  options.featureLevel = WGPUFeatureLevel_Core;
  WGPUBackendType wanted = WGPUBackendType_Vulkan;
#ifdef __EMSCRIPTEN__
  // The page's navigator.gpu (src/gpu/web/webgpu.js); the browser picks the adapter, nothing to configure.
  if (kind != BackendKind::Browser) {
    attempt.detail = "the browser build can only use the page's WebGPU (backend 'browser')";
    return false;
  }
  wanted = WGPUBackendType_WebGPU;
#else
  ScopedEnv env;
  if (kind == BackendKind::Browser) {
    attempt.detail = "backend 'browser' exists only in the WebAssembly build";
    return false;
  }
  if (kind == BackendKind::SwiftShader) {
    const char* override_icd = std::getenv("WGI_SWIFTSHADER_ICD");
    std::string icd =
        override_icd && *override_icd ? override_icd : "/usr/lib/chromium/vk_swiftshader_icd.json";
    if (!std::filesystem::exists(icd)) {
      attempt.detail = "SwiftShader Vulkan ICD not found at " + icd +
                       " (install Debian's chromium package, run scripts/setup, or set WGI_SWIFTSHADER_ICD)";
      return false;
    }
    // The Vulkan loader reads these when Dawn creates its VkInstance during the adapter request.
    env.set("VK_DRIVER_FILES", icd);
    env.set("VK_ICD_FILENAMES", icd);
    // Not forceFallbackAdapter: this Dawn build then looks only for its own (absent) SwiftShader.
  } else if (kind == BackendKind::Gles) {
    if (!std::getenv("EGL_PLATFORM")) setenv("EGL_PLATFORM", "surfaceless", 0);
    wanted = WGPUBackendType_OpenGLES;
    options.featureLevel = WGPUFeatureLevel_Compatibility;
  }
  options.backendType = wanted;

  if (kind == BackendKind::Vulkan && !vulkan_driver_manifests_present()) {
    attempt.detail = "no Vulkan driver installed (no ICD manifest in the loader's search path)";
    return false;
  }
#endif

  WGPUInstanceDescriptor instance_desc = {};
  WGPUInstance instance = wgpuCreateInstance(&instance_desc);
  if (!instance) {
    attempt.detail = "wgpuCreateInstance failed";
    return false;
  }
  std::string message;
  WGPUAdapter adapter = request_adapter(instance, options, message);
  if (!adapter) {
    attempt.detail = "no adapter" + (message.empty() ? std::string() : ": " + message);
    wgpuInstanceRelease(instance);
    return false;
  }
  WGPUBackendType backend_type = WGPUBackendType_Undefined;
  WGPUAdapterType adapter_type = WGPUAdapterType_Unknown;
  AdapterInfo info = read_adapter_info(adapter, backend_type, adapter_type);
  std::string reject;
  if (backend_type != wanted) {
    reject =
        "Dawn returned " + describe(info) + ", not the " + backend_type_name(wanted) + " backend asked for";
  } else if (kind == BackendKind::SwiftShader &&
             lower_case(info.vendor + info.device + info.description).find("swiftshader") ==
                 std::string::npos) {
    reject = "expected SwiftShader, got " + describe(info);
  } else if (kind == BackendKind::Vulkan && !explicit_choice && adapter_type == WGPUAdapterType_CPU) {
    reject = "only a CPU Vulkan adapter (" + describe(info) + "); the automatic order wants a real GPU first";
  } else if (filter && !matches_filter(info, *filter)) {
    reject = describe(info) + " does not match the adapter filter '" + *filter + "'";
  }
  if (!reject.empty()) {
    attempt.detail = reject;
    wgpuAdapterRelease(adapter);
    wgpuInstanceRelease(instance);
    return false;
  }
  info.compatibility_mode = kind == BackendKind::Gles;
  device.instance_ = instance;
  device.adapter_ = adapter;
  device.adapter_info_ = info;
  device.backend_ = kind;
  try {
    create_device(device, adapter);
  } catch (const Error& e) {
    attempt.detail = "adapter " + describe(info) + " found but the device could not be created: " + e.what();
    wgpuAdapterRelease(adapter);
    wgpuInstanceRelease(instance);
    device.adapter_ = nullptr;
    device.instance_ = nullptr;
    return false;
  }
  attempt.detail = describe(info);
#ifndef __EMSCRIPTEN__
  if (kind == BackendKind::Vulkan || kind == BackendKind::SwiftShader) keep_driver_loaded(kind, instance);
#endif
  return true;
}

void DeviceFactory::create_device(Device& device, WGPUAdapter adapter) {
  // Ask for the adapter's maximum limits: compatibility-level devices otherwise start with small defaults
  // (e.g. 128 invocations per workgroup).
  WGPULimits adapter_limits = WGPU_LIMITS_INIT;
  if (wgpuAdapterGetLimits(adapter, &adapter_limits) != WGPUStatus_Success) {
    throw Error("wgpuAdapterGetLimits failed");
  }
  const std::vector<WGPUFeatureName> wanted = wanted_features(adapter);

  WGPUDeviceDescriptor desc = {};
#ifndef __EMSCRIPTEN__  // a browser has no Dawn toggles
  DawnToggles toggles;
  choose_dawn_toggles(toggles, std::find(wanted.begin(), wanted.end(), abi::kTimestampQuery) != wanted.end(),
                      device.shader_robustness_);
  if (toggles.descriptor.disabledToggleCount + toggles.descriptor.enabledToggleCount > 0) {
    desc.nextInChain = &toggles.descriptor.chain;
  }
#endif
  desc.label = to_string_view("wgi");
  desc.requiredFeatureCount = wanted.size();
  desc.requiredFeatures = wanted.data();
  desc.requiredLimits = &adapter_limits;
  set_error_callbacks(desc, device);

  device.device_ = request_device(device.instance_, adapter, desc);
  device.queue_ = wgpuDeviceGetQueue(device.device_);
#ifndef __EMSCRIPTEN__
  forward_dawn_log(device.device_);
#endif
  read_granted_limits(device.device_, device.capabilities_.limits);
  read_granted_features(device.device_, device.granted_feature_names_, device.capabilities_.features);
  Features& features = device.capabilities_.features;
  features.subgroup_matrix_f16 = wgpuDeviceHasFeature(device.device_, abi::kSubgroupMatrix) &&
                                 features.shader_f16 && features.subgroups &&
                                 device.adapter_info_.subgroup_min_size == 32 &&
                                 device.adapter_info_.subgroup_max_size == 32;
  features.packed_int8_dot =
      wgpuInstanceHasWGSLLanguageFeature(device.instance_, abi::kPacked4x8IntegerDotProduct);
  device.capabilities_.compatibility_mode = device.adapter_info_.compatibility_mode;
  device.capabilities_.costly_barriers = has_costly_barriers(device.adapter_info_);
  device.pipelines_ = std::make_unique<PipelineCache>(device);
}

Device::~Device() {
  destroying_ = true;
  pipelines_.reset();
  zero_buffer_.reset();
  readback_pool_.clear();
  if (queue_) wgpuQueueRelease(queue_);
  if (device_) {
    wgpuDeviceDestroy(device_);
    wgpuDeviceRelease(device_);
  }
  if (adapter_) wgpuAdapterRelease(adapter_);
  if (instance_) {
    wgpuInstanceProcessEvents(instance_);
    wgpuInstanceRelease(instance_);
  }
}

void Device::report_error(std::string message) {
  std::lock_guard lock(error_mutex_);
  pending_errors_.push_back(std::move(message));
}

void Device::report_device_lost(std::string message) {
  if (destroying_) return;
  std::lock_guard lock(error_mutex_);
  lost_ = true;
  pending_errors_.push_back("WebGPU device lost: " + message);
}

void Device::check_errors() {
  std::vector<std::string> errors;
  {
    std::lock_guard lock(error_mutex_);
    if (lost_ && pending_errors_.empty()) throw Error("WebGPU device lost earlier; create a new one");
    errors.swap(pending_errors_);
  }
  if (errors.empty()) return;
  std::string message = errors.front();
  for (size_t i = 1; i < errors.size(); ++i) message += "\n" + errors[i];
  throw Error(message);
}

void Device::wait_until(const bool& done) {
  spin_until(instance_, done);
}

Buffer Device::create_buffer(uint64_t size, std::string_view label, BufferUsage usage) {
  uint64_t rounded = std::max<uint64_t>(16, (size + 15) / 16 * 16);
  if (rounded > limits().max_buffer_size) {
    throw Error("buffer '" + std::string(label) + "' of " + std::to_string(size) +
                " bytes exceeds the device's maxBufferSize of " + std::to_string(limits().max_buffer_size));
  }
  WGPUBufferDescriptor desc = {};
  desc.label = to_string_view(label);
  desc.size = rounded;
  switch (usage) {
    case BufferUsage::Storage:
      desc.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
      break;
    case BufferUsage::Uniform:
      desc.usage = WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst;
      break;
    case BufferUsage::Readback:
      desc.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
      break;
    case BufferUsage::QueryResolve:
      desc.usage = WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc;
      break;
  }
  WGPUBuffer handle = wgpuDeviceCreateBuffer(device_, &desc);
  ++buffers_created_;
  check_errors();
  if (!handle) throw Error("could not create buffer '" + std::string(label) + "'");
  return Buffer(handle, rounded, usage);
}

void Device::upload(const Buffer& buffer, uint64_t offset, std::span<const std::byte> data) {
  if (data.empty()) return;
  if (offset % 4 != 0) throw Error("upload offset " + std::to_string(offset) + " is not a multiple of 4");
  if (offset + data.size() > buffer.size()) {
    throw Error("upload of " + std::to_string(data.size()) + " bytes at offset " + std::to_string(offset) +
                " overruns a buffer of " + std::to_string(buffer.size()) + " bytes");
  }
  if (data.size() % 4 == 0) {
    wgpuQueueWriteBuffer(queue_, buffer.handle(), offset, data.data(), data.size());
  } else {
    // WebGPU writes whole 4-byte words; pad the tail with zeros (buffers are sized in 16-byte units).
    std::vector<std::byte> padded(data.begin(), data.end());
    padded.resize((data.size() + 3) / 4 * 4);
    wgpuQueueWriteBuffer(queue_, buffer.handle(), offset, padded.data(), padded.size());
  }
  check_errors();
}

void Device::download(const Buffer& buffer, uint64_t offset, std::span<std::byte> out) {
  const DownloadRegion region{&buffer, offset, out};
  download(std::span<const DownloadRegion>(&region, 1));
}

void Device::download(std::span<const DownloadRegion> regions) {
  PendingDownload(*this, regions).finish();
}

Device::PendingDownload::PendingDownload(Device& device, std::span<const DownloadRegion> regions)
    : device_(device), regions_(regions.begin(), regions.end()) {
  // Each region is copied 4-byte aligned (WebGPU's copy rule) to its own place in the staging buffer.
  for (const DownloadRegion& r : regions_) {
    if (r.offset + r.out.size() > r.buffer->size()) {
      throw Error("download of " + std::to_string(r.out.size()) + " bytes at offset " +
                  std::to_string(r.offset) + " overruns a buffer of " + std::to_string(r.buffer->size()) +
                  " bytes");
    }
    begins_.push_back(r.offset / 4 * 4);
    places_.push_back(bytes_);
    if (!r.out.empty()) bytes_ += (r.offset + r.out.size() + 3) / 4 * 4 - begins_.back();
  }
  if (bytes_ == 0) {
    done_ = true;
    return;
  }
  // The smallest staging buffer of earlier downloads that is large enough, else a new one.
  std::vector<Buffer>& pool = device_.readback_pool_;
  auto best = pool.end();
  for (auto it = pool.begin(); it != pool.end(); ++it) {
    if (it->size() >= bytes_ && (best == pool.end() || it->size() < best->size())) best = it;
  }
  if (best != pool.end()) {
    staging_ = std::move(*best);
    pool.erase(best);
  } else {
    staging_ =
        device_.create_buffer(std::max<uint64_t>(bytes_, 1 << 16), "wgi.staging", BufferUsage::Readback);
  }
  WGPUCommandEncoder encoder = wgpuDeviceCreateCommandEncoder(device_.device_, nullptr);
  for (size_t i = 0; i < regions_.size(); ++i) {
    const DownloadRegion& r = regions_[i];
    if (r.out.empty()) continue;
    const uint64_t size = (r.offset + r.out.size() + 3) / 4 * 4 - begins_[i];
    wgpuCommandEncoderCopyBufferToBuffer(encoder, r.buffer->handle(), begins_[i], staging_.handle(),
                                         places_[i], size);
  }
  WGPUCommandBuffer commands = wgpuCommandEncoderFinish(encoder, nullptr);
  wgpuQueueSubmit(device_.queue_, 1, &commands);
  wgpuCommandBufferRelease(commands);
  wgpuCommandEncoderRelease(encoder);

  WGPUBufferMapCallbackInfo callback = {};
  callback.mode = WGPUCallbackMode_AllowProcessEvents;
  callback.callback = [](WGPUMapAsyncStatus status, WGPUStringView msg, void* user, void*) {
    auto* self = static_cast<PendingDownload*>(user);
    self->map_ok_ = status == WGPUMapAsyncStatus_Success;
    self->message_ = to_std_string(msg);
    self->done_ = true;
  };
  callback.userdata1 = this;
  wgpuBufferMapAsync(staging_.handle(), WGPUMapMode_Read, 0, bytes_, callback);
  mapped_ = true;
}

Device::PendingDownload::~PendingDownload() {
  if (!mapped_) return;
  device_.wait_until(done_);
  if (map_ok_) wgpuBufferUnmap(staging_.handle());
  // Kept for the next downloads (at most four staging buffers).
  if (device_.readback_pool_.size() < 4) device_.readback_pool_.push_back(std::move(staging_));
}

void Device::PendingDownload::finish() {
  if (finished_) return;
  finished_ = true;
  if (!mapped_) return;
  device_.wait_until(done_);
  device_.check_errors();
  if (!map_ok_) throw Error("mapping the staging buffer failed: " + message_);
  const void* mapped = wgpuBufferGetConstMappedRange(staging_.handle(), 0, bytes_);
  if (!mapped) throw Error("mapped range of the staging buffer is null");
  for (size_t i = 0; i < regions_.size(); ++i) {
    const DownloadRegion& r = regions_[i];
    if (r.out.empty()) continue;
    std::memcpy(r.out.data(), static_cast<const std::byte*>(mapped) + places_[i] + (r.offset - begins_[i]),
                r.out.size());
  }
}

const Buffer& Device::zero_buffer() {
  if (!zero_buffer_) {
    zero_buffer_ = create_buffer(16, "wgi.zero");
    std::byte zeros[16] = {};
    upload(*zero_buffer_, 0, zeros);
  }
  return *zero_buffer_;
}

void Device::wait_idle() {
  bool done = false;
  WGPUQueueWorkDoneCallbackInfo callback = {};
  callback.mode = WGPUCallbackMode_AllowProcessEvents;
  callback.callback = [](WGPUQueueWorkDoneStatus, WGPUStringView, void* user, void*) {
    *static_cast<bool*>(user) = true;
  };
  callback.userdata1 = &done;
  wgpuQueueOnSubmittedWorkDone(queue_, callback);
  wait_until(done);
  check_errors();
}

}  // namespace wgi::gpu
