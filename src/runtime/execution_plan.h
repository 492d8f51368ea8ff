// A model planned for one set of input shapes: every node's kernels chosen, activations placed in shared
// buffers, weights and prepacked constants on the device, pipelines and bind groups created. Running it is
// only: upload inputs, encode the dispatches, submit, download outputs.
#pragma once

#include <algorithm>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/commands.h"
#include "gpu/device.h"
#include "gpu/profiler.h"
#include "graph/graph.h"
#include "ops/data_dependent.h"
#include "ops/registry.h"
#include "runtime/run_status.h"

namespace wgi::runtime {

class UnrolledNodes;  // runtime/loop_unrolling.h

// Device copies of the graph's constant values, shared by every plan of a session (uploaded on first use).
class WeightStore {
 public:
  explicit WeightStore(gpu::Device& device) : device_(device) {}
  const gpu::Buffer& get(const graph::Graph& graph, graph::ValueId value);
  uint64_t bytes() const { return bytes_; }
  double upload_ms() const { return upload_ms_; }  // spent creating and filling weight buffers so far

 private:
  gpu::Device& device_;
  std::map<graph::ValueId, gpu::Buffer> buffers_;
  uint64_t bytes_ = 0;
  double upload_ms_ = 0;
};

// Where an ExecutionPlan's construction spent its time (milliseconds): what cold start is made of.
struct PlanPhases {
  double kernel_plans = 0;    // shapes, kernel choice and host prepacking of every node
  double memory = 0;          // lifetimes, the memory plan, activation and input buffers
  double pipelines = 0;       // shader modules and compute pipelines (compiled concurrently by Dawn)
  double weight_uploads = 0;  // weights uploaded at first use (the first plan uploads them all)
  double bind = 0;            // prepacked constants uploaded, bind groups and uniforms, minus the above
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

// A node's kernel plan shared by the ExecutionPlans whose inputs to that node look the same (PlanSharing).
// Its constants (prepacked weights) are uploaded by the first ExecutionPlan that binds it, then dropped from
// the host: later plans bind the same device buffers. Its pipelines are looked up once, and its bound
// dispatches are kept by the buffers they bind, for plans that bind the same ones.
struct SharedNodePlan {
  ops::OpPlan plan;
  bool constants_uploaded = false;
  std::vector<std::shared_ptr<const gpu::Buffer>> constant_buffers;
  std::vector<const gpu::ComputePipeline*> pipelines;  // per launch, once bound
  struct BoundBuffer {
    WGPUBufferImpl* handle;  // the bind group keeps it alive, so no other buffer can have it meanwhile
    uint64_t offset, size;
    bool operator==(const BoundBuffer&) const = default;
  };
  struct CachedDispatch {
    std::vector<BoundBuffer> bound;
    std::shared_ptr<gpu::BoundDispatch> dispatch;
  };
  std::vector<std::list<CachedDispatch>> dispatches;  // per launch, most recently used first
};

// A node's latest planning in a session (plan_nodes, with sharing): what its planner saw of its inputs and
// what came of it. The next planning of that node whose inputs are the same (types, shapes and plan-time
// values of every input that is not a graph constant) takes the result instead of running the node's host
// evaluation, plan-key lookup or planner again: a decoder step replans only the nodes its longer past
// reaches (docs/decoding.md, "Unchanged nodes"). Everything else a planner sees is the same by construction
// for one session's nodes (PlanSharing::latest_planning says why).
struct PlannedNodeRecord {
  // Per node input, aligned with node.inputs (entries of absent inputs and graph constants unused).
  std::vector<ops::TensorDesc> input_descs;
  std::vector<std::optional<Tensor>> input_values;
  bool folded = false;
  // Folded: every output's description and host value (aligned with node.outputs).
  std::vector<ops::TensorDesc> output_descs;
  std::vector<std::optional<Tensor>> output_values;
  // A GPU node's plan. Weak: the record keeps no plan alive that neither a plan nor the node-plan LRU holds
  // (its prepacked constants stay counted as before); an expired one is planned again.
  std::weak_ptr<SharedNodePlan> plan;
};

// What the plans of one session share.
// - Kernel plans by node and by what the planner saw of the node's inputs (types, shapes, and the values
// known
//   at plan time). Op plan functions are pure (docs/architecture.md), so equal inputs give an equal plan: a
//   decoder step with a longer past replans only the nodes whose inputs changed (attention, concat, the
//   mask), and reuses the projections' plans with their prepacked weights. At most `per_node` entries per
//   node, least recently used dropped first; plans that use an entry keep it alive.
// - Plan constants by content (constant_buffer).
// - Activation buffers: runs never overlap and no activation outlives its run, so every plan may use the same
//   buffers; buffer b of the memory plan is the session's buffer b, grown (to a pool size class) when a plan
//   needs it larger. Plans binding the same buffers can then share bound dispatches (SharedNodePlan).
class PlanSharing {
 public:
  explicit PlanSharing(size_t per_node) : per_node_(std::max<size_t>(1, per_node)) {}
  // Nodes are the session's graph's (which never changes), in graph.nodes or in a subgraph.
  std::shared_ptr<SharedNodePlan> find(const graph::Node* node, const std::string& key);
  void insert(const graph::Node* node, std::string key, std::shared_ptr<SharedNodePlan> plan);
  size_t size() const;
  size_t per_node() const { return per_node_; }

