// What Dawn's experimental subgroup-matrix feature (tensor cores through WGSL) offers on an adapter, and what
// it runs at. An investigation tool for issue 7, not part of the engine: it talks to webgpu.h directly.
//
//   wgi_probe_subgroup_matrix names       which library value names which feature (device requests for
//                                         each value; an unsupported one fails naming it, so a CPU adapter
//                                         answers for every value it lacks)
//   wgi_probe_subgroup_matrix [probe]     adapter features with and without the `allow_unsafe_apis` toggle;
//                                         the subgroup-matrix configurations (scanning the chained sType
//                                         values near webgpu.h's, each in a child process, because the
//                                         library numbers some enums differently from the header, see
//                                         src/gpu/webgpu_abi.h); for each configuration one product checked
//                                         against the CPU and the multiply-accumulate throughput of a loop
//
// WGI_BACKEND=vulkan|swiftshader|gles picks the backend (default vulkan).
#include <webgpu/webgpu.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

// The library's values (src/gpu/webgpu_abi.h): features up to Subgroups are one lower than in the header.
constexpr uint32_t kShaderF16 = 0xA;
constexpr uint32_t kSubgroups = 0x11;

WGPUStringView sv(const char* s) {
  return WGPUStringView{s, WGPU_STRLEN};
}
std::string str(WGPUStringView v) {
  if (v.data == nullptr) return {};
  return v.length == WGPU_STRLEN ? std::string(v.data) : std::string(v.data, v.length);
}

WGPUInstance make_instance(bool unsafe_apis) {
  static const char* enabled[] = {"allow_unsafe_apis"};
  WGPUDawnTogglesDescriptor toggles = WGPU_DAWN_TOGGLES_DESCRIPTOR_INIT;
  toggles.enabledToggleCount = 1;
  toggles.enabledToggles = enabled;
  WGPUInstanceDescriptor desc = {};
  if (unsafe_apis) desc.nextInChain = &toggles.chain;
  return wgpuCreateInstance(&desc);
}

template <typename Done>
void spin(WGPUInstance instance, const Done& done) {
  while (!done()) {
    wgpuInstanceProcessEvents(instance);
    usleep(100);
  }
}

WGPUBackendType wanted_backend() {
  const char* env = std::getenv("WGI_BACKEND");
  std::string b = env ? env : "vulkan";
  if (b == "gles") return WGPUBackendType_OpenGLES;
  return WGPUBackendType_Vulkan;
}

WGPUAdapter request_adapter(WGPUInstance instance) {
  struct R {
    WGPUAdapter adapter = nullptr;
    bool done = false;
  } r;
  WGPURequestAdapterOptions options = {};
  options.backendType = wanted_backend();
  options.powerPreference = WGPUPowerPreference_HighPerformance;
  WGPURequestAdapterCallbackInfo cb = {};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPURequestAdapterStatus status, WGPUAdapter a, WGPUStringView msg, void* user, void*) {
    auto* rr = static_cast<R*>(user);
    if (status != WGPURequestAdapterStatus_Success) std::printf("adapter request: %s\n", str(msg).c_str());
    rr->adapter = status == WGPURequestAdapterStatus_Success ? a : nullptr;
    rr->done = true;
  };
  cb.userdata1 = &r;
  wgpuInstanceRequestAdapter(instance, &options, cb);
  spin(instance, [&] { return r.done; });
  return r.adapter;
}

struct DeviceResult {
  WGPUDevice device = nullptr;
  std::string message;
};

DeviceResult request_device(WGPUInstance instance, WGPUAdapter adapter,
                            const std::vector<uint32_t>& features) {
  struct R {
    DeviceResult result;
    bool done = false;
  } r;
  std::vector<WGPUFeatureName> names;
  for (uint32_t f : features) names.push_back(static_cast<WGPUFeatureName>(f));
  WGPULimits limits = WGPU_LIMITS_INIT;
  wgpuAdapterGetLimits(adapter, &limits);
  WGPUDeviceDescriptor desc = {};
  desc.requiredFeatureCount = names.size();
  desc.requiredFeatures = names.data();
  desc.requiredLimits = &limits;
  desc.uncapturedErrorCallbackInfo.callback = [](WGPUDevice const*, WGPUErrorType, WGPUStringView msg, void*,
                                                 void*) {
    std::printf("  uncaptured error: %s\n", str(msg).c_str());
  };
  WGPURequestDeviceCallbackInfo cb = {};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPURequestDeviceStatus status, WGPUDevice d, WGPUStringView msg, void* user, void*) {
    auto* rr = static_cast<R*>(user);
    rr->result.device = status == WGPURequestDeviceStatus_Success ? d : nullptr;
    rr->result.message = str(msg);
    rr->done = true;
  };
  cb.userdata1 = &r;
  wgpuAdapterRequestDevice(adapter, &desc, cb);
  spin(instance, [&] { return r.done; });
  return r.result;
}

