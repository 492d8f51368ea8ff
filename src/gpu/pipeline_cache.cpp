#include "gpu/pipeline_cache.h"

#include <webgpu/webgpu.h>

#include <sstream>
#include <unordered_set>

#include "gpu/device.h"
#include "gpu/webgpu_util.h"
#include "wgi/error.h"

namespace wgi::gpu {

ComputePipeline::ComputePipeline(WGPUComputePipelineImpl* pipeline, WGPUBindGroupLayoutImpl* layout,
                                 std::string label, std::vector<BindingKind> bindings)
    : pipeline_(pipeline), layout_(layout), label_(std::move(label)), bindings_(std::move(bindings)) {}

ComputePipeline::~ComputePipeline() {
  if (pipeline_) wgpuComputePipelineRelease(pipeline_);
  if (layout_) wgpuBindGroupLayoutRelease(layout_);
}

namespace {

std::string source_line(const std::string& text, uint64_t line_number) {
  std::istringstream in(text);
  std::string line;
  for (uint64_t i = 1; std::getline(in, line); ++i) {
    if (i == line_number) return line;
  }
  return {};
}

struct ScopeResult {
  bool done = false;
  WGPUErrorType type = WGPUErrorType_NoError;
  std::string message;
};

// Pops the error scope pushed before an operation and returns its error, if any.
std::string pop_error_scope(Device& device) {
  ScopeResult result;
  WGPUPopErrorScopeCallbackInfo callback = {};
  callback.mode = WGPUCallbackMode_AllowProcessEvents;
  callback.callback = [](WGPUPopErrorScopeStatus, WGPUErrorType type, WGPUStringView msg, void* user, void*) {
    auto* r = static_cast<ScopeResult*>(user);
    r->type = type;
    r->message = to_std_string(msg);
    r->done = true;
  };
  callback.userdata1 = &result;
  wgpuDevicePopErrorScope(device.handle(), callback);
  device.wait_until(result.done);
  if (result.type == WGPUErrorType_NoError) return {};
  return result.message.empty() ? std::string("unknown error") : result.message;
}

}  // namespace

PipelineCache::Key PipelineCache::key_of(const ProgramSource& p) {
  Key key;
  key.layout += p.entry_point;
  key.layout += '\x1f';
  for (BindingKind b : p.bindings) key.layout += static_cast<char>('0' + static_cast<int>(b));
  key.layout += '\x1f';
  for (const auto& [name, value] : p.constants) {
    std::ostringstream v;
    v.precision(17);
    v << value;
    key.layout += name + "=" + v.str() + ";";
  }
  key.text = p.wgsl;
  return key;
}

size_t PipelineCache::KeyHash::operator()(const Key& key) const {
  return std::hash<std::string>{}(key.layout) * 31 + key.text.hash();
}

const ComputePipeline& PipelineCache::get(const ProgramSource& program) {
  Key key = key_of(program);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) {
    ++hits_;
    return *it->second;
  }
  ++misses_;
  auto pipeline = create(program);
  return *pipelines_.emplace(std::move(key), std::move(pipeline)).first->second;
}