  // The session's activation buffer `index`, at least `bytes` long.
  std::shared_ptr<gpu::Buffer> activation_buffer(gpu::Device& device, size_t index, uint64_t bytes);

  // The device copy of a plan constant, shared by content: node plans made for different input shapes
  // (a decoder's prompt step and its one-token steps) often prepack a weight identically, and then hold one
  // copy. Identified by type, shape and a 128-bit hash of the bytes.
  std::shared_ptr<const gpu::Buffer> constant_buffer(gpu::Device& device, const Tensor& constant,
                                                     const std::string& label);
  // Device bytes of the constants that plans hold now.
  uint64_t constant_bytes();

  // The latest planning of `node` (a node of the session's graph or of an If branch in it, not of an
  // unrolled Loop or Scan), or null; only while reuse_unchanged_nodes. A planner's result is a function of
  // what PlannedNodeRecord compares and of the node (its attributes and run-status tag: the same node), the
  // device's capabilities (one device per session), the registry (the builtin one) and the GEMM tuning table
  // (which gains entries only for problems no plan has planned yet, and is replaced with these records when
  // Session::tune changes it), so a record whose inputs match is the plan the planner would make again.
  PlannedNodeRecord* latest_planning(const graph::Node* node);
  void record_planning(const graph::Node* node, PlannedNodeRecord record);
  // Off: every node is planned again at every planning (SessionOptions::reuse_unchanged_nodes, to compare).
  bool reuse_unchanged_nodes = true;

  // Every node's run-status tag in `graph` (its position in nodes_by_tag, from 1), computed once per graph.
  const std::unordered_map<const graph::Node*, uint32_t>& status_tags(const graph::Graph& graph);

