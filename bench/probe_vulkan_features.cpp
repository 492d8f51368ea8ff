// What the Vulkan driver itself offers for the features Dawn gates shader-f16 and subgroup matrices on: the
// 16-bit storage and float16 features, the Vulkan memory model, cooperative matrices (and their M/N/K/type
// configurations), subgroup size control. Read next to wgi_probe_subgroup_matrix's answer (what Dawn
// exposes), it tells whether a missing WebGPU feature is the driver's or Dawn's doing. Issue 7's
// investigation tool: loads libvulkan.so.1 at run time and declares the few Vulkan structures it reads
// (values from the Vulkan registry), so it builds without the Vulkan headers.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using VkBool32 = uint32_t;
using Handle = void*;
using PFN_void = void (*)();
using PFN_vkGetInstanceProcAddr = PFN_void (*)(Handle, const char*);

constexpr uint32_t kUnset = 0xDEAD;  // left in fields the driver did not fill

struct ApplicationInfo {
  uint32_t sType = 0;
  const void* pNext = nullptr;
  const char* app = "wgi-probe";
  uint32_t app_version = 1;
  const char* engine = "wgi";
  uint32_t engine_version = 1;
  uint32_t api_version = (1u << 22) | (3u << 12);  // 1.3
};
struct InstanceCreateInfo {
  uint32_t sType = 1;
  const void* pNext = nullptr;
  uint32_t flags = 0;
  const ApplicationInfo* app = nullptr;
  uint32_t layer_count = 0;
  const char* const* layers = nullptr;
  uint32_t extension_count = 0;
  const char* const* extensions = nullptr;
};
struct ExtensionProperties {
  char name[256];
  uint32_t spec_version;
};
struct Chained {
  uint32_t sType;
  void* pNext;
};
struct Features2 {
  Chained chain{1000059000, nullptr};
  VkBool32 core[55];
};
struct Storage16Features {
  Chained chain{1000083000, nullptr};
  VkBool32 storage_buffer = kUnset, uniform_and_storage_buffer = kUnset, push_constant = kUnset,
           input_output = kUnset;
};
struct Float16Int8Features {
  Chained chain{1000082000, nullptr};
  VkBool32 float16 = kUnset, int8 = kUnset;
};
struct MemoryModelFeatures {
  Chained chain{1000211000, nullptr};
  VkBool32 model = kUnset, device_scope = kUnset, chains = kUnset;
};
struct CooperativeMatrixFeatures {
  Chained chain{1000506000, nullptr};
  VkBool32 cooperative_matrix = kUnset, robust_buffer_access = kUnset;
};
struct SubgroupSizeControlFeatures {
  Chained chain{1000225002, nullptr};
  VkBool32 control = kUnset, compute_full_subgroups = kUnset;
};
struct CooperativeMatrixProperties {
  Chained chain{1000506001, nullptr};
  uint32_t m = 0, n = 0, k = 0;
  int32_t a = 0, b = 0, c = 0, result = 0;
  VkBool32 saturating = 0;
  int32_t scope = 0;
};

const char* component(int32_t t) {
  switch (t) {
    case 0:
      return "f16";
    case 1:
      return "f32";
    case 2:
      return "f64";
    case 3:
      return "s8";
    case 4:
      return "s16";
    case 5:
      return "s32";
    case 6:
      return "s64";
    case 7:
      return "u8";
    case 8:
      return "u16";
    case 9:
      return "u32";
    case 10:
      return "u64";
    case 1000141000:
      return "bf16";
    default:
      return "other";
  }
}
const char* scope(int32_t s) {
  switch (s) {
    case 1:
      return "device";
    case 2:
      return "workgroup";
    case 3:
      return "subgroup";
    case 5:
      return "queue-family";
    default:
      return "?";
  }
}
const char* flag(VkBool32 v) {
  return v == kUnset ? "not reported" : v ? "yes" : "no";
}

}  // namespace

