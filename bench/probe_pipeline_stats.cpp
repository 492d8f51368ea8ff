// What the Vulkan driver made of a compute shader: registers, workgroup memory, binary size, as the driver
// reports them through VK_KHR_pipeline_executable_properties. Issue 7's tool for the GEMM's inner
// loop: WebGPU hides the compiled code, so this compiles the SPIR-V that Dawn generated (logged with
// WGI_DAWN_TOGGLES=dump_shaders WGI_DAWN_LOG=<file>, assembled by spirv-as; bench/shader_stats.sh does both)
// once more, directly on the driver, and reads what the driver says about it.
//
// Usage: wgi_probe_pipeline_stats [--device <name substring>] [--ir <dir>] shader.spv...
//   --ir writes each executable's internal representations (if the driver offers any) to <dir>.
// Exit status: 0 when every shader was compiled and described, 2 when the device lacks the extension.
#include <vulkan/vulkan.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace {

// A Vulkan structure, zeroed, with its type tag and chain pointer set.
template <class T>
T vk_struct(VkStructureType type, void* next = nullptr) {
  T value{};
  value.sType = type;
  value.pNext = next;
  return value;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "wgi_probe_pipeline_stats: %s\n", what.c_str());
  std::exit(1);
}

void check(VkResult r, const char* call) {
  if (r != VK_SUCCESS) fail(std::string(call) + " returned VkResult " + std::to_string(r));
}

// Vulkan's two-call enumeration of tagged structures: the count, then the array filled.
template <class T, class Query>
std::vector<T> enumerate(VkStructureType type, const char* call, Query query) {
  uint32_t count = 0;
  check(query(&count, static_cast<T*>(nullptr)), call);
  std::vector<T> items(count, vk_struct<T>(type));
  check(query(&count, items.data()), call);
  return items;
}

// The interface a compute shader declares, read from its SPIR-V words: the entry point's name, each
// descriptor binding's kind, and whether it uses push constants. Only what Tint emits for wgi's kernels
// (storage and uniform buffers) is understood; anything else is an error naming the binding.
struct ShaderInterface {
  std::string entry_point;
  std::map<uint32_t, std::map<uint32_t, VkDescriptorType>> sets;  // set -> binding -> type
  bool push_constants = false;
};

ShaderInterface read_interface(const std::vector<uint32_t>& words, const std::string& file) {
  if (words.size() < 5 || words[0] != 0x07230203u) fail(file + ": not a SPIR-V binary (run spirv-as first)");
  constexpr uint32_t kOpEntryPoint = 15, kOpTypePointer = 32, kOpVariable = 59, kOpDecorate = 71;
  constexpr uint32_t kDecorationBinding = 33, kDecorationDescriptorSet = 34;
  constexpr uint32_t kUniform = 2, kPushConstant = 9, kStorageBuffer = 12;
  ShaderInterface shader;
  std::map<uint32_t, uint32_t> binding, set, pointer_class, variable_class;
  for (size_t i = 5; i < words.size();) {
    const uint32_t count = words[i] >> 16, op = words[i] & 0xffffu;
    if (count == 0 || i + count > words.size())
      fail(file + ": malformed instruction at word " + std::to_string(i));
    const uint32_t* w = &words[i];
    if (op == kOpEntryPoint && shader.entry_point.empty()) {
      shader.entry_point = reinterpret_cast<const char*>(&w[3]);
    } else if (op == kOpDecorate && count >= 4 && w[2] == kDecorationBinding) {
      binding[w[1]] = w[3];
    } else if (op == kOpDecorate && count >= 4 && w[2] == kDecorationDescriptorSet) {
      set[w[1]] = w[3];
    } else if (op == kOpTypePointer) {
      pointer_class[w[1]] = w[2];
    } else if (op == kOpVariable) {
      variable_class[w[2]] = w[3];
      if (w[3] == kPushConstant) shader.push_constants = true;
    }
    i += count;
  }
  for (const auto& [id, b] : binding) {
    if (!set.count(id)) fail(file + ": %" + std::to_string(id) + " has a binding but no descriptor set");
    const uint32_t storage_class = variable_class.count(id) ? variable_class[id] : 0;
    VkDescriptorType type;
    if (storage_class == kStorageBuffer) {
      type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    } else if (storage_class == kUniform) {
      type = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    } else {
      fail(file + ": binding " + std::to_string(b) + " of set " + std::to_string(set[id]) +
           " is in storage class " + std::to_string(storage_class) + "; only buffers are understood");
    }
    shader.sets[set[id]][b] = type;
  }
  if (shader.entry_point.empty()) fail(file + ": no OpEntryPoint");
  return shader;
}