 private:
  size_t per_node_;
  std::unordered_map<const graph::Node*, PlannedNodeRecord> latest_;
  std::unordered_map<const graph::Node*, std::list<std::pair<std::string, std::shared_ptr<SharedNodePlan>>>>
      entries_;
  std::unordered_map<std::string, std::weak_ptr<const gpu::Buffer>> constants_;
  std::vector<std::shared_ptr<gpu::Buffer>> activations_;
  const graph::Graph* tagged_graph_ = nullptr;
  std::unordered_map<const graph::Node*, uint32_t> status_tags_;
};

// Every node's run-status tag in `graph`: its position in nodes_by_tag, from 1.
std::unordered_map<const graph::Node*, uint32_t> status_tags_of(const graph::Graph& graph);

// Shapes, host-folded values and per-node kernel plans of a graph for given input shapes: pure C++, no GPU,
// so `wgi check` can run it without a device.
struct NodePlans {
  std::vector<ops::TensorDesc> descs;              // per value
  std::vector<std::optional<Tensor>> host_values;  // per value: folded at plan time (shape arithmetic)
  struct GpuNode {
    const graph::Node* node;  // in graph.nodes, in an If's branch, or in `unrolled` (a Loop's iteration)
    ops::OpPlan plan;         // without sharing
    std::shared_ptr<SharedNodePlan> shared;  // with sharing (then `plan` is empty)
    bool reused = false;                     // `shared` was planned for an earlier plan
    bool unchanged = false;  // taken from the node's latest planning, its inputs the same (PlannedNodeRecord)
    const ops::OpPlan& op_plan() const { return shared ? shared->plan : plan; }
  };
  std::vector<GpuNode> gpu_nodes;
  size_t reused = 0;      // gpu_nodes whose plan was planned for an earlier plan
  size_t host_nodes = 0;  // nodes computed on the host (folded), in If branches too
  // Of gpu_nodes and host_nodes: taken unchanged from their latest planning (no host evaluation, key or
  // planner), and the others (evaluated on the host, or looked up by key and planned if new).
  size_t unchanged = 0;
  size_t replanned = 0;
  // An If planned as its taken branch: its output `value` is the branch's output `source` (the same memory,
  // or the same host value), for the nodes from gpu_nodes[step] on.
  struct Alias {
    size_t step;
    graph::ValueId value, source;
  };
  std::vector<Alias> aliases;  // in step order
  // The nodes and values of unrolled Loops and Scans (their iterations' bodies): gpu_nodes may point at its
  // nodes, and descs / host_values cover its values (numbered after the graph's).
  std::shared_ptr<const UnrolledNodes> unrolled;
};

// Every node of the graph and of its subgraphs, in a fixed order (each node, then its subgraphs' nodes): the
// node with run-status tag t (ops::PlanContext::status_tag) is element t - 1.
std::vector<const graph::Node*> nodes_by_tag(const graph::Graph& graph);
// The node with that tag, or null.
const ops::NodeInfo* node_of_tag(const graph::Graph& graph, uint32_t tag);

// A part of the graph planned and run on its own, for graphs with data-dependent shapes
// (docs/dynamic_shapes.md): the nodes graph.nodes[first_node, end), given `inputs` (graph inputs and values
// that earlier stages computed) instead of graph.inputs, returning `outputs` instead of graph.outputs.
struct StageValues {
  std::vector<graph::ValueId> inputs;
  std::vector<graph::ValueId> outputs;
};

// Where plan_nodes ended a stage (ops/data_dependent.h): before a node that needs a value computed on the
// GPU (DataDependence::value_inputs; `read_back` lists them), or after a node with data-dependent outputs
// (DataDependence::outputs; `data_dependent` is that node, graph.nodes[end - 1]).
// `descend`: the node at `end` (an If, Loop or Scan) needs a read-back inside its subgraph (ReadBackInside,
// loop_unrolling.h): the stage ends before it and the staged runner runs its subgraph scope by scope.
struct StageEnd {
  size_t end = 0;
  std::vector<graph::ValueId> read_back;
  const graph::Node* data_dependent = nullptr;
  bool descend = false;
};

// Plans every node. With `errors` null, the first failing node throws; otherwise each failure is appended
// (prefixed by the node's description) and planning continues with the nodes that do not depend on it. With
// `sharing`, node plans are looked up there first and new ones are added.
// `gemm_tuning` (may be null) is handed to every op's planner (ops::PlanContext::gemm_tuning).
// With `stage_end` (and errors null), planning stops where the graph must be split (see StageEnd) and says
// where there; without it, data-dependent outputs are planned at their upper bounds (enough for checks) and
// a value needed on the host that the GPU computes is an error, as before. `first_node` and `stage_inputs`
// (aligned with `inputs`; null: graph.inputs) plan a later stage; `nodes` (null: graph.nodes) are the
// nodes planned, a subgraph's when the staged runner runs it scope by scope.
NodePlans plan_nodes(const graph::Graph& graph, const ops::OpRegistry& registry,
                     const gpu::Capabilities& caps, const std::vector<PlanInput>& inputs,
                     const std::function<void(size_t, size_t)>& progress,
                     std::vector<std::string>* errors = nullptr, PlanSharing* sharing = nullptr,
                     const ops::GemmTuning* gemm_tuning = nullptr,
                     std::optional<StageEnd>* stage_end = nullptr, size_t first_node = 0,
                     const std::vector<graph::ValueId>* stage_inputs = nullptr,
                     const std::vector<graph::Node>* nodes = nullptr);

// Where a run takes one graph input from: a host tensor (uploaded), or device memory in the device layout.
// `content_id` names immutable device contents (a DeviceTensor). An input the plan was made with from the
// device stays bound where it is for as long as runs pass the same content; otherwise the input moves to a
// buffer of the plan (once: its dispatches are bound again) and device contents are copied there on the GPU,
// unless the previous run copied the same content.
struct InputSource {
  const Tensor* host = nullptr;
  gpu::BufferSlice device;
  uint64_t content_id = 0;
};

struct PlannedStep {
  const graph::Node* node = nullptr;  // in graph.nodes, in an If's branch, or of an unrolled Loop or Scan
  std::string kernel;
  size_t first_dispatch = 0;
  size_t dispatch_count = 0;
};

// What ExecutionPlan::respecialize found.
enum class Respecialized {
  Done,           // the plan now serves the new sizes
  OtherKernels,   // a node plans other kernels (or another structure): a full plan is needed
  NeedsMoreRoom,  // the same kernels, but an activation or scratch region is too small: plan with headroom
};

class ExecutionPlan;

// The room a new plan leaves its regions (activations, scratch, folded values, inputs) for later sizes, so
// that those respecialize it instead of being planned again.
struct PlanRoom {
  // A plan with the same kernels that had no room for these sizes (Respecialized::NeedsMoreRoom): the
  // regions that grew since it get twice their size.
  const ExecutionPlan* grown_from = nullptr;
  // The node plans for the largest sizes expected (SessionOptions::growing_dims): every region gets at
  // least the size it has there.
  const NodePlans* capacity = nullptr;
};

class ExecutionPlan {
 public:
  // Plans `graph` with its node plans (plan_nodes; `kernel_plans_ms` is the time they took, for the phase
  // report). With `sharing`, node plans, constants, activation buffers and bound dispatches are shared with
  // the session's other plans (PlanSharing). An input whose `sources` entry is device memory with a content
  // id (a DeviceTensor) is bound where it lives instead of getting a buffer of the plan (see InputSource).
  // `room`: what room to leave for later sizes (PlanRoom). `run_status` is the session's (shared by its
  // plans, so that any plan's download reports an error of an earlier run that kept its outputs on the
  // device); null: the plan makes its own if a kernel needs one. `stage`: the plan of one stage (StageValues;
  // its inputs and outputs instead of the graph's). A node with data-dependent outputs must be its last
  // (their readers need the real shapes): its extent is read back with the outputs (extent()).
  ExecutionPlan(gpu::Device& device, const graph::Graph& graph, WeightStore& weights, NodePlans planned,
                double kernel_plans_ms, PlanSharing* sharing = nullptr,
                std::span<const InputSource> sources = {}, PlanRoom room = {},
                RunStatus* run_status = nullptr, const StageValues* stage = nullptr);