std::vector<uint32_t> adapter_features(WGPUAdapter adapter) {
  WGPUSupportedFeatures f = {};
  wgpuAdapterGetFeatures(adapter, &f);
  std::vector<uint32_t> out(f.features, f.features + f.featureCount);
  wgpuSupportedFeaturesFreeMembers(f);
  std::sort(out.begin(), out.end());
  return out;
}

// The name the library gives `value`, from the message of a device request that needs it ("" if granted).
std::string feature_name_by_request(WGPUInstance instance, WGPUAdapter adapter, uint32_t value) {
  DeviceResult r = request_device(instance, adapter, {value});
  if (r.device) {
    wgpuDeviceRelease(r.device);
    return "";
  }
  const size_t at = r.message.find("FeatureName::");
  if (at == std::string::npos) return "? (" + r.message + ")";
  size_t end = at + 13;
  while (end < r.message.size() && (std::isalnum(static_cast<unsigned char>(r.message[end])) != 0)) ++end;
  return r.message.substr(at + 13, end - at - 13);
}

int names_mode() {
  WGPUInstance instance = make_instance(true);
  WGPUAdapter adapter = request_adapter(instance);
  if (!adapter) return 1;
  std::vector<uint32_t> values;
  for (uint32_t v = 1; v <= 0x14; ++v) values.push_back(v);
  for (uint32_t v = 0x50000; v <= 0x50050; ++v) values.push_back(v);
  for (uint32_t v : values) {
    std::string name = feature_name_by_request(instance, adapter, v);
    std::printf("0x%05x %s\n", v, name.empty() ? "(granted by this adapter)" : name.c_str());
  }
  return 0;
}

// Scans chained sTypes for the one the library reads as AdapterPropertiesSubgroupMatrixConfigs: each try runs
// in a child (a wrong sType may be read as another struct). Returns the sType found, or 0.
uint32_t find_configs_stype(WGPUAdapter adapter) {
  const uint32_t header_value = WGPUSType_AdapterPropertiesSubgroupMatrixConfigs;
  std::vector<uint32_t> candidates = {header_value};
  for (uint32_t v = 0x50020; v <= 0x50050; ++v) {
    if (v != header_value) candidates.push_back(v);
  }
  for (uint32_t stype : candidates) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      alignas(16) unsigned char chained[512] = {};
      auto* configs = reinterpret_cast<WGPUAdapterPropertiesSubgroupMatrixConfigs*>(chained);
      configs->chain.sType = static_cast<WGPUSType>(stype);
      WGPUAdapterInfo info = {};
      info.nextInChain = &configs->chain;
      const WGPUStatus status = wgpuAdapterGetInfo(adapter, &info);
      if (status != WGPUStatus_Success) _exit(1);
      if (configs->configCount == 0 || configs->configCount > 64 || configs->configs == nullptr) _exit(2);
      for (size_t i = 0; i < configs->configCount; ++i) {
        const WGPUSubgroupMatrixConfig& c = configs->configs[i];
        if (c.M == 0 || c.M > 64 || c.N == 0 || c.N > 64 || c.K == 0 || c.K > 64) _exit(3);
      }
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      std::printf("sType 0x%05x reads subgroup-matrix configurations (header: 0x%05x)\n", stype,
                  header_value);
      return stype;
    }
    if (WIFSIGNALED(status))
      std::printf("  sType 0x%05x: child died with signal %d\n", stype, WTERMSIG(status));
  }
  std::printf("no chained sType in 0x50020-0x50050 returned plausible subgroup-matrix configurations\n");
  return 0;
}

const char* component_name(WGPUSubgroupMatrixComponentType t) {
  switch (t) {
    case WGPUSubgroupMatrixComponentType_F32:
      return "f32";
    case WGPUSubgroupMatrixComponentType_F16:
      return "f16";
    case WGPUSubgroupMatrixComponentType_U32:
      return "u32";
    case WGPUSubgroupMatrixComponentType_I32:
      return "i32";
    case WGPUSubgroupMatrixComponentType_U8:
      return "u8";
    case WGPUSubgroupMatrixComponentType_I8:
      return "i8";
    default:
      return "?";
  }
}