namespace {

// Everything a pipeline needs except the pipeline itself: the checked shader module and the layouts.
struct PreparedProgram {
  WGPUShaderModule module = nullptr;
  WGPUBindGroupLayout bind_group_layout = nullptr;
  WGPUPipelineLayout layout = nullptr;
  std::vector<WGPUConstantEntry> constants;
};

void release(PreparedProgram& p) {
  if (p.layout) wgpuPipelineLayoutRelease(p.layout);
  if (p.module) wgpuShaderModuleRelease(p.module);
  p.layout = nullptr;
  p.module = nullptr;
}

WGPUComputePipelineDescriptor pipeline_descriptor(const ProgramSource& program, const PreparedProgram& p) {
  WGPUComputePipelineDescriptor desc = {};
  desc.label = to_string_view(program.label);
  desc.layout = p.layout;
  desc.compute.module = p.module;
  desc.compute.entryPoint = to_string_view(program.entry_point);
  desc.compute.constantCount = p.constants.size();
  desc.compute.constants = p.constants.data();
  return desc;
}

// Compiles the WGSL (collecting its messages so that an error names the kernel, the line and the code there)
// and creates the explicit layout: storage bindings in order, then the uniform. Explicit layouts also keep
// bindings that a shader variant does not statically use.
PreparedProgram prepare(Device& device, const ProgramSource& program) {
  WGPUDevice dev = device.handle();
  device.check_errors();
  WGPUShaderSourceWGSL wgsl = {};
  wgsl.chain.sType = WGPUSType_ShaderSourceWGSL;
  wgsl.code = to_string_view(program.wgsl.str());
  WGPUShaderModuleDescriptor module_desc = {};
  module_desc.nextInChain = &wgsl.chain;
  module_desc.label = to_string_view(program.label);
  wgpuDevicePushErrorScope(dev, WGPUErrorFilter_Validation);
  PreparedProgram out;
  out.module = wgpuDeviceCreateShaderModule(dev, &module_desc);

  struct CompileResult {
    bool done = false;
    std::string errors;
  } compile;
  WGPUCompilationInfoCallbackInfo info_callback = {};
  info_callback.mode = WGPUCallbackMode_AllowProcessEvents;
  info_callback.callback = [](WGPUCompilationInfoRequestStatus, const WGPUCompilationInfo* info, void* user,
                              void* source) {
    auto* r = static_cast<CompileResult*>(user);
    const auto& text = *static_cast<const std::string*>(source);
    for (size_t i = 0; info && i < info->messageCount; ++i) {
      const WGPUCompilationMessage& m = info->messages[i];
      if (m.type != WGPUCompilationMessageType_Error) continue;
      r->errors += "\n  line " + std::to_string(m.lineNum) + ":" + std::to_string(m.linePos) + ": " +
                   to_std_string(m.message);
      std::string line = source_line(text, m.lineNum);
      if (!line.empty()) r->errors += "\n    | " + line;
    }
    r->done = true;
  };
  info_callback.userdata1 = &compile;
  info_callback.userdata2 = const_cast<std::string*>(&program.wgsl.str());
  wgpuShaderModuleGetCompilationInfo(out.module, info_callback);
  device.wait_until(compile.done);
  std::string scope_error = pop_error_scope(device);
  if (!compile.errors.empty() || !scope_error.empty()) {
    release(out);
    throw Error("WGSL of kernel '" + program.label +
                "' does not compile:" + (compile.errors.empty() ? "\n  " + scope_error : compile.errors));
  }

  std::vector<WGPUBindGroupLayoutEntry> entries(program.bindings.size());
  for (size_t i = 0; i < program.bindings.size(); ++i) {
    WGPUBindGroupLayoutEntry& e = entries[i];
    e = {};
    e.binding = static_cast<uint32_t>(i);
    e.visibility = WGPUShaderStage_Compute;
    switch (program.bindings[i]) {
      case BindingKind::ReadOnlyStorage:
        e.buffer.type = WGPUBufferBindingType_ReadOnlyStorage;
        break;
      case BindingKind::Storage:
        e.buffer.type = WGPUBufferBindingType_Storage;
        break;
      case BindingKind::Uniform:
        e.buffer.type = WGPUBufferBindingType_Uniform;
        break;
    }
  }
  wgpuDevicePushErrorScope(dev, WGPUErrorFilter_Validation);
  WGPUBindGroupLayoutDescriptor bgl_desc = {};
  bgl_desc.label = to_string_view(program.label);
  bgl_desc.entryCount = entries.size();
  bgl_desc.entries = entries.data();
  out.bind_group_layout = wgpuDeviceCreateBindGroupLayout(dev, &bgl_desc);
  WGPUPipelineLayoutDescriptor pl_desc = {};
  pl_desc.bindGroupLayoutCount = 1;
  pl_desc.bindGroupLayouts = &out.bind_group_layout;
  out.layout = wgpuDeviceCreatePipelineLayout(dev, &pl_desc);
  std::string layout_error = pop_error_scope(device);
  if (!layout_error.empty()) {
    release(out);
    if (out.bind_group_layout) wgpuBindGroupLayoutRelease(out.bind_group_layout);
    throw Error("cannot create the layout of kernel '" + program.label + "': " + layout_error);
  }
  out.constants.resize(program.constants.size());
  for (size_t i = 0; i < out.constants.size(); ++i) {
    out.constants[i] = {};
    out.constants[i].key = to_string_view(program.constants[i].first);
    out.constants[i].value = program.constants[i].second;
  }
  return out;
}

}  // namespace