  // The same without sharing, planning the nodes first: for tests and tools that run a graph as it is.
  ExecutionPlan(gpu::Device& device, const graph::Graph& graph, const ops::OpRegistry& registry,
                WeightStore& weights, const std::vector<PlanInput>& inputs,
                const std::function<void(size_t, size_t)>& progress);

  // Makes this plan serve other input sizes (docs/decoding.md, "Respecialized plans") when `planned` (the
  // node plans for them, made with the same sharing) chooses the same kernels for the same nodes, with the
  // same prepacked constants, and every region fits: only uniforms, grids and folded values change; the
  // pipelines, buffers and bind groups stay. Leaves the plan unchanged unless it returns Done. Needs sharing.
  Respecialized respecialize(NodePlans& planned, std::span<const InputSource> sources);

  std::vector<Tensor> run(const std::vector<const Tensor*>& inputs, gpu::TimestampProfiler* profiler);
  // The same with inputs from the host or the device, and outputs optionally copied into device memory:
  // output o goes to `device_outputs[o]` when that has a buffer (at least output_bytes(o) long; the copy is
  // part of the run's submission), else it is downloaded. Returns the downloaded outputs (empty tensors for
  // the others). Without downloads, returns once the work is submitted. A run that downloads also reads the
  // run status and throws the first data error a kernel recorded (runtime/run_status.h), of this run or of
  // earlier ones that downloaded nothing. `while_gpu_runs` (may be empty) is called once the work is
  // submitted, before waiting for the downloads: host work that overlaps the GPU's. Outputs flagged in
  // `unused` (empty: none) are neither downloaded nor copied (RunOptions::outputs left them out).
  std::vector<Tensor> run(std::span<const InputSource> inputs,
                          std::span<const gpu::BufferSlice> device_outputs, gpu::TimestampProfiler* profiler,
                          const std::function<void()>& while_gpu_runs = {},
                          const std::vector<bool>& unused = {});

