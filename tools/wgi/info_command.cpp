// `wgi info`: which adapter wgi picks, through which backend, and what the device was granted.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "commands.h"
#include "gpu/device.h"

namespace wgi::cli {

namespace {

// The limits in WebGPU's names, in the order the specification lists them.
std::vector<std::pair<const char*, uint64_t>> named_limits(const gpu::Limits& l) {
  return {
      {"maxBufferSize", l.max_buffer_size},
      {"maxStorageBufferBindingSize", l.max_storage_buffer_binding_size},
      {"maxUniformBufferBindingSize", l.max_uniform_buffer_binding_size},
      {"maxStorageBuffersPerShaderStage", l.max_storage_buffers_per_shader_stage},
      {"maxBindGroups", l.max_bind_groups},
      {"maxBindingsPerBindGroup", l.max_bindings_per_bind_group},
      {"minStorageBufferOffsetAlignment", l.min_storage_buffer_offset_alignment},
      {"minUniformBufferOffsetAlignment", l.min_uniform_buffer_offset_alignment},
      {"maxComputeWorkgroupStorageSize", l.max_compute_workgroup_storage_size},
      {"maxComputeInvocationsPerWorkgroup", l.max_compute_invocations_per_workgroup},
      {"maxComputeWorkgroupSizeX", l.max_compute_workgroup_size_x},
      {"maxComputeWorkgroupSizeY", l.max_compute_workgroup_size_y},
      {"maxComputeWorkgroupSizeZ", l.max_compute_workgroup_size_z},
      {"maxComputeWorkgroupsPerDimension", l.max_compute_workgroups_per_dimension},
  };
}

nlohmann::json info_json(const gpu::Device& device) {
  const auto& a = device.adapter_info();
  nlohmann::json selection = nlohmann::json::array();
  for (const auto& s : device.selection_log()) {
    selection.push_back(
        {{"backend", gpu::to_string(s.backend)}, {"accepted", s.accepted}, {"detail", s.detail}});
  }
  nlohmann::json limits = nlohmann::json::object();
  for (const auto& [name, value] : named_limits(device.limits())) limits[name] = value;
  return {
      {"backend", gpu::to_string(device.backend())},
      {"adapter",
       {{"backendType", a.backend},
        {"adapterType", a.adapter_type},
        {"vendor", a.vendor},
        {"architecture", a.architecture},
        {"device", a.device},
        {"description", a.description},
        {"vendorID", a.vendor_id},
        {"deviceID", a.device_id},
        {"subgroupMinSize", a.subgroup_min_size},
        {"subgroupMaxSize", a.subgroup_max_size}}},
      {"featureLevel", a.compatibility_mode ? "compatibility" : "core"},
      {"features", device.granted_feature_names()},
      {"wgiFeatures",
       {{"shader-f16", device.features().shader_f16},
        {"subgroups", device.features().subgroups},
        {"timestamp-query", device.features().timestamp_query},
        {"packed_4x8_integer_dot_product", device.features().packed_int8_dot}}},
      {"shaderRobustness", device.shader_robustness()},
      {"limits", limits},
      {"selection", selection},
  };
}

void print_text(const gpu::Device& device, std::ostream& out) {
  const auto& a = device.adapter_info();
  out << "backend:        " << gpu::to_string(device.backend()) << " (Dawn " << a.backend
      << ", feature level " << (a.compatibility_mode ? "compatibility" : "core") << ")\n";
  out << "adapter:        " << a.device << " (" << a.adapter_type << ")\n";
  // GL ES adapters report no PCI ids (vendor 0, device 0 or ~0): print none rather than made-up ones.
  out << "vendor:         " << (a.vendor.empty() ? "unknown" : a.vendor)
      << (a.architecture.empty() ? "" : " / " + a.architecture);
  if (a.vendor_id != 0 || (a.device_id != 0 && a.device_id != 0xffffffffu)) {
    out << " [0x" << std::hex << a.vendor_id << ":0x" << a.device_id << std::dec << "]";
  } else {
    out << " (no PCI ids)";
  }
  out << "\n";
  out << "driver:         " << a.description << "\n";
  if (a.subgroup_max_size) {
    out << "subgroup size:  " << a.subgroup_min_size << "-" << a.subgroup_max_size << "\n";
  }
  const auto& f = device.features();
  out << "wgi features:   shader-f16 " << (f.shader_f16 ? "yes" : "no") << ", subgroups "
      << (f.subgroups ? "yes" : "no") << ", timestamp-query " << (f.timestamp_query ? "yes" : "no")
      << ", WGSL packed_4x8_integer_dot_product " << (f.packed_int8_dot ? "yes" : "no") << "\n";
  out << "robustness:     " << (device.shader_robustness() ? "on" : "off")
      << " (Dawn's index clamps and workgroup-memory zeroing in shaders; --shader-robustness)\n";
  out << "granted:        ";
  if (device.granted_feature_names().empty()) out << "(no optional features)";
  for (size_t i = 0; i < device.granted_feature_names().size(); ++i) {
    out << (i ? ", " : "") << device.granted_feature_names()[i];
  }
  out << "\nlimits:\n";
  for (const auto& [name, value] : named_limits(device.limits())) {
    out << "  " << name << " = " << value << "\n";
  }
  out << "selection:\n";
  for (const auto& s : device.selection_log()) {
    out << "  " << gpu::to_string(s.backend) << ": " << (s.accepted ? "chosen, " : "skipped, ") << s.detail
        << "\n";
  }
}

}  // namespace

void add_info_command(CLI::App& app, int& exit_code) {
  struct Options {
    bool json = false;
    std::string backend;
    std::string adapter;
    bool shader_robustness = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("info", "Show the WebGPU adapter, backend, features and limits wgi uses");
  cmd->add_flag("--json", opts->json, "Print as JSON");
  add_device_options(*cmd, opts->backend, opts->adapter);
  cmd->add_flag(
      "--shader-robustness", opts->shader_robustness,
      "Create the device with Dawn's index clamps and workgroup-memory zeroing (default: off unless "
      "WGI_SHADER_ROBUSTNESS=1)");
  cmd->callback([opts, &exit_code] {
    gpu::DeviceOptions options;
    if (!opts->backend.empty()) options.backend = gpu::parse_backend(opts->backend);
    if (!opts->adapter.empty()) options.adapter_filter = opts->adapter;
    options.shader_robustness = opts->shader_robustness;
    auto device = gpu::Device::create(options);
    if (opts->json) {
      std::cout << info_json(*device).dump(2) << "\n";
    } else {
      print_text(*device, std::cout);
    }
    exit_code = 0;
  });
}

}  // namespace wgi::cli