std::vector<WGPUSubgroupMatrixConfig> read_configs(WGPUAdapter adapter, uint32_t stype) {
  alignas(16) unsigned char chained[512] = {};
  auto* configs = reinterpret_cast<WGPUAdapterPropertiesSubgroupMatrixConfigs*>(chained);
  configs->chain.sType = static_cast<WGPUSType>(stype);
  WGPUAdapterInfo info = {};
  info.nextInChain = &configs->chain;
  if (wgpuAdapterGetInfo(adapter, &info) != WGPUStatus_Success) return {};
  return {configs->configs, configs->configs + configs->configCount};
}

// Shader compilation messages ("" when clean).
std::string compile_messages(WGPUInstance instance, WGPUShaderModule module) {
  struct R {
    std::string text;
    bool done = false;
  } r;
  WGPUCompilationInfoCallbackInfo cb = {};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUCompilationInfoRequestStatus, const WGPUCompilationInfo* info, void* user, void*) {
    auto* rr = static_cast<R*>(user);
    for (size_t i = 0; info && i < info->messageCount; ++i) rr->text += str(info->messages[i].message) + "\n";
    rr->done = true;
  };
  cb.userdata1 = &r;
  wgpuShaderModuleGetCompilationInfo(module, cb);
  spin(instance, [&] { return r.done; });
  return r.text;
}

struct ErrorScope {
  WGPUInstance instance;
  WGPUDevice device;
  explicit ErrorScope(WGPUInstance i, WGPUDevice d) : instance(i), device(d) {
    wgpuDevicePushErrorScope(device, WGPUErrorFilter_Validation);
  }
  std::string pop() {
    struct R {
      std::string text;
      bool done = false;
    } r;
    WGPUPopErrorScopeCallbackInfo cb = {};
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = [](WGPUPopErrorScopeStatus, WGPUErrorType type, WGPUStringView msg, void* user, void*) {
      auto* rr = static_cast<R*>(user);
      if (type != WGPUErrorType_NoError) rr->text = str(msg);
      rr->done = true;
    };
    cb.userdata1 = &r;
    wgpuDevicePopErrorScope(device, cb);
    spin(instance, [&] { return r.done; });
    return r.text;
  }
};

WGPUBuffer make_buffer(WGPUDevice device, uint64_t size, WGPUBufferUsage usage) {
  WGPUBufferDescriptor d = {};
  d.size = (size + 3) & ~uint64_t{3};
  d.usage = usage;
  return wgpuDeviceCreateBuffer(device, &d);
}

void wait_queue(WGPUInstance instance, WGPUQueue queue) {
  bool done = false;
  WGPUQueueWorkDoneCallbackInfo cb = {};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUQueueWorkDoneStatus, WGPUStringView, void* user, void*) {
    *static_cast<bool*>(user) = true;
  };
  cb.userdata1 = &done;
  wgpuQueueOnSubmittedWorkDone(queue, cb);
  spin(instance, [&] { return done; });
}

std::vector<float> read_back(WGPUInstance instance, WGPUDevice device, WGPUBuffer source, uint64_t bytes) {
  WGPUBuffer staging = make_buffer(device, bytes, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst);
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(device, nullptr);
  wgpuCommandEncoderCopyBufferToBuffer(enc, source, 0, staging, 0, (bytes + 3) & ~uint64_t{3});
  WGPUCommandBuffer cmd = wgpuCommandEncoderFinish(enc, nullptr);
  wgpuQueueSubmit(wgpuDeviceGetQueue(device), 1, &cmd);
  bool done = false;
  WGPUBufferMapCallbackInfo cb = {};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUMapAsyncStatus, WGPUStringView, void* user, void*) {
    *static_cast<bool*>(user) = true;
  };
  cb.userdata1 = &done;
  wgpuBufferMapAsync(staging, WGPUMapMode_Read, 0, (bytes + 3) & ~uint64_t{3}, cb);
  spin(instance, [&] { return done; });
  std::vector<float> out(bytes / 4);
  std::memcpy(out.data(), wgpuBufferGetConstMappedRange(staging, 0, bytes), bytes);
  wgpuBufferUnmap(staging);
  wgpuBufferRelease(staging);
  wgpuCommandBufferRelease(cmd);
  wgpuCommandEncoderRelease(enc);
  return out;
}

uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  const uint32_t mant = x & 0x7fffffu;
  if (exp <= 0) return static_cast<uint16_t>(sign);
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13));
}
float from_half(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ffu;
  uint32_t x = sign;
  if (exp != 0) x |= ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// One M x N x K product by one subgroup, checked against the CPU; then a register-resident
// multiply-accumulate loop for throughput.
void try_config(WGPUInstance instance, WGPUDevice device, const WGPUSubgroupMatrixConfig& c,
                uint32_t subgroup) {
  const std::string in_t = component_name(c.componentType);
  const std::string out_t = component_name(c.resultComponentType);
  std::printf("config %s x %s -> %s, M %u N %u K %u\n", in_t.c_str(), in_t.c_str(), out_t.c_str(), c.M, c.N,
              c.K);
  if ((in_t != "f32" && in_t != "f16") || (out_t != "f32" && out_t != "f16")) {
    std::printf("  (integer configuration: not tried)\n");
    return;
  }
  const bool half_in = in_t == "f16", half_out = out_t == "f16";
  const std::string header = std::string("enable chromium_experimental_subgroup_matrix;\n") +
                             (half_in || half_out ? "enable f16;\n" : "");
  const std::string dims_left = in_t + ", " + std::to_string(c.K) + ", " + std::to_string(c.M);
  const std::string dims_right = in_t + ", " + std::to_string(c.N) + ", " + std::to_string(c.K);
  const std::string dims_result = out_t + ", " + std::to_string(c.N) + ", " + std::to_string(c.M);
  const std::string product =
      header + "@group(0) @binding(0) var<storage, read> a: array<" + in_t +
      ">;\n@group(0) @binding(1) var<storage, read> b: array<" + in_t +
      ">;\n@group(0) @binding(2) var<storage, read_write> c: array<" + out_t +
      ">;\n@compute @workgroup_size(" + std::to_string(subgroup) +
      ")\nfn main() {\n  let l = subgroupMatrixLoad<subgroup_matrix_left<" + dims_left + ">>(&a, 0, false, " +
      std::to_string(c.K) + ");\n  let r = subgroupMatrixLoad<subgroup_matrix_right<" + dims_right +
      ">>(&b, 0, false, " + std::to_string(c.N) + ");\n  var acc = subgroup_matrix_result<" + dims_result +
      ">();\n  acc = subgroupMatrixMultiplyAccumulate(l, r, acc);\n"
      "  subgroupMatrixStore(&c, 0, acc, false, " +
      std::to_string(c.N) + ");\n}\n";
  ErrorScope scope(instance, device);
  WGPUShaderSourceWGSL wgsl = {};
  wgsl.chain.sType = WGPUSType_ShaderSourceWGSL;
  wgsl.code = sv(product.c_str());
  WGPUShaderModuleDescriptor md = {};
  md.nextInChain = &wgsl.chain;
  WGPUShaderModule module = wgpuDeviceCreateShaderModule(device, &md);
  const std::string messages = compile_messages(instance, module);
  WGPUComputePipelineDescriptor pd = {};
  pd.compute.module = module;
  pd.compute.entryPoint = sv("main");
  WGPUComputePipeline pipeline = wgpuDeviceCreateComputePipeline(device, &pd);
  const std::string error = scope.pop();
  if (!messages.empty() || !error.empty()) {
    std::printf("  shader: %s%s\n", messages.c_str(), error.c_str());
    return;
  }
  const size_t in_size = half_in ? 2 : 4, out_size = half_out ? 2 : 4;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(size_t{c.M} * c.K), b(size_t{c.K} * c.N);
  for (float& v : a) v = half_in ? from_half(to_half(dist(rng))) : dist(rng);
  for (float& v : b) v = half_in ? from_half(to_half(dist(rng))) : dist(rng);
  auto upload = [&](const std::vector<float>& host) {
    std::vector<unsigned char> bytes(host.size() * in_size);
    for (size_t i = 0; i < host.size(); ++i) {
      if (half_in) {
        const uint16_t h = to_half(host[i]);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      } else {
        std::memcpy(bytes.data() + 4 * i, &host[i], 4);
      }
    }
    WGPUBuffer buf = make_buffer(device, bytes.size(), WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst);
    bytes.resize((bytes.size() + 3) & ~size_t{3});
    wgpuQueueWriteBuffer(wgpuDeviceGetQueue(device), buf, 0, bytes.data(), bytes.size());
    return buf;
  };
  WGPUBuffer buf_a = upload(a), buf_b = upload(b);
  const uint64_t out_bytes = uint64_t{c.M} * c.N * out_size;
  WGPUBuffer buf_c = make_buffer(device, out_bytes, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc);
  WGPUBindGroupEntry entries[3] = {};
  WGPUBuffer bufs[3] = {buf_a, buf_b, buf_c};
  for (uint32_t i = 0; i < 3; ++i) {
    entries[i].binding = i;
    entries[i].buffer = bufs[i];
    entries[i].size = WGPU_WHOLE_SIZE;
  }
  WGPUBindGroupDescriptor bd = {};
  bd.layout = wgpuComputePipelineGetBindGroupLayout(pipeline, 0);
  bd.entryCount = 3;
  bd.entries = entries;
  WGPUBindGroup group = wgpuDeviceCreateBindGroup(device, &bd);
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(device, nullptr);
  WGPUComputePassEncoder pass = wgpuCommandEncoderBeginComputePass(enc, nullptr);
  wgpuComputePassEncoderSetPipeline(pass, pipeline);
  wgpuComputePassEncoderSetBindGroup(pass, 0, group, 0, nullptr);
  wgpuComputePassEncoderDispatchWorkgroups(pass, 1, 1, 1);
  wgpuComputePassEncoderEnd(pass);
  WGPUCommandBuffer cmd = wgpuCommandEncoderFinish(enc, nullptr);
  wgpuQueueSubmit(wgpuDeviceGetQueue(device), 1, &cmd);
  std::vector<float> raw = read_back(instance, device, buf_c, (out_bytes + 3) & ~uint64_t{3});
  double err = 0, ref_norm = 0;
  for (uint32_t m = 0; m < c.M; ++m) {
    for (uint32_t n = 0; n < c.N; ++n) {
      double ref = 0;
      for (uint32_t k = 0; k < c.K; ++k) ref += double{a[m * c.K + k]} * b[k * c.N + n];
      float got;
      if (half_out) {
        uint16_t h;
        std::memcpy(&h, reinterpret_cast<const unsigned char*>(raw.data()) + 2 * (m * c.N + n), 2);
        got = from_half(h);
      } else {
        got = raw[m * c.N + n];
      }
      err += (got - ref) * (got - ref);
      ref_norm += ref * ref;
    }
  }
  std::printf("  product vs float64: relative L2 error %.3g\n", std::sqrt(err / ref_norm));

  // Throughput: each subgroup runs `iters` multiply-accumulates on registers (4 independent accumulators).
  const uint32_t iters = 4096, groups = 132 * 64;
  const std::string loop =
      header + "@group(0) @binding(0) var<storage, read> a: array<" + in_t +
      ">;\n@group(0) @binding(1) var<storage, read> b: array<" + in_t +
      ">;\n@group(0) @binding(2) var<storage, read_write> c: array<" + out_t +
      ">;\n@compute @workgroup_size(" + std::to_string(subgroup * 4) +
      ")\nfn main(@builtin(workgroup_id) wg: vec3u) {\n"
      "  let l = subgroupMatrixLoad<subgroup_matrix_left<" +
      dims_left + ">>(&a, 0, false, " + std::to_string(c.K) +
      ");\n  let r = subgroupMatrixLoad<subgroup_matrix_right<" + dims_right + ">>(&b, 0, false, " +
      std::to_string(c.N) + ");\n  var acc0 = subgroup_matrix_result<" + dims_result +
      ">();\n  var acc1 = acc0;\n  var acc2 = acc0;\n  var acc3 = acc0;\n" + "  for (var i = 0u; i < " +
      std::to_string(iters) +
      "u; i++) {\n"
      "    acc0 = subgroupMatrixMultiplyAccumulate(l, r, acc0);\n"
      "    acc1 = subgroupMatrixMultiplyAccumulate(l, r, acc1);\n"
      "    acc2 = subgroupMatrixMultiplyAccumulate(l, r, acc2);\n"
      "    acc3 = subgroupMatrixMultiplyAccumulate(l, r, acc3);\n  }\n"
      "  if (wg.x == 0xffffffffu) {\n"
      "    subgroupMatrixStore(&c, 0, acc0, false, " +
      std::to_string(c.N) + ");\n    subgroupMatrixStore(&c, 0, acc1, false, " + std::to_string(c.N) +
      ");\n    subgroupMatrixStore(&c, 0, acc2, false, " + std::to_string(c.N) +
      ");\n    subgroupMatrixStore(&c, 0, acc3, false, " + std::to_string(c.N) + ");\n  }\n}\n";
  ErrorScope scope2(instance, device);
  wgsl.code = sv(loop.c_str());
  WGPUShaderModule loop_module = wgpuDeviceCreateShaderModule(device, &md);
  const std::string loop_messages = compile_messages(instance, loop_module);
  pd.compute.module = loop_module;
  WGPUComputePipeline loop_pipeline = wgpuDeviceCreateComputePipeline(device, &pd);
  const std::string loop_error = scope2.pop();
  if (!loop_messages.empty() || !loop_error.empty()) {
    std::printf("  loop shader: %s%s\n", loop_messages.c_str(), loop_error.c_str());
    return;
  }
  bd.layout = wgpuComputePipelineGetBindGroupLayout(loop_pipeline, 0);
  WGPUBindGroup loop_group = wgpuDeviceCreateBindGroup(device, &bd);
  auto run_once = [&] {
    WGPUCommandEncoder e = wgpuDeviceCreateCommandEncoder(device, nullptr);
    WGPUComputePassEncoder p = wgpuCommandEncoderBeginComputePass(e, nullptr);
    wgpuComputePassEncoderSetPipeline(p, loop_pipeline);
    wgpuComputePassEncoderSetBindGroup(p, 0, loop_group, 0, nullptr);
    wgpuComputePassEncoderDispatchWorkgroups(p, groups, 1, 1);
    wgpuComputePassEncoderEnd(p);
    WGPUCommandBuffer cb = wgpuCommandEncoderFinish(e, nullptr);
    wgpuQueueSubmit(wgpuDeviceGetQueue(device), 1, &cb);
    wait_queue(instance, wgpuDeviceGetQueue(device));
  };
  run_once();
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    run_once();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double flops = 2.0 * c.M * c.N * c.K * iters * 4.0 * 4.0 * groups;
  std::printf("  multiply-accumulate loop: %.1f TFLOP/s (%u workgroups of 4 subgroups, best of 5, %.3f ms)\n",
              flops / best / 1e12, groups, best * 1e3);
}

int probe_mode() {
  WGPUInstance safe_instance = make_instance(false);
  WGPUAdapter safe_adapter = request_adapter(safe_instance);
  WGPUInstance instance = make_instance(true);
  WGPUAdapter adapter = request_adapter(instance);
  if (!adapter || !safe_adapter) return 1;
  WGPUAdapterInfo info = {};
  wgpuAdapterGetInfo(adapter, &info);
  std::printf("adapter: %s / %s / %s, subgroup size %u-%u\n", str(info.vendor).c_str(),
              str(info.device).c_str(), str(info.description).c_str(), info.subgroupMinSize,
              info.subgroupMaxSize);
  const uint32_t subgroup = std::max<uint32_t>(info.subgroupMinSize, 1);
  const std::vector<uint32_t> safe = adapter_features(safe_adapter), all = adapter_features(adapter);
  std::printf("features (library values), * = only with allow_unsafe_apis:\n");
  for (uint32_t f : all) {
    const bool unsafe_only = std::find(safe.begin(), safe.end(), f) == safe.end();
    std::printf("  0x%05x%s\n", f, unsafe_only ? " *" : "");
  }
  std::printf("shader-f16 (0x%x): %s; subgroups (0x%x): %s\n", kShaderF16,
              std::count(all.begin(), all.end(), kShaderF16) ? "yes" : "no", kSubgroups,
              std::count(all.begin(), all.end(), kSubgroups) ? "yes" : "no");
  // A device with every feature the adapter lists; the subgroup-matrix one is among them if the adapter has
  // it.
  DeviceResult dev = request_device(instance, adapter, all);
  if (!dev.device) {
    std::printf("device with all adapter features: %s\n", dev.message.c_str());
    return 1;
  }
  std::printf("device with all %zu adapter features created\n", all.size());
  const uint32_t stype = find_configs_stype(adapter);
  if (stype == 0) return 0;
  const std::vector<WGPUSubgroupMatrixConfig> configs = read_configs(adapter, stype);
  for (const WGPUSubgroupMatrixConfig& c : configs) try_config(instance, dev.device, c, subgroup);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "probe";
  if (mode == "names") return names_mode();
  if (mode == "probe") return probe_mode();
  std::fprintf(stderr, "usage: %s [probe|names]\n", argv[0]);
  return 2;
}