  const ops::TensorDesc& output_desc(size_t o) const {
    return descs_[static_cast<size_t>(output_values_.at(o))];
  }
  // The step with data-dependent outputs (a stage's last; null if none) and the extent its kernels wrote in
  // the last run.
  struct DataDependentStep {
    const graph::Node* node = nullptr;
    std::vector<ops::TensorDesc> outputs;  // as planned, at their upper bounds
    std::vector<ops::DataDependentOutput> data_dependent;
  };
  const DataDependentStep* data_dependent_step() const { return extent_step_ ? &data_dependent_ : nullptr; }
  uint32_t extent() const { return extent_; }
  const std::vector<PlannedStep>& steps() const { return steps_; }
  size_t dispatch_count() const { return dispatches_.size(); }
  uint64_t activation_bytes() const { return activation_bytes_; }
  size_t gpu_node_count() const { return steps_.size(); }
  size_t reused_node_plans() const { return reused_node_plans_; }
  const PlanPhases& phases() const { return phases_; }

 private:
  struct Builder;  // the constructor's phases (execution_plan.cpp)
  // The node plan's bound dispatch of `launch` for these slices: shared with an earlier plan that bound the
  // same buffers, or made now (the node plan keeps `capacity` per launch).
  std::shared_ptr<gpu::BoundDispatch> shared_dispatch(SharedNodePlan& node_plan, size_t launch,
                                                      const std::vector<gpu::BufferSlice>& slices,
                                                      size_t capacity);
  // Binds again the dispatches that bind an input marked in `moved` (it moved to its owned buffer).
  void rebind_moved_inputs(const std::vector<bool>& moved);
  // respecialize's steps.
  Respecialized same_kernels_as(NodePlans& planned);
  bool has_room_for(const NodePlans& planned) const;
  std::vector<bool> move_inputs(const NodePlans& planned, std::span<const InputSource> sources);
  void rewrite_dispatches(const NodePlans& planned);
  void rewrite_folded_values(const NodePlans& planned);
  // Where output o is read from, given where the inputs are in this run.
  gpu::BufferSlice output_source(size_t o, std::span<const gpu::BufferSlice> current) const;
  // A value of the graph or of an unrolled Loop or Scan.
  const graph::Value& value(graph::ValueId v) const;

