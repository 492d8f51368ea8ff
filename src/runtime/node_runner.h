// Runs a single node on the GPU: plan it, upload its inputs, dispatch, download its outputs.
// Used by the kernel tests, the ONNX node conformance runner, benchmarks and `wgi selftest`; a Session runs
// whole graphs.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/commands.h"
#include "gpu/device.h"
#include "gpu/profiler.h"
#include "ops/op.h"
#include "ops/registry.h"
#include "runtime/run_status.h"
#include "wgi/tensor.h"

namespace wgi::runtime {

struct NodeInput {
  Tensor value;
  // Known when the model is planned (an initializer): ops may prepack it, as they would in a real model.
  bool constant = false;
};

struct NodeRunOptions {
  // Fill outputs and scratch buffers with a NaN pattern first, so that elements a kernel forgot to write, or
  // scratch it reads before writing, cannot look right; likewise the bytes past each input and constant in
  // its buffer (buffers are whole 16-byte units), which no kernel may read.
  bool poison_outputs = true;
  // Plan as if the device had these capabilities instead of its own (which still bound what runs). Tests use
  // a small maxComputeWorkgroupsPerDimension to exercise grid folding without dispatching 65536+ workgroups.
  std::optional<gpu::Capabilities> capabilities;
  // GEMM preferences for the planner (ops/gemm_tuning.h); null: the rules alone.
  const ops::GemmTuning* gemm_tuning = nullptr;
};

// Plans the node with the registry's handler (throws wgi::Error saying why if it is not supported).
ops::OpPlan plan_node(const gpu::Capabilities& caps, const ops::NodeInfo& node,
                      std::span<const std::optional<NodeInput>> inputs,
                      const ops::OpRegistry& registry = ops::builtin_registry(),
                      const ops::GemmTuning* gemm_tuning = nullptr);

// A node planned, with its buffers allocated, inputs uploaded and dispatches bound: ready to run any number
// of times (benchmarks encode it repeatedly).
class PreparedNode {
 public:
  PreparedNode(gpu::Device& device, const ops::NodeInfo& node,
               std::span<const std::optional<NodeInput>> inputs, const NodeRunOptions& options = {},
               const ops::OpRegistry& registry = ops::builtin_registry());

  const ops::OpPlan& plan() const { return plan_; }
  // Appends the node's dispatches to `batch` (no submit).
  void encode(gpu::CommandBatch& batch) const;
  // The same, each dispatch in a pass of its own timed into `profiler` slots first_slot, first_slot + 1, ...
  void encode_timed(gpu::CommandBatch& batch, gpu::TimestampProfiler& profiler, uint32_t first_slot) const;
  size_t dispatch_count() const { return dispatches_.size(); }
  // Encodes, submits and downloads the outputs. Both throw the data error a kernel recorded in the run
  // status (runtime/run_status.h), as a Session's run does.
  std::vector<Tensor> run();
  std::vector<Tensor> read_outputs();

 private:
  gpu::Device& device_;
  ops::NodeInfo node_;
  ops::OpPlan plan_;
  std::unique_ptr<RunStatus> status_;  // when a launch binds it
  std::vector<std::unique_ptr<gpu::Buffer>> owned_;
  std::vector<gpu::BufferSlice> outputs_;
  std::vector<gpu::BoundDispatch> dispatches_;
};

std::vector<Tensor> run_node(gpu::Device& device, const ops::NodeInfo& node,
                             std::span<const std::optional<NodeInput>> inputs,
                             const NodeRunOptions& options = {},
                             const ops::OpRegistry& registry = ops::builtin_registry());

}  // namespace wgi::runtime