int main() {
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW);
  if (!lib) {
    std::printf("libvulkan.so.1: %s\n", dlerror());
    return 1;
  }
  auto gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  auto create_instance = reinterpret_cast<int32_t (*)(const InstanceCreateInfo*, const void*, Handle*)>(
      gipa(nullptr, "vkCreateInstance"));
  ApplicationInfo app;
  InstanceCreateInfo info;
  info.app = &app;
  Handle instance = nullptr;
  if (create_instance(&info, nullptr, &instance) != 0) {
    std::printf("vkCreateInstance failed\n");
    return 1;
  }
  auto get = [&](const char* name) { return gipa(instance, name); };
  auto enumerate =
      reinterpret_cast<int32_t (*)(Handle, uint32_t*, Handle*)>(get("vkEnumeratePhysicalDevices"));
  auto properties = reinterpret_cast<void (*)(Handle, void*)>(get("vkGetPhysicalDeviceProperties"));
  auto extensions = reinterpret_cast<int32_t (*)(Handle, const char*, uint32_t*, ExtensionProperties*)>(
      get("vkEnumerateDeviceExtensionProperties"));
  auto features2 = reinterpret_cast<void (*)(Handle, Features2*)>(get("vkGetPhysicalDeviceFeatures2"));
  auto coop_properties = reinterpret_cast<int32_t (*)(Handle, uint32_t*, CooperativeMatrixProperties*)>(
      get("vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  uint32_t count = 0;
  enumerate(instance, &count, nullptr);
  std::vector<Handle> devices(count);
  enumerate(instance, &count, devices.data());
  for (Handle device : devices) {
    alignas(8) unsigned char props[4096] = {};
    properties(device, props);
    uint32_t api = 0, driver = 0;
    std::memcpy(&api, props, 4);
    std::memcpy(&driver, props + 4, 4);
    std::printf("device: %s (Vulkan %u.%u)\n", reinterpret_cast<const char*>(props + 20), api >> 22,
                (api >> 12) & 0x3ff);
    uint32_t ext_count = 0;
    extensions(device, nullptr, &ext_count, nullptr);
    std::vector<ExtensionProperties> exts(ext_count);
    extensions(device, nullptr, &ext_count, exts.data());
    for (const char* wanted :
         {"VK_KHR_shader_float16_int8", "VK_KHR_16bit_storage", "VK_KHR_vulkan_memory_model",
          "VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix", "VK_NV_cooperative_matrix2",
          "VK_EXT_subgroup_size_control", "VK_KHR_shader_bfloat16"}) {
      bool found = false;
      for (const ExtensionProperties& e : exts) found = found || std::strcmp(e.name, wanted) == 0;
      std::printf("  %-32s %s\n", wanted, found ? "present" : "absent");
    }
    Features2 f;
    Storage16Features s16;
    Float16Int8Features f16;
    MemoryModelFeatures mm;
    CooperativeMatrixFeatures cm;
    SubgroupSizeControlFeatures sc;
    f.chain.pNext = &s16;
    s16.chain.pNext = &f16;
    f16.chain.pNext = &mm;
    mm.chain.pNext = &cm;
    cm.chain.pNext = &sc;
    features2(device, &f);
    std::printf("  shaderFloat16 %s, shaderInt8 %s\n", flag(f16.float16), flag(f16.int8));
    std::printf(
        "  storageBuffer16BitAccess %s, uniformAndStorageBuffer16BitAccess %s, storageInputOutput16 %s\n",
        flag(s16.storage_buffer), flag(s16.uniform_and_storage_buffer), flag(s16.input_output));
    std::printf("  vulkanMemoryModel %s, vulkanMemoryModelDeviceScope %s\n", flag(mm.model),
                flag(mm.device_scope));
    std::printf("  cooperativeMatrix %s, subgroupSizeControl %s, computeFullSubgroups %s\n",
                flag(cm.cooperative_matrix), flag(sc.control), flag(sc.compute_full_subgroups));
    if (coop_properties == nullptr) {
      std::printf("  vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR: not available\n");
      continue;
    }
    uint32_t n = 0;
    coop_properties(device, &n, nullptr);
    std::vector<CooperativeMatrixProperties> configs(n);
    coop_properties(device, &n, configs.data());
    std::printf("  cooperative matrix configurations (%u):\n", n);
    for (const CooperativeMatrixProperties& c : configs) {
      std::printf("    M %2u N %2u K %2u  A %-5s B %-5s C %-5s result %-5s %s%s\n", c.m, c.n, c.k,
                  component(c.a), component(c.b), component(c.c), component(c.result), scope(c.scope),
                  c.saturating ? " saturating" : "");
    }
  }
  return 0;
}