  gpu::Device& device_;
  const graph::Graph& graph_;
  std::shared_ptr<const UnrolledNodes> unrolled_;  // keeps the nodes steps_ point at
  std::vector<graph::ValueId> input_values_;       // graph.inputs, or the stage's
  std::vector<graph::ValueId> output_values_;      // graph.outputs, or the stage's
  std::optional<size_t> extent_step_;              // a step with data-dependent outputs
  DataDependentStep data_dependent_;
  std::unique_ptr<gpu::Buffer> extent_buffer_;
  uint32_t extent_ = 0;
  PlanPhases phases_;
  std::vector<ops::TensorDesc> descs_;              // per value
  std::vector<std::optional<Tensor>> host_values_;  // per value: folded at plan time
  std::vector<gpu::BufferSlice> locations_;         // per value: where it lives on the device
  std::vector<gpu::BufferSlice> output_locations_;  // per graph output (empty slice: a host value)
  std::vector<std::unique_ptr<gpu::Buffer>>
      owned_;  // activations without sharing, prepacked and folded constants
  std::vector<std::shared_ptr<gpu::Buffer>> activations_;  // the session's, with sharing
  std::vector<std::shared_ptr<SharedNodePlan>> shared_;    // shared node plans this plan binds
  struct InputSlot {
    uint64_t bytes = 0;
    bool used = false;    // a dispatch binds it or an output is it (else it is only planned with by value)
    bool direct = false;  // bound where the device input with `content_id` lives
    uint64_t room = 0;  // the bytes it may grow to (PlanRoom::capacity) when it moves to a buffer of the plan
    uint64_t content_id = 0;             // direct: what is bound; else: the device content last copied (or 0)
    std::unique_ptr<gpu::Buffer> owned;  // not direct: the input's buffer
  };
  std::vector<InputSlot> inputs_;  // per graph input
  // Dispatches that bind graph inputs, to bind again when an input moves to a buffer of the plan.
  struct InputDispatch {
    size_t dispatch = 0;
    const gpu::ComputePipeline* pipeline = nullptr;
    std::vector<gpu::BufferSlice> slices;
    std::vector<int> slot_input;  // per slice: the graph input it is, or -1
    std::vector<std::byte> uniform;
    gpu::WorkgroupCount groups;
  };
  std::vector<InputDispatch> input_dispatches_;
  std::vector<int> output_input_;  // per graph output: the graph input it is (its root), or -1
  std::vector<std::shared_ptr<gpu::BoundDispatch>>
      dispatches_;  // shared with other plans where they bind alike
  std::vector<PlannedStep> steps_;
  // For respecialize: the If aliases planned, each dispatch's step, launch and slices (and whether it belongs
  // to this plan alone, so that its uniform may be rewritten), the values with a region of their own, each
  // step's scratch, and host values uploaded for kernels.
  PlanSharing* sharing_ = nullptr;
  std::vector<NodePlans::Alias> aliases_;
  struct DispatchRecord {
    size_t step = 0, launch = 0;
    std::vector<gpu::BufferSlice> slices;
    bool owned = false;
    int input_record = -1;  // in input_dispatches_
  };
  std::vector<DispatchRecord> dispatch_records_;
  std::vector<size_t> region_values_;
  std::vector<std::vector<gpu::BufferSlice>> scratch_;
  std::vector<std::pair<size_t, const gpu::Buffer*>> folded_;
  RunStatus* run_status_ = nullptr;          // bound by some dispatch, or the session's; may be null
  std::unique_ptr<RunStatus> owned_status_;  // when no session's was given
  bool binds_status_ = false;
  uint64_t activation_bytes_ = 0;
  size_t reused_node_plans_ = 0;
};

}  // namespace wgi::runtime
