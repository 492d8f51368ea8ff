// A model planned for one set of input shapes: every node's kernels chosen, activations placed in shared
// buffers, weights and prepacked constants on the device, pipelines and bind groups created. Running it is
// only: upload inputs, encode the dispatches, submit, download outputs.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/commands.h"
#include "gpu/device.h"
#include "gpu/profiler.h"
#include "graph/graph.h"
#include "ops/registry.h"

namespace wgi::runtime {

// Device copies of the graph's constant values, shared by every plan of a session (uploaded on first use).
class WeightStore {
 public:
  explicit WeightStore(gpu::Device& device) : device_(device) {}
  const gpu::Buffer& get(const graph::Graph& graph, graph::ValueId value);
  uint64_t bytes() const { return bytes_; }

 private:
  gpu::Device& device_;
  std::map<graph::ValueId, gpu::Buffer> buffers_;
  uint64_t bytes_ = 0;
};

// A graph input as the planner sees it: its description, and its value when that is small enough to plan with
// (see host_visible): shape-like inputs (a Reshape target, Slice starts, Resize scales fed as graph inputs)
// must be known when kernels are chosen. A Session makes such values part of the plan's key.
struct PlanInput {
  ops::TensorDesc desc;
  const Tensor* value = nullptr;
};

// Inputs of at most this many elements are given to the planner by value.
inline constexpr int64_t kHostVisibleInputElements = 64;
inline bool host_visible(const Tensor& t) {
  return t.element_count() <= kHostVisibleInputElements;
}

// Shapes, host-folded values and per-node kernel plans of a graph for given input shapes: pure C++, no GPU,
// so `wgi check` can run it without a device.
struct NodePlans {
  std::vector<ops::TensorDesc> descs;              // per value
  std::vector<std::optional<Tensor>> host_values;  // per value: folded at plan time (shape arithmetic)
  struct GpuNode {
    size_t node;
    ops::OpPlan plan;
  };
  std::vector<GpuNode> gpu_nodes;
};

// Plans every node. With `errors` null, the first failing node throws; otherwise each failure is appended
// (prefixed by the node's description) and planning continues with the nodes that do not depend on it.
NodePlans plan_nodes(const graph::Graph& graph, const ops::OpRegistry& registry,
                     const gpu::Capabilities& caps, const std::vector<PlanInput>& inputs,
                     const std::function<void(size_t, size_t)>& progress,
                     std::vector<std::string>* errors = nullptr);

struct PlannedStep {
  size_t node = 0;  // index into graph.nodes
  std::string kernel;
  size_t first_dispatch = 0;
  size_t dispatch_count = 0;
};

class ExecutionPlan {
 public:
  // Plans `graph` for these input shapes. `progress` (may be empty) gets (done, total) over the nodes.
  ExecutionPlan(gpu::Device& device, const graph::Graph& graph, const ops::OpRegistry& registry,
                WeightStore& weights, const std::vector<PlanInput>& inputs,
                const std::function<void(size_t, size_t)>& progress);

  // Uploads `inputs` (in graph input order), runs every dispatch in one submission, downloads the outputs (in
  // graph output order). With a profiler, each dispatch is timed.
  std::vector<Tensor> run(const std::vector<const Tensor*>& inputs, gpu::TimestampProfiler* profiler);

  const std::vector<PlannedStep>& steps() const { return steps_; }
  size_t dispatch_count() const { return dispatches_.size(); }
  uint64_t activation_bytes() const { return activation_bytes_; }
  uint64_t prepacked_bytes() const { return prepacked_bytes_; }

 private:
  gpu::Device& device_;
  const graph::Graph& graph_;
  std::vector<ops::TensorDesc> descs_;              // per value
  std::vector<std::optional<Tensor>> host_values_;  // per value: folded at plan time
  std::vector<gpu::BufferSlice> locations_;         // per value: where it lives on the device
  std::vector<gpu::BufferSlice> output_locations_;  // per graph output (empty slice: a host value)
  std::vector<std::unique_ptr<gpu::Buffer>>
      owned_;  // activation buffers, inputs, prepacked and folded constants
  std::vector<gpu::BoundDispatch> dispatches_;
  std::vector<PlannedStep> steps_;
  uint64_t activation_bytes_ = 0;
  uint64_t prepacked_bytes_ = 0;
};

}  // namespace wgi::runtime