std::unique_ptr<ComputePipeline> PipelineCache::create(const ProgramSource& program) {
  PreparedProgram p = prepare(device_, program);
  wgpuDevicePushErrorScope(device_.handle(), WGPUErrorFilter_Validation);
  WGPUComputePipelineDescriptor desc = pipeline_descriptor(program, p);
  WGPUComputePipeline pipeline = wgpuDeviceCreateComputePipeline(device_.handle(), &desc);
  std::string error = pop_error_scope(device_);
  release(p);
  if (!error.empty() || !pipeline) {
    if (pipeline) wgpuComputePipelineRelease(pipeline);
    wgpuBindGroupLayoutRelease(p.bind_group_layout);
    throw Error("cannot create the compute pipeline of kernel '" + program.label + "': " + error);
  }
  return std::make_unique<ComputePipeline>(pipeline, p.bind_group_layout, program.label, program.bindings);
}

void PipelineCache::prefetch(std::span<const ProgramSource* const> programs) {
  struct Pending {
    const ProgramSource* program;
    Key key;
    PreparedProgram prepared;
    bool done = false;
    WGPUComputePipeline pipeline = nullptr;
    std::string message;
  };
  std::vector<std::unique_ptr<Pending>> pending;
  std::unordered_set<Key, KeyHash> seen;
  std::string first_error;
  for (const ProgramSource* program : programs) {
    Key key = key_of(*program);
    if (pipelines_.count(key) || !seen.insert(key).second) continue;
    auto p = std::make_unique<Pending>();
    p->program = program;
    p->key = std::move(key);
    try {
      p->prepared = prepare(device_, *program);
    } catch (const Error& e) {
      if (first_error.empty()) first_error = e.what();
      continue;
    }
    WGPUCreateComputePipelineAsyncCallbackInfo callback = {};
    callback.mode = WGPUCallbackMode_AllowProcessEvents;
    callback.callback = [](WGPUCreatePipelineAsyncStatus status, WGPUComputePipeline pipeline,
                           WGPUStringView message, void* user, void*) {
      auto* r = static_cast<Pending*>(user);
      r->pipeline = status == WGPUCreatePipelineAsyncStatus_Success ? pipeline : nullptr;
      r->message = to_std_string(message);
      r->done = true;
    };
    callback.userdata1 = p.get();
    WGPUComputePipelineDescriptor desc = pipeline_descriptor(*program, p->prepared);
    wgpuDeviceCreateComputePipelineAsync(device_.handle(), &desc, callback);
    pending.push_back(std::move(p));
  }
  // Dawn compiles the pipelines on its worker threads meanwhile; collect them all before reporting an error,
  // so that no callback outlives its state.
  for (auto& p : pending) {
    device_.wait_until(p->done);
    release(p->prepared);
    if (!p->pipeline) {
      wgpuBindGroupLayoutRelease(p->prepared.bind_group_layout);
      if (first_error.empty()) {
        first_error =
            "cannot create the compute pipeline of kernel '" + p->program->label + "': " + p->message;
      }
      continue;
    }
    ++misses_;
    pipelines_.emplace(p->key, std::make_unique<ComputePipeline>(p->pipeline, p->prepared.bind_group_layout,
                                                                 p->program->label, p->program->bindings));
  }
  if (!first_error.empty()) throw Error(first_error);
}

}  // namespace wgi::gpu
