// Compute pipelines, created once per distinct program text and reused.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpu/handles.h"
#include "gpu/shader_text.h"

namespace wgi::gpu {

class Device;

// How a shader declares @group(0) @binding(i), one entry per binding in @binding order. The uniform (at
// most one) may sit anywhere: usually last, but a fused residual input is bound after it.
enum class BindingKind { ReadOnlyStorage, Storage, Uniform };

// Everything that determines a compute pipeline. The cache key is built from all of it except the label,
// so nothing that changes the compiled code can be missing from the key.
struct ProgramSource {
  std::string label;  // kernel name, used in error messages and profiles
  ShaderText wgsl;    // complete, preprocessed shader text, shared by the launches of one kernel variant
  std::string entry_point = "main";
  std::vector<std::pair<std::string, double>> constants;  // values for WGSL `override` declarations
  std::vector<BindingKind> bindings;
};

class ComputePipeline {
 public:
  ComputePipeline(WGPUComputePipelineImpl* pipeline, WGPUBindGroupLayoutImpl* layout, std::string label,
                  std::vector<BindingKind> bindings);
  ~ComputePipeline();
  ComputePipeline(const ComputePipeline&) = delete;
  ComputePipeline& operator=(const ComputePipeline&) = delete;

  WGPUComputePipelineImpl* handle() const { return pipeline_; }
  WGPUBindGroupLayoutImpl* bind_group_layout() const { return layout_; }
  const std::string& label() const { return label_; }
  const std::vector<BindingKind>& bindings() const { return bindings_; }

 private:
  WGPUComputePipelineImpl* pipeline_;
  WGPUBindGroupLayoutImpl* layout_;
  std::string label_;
  std::vector<BindingKind> bindings_;
};

class PipelineCache {
 public:
  explicit PipelineCache(Device& device) : device_(device) {}

  // Returns the cached pipeline for this program, creating it on first use. Throws wgi::Error naming the
  // kernel and the WGSL line when the shader does not compile or the pipeline cannot be created.
  const ComputePipeline& get(const ProgramSource& program);
  // Creates every program not cached yet, all at once: Dawn compiles them asynchronously (in parallel where
  // its backend can), which shortens a model's first run. Throws like get() for the first program that fails.
  void prefetch(std::span<const ProgramSource* const> programs);

  size_t size() const { return pipelines_.size(); }
  size_t hits() const { return hits_; }
  size_t misses() const { return misses_; }

 private:
  // A program's identity: everything but the label. The text is held by handle (the plans' copy) and hashed
  // once, so looking a launch up neither copies nor rehashes its text.
  struct Key {
    std::string layout;  // entry point, binding kinds, override constants
    ShaderText text;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  static Key key_of(const ProgramSource& program);

  std::unique_ptr<ComputePipeline> create(const ProgramSource& program);

  Device& device_;
  std::unordered_map<Key, std::unique_ptr<ComputePipeline>, KeyHash> pipelines_;
  size_t hits_ = 0;
  size_t misses_ = 0;
};

}  // namespace wgi::gpu