std::vector<uint32_t> read_words(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot read " + file);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() % 4 != 0) fail(file + ": size is not a multiple of 4 bytes");
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

std::string statistic_value(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
      return s.value.b32 ? "true" : "false";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
      return std::to_string(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
      return std::to_string(s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
      return std::to_string(s.value.f64);
    default:
      return "?";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_filter, ir_dir;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--device" || arg == "--ir") && i + 1 < argc) {
      (arg == "--device" ? device_filter : ir_dir) = argv[++i];
    } else if (arg == "--help" || arg == "-h" || arg.rfind("--", 0) == 0) {
      std::printf("usage: %s [--device <name substring>] [--ir <dir>] shader.spv...\n", argv[0]);
      return arg == "--help" || arg == "-h" ? 0 : 1;
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) fail("no SPIR-V files given (--help)");

  auto app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "wgi_probe_pipeline_stats";
  app.apiVersion = VK_API_VERSION_1_3;
  auto instance_info = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  instance_info.pApplicationInfo = &app;
  VkInstance instance;
  check(vkCreateInstance(&instance_info, nullptr, &instance), "vkCreateInstance");
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> physical(count);
  vkEnumeratePhysicalDevices(instance, &count, physical.data());
  VkPhysicalDevice gpu = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props{};
  for (VkPhysicalDevice p : physical) {
    vkGetPhysicalDeviceProperties(p, &props);
    if (std::strstr(props.deviceName, device_filter.c_str())) {
      gpu = p;
      break;
    }
  }
  if (gpu == VK_NULL_HANDLE) fail("no Vulkan device matches '" + device_filter + "'");
  std::printf("device: %s (driver version %u)\n", props.deviceName, props.driverVersion);

  uint32_t ext_count = 0;
  vkEnumerateDeviceExtensionProperties(gpu, nullptr, &ext_count, nullptr);
  std::vector<VkExtensionProperties> exts(ext_count);
  vkEnumerateDeviceExtensionProperties(gpu, nullptr, &ext_count, exts.data());
  bool has_stats = false;
  for (const VkExtensionProperties& e : exts) {
    has_stats =
        has_stats || std::strcmp(e.extensionName, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME) == 0;
  }
  if (!has_stats) {
    std::printf("%s: absent on this device; nothing to report\n",
                VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    return 2;
  }

  // Every core feature the device has is enabled, so that whatever capability Tint's SPIR-V declares (the
  // memory model, 16-bit storage, subgroup operations) is allowed, plus the statistics themselves.
  auto stats_feature = vk_struct<VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR);
  auto v13 = vk_struct<VkPhysicalDeviceVulkan13Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, &stats_feature);
  auto v12 = vk_struct<VkPhysicalDeviceVulkan12Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &v13);
  auto v11 = vk_struct<VkPhysicalDeviceVulkan11Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &v12);
  auto features = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &v11);
  vkGetPhysicalDeviceFeatures2(gpu, &features);
  if (!stats_feature.pipelineExecutableInfo) fail("pipelineExecutableInfo is not supported");
  const float priority = 1.0f;
  auto queue = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  queue.queueFamilyIndex = 0;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  const char* ext_name = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
  auto device_info = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &features);
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue;
  device_info.enabledExtensionCount = 1;
  device_info.ppEnabledExtensionNames = &ext_name;
  VkDevice device;
  check(vkCreateDevice(gpu, &device_info, nullptr, &device), "vkCreateDevice");
  auto executable_properties = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR"));
  auto executable_statistics = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR"));
  auto executable_irs = reinterpret_cast<PFN_vkGetPipelineExecutableInternalRepresentationsKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutableInternalRepresentationsKHR"));

  for (const std::string& file : files) {
    const std::vector<uint32_t> words = read_words(file);
    const ShaderInterface shader = read_interface(words, file);
    auto module_info = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
    module_info.codeSize = words.size() * 4;
    module_info.pCode = words.data();
    VkShaderModule module;
    check(vkCreateShaderModule(device, &module_info, nullptr, &module), "vkCreateShaderModule");

    // Set layouts for sets 0..max; a set the shader skips gets an empty layout.
    const uint32_t set_count = shader.sets.empty() ? 0 : shader.sets.rbegin()->first + 1;
    std::vector<VkDescriptorSetLayout> set_layouts(set_count);
    for (uint32_t s = 0; s < set_count; ++s) {
      std::vector<VkDescriptorSetLayoutBinding> bindings;
      if (auto it = shader.sets.find(s); it != shader.sets.end()) {
        for (const auto& [b, type] : it->second) {
          bindings.push_back({b, type, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
        }
      }
      auto layout_info =
          vk_struct<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
      layout_info.bindingCount = static_cast<uint32_t>(bindings.size());
      layout_info.pBindings = bindings.data();
      check(vkCreateDescriptorSetLayout(device, &layout_info, nullptr, &set_layouts[s]),
            "vkCreateDescriptorSetLayout");
    }
    const VkPushConstantRange push_range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};  // the guaranteed minimum
    auto pipeline_layout_info =
        vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
    pipeline_layout_info.setLayoutCount = set_count;
    pipeline_layout_info.pSetLayouts = set_layouts.data();
    pipeline_layout_info.pushConstantRangeCount = shader.push_constants ? 1 : 0;
    pipeline_layout_info.pPushConstantRanges = &push_range;
    VkPipelineLayout pipeline_layout;
    check(vkCreatePipelineLayout(device, &pipeline_layout_info, nullptr, &pipeline_layout),
          "vkCreatePipelineLayout");
    auto pipeline_info =
        vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
    pipeline_info.flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR |
                          VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR;
    pipeline_info.stage =
        vk_struct<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
    pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipeline_info.stage.module = module;
    pipeline_info.stage.pName = shader.entry_point.c_str();
    pipeline_info.layout = pipeline_layout;
    VkPipeline pipeline;
    check(vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &pipeline),
          ("vkCreateComputePipelines(" + file + ")").c_str());

    auto which = vk_struct<VkPipelineInfoKHR>(VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR);
    which.pipeline = pipeline;
    const auto described = enumerate<VkPipelineExecutablePropertiesKHR>(
        VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR, "vkGetPipelineExecutablePropertiesKHR",
        [&](uint32_t* n, VkPipelineExecutablePropertiesKHR* out) {
          return executable_properties(device, &which, n, out);
        });
    std::printf("%s:\n", file.c_str());
    for (uint32_t e = 0; e < described.size(); ++e) {
      std::printf("  executable %u: %s (subgroup size %u)\n", e, described[e].name,
                  described[e].subgroupSize);
      auto exec = vk_struct<VkPipelineExecutableInfoKHR>(VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR);
      exec.pipeline = pipeline;
      exec.executableIndex = e;
      const auto stats = enumerate<VkPipelineExecutableStatisticKHR>(
          VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR, "vkGetPipelineExecutableStatisticsKHR",
          [&](uint32_t* n, VkPipelineExecutableStatisticKHR* out) {
            return executable_statistics(device, &exec, n, out);
          });
      for (const VkPipelineExecutableStatisticKHR& s : stats) {
        std::printf("    %-32s %12s   %s\n", s.name, statistic_value(s).c_str(), s.description);
      }
      if (ir_dir.empty()) continue;
      // Counts and sizes first, then the data into buffers of those sizes.
      auto irs = enumerate<VkPipelineExecutableInternalRepresentationKHR>(
          VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR,
          "vkGetPipelineExecutableInternalRepresentationsKHR",
          [&](uint32_t* n, VkPipelineExecutableInternalRepresentationKHR* out) {
            return executable_irs(device, &exec, n, out);
          });
      uint32_t ir_count = static_cast<uint32_t>(irs.size());
      std::vector<std::vector<char>> data(ir_count);
      for (uint32_t r = 0; r < ir_count; ++r) {
        data[r].resize(irs[r].dataSize);
        irs[r].pData = data[r].data();
      }
      check(executable_irs(device, &exec, &ir_count, irs.data()),
            "vkGetPipelineExecutableInternalRepresentationsKHR");
      std::printf("    internal representations: %u\n", ir_count);
      for (uint32_t r = 0; r < ir_count; ++r) {
        std::string base = file.substr(file.find_last_of('/') + 1);
        const std::string out = ir_dir + "/" + base + "." + std::to_string(e) + "." + std::to_string(r) +
                                (irs[r].isText ? ".txt" : ".bin");
        std::ofstream(out, std::ios::binary)
            .write(data[r].data(), static_cast<std::streamsize>(irs[r].dataSize));
        std::printf("      %s (%s): %zu bytes -> %s\n", irs[r].name, irs[r].description, irs[r].dataSize,
                    out.c_str());
      }
    }
    vkDestroyPipeline(device, pipeline, nullptr);
    vkDestroyPipelineLayout(device, pipeline_layout, nullptr);
    for (VkDescriptorSetLayout l : set_layouts) vkDestroyDescriptorSetLayout(device, l, nullptr);
    vkDestroyShaderModule(device, module, nullptr);
  }
  vkDestroyDevice(device, nullptr);
  vkDestroyInstance(instance, nullptr);
  return 0;
}
