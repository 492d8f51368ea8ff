#include "runtime/execution_plan.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "graph/memory_planner.h"
#include "ops/data_dependent.h"
#include "runtime/device_tensor.h"
#include "runtime/loop_unrolling.h"
#include "runtime/plan_binding.h"

namespace wgi::runtime {

namespace {

// A run's dispatches go to the queue in submissions of this many (0: one submission), so that the GPU starts
// on the first while Dawn encodes and translates the rest for the backend. Submissions of 24 ran the target
// models about as fast as any count tried on the H200 (docs/performance.md, "Measurements behind the
// planner's rules").
// WGI_DISPATCHES_PER_SUBMIT overrides it (measurement).
size_t dispatches_per_submission() {
  static const size_t value = [] {
    constexpr size_t kDefault = 24;
    const char* env = std::getenv("WGI_DISPATCHES_PER_SUBMIT");
    if (env == nullptr || *env == '\0') return kDefault;
    char* end = nullptr;
    const unsigned long parsed = std::strtoul(env, &end, 10);
    if (*end != '\0')
      throw Error(std::string("WGI_DISPATCHES_PER_SUBMIT must be a count, not '") + env + "'");
    return static_cast<size_t>(parsed);
  }();
  return value;
}

}  // namespace

const gpu::Buffer& WeightStore::get(const graph::Graph& graph, graph::ValueId value) {
  auto it = buffers_.find(value);
  if (it != buffers_.end()) return it->second;
  const graph::Value& v = graph.value(value);
  const auto start = std::chrono::steady_clock::now();
  gpu::Buffer buffer = upload_tensor(device_, *v.constant, "weight '" + v.name + "'");
  upload_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  bytes_ += buffer.size();
  return buffers_.emplace(value, std::move(buffer)).first->second;
}

std::shared_ptr<SharedNodePlan> PlanSharing::find(const graph::Node* node, const std::string& key) {
  auto it = entries_.find(node);
  if (it == entries_.end()) return nullptr;
  auto& list = it->second;
  for (auto e = list.begin(); e != list.end(); ++e) {
    if (e->first != key) continue;
    list.splice(list.begin(), list, e);  // most recently used first
    return list.front().second;
  }
  return nullptr;
}

void PlanSharing::insert(const graph::Node* node, std::string key, std::shared_ptr<SharedNodePlan> plan) {
  auto& list = entries_[node];
  list.emplace_front(std::move(key), std::move(plan));
  while (list.size() > per_node_) list.pop_back();
}

namespace {

uint64_t mix64(uint64_t x) {
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  return x ^ (x >> 32);
}

// Two independent order-dependent 64-bit hashes of `bytes` in one pass, as a 32-character hex string.
std::string content_hash(std::span<const std::byte> bytes) {
  uint64_t h1 = 0x9e3779b97f4a7c15ULL ^ bytes.size(), h2 = 0xc2b2ae3d27d4eb4fULL + bytes.size();
  size_t i = 0;
  auto add = [&](uint64_t w) {
    h1 = std::rotl(h1 ^ mix64(w + 0x52dce729ULL), 27) * 5 + 0x38495ab5ULL;
    h2 = (h2 + mix64(w ^ 0x27d4eb2f165667c5ULL)) * 0x9e3779b97f4a7c15ULL;
  };
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    add(w);
  }
  if (i < bytes.size()) {
    uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, bytes.size() - i);
    add(w);
  }
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(mix64(h1)),
                static_cast<unsigned long long>(mix64(h2)));
  return text;
}

// `wanted` rounded up to its pool size class (device_tensor.h), unless the device could not create or bind a
// buffer that large; then `fallback`.
uint64_t pooled_size_or(const gpu::Limits& limits, uint64_t wanted, uint64_t fallback) {
  const uint64_t size = pooled_size_class(wanted);
  return size <= limits.max_buffer_size && size <= limits.max_storage_buffer_binding_size ? size : fallback;
}

}  // namespace

std::shared_ptr<const gpu::Buffer> PlanSharing::constant_buffer(gpu::Device& device, const Tensor& constant,
                                                                const std::string& label) {
  const std::string key = std::string(dtype_name(constant.dtype())) + shape_to_string(constant.shape()) +
                          content_hash(constant.bytes());
  auto it = constants_.find(key);
  if (it != constants_.end()) {
    if (auto buffer = it->second.lock()) return buffer;
  }
  auto buffer = std::make_shared<const gpu::Buffer>(upload_tensor(device, constant, label));
  constants_[key] = buffer;
  return buffer;
}

uint64_t PlanSharing::constant_bytes() {
  uint64_t bytes = 0;
  for (auto it = constants_.begin(); it != constants_.end();) {
    if (auto buffer = it->second.lock()) {
      bytes += buffer->size();
      ++it;
    } else {
      it = constants_.erase(it);
    }
  }
  return bytes;
}

std::shared_ptr<gpu::Buffer> PlanSharing::activation_buffer(gpu::Device& device, size_t index,
                                                            uint64_t bytes) {
  if (activations_.size() <= index) activations_.resize(index + 1);
  std::shared_ptr<gpu::Buffer>& buffer = activations_[index];
  if (!buffer || buffer->size() < bytes) {
    // Room to grow geometrically (a decoder's activations grow by a row per step, and every dispatch that
    // binds a new buffer needs a new bind group), within the device's limits.
    const uint64_t size = pooled_size_or(
        device.limits(), std::max(bytes, buffer ? buffer->size() + buffer->size() / 2 : 0), bytes);
    buffer =
        std::make_shared<gpu::Buffer>(device.create_buffer(size, "activations " + std::to_string(index)));
  }
  return buffer;
}

PlannedNodeRecord* PlanSharing::latest_planning(const graph::Node* node) {
  if (!reuse_unchanged_nodes) return nullptr;
  auto it = latest_.find(node);
  return it == latest_.end() ? nullptr : &it->second;
}

void PlanSharing::record_planning(const graph::Node* node, PlannedNodeRecord record) {
  if (reuse_unchanged_nodes) latest_[node] = std::move(record);
}

size_t PlanSharing::size() const {
  size_t n = 0;
  for (const auto& entry : entries_) n += entry.second.size();
  return n;
}

// The constructor's phases, in order (ExecutionPlan::ExecutionPlan calls them), and what each hands on to
// the next: lifetimes, the memory plan and its regions, the graph inputs' buffers (the memory phase), the
// pipelines, then the run status, a data-dependent step and every step's bind groups (the bind phase).
struct ExecutionPlan::Builder {
  ExecutionPlan& plan;
  gpu::Device& device;
  const graph::Graph& graph;
  WeightStore& weights;
  std::vector<NodePlans::GpuNode>& gpu_nodes;
  const std::vector<NodePlans::Alias>& aliases;
  PlanSharing* sharing;
  std::span<const InputSource> sources;
  const ExecutionPlan* grown_from;
  const NodePlans* capacity;
  const StageValues* stage;
  size_t value_count;  // with the values of unrolled Loops and Scans
  // Found by find_lifetimes: the value whose memory each value is (itself, or what it views or aliases), and
  // the steps each root is first and last used in (-1: not produced on the GPU).
  std::vector<graph::ValueId> root;
  std::vector<int32_t> first_use, last_use;
  // Found by place_inputs: the graph input each input buffer holds.
  std::map<const gpu::Buffer*, size_t> input_of_buffer;
  // Found by bind_run_status.
  gpu::BufferSlice status_slice;

  const Tensor* host_value(graph::ValueId v) const;
  uint64_t capacity_bytes(size_t v) const;
  void find_lifetimes();
  void place_activations();
  void place_inputs();
  gpu::BufferSlice location_of(graph::ValueId v);
  void compile_pipelines();
  void bind_run_status();
  void find_data_dependent_step();
  void bind_step(size_t s);
  void locate_outputs();
};

const Tensor* ExecutionPlan::Builder::host_value(graph::ValueId v) const {
  if (v == graph::kNoValue) return nullptr;
  if (const auto& c = plan.value(v).constant) return &*c;
  const auto& h = plan.host_values_[static_cast<size_t>(v)];
  return h ? &*h : nullptr;
}

// The bytes value `v` takes at the capacity sizes (PlanRoom::capacity), or 0.
uint64_t ExecutionPlan::Builder::capacity_bytes(size_t v) const {
  if (!capacity || v >= capacity->descs.size()) return 0;
  return device_byte_size(capacity->descs[v]);
}

// Each GPU-produced value lives from its step to its last reader; graph outputs to the end. A reshape-like
// output is its input's memory, so it extends its root's lifetime instead of taking its own.
void ExecutionPlan::Builder::find_lifetimes() {
  root.resize(value_count);
  for (size_t v = 0; v < value_count; ++v) root[v] = static_cast<graph::ValueId>(v);
  first_use.assign(value_count, -1);
  last_use.assign(value_count, -1);
  size_t next_alias = 0;
  // An If's output is its branch's output (and its memory) from the step after the branch on.
  auto apply_aliases = [&](size_t step) {
    for (; next_alias < aliases.size() && aliases[next_alias].step <= step; ++next_alias) {
      const NodePlans::Alias& a = aliases[next_alias];
      root[static_cast<size_t>(a.value)] = root[static_cast<size_t>(a.source)];
    }
  };
  for (size_t s = 0; s < gpu_nodes.size(); ++s) {
    apply_aliases(s);
    const graph::Node& node = *gpu_nodes[s].node;
    for (graph::ValueId v : node.inputs) {
      if (v != graph::kNoValue)
        last_use[static_cast<size_t>(root[static_cast<size_t>(v)])] = static_cast<int32_t>(s);
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      graph::ValueId out = node.outputs[o];
      if (out == graph::kNoValue) continue;
      if (o == 0 && gpu_nodes[s].op_plan().alias_output_to_input >= 0) {
        graph::ValueId in = node.inputs.at(static_cast<size_t>(gpu_nodes[s].op_plan().alias_output_to_input));
        root[static_cast<size_t>(out)] = root[static_cast<size_t>(in)];
        continue;
      }
      first_use[static_cast<size_t>(out)] = static_cast<int32_t>(s);
      last_use[static_cast<size_t>(out)] =
          std::max(last_use[static_cast<size_t>(out)], static_cast<int32_t>(s));
    }
  }
  apply_aliases(gpu_nodes.size());
  for (graph::ValueId v : plan.output_values_)
    last_use[static_cast<size_t>(root[static_cast<size_t>(v)])] = INT32_MAX;
}

// The memory plan of the activations and scratch buffers, their buffers, and each region's slice.
void ExecutionPlan::Builder::place_activations() {
  std::vector<graph::BufferRequest> requests;
  std::vector<size_t> request_value;  // the value placed, or SIZE_MAX for a scratch buffer
  std::vector<std::pair<size_t, size_t>> scratch_request;  // (step, scratch index) for scratch requests
  for (size_t v = 0; v < value_count; ++v) {
    if (first_use[v] < 0 || root[v] != static_cast<graph::ValueId>(v)) continue;
    requests.push_back({device_byte_size(plan.descs_[v]), first_use[v], last_use[v]});
    request_value.push_back(v);
    scratch_request.push_back({SIZE_MAX, 0});
  }
  for (size_t s = 0; s < gpu_nodes.size(); ++s) {
    for (size_t k = 0; k < gpu_nodes[s].op_plan().scratch_bytes.size(); ++k) {
      requests.push_back(
          {gpu_nodes[s].op_plan().scratch_bytes[k], static_cast<int32_t>(s), static_cast<int32_t>(s)});
      request_value.push_back(SIZE_MAX);
      scratch_request.push_back({s, k});
    }
  }
  // With sharing, the planner sees sizes rounded up to pool size classes: values that grow a little from one
  // plan to the next (a decoder's key/values, a row per step) then keep their place in its size order, so
  // the other values keep their buffers and reused node plans can share their bound dispatches. Slices bind
  // their whole buffer (kernels take sizes from their uniforms), so a plan respecialized for larger sizes
  // that still fit keeps its bind groups. A plan grown from one that had no room doubles what grew; one
  // with a capacity (PlanRoom) gives every region at least its size there.
  std::vector<uint64_t> exact_bytes;
  for (const graph::BufferRequest& r : requests) exact_bytes.push_back(r.size);
  if (grown_from) {
    for (size_t r = 0; r < requests.size(); ++r) {
      uint64_t before = 0;
      if (request_value[r] != SIZE_MAX) {
        before = device_byte_size(grown_from->descs_.at(request_value[r]));
      } else {
        const auto [s, k] = scratch_request[r];
        before = grown_from->shared_.at(s)->plan.scratch_bytes.at(k);
      }
      if (requests[r].size > before) requests[r].size *= 2;
    }
  }
  if (capacity) {
    std::unordered_map<const graph::Node*, const std::vector<uint64_t>*> capacity_scratch;
    for (const NodePlans::GpuNode& n : capacity->gpu_nodes)
      capacity_scratch[n.node] = &n.op_plan().scratch_bytes;
    for (size_t r = 0; r < requests.size(); ++r) {
      uint64_t largest = 0;
      if (request_value[r] != SIZE_MAX) {
        largest = capacity_bytes(request_value[r]);
      } else {
        const auto [s, k] = scratch_request[r];
        auto it = capacity_scratch.find(gpu_nodes[s].node);
        if (it != capacity_scratch.end() && k < it->second->size()) largest = (*it->second)[k];
      }
      requests[r].size = std::max(requests[r].size, largest);
    }
  }
  if (sharing) {
    for (graph::BufferRequest& r : requests) r.size = pooled_size_or(device.limits(), r.size, r.size);
  }
  graph::MemoryPlan memory = graph::plan_memory(requests, device.limits().max_buffer_size);
  plan.activation_bytes_ = memory.total_bytes();
  std::vector<gpu::Buffer*> shared;
  for (size_t b = 0; b < memory.buffer_sizes.size(); ++b) {
    if (sharing) {
      plan.activations_.push_back(sharing->activation_buffer(device, b, memory.buffer_sizes[b]));
      shared.push_back(plan.activations_.back().get());
    } else {
      plan.owned_.push_back(std::make_unique<gpu::Buffer>(
          device.create_buffer(memory.buffer_sizes[b], "activations " + std::to_string(b))));
      shared.push_back(plan.owned_.back().get());
    }
  }
  std::vector<std::vector<gpu::BufferSlice>>& scratch = plan.scratch_;
  scratch.resize(gpu_nodes.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    const gpu::Buffer* buffer = shared[memory.buffer_of[r]];
    const uint64_t whole = std::min(buffer->size(), device.limits().max_storage_buffer_binding_size) / 4 * 4;
    gpu::BufferSlice slice{buffer, 0, std::max<uint64_t>({4, (exact_bytes[r] + 3) / 4 * 4, whole})};
    if (request_value[r] != SIZE_MAX) {
      plan.locations_[request_value[r]] = slice;
      plan.region_values_.push_back(request_value[r]);
    } else {
      auto [s, k] = scratch_request[r];
      scratch[s].resize(std::max(scratch[s].size(), k + 1));
      scratch[s][k] = slice;
    }
  }
}

// Graph inputs: one given from the device is bound where it lives (unless an earlier input is the same
// memory); the others get a buffer of the plan.
void ExecutionPlan::Builder::place_inputs() {
  plan.inputs_.resize(plan.input_values_.size());
  for (size_t i = 0; i < plan.input_values_.size(); ++i) {
    const size_t v = static_cast<size_t>(plan.input_values_[i]);
    InputSlot& slot = plan.inputs_[i];
    slot.bytes = device_byte_size(plan.descs_[v]);
    slot.room = std::max(slot.bytes, capacity_bytes(v));
    const InputSource source = i < sources.size() ? sources[i] : InputSource{};
    const gpu::Buffer* buffer = source.host ? nullptr : source.device.buffer;
    if (buffer && source.content_id != 0 && !input_of_buffer.count(buffer) &&
        source.device.resolved_size() >= slot.bytes && source.device.offset == 0) {
      slot.direct = true;
      slot.content_id = source.content_id;
    } else {
      slot.owned = std::make_unique<gpu::Buffer>(
          device.create_buffer(slot.room, "input '" + graph.value(plan.input_values_[i]).name + "'"));
      buffer = slot.owned.get();
    }
    input_of_buffer[buffer] = i;
    plan.locations_[v] = {buffer, 0, slot.direct ? slot.bytes : buffer->size()};
  }
}

// Where a value is read from: the activation or input buffer of its root, a weight, or a host value uploaded
// now.
gpu::BufferSlice ExecutionPlan::Builder::location_of(graph::ValueId v) {
  if (v == graph::kNoValue) return {};
  const size_t r = static_cast<size_t>(root[static_cast<size_t>(v)]);
  if (plan.locations_[r].buffer) return plan.locations_[r];  // a view binds its root's region
  if (plan.value(static_cast<graph::ValueId>(r)).constant) {
    return {&weights.get(graph, static_cast<graph::ValueId>(r))};
  }
  if (plan.host_values_[r]) {
    // With room to grow, like the activations (a decoder's folded mask grows by a column per step), and
    // twice the size when it grew since the plan this one grows from.
    const Tensor& h = *plan.host_values_[r];
    const uint64_t bytes = device_byte_size({h.dtype(), h.shape()});
    uint64_t room = bytes;
    if (sharing) {
      const bool grew = grown_from && grown_from->host_values_.at(r) &&
                        device_byte_size({grown_from->host_values_[r]->dtype(),
                                          grown_from->host_values_[r]->shape()}) < bytes;
      room = pooled_size_or(device.limits(), grew ? 2 * bytes : bytes, bytes);
    }
    if (capacity && r < capacity->host_values.size() && capacity->host_values[r]) {
      const Tensor& largest = *capacity->host_values[r];
      room = std::max(room, device_byte_size({largest.dtype(), largest.shape()}));
    }
    const std::string label = "folded '" + plan.value(static_cast<graph::ValueId>(r)).name + "'";
    plan.owned_.push_back(std::make_unique<gpu::Buffer>(device.create_buffer(room, label)));
    write_tensor(device, {plan.owned_.back().get()}, h, label);
    plan.locations_[r] = {plan.owned_.back().get()};
    plan.folded_.emplace_back(r, plan.owned_.back().get());
    return plan.locations_[r];
  }
  throw Error("internal: value '" + plan.value(v).name + "' has no location");
}

// Pipelines not looked up for an earlier plan, all compiled at once.
void ExecutionPlan::Builder::compile_pipelines() {
  std::vector<const gpu::ProgramSource*> programs;
  for (const auto& n : gpu_nodes) {
    if (n.shared && !n.shared->pipelines.empty()) continue;  // looked up for an earlier plan
    for (const auto& launch : n.op_plan().launches) programs.push_back(&launch.program);
  }
  device.pipelines().prefetch(programs);
}

// The run status some kernel binds: the session's, or the plan's own when none was given.
void ExecutionPlan::Builder::bind_run_status() {
  for (const auto& n : gpu_nodes) {
    for (const auto& launch : n.op_plan().launches) {
      for (const ops::TensorRef& ref : launch.bindings)
        plan.binds_status_ |= ref.kind == ops::TensorRef::Kind::RunStatus;
    }
  }
  if (plan.binds_status_ && !plan.run_status_) {
    plan.owned_status_ = std::make_unique<RunStatus>(device);
    plan.run_status_ = plan.owned_status_.get();
  }
  status_slice = plan.run_status_ ? plan.run_status_->slice() : gpu::BufferSlice{};
}

// A node with data-dependent outputs (docs/dynamic_shapes.md) ends its stage: nothing in this plan may read
// them, since they hold their real shapes only once the extent is read back. Its extent output (not one of
// the node's) goes to a buffer of the plan, downloaded with the outputs.
void ExecutionPlan::Builder::find_data_dependent_step() {
  for (size_t s = 0; s < gpu_nodes.size(); ++s) {
    const graph::Node& node = *gpu_nodes[s].node;
    const ops::DataDependence* dependence = ops::data_dependence(node.info);
    if (!dependence || !dependence->outputs) continue;
    const ops::OpPlan& op_plan = gpu_nodes[s].op_plan();
    if (!stage || s + 1 != gpu_nodes.size()) {
      throw Error(node.info.describe() +
                  ": its outputs' size depends on the data; such a graph runs in stages, through a Session "
                  "(docs/dynamic_shapes.md)");
    }
    if (dependence->extent_output >= op_plan.outputs.size() ||
        dependence->extent_output < node.outputs.size())
      throw Error(node.info.describe() + ": internal: the plan has no extent output");
    plan.extent_step_ = s;
    plan.data_dependent_.node = &node;
    plan.data_dependent_.outputs = op_plan.outputs;
    plan.data_dependent_.data_dependent = dependence->outputs(node.info, op_plan.outputs);
    plan.extent_buffer_ =
        std::make_unique<gpu::Buffer>(device.create_buffer(16, node.info.describe() + " extent"));
  }
}

// Step s: its prepacked constants (uploaded once per shared node plan), pipelines and bound dispatches.
void ExecutionPlan::Builder::bind_step(size_t s) {
  const graph::Node& node = *gpu_nodes[s].node;
  const ops::OpPlan& op_plan = gpu_nodes[s].op_plan();
  // Only inputs a kernel binds (or an output aliases) need device memory: others, such as Slice's `ends`
  // (often INT64_MAX, which no 32-bit GPU integer holds), are read on the host when planning.
  std::vector<bool> bound(node.inputs.size(), false);
  for (const auto& launch : op_plan.launches) {
    for (const ops::TensorRef& ref : launch.bindings) {
      if (ref.kind == ops::TensorRef::Kind::Input && ref.index < bound.size()) bound[ref.index] = true;
    }
  }
  if (op_plan.alias_output_to_input >= 0) bound.at(static_cast<size_t>(op_plan.alias_output_to_input)) = true;
  std::vector<gpu::BufferSlice> in, out, constants;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    in.push_back(bound[i] ? location_of(node.inputs[i]) : gpu::BufferSlice{});
  for (size_t o = 0; o < op_plan.outputs.size(); ++o) {
    out.push_back(o < node.outputs.size() && node.outputs[o] != graph::kNoValue ? location_of(node.outputs[o])
                                                                                : gpu::BufferSlice{});
  }
  if (plan.extent_step_ == s)
    out.at(ops::data_dependence(node.info)->extent_output) = {plan.extent_buffer_.get()};
  if (const auto& node_plan = gpu_nodes[s].shared) {
    // Uploaded once for every plan that shares this node plan; the host copies are not needed after that.
    if (!node_plan->constants_uploaded) {
      for (const Tensor& c : node_plan->plan.constants) {
        node_plan->constant_buffers.push_back(
            sharing->constant_buffer(device, c, node.info.describe() + " prepacked"));
      }
      node_plan->plan.constants = {};
      node_plan->constants_uploaded = true;
    }
    for (const auto& buffer : node_plan->constant_buffers) {
      constants.push_back({buffer.get()});
    }
    plan.shared_.push_back(node_plan);
  } else {
    for (const Tensor& c : op_plan.constants) {
      plan.owned_.push_back(
          std::make_unique<gpu::Buffer>(upload_tensor(device, c, node.info.describe() + " prepacked")));
      constants.push_back({plan.owned_.back().get()});
    }
  }
  PlannedStep step;
  step.node = gpu_nodes[s].node;
  step.first_dispatch = plan.dispatches_.size();
  const std::shared_ptr<SharedNodePlan>& node_plan = gpu_nodes[s].shared;
  if (node_plan && node_plan->pipelines.empty()) {
    for (const ops::KernelLaunch& launch : op_plan.launches)
      node_plan->pipelines.push_back(&device.pipelines().get(launch.program));
    node_plan->dispatches.resize(op_plan.launches.size());
  }
  for (size_t l = 0; l < op_plan.launches.size(); ++l) {
    const ops::KernelLaunch& launch = op_plan.launches[l];
    std::vector<gpu::BufferSlice> slices =
        launch_slices(device, node.info, launch, {in, out, plan.scratch_[s], constants, status_slice});
    const gpu::ComputePipeline& pipeline =
        node_plan ? *node_plan->pipelines[l] : device.pipelines().get(launch.program);
    InputDispatch record{plan.dispatches_.size(), &pipeline,    slices, std::vector<int>(slices.size(), -1),
                         launch.uniform,          launch.groups};
    bool binds_input = false;
    for (size_t k = 0; k < slices.size(); ++k) {
      auto it = input_of_buffer.find(slices[k].buffer);
      if (it == input_of_buffer.end()) continue;
      record.slot_input[k] = static_cast<int>(it->second);
      plan.inputs_[it->second].used = binds_input = true;
    }
    DispatchRecord info{s, l, slices, !node_plan || binds_input, -1};
    if (node_plan && !binds_input) {
      plan.dispatches_.push_back(plan.shared_dispatch(*node_plan, l, slices, sharing->per_node()));
    } else {
      plan.dispatches_.push_back(std::make_shared<gpu::BoundDispatch>(
          gpu::bind_dispatch(device, pipeline, slices, launch.uniform, launch.groups)));
      if (binds_input) {
        info.input_record = static_cast<int>(plan.input_dispatches_.size());
        plan.input_dispatches_.push_back(std::move(record));
      }
    }
    plan.dispatch_records_.push_back(std::move(info));
  }
  step.dispatch_count = plan.dispatches_.size() - step.first_dispatch;
  for (const auto& launch : op_plan.launches)
    step.kernel += (step.kernel.empty() ? "" : "+") + launch.program.label;
  plan.steps_.push_back(std::move(step));
}

// Graph outputs that are host values (constants, folded) are returned from the host; the others are
// downloaded from where their root lives.
void ExecutionPlan::Builder::locate_outputs() {
  for (graph::ValueId v : plan.output_values_) {
    plan.output_locations_.push_back(host_value(v) ? gpu::BufferSlice{} : location_of(v));
    auto it = input_of_buffer.find(plan.output_locations_.back().buffer);
    plan.output_input_.push_back(it == input_of_buffer.end() ? -1 : static_cast<int>(it->second));
    if (it != input_of_buffer.end()) plan.inputs_[it->second].used = true;
  }
}

ExecutionPlan::ExecutionPlan(gpu::Device& device, const graph::Graph& graph, WeightStore& weights,
                             NodePlans planned, double kernel_plans_ms, PlanSharing* sharing,
                             std::span<const InputSource> sources, PlanRoom room, RunStatus* run_status,
                             const StageValues* stage)
    : device_(device),
      graph_(graph),
      input_values_(stage ? stage->inputs : graph.inputs),
      output_values_(stage ? stage->outputs : graph.outputs),
      sharing_(sharing),
      run_status_(run_status) {
  // Phase times for cold-start reports: each phase ends where the next begins.
  auto phase_start = std::chrono::steady_clock::now();
  auto end_phase = [&phase_start](double& phase) {
    const auto now = std::chrono::steady_clock::now();
    phase += std::chrono::duration<double, std::milli>(now - phase_start).count();
    phase_start = now;
  };
  const double weight_upload_ms_before = weights.upload_ms();
  // What plan_nodes found (the kernel-plans phase, timed by the caller).
  unrolled_ = planned.unrolled;
  const size_t value_count = planned.descs.size();
  phases_.kernel_plans = kernel_plans_ms;
  aliases_ = planned.aliases;
  reused_node_plans_ = planned.reused;
  descs_ = std::move(planned.descs);
  host_values_ = std::move(planned.host_values);
  locations_.resize(value_count);

  Builder builder{*this,
                  device,
                  graph,
                  weights,
                  planned.gpu_nodes,
                  planned.aliases,
                  sharing,
                  sources,
                  room.grown_from,
                  room.capacity,
                  stage,
                  value_count,
                  {},
                  {},
                  {},
                  {},
                  {}};
  builder.find_lifetimes();
  builder.place_activations();
  builder.place_inputs();
  end_phase(phases_.memory);
  builder.compile_pipelines();
  end_phase(phases_.pipelines);
  builder.bind_run_status();
  builder.find_data_dependent_step();
  for (size_t s = 0; s < planned.gpu_nodes.size(); ++s) builder.bind_step(s);
  builder.locate_outputs();
  end_phase(phases_.bind);
  phases_.weight_uploads = weights.upload_ms() - weight_upload_ms_before;
  phases_.bind -= phases_.weight_uploads;
}

ExecutionPlan::ExecutionPlan(gpu::Device& device, const graph::Graph& graph, const ops::OpRegistry& registry,
                             WeightStore& weights, const std::vector<PlanInput>& inputs,
                             const std::function<void(size_t, size_t)>& progress)
    : ExecutionPlan(device, graph, weights,
                    plan_nodes(graph, registry, device.capabilities(), inputs, progress), 0) {}

namespace {

bool same_program(const gpu::ProgramSource& a, const gpu::ProgramSource& b) {
  return a.label == b.label && a.entry_point == b.entry_point && a.bindings == b.bindings &&
         a.constants == b.constants && a.wgsl == b.wgsl;
}

bool same_refs(const std::vector<ops::TensorRef>& a, const std::vector<ops::TensorRef>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const ops::TensorRef& x, const ops::TensorRef& y) {
                      return x.kind == y.kind && x.index == y.index && x.byte_offset == y.byte_offset;
                    });
}

bool same_groups(const gpu::WorkgroupCount& a, const gpu::WorkgroupCount& b) {
  return a.x == b.x && a.y == b.y && a.z == b.z;
}

// Whether `now` runs the kernels of `before` on the same bindings (only uniforms, grids and sizes differ).
bool same_kernels(const ops::OpPlan& before, const ops::OpPlan& now) {
  if (before.launches.size() != now.launches.size() || before.outputs.size() != now.outputs.size() ||
      before.scratch_bytes.size() != now.scratch_bytes.size() ||
      before.alias_output_to_input != now.alias_output_to_input) {
    return false;
  }
  for (size_t o = 0; o < now.outputs.size(); ++o) {
    if (before.outputs[o].dtype != now.outputs[o].dtype ||
        before.outputs[o].shape.size() != now.outputs[o].shape.size()) {
      return false;
    }
  }
  for (size_t l = 0; l < now.launches.size(); ++l) {
    const ops::KernelLaunch &a = before.launches[l], &b = now.launches[l];
    if (a.uniform.size() != b.uniform.size() || !same_refs(a.bindings, b.bindings) ||
        !same_program(a.program, b.program)) {
      return false;
    }
  }
  return true;
}

}  // namespace

// Step 1 of respecialize: the same kernels for the same nodes, with the same prepacked constants (uploaded by
// content, so equal bytes are the same buffer), grids the device can run, and host values where they were.
// Done when they are (nothing rewritten yet), else OtherKernels.
Respecialized ExecutionPlan::same_kernels_as(NodePlans& planned) {
  if (!sharing_ || shared_.size() != steps_.size() || planned.descs.size() != descs_.size())
    return Respecialized::OtherKernels;
  auto& nodes = planned.gpu_nodes;
  if (nodes.size() != steps_.size() || planned.aliases.size() != aliases_.size())
    return Respecialized::OtherKernels;
  for (size_t a = 0; a < aliases_.size(); ++a) {
    const NodePlans::Alias &x = aliases_[a], &y = planned.aliases[a];
    if (x.step != y.step || x.value != y.value || x.source != y.source) return Respecialized::OtherKernels;
  }
  const gpu::Limits& limits = device_.limits();
  for (size_t s = 0; s < nodes.size(); ++s) {
    if (nodes[s].node != steps_[s].node || !nodes[s].shared) return Respecialized::OtherKernels;
    const SharedNodePlan& before = *shared_[s];
    SharedNodePlan& now = *nodes[s].shared;
    if (&before == &now) continue;
    if (!same_kernels(before.plan, now.plan)) return Respecialized::OtherKernels;
    if (!now.constants_uploaded) {
      for (const Tensor& c : now.plan.constants) {
        now.constant_buffers.push_back(
            sharing_->constant_buffer(device_, c, nodes[s].node->info.describe() + " prepacked"));
      }
      now.plan.constants = {};
      now.constants_uploaded = true;
    }
    if (now.constant_buffers != before.constant_buffers) return Respecialized::OtherKernels;
    for (const ops::KernelLaunch& launch : now.plan.launches) {
      for (uint32_t d : {launch.groups.x, launch.groups.y, launch.groups.z}) {
        if (d == 0 || d > limits.max_compute_workgroups_per_dimension) return Respecialized::OtherKernels;
      }
    }
  }
  // Host values bound by kernels must stay host values of the same type.
  for (const auto& [v, buffer] : folded_) {
    const auto& h = planned.host_values[v];
    if (!h || h->dtype() != host_values_[v]->dtype()) return Respecialized::OtherKernels;
  }
  for (size_t o = 0; o < output_values_.size(); ++o) {
    const size_t v = static_cast<size_t>(output_values_[o]);
    const bool host_before = graph_.values[v].constant || host_values_[v];
    const bool host_now = graph_.values[v].constant || planned.host_values[v];
    if (host_before != host_now) return Respecialized::OtherKernels;
  }
  return Respecialized::Done;
}

// Step 2: every region (its whole buffer), scratch and folded upload holds the new sizes.
bool ExecutionPlan::has_room_for(const NodePlans& planned) const {
  const auto& nodes = planned.gpu_nodes;
  for (size_t v : region_values_) {
    if (device_byte_size(planned.descs[v]) > locations_[v].resolved_size()) return false;
  }
  for (size_t s = 0; s < nodes.size(); ++s) {
    const auto& bytes = nodes[s].shared->plan.scratch_bytes;
    for (size_t k = 0; k < bytes.size(); ++k) {
      if (k < scratch_[s].size() && scratch_[s][k].buffer && bytes[k] > scratch_[s][k].resolved_size())
        return false;
    }
  }
  for (const auto& [v, buffer] : folded_) {
    if (device_byte_size({planned.host_values[v]->dtype(), planned.host_values[v]->shape()}) > buffer->size())
      return false;
  }
  return true;
}

// Inputs: a device input bound where it lived moves to a buffer of the plan unless it is the same content
// (a decoder's cross keys/values); a buffer of the plan too small for the new size is replaced by one with
// room to grow. Returns which moved (their dispatches are bound again).
std::vector<bool> ExecutionPlan::move_inputs(const NodePlans& planned, std::span<const InputSource> sources) {
  const gpu::Limits& limits = device_.limits();
  std::vector<bool> moved(inputs_.size(), false);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    InputSlot& slot = inputs_[i];
    const size_t v = static_cast<size_t>(input_values_[i]);
    slot.bytes = device_byte_size(planned.descs[v]);
    if (!slot.used) continue;
    const InputSource source = i < sources.size() ? sources[i] : InputSource{};
    if (slot.direct && !source.host && source.content_id == slot.content_id) continue;
    if (!slot.direct && slot.owned->size() >= slot.bytes) continue;
    slot.owned = std::make_unique<gpu::Buffer>(
        device_.create_buffer(std::max(slot.room, pooled_size_or(limits, 2 * slot.bytes, slot.bytes)),
                              "input '" + graph_.values[v].name + "'"));
    slot.direct = false;
    slot.content_id = 0;
    moved[i] = true;
  }
  return moved;
}

// Uniforms and grids: a dispatch of this plan alone is rewritten in place; one shared with other plans (by
// its node plan) is bound anew for this plan, which then owns it.
void ExecutionPlan::rewrite_dispatches(const NodePlans& planned) {
  const auto& nodes = planned.gpu_nodes;
  for (size_t d = 0; d < dispatch_records_.size(); ++d) {
    DispatchRecord& record = dispatch_records_[d];
    const ops::KernelLaunch& before = shared_[record.step]->plan.launches[record.launch];
    const ops::KernelLaunch& now = nodes[record.step].shared->plan.launches[record.launch];
    if (record.input_record >= 0) {
      InputDispatch& input = input_dispatches_[static_cast<size_t>(record.input_record)];
      input.uniform = now.uniform;
      input.groups = now.groups;
    }
    if (before.uniform == now.uniform && same_groups(before.groups, now.groups)) continue;
    if (record.owned) {
      if (!now.uniform.empty()) dispatches_[d]->update_uniform(device_, now.uniform);
      dispatches_[d]->update_groups(now.groups);
    } else {
      dispatches_[d] = std::make_shared<gpu::BoundDispatch>(
          gpu::bind_dispatch(device_, *dispatches_[d]->pipeline(), record.slices, now.uniform, now.groups));
      record.owned = true;
    }
  }
}

// Folded values bound by kernels: written again where they changed.
void ExecutionPlan::rewrite_folded_values(const NodePlans& planned) {
  for (const auto& [v, buffer] : folded_) {
    const Tensor& h = *planned.host_values[v];
    const Tensor& old = *host_values_[v];
    if (h.shape() == old.shape() && std::memcmp(h.bytes().data(), old.bytes().data(), h.byte_size()) == 0)
      continue;
    write_tensor(device_, {buffer, 0, device_byte_size({h.dtype(), h.shape()})}, h,
                 "folded '" + graph_.values[v].name + "'");
  }
}

Respecialized ExecutionPlan::respecialize(NodePlans& planned, std::span<const InputSource> sources) {
  if (const Respecialized same = same_kernels_as(planned); same != Respecialized::Done) return same;
  if (!has_room_for(planned)) return Respecialized::NeedsMoreRoom;
  // Nothing can fail from here on: rewrite what the sizes change.
  for (size_t s = 0; s < planned.gpu_nodes.size(); ++s) {
    SharedNodePlan& now = *planned.gpu_nodes[s].shared;
    if (now.pipelines.empty()) {
      now.pipelines = shared_[s]->pipelines;  // the same programs
      now.dispatches.resize(now.plan.launches.size());
    }
  }
  const std::vector<bool> moved = move_inputs(planned, sources);
  rewrite_dispatches(planned);
  rebind_moved_inputs(moved);  // after the dispatches: it binds their new uniforms and grids
  rewrite_folded_values(planned);
  descs_ = std::move(planned.descs);
  host_values_ = std::move(planned.host_values);
  for (size_t s = 0; s < planned.gpu_nodes.size(); ++s) shared_[s] = planned.gpu_nodes[s].shared;
  reused_node_plans_ = planned.reused;
  return Respecialized::Done;
}

const graph::Value& ExecutionPlan::value(graph::ValueId v) const {
  return unrolled_ ? unrolled_->value(v) : graph_.value(v);
}

std::shared_ptr<gpu::BoundDispatch> ExecutionPlan::shared_dispatch(
    SharedNodePlan& node_plan, size_t launch, const std::vector<gpu::BufferSlice>& slices, size_t capacity) {
  // Compared by WebGPU handle, not by gpu::Buffer (which may be gone): a cached bind group keeps the buffers
  // it binds alive, so no other buffer can have one of their handles meanwhile.
  std::vector<SharedNodePlan::BoundBuffer> bound;
  for (const gpu::BufferSlice& slice : slices)
    bound.push_back({slice.buffer->handle(), slice.offset, slice.resolved_size()});
  auto& cache = node_plan.dispatches[launch];
  for (auto it = cache.begin(); it != cache.end(); ++it) {
    if (it->bound != bound) continue;
    cache.splice(cache.begin(), cache, it);
    return cache.front().dispatch;
  }
  const ops::KernelLaunch& l = node_plan.plan.launches[launch];
  auto dispatch = std::make_shared<gpu::BoundDispatch>(
      gpu::bind_dispatch(device_, *node_plan.pipelines[launch], slices, l.uniform, l.groups));
  cache.push_front({std::move(bound), dispatch});
  while (cache.size() > capacity) cache.pop_back();
  return dispatch;
}

void ExecutionPlan::rebind_moved_inputs(const std::vector<bool>& moved) {
  if (std::find(moved.begin(), moved.end(), true) == moved.end()) return;
  for (InputDispatch& record : input_dispatches_) {
    bool affected = false;
    for (size_t k = 0; k < record.slices.size(); ++k) {
      const int i = record.slot_input[k];
      if (i < 0 || !moved[static_cast<size_t>(i)]) continue;
      const gpu::Buffer* owned = inputs_[static_cast<size_t>(i)].owned.get();
      record.slices[k] = {owned, 0, owned->size()};
      affected = true;
    }
    if (affected) {
      dispatches_[record.dispatch] = std::make_shared<gpu::BoundDispatch>(
          gpu::bind_dispatch(device_, *record.pipeline, record.slices, record.uniform, record.groups));
      dispatch_records_[record.dispatch].slices = record.slices;
    }
  }
  for (size_t i = 0; i < moved.size(); ++i) {
    if (!moved[i]) continue;
    const gpu::Buffer* owned = inputs_[i].owned.get();
    locations_[static_cast<size_t>(input_values_[i])] = {owned, 0, owned->size()};
  }
}

gpu::BufferSlice ExecutionPlan::output_source(size_t o, std::span<const gpu::BufferSlice> current) const {
  gpu::BufferSlice slice = output_locations_[o];
  if (output_input_[o] >= 0) slice.buffer = current[static_cast<size_t>(output_input_[o])].buffer;
  return slice;
}

std::vector<Tensor> ExecutionPlan::run(const std::vector<const Tensor*>& inputs,
                                       gpu::TimestampProfiler* profiler) {
  std::vector<InputSource> sources;
  for (const Tensor* t : inputs) sources.push_back({t, {}, 0});
  std::vector<gpu::BufferSlice> downloads(output_values_.size());
  return run(sources, downloads, profiler);
}

std::vector<Tensor> ExecutionPlan::run(std::span<const InputSource> inputs,
                                       std::span<const gpu::BufferSlice> device_outputs,
                                       gpu::TimestampProfiler* profiler,
                                       const std::function<void()>& while_gpu_runs,
                                       const std::vector<bool>& unused) {
  if (inputs.size() != input_values_.size() || device_outputs.size() != output_values_.size() ||
      (!unused.empty() && unused.size() != output_values_.size()))
    throw Error("internal: ExecutionPlan::run with the wrong number of inputs or outputs");
  gpu::CommandBatch batch(device_);
  // Where each input's bytes are for this run, and the device contents copied (set once submitted).
  std::vector<gpu::BufferSlice> current(inputs_.size());
  std::vector<uint64_t> copied(inputs_.size(), 0);
  std::vector<bool> moved(inputs_.size(), false);
  for (size_t i = 0; i < input_values_.size(); ++i) {
    const size_t v = static_cast<size_t>(input_values_[i]);
    InputSlot& slot = inputs_[i];
    const InputSource& source = inputs[i];
    if (!slot.used) continue;  // only planned with by value
    if (!source.host && (!source.device.buffer || source.device.resolved_size() < slot.bytes))
      throw Error("internal: device input '" + graph_.values[v].name + "' has no buffer of its size");
    if (slot.direct) {
      if (!source.host && source.content_id == slot.content_id) {
        current[i] = {source.device.buffer, source.device.offset, slot.bytes};
        continue;
      }
      // Other contents: from now on the input lives in a buffer of the plan.
      slot.owned = std::make_unique<gpu::Buffer>(
          device_.create_buffer(slot.bytes, "input '" + graph_.values[v].name + "'"));
      slot.direct = false;
      slot.content_id = 0;
      moved[i] = true;
    }
    current[i] = {slot.owned.get(), 0, slot.bytes};
    if (source.host) {
      write_tensor(device_, current[i], *source.host, "input '" + graph_.values[v].name + "'");
      continue;
    }
    copied[i] = source.content_id;
    if (source.content_id != 0 && source.content_id == slot.content_id) continue;  // already there
    batch.copy({source.device.buffer, source.device.offset, slot.bytes}, current[i]);
  }
  rebind_moved_inputs(moved);
  const size_t per_submission = dispatches_per_submission();
  for (size_t d = 0; d < dispatches_.size(); ++d) {
    if (profiler && d < profiler->capacity()) {
      batch.dispatch_timed(*dispatches_[d], *profiler, static_cast<uint32_t>(d));
    } else {
      batch.dispatch(*dispatches_[d]);
    }
    if (per_submission != 0 && (d + 1) % per_submission == 0 && d + 1 < dispatches_.size()) batch.submit();
  }
  // Outputs kept on the device are copied in the same submission; they never alias the plan's buffers.
  for (size_t o = 0; o < output_values_.size(); ++o) {
    const gpu::BufferSlice& target = device_outputs[o];
    if (!target.buffer) continue;
    const size_t v = static_cast<size_t>(output_values_[o]);
    const uint64_t bytes = device_byte_size(descs_[v]);
    if (target.resolved_size() < bytes)
      throw Error("internal: device output '" + graph_.values[v].name + "' target is too small");
    if (const auto& c = graph_.values[v].constant) {
      write_tensor(device_, target, *c, "output '" + graph_.values[v].name + "'");
    } else if (host_values_[v]) {
      write_tensor(device_, target, *host_values_[v], "output '" + graph_.values[v].name + "'");
    } else {
      const gpu::BufferSlice source = output_source(o, current);
      batch.copy({source.buffer, source.offset, bytes}, {target.buffer, target.offset, bytes});
    }
  }
  for (InputSlot& slot : inputs_) {
    if (!slot.direct) slot.content_id = 0;  // unknown until the submission went through
  }
  batch.submit();
  if (binds_status_) run_status_->mark_pending();
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!inputs_[i].direct) inputs_[i].content_id = copied[i];
  }
  if (while_gpu_runs) while_gpu_runs();
  // Downloads in one copy and one wait, with the run status when a run since its last check bound it.
  std::vector<Tensor> outputs(output_values_.size());
  std::vector<std::vector<std::byte>> bytes(output_values_.size());
  std::vector<gpu::Device::DownloadRegion> regions;
  std::vector<size_t> downloaded;
  const auto wanted_on_host = [&](size_t o) {
    return !device_outputs[o].buffer && (unused.empty() || !unused[o]);
  };
  for (size_t o = 0; o < output_values_.size(); ++o) {
    if (!wanted_on_host(o)) continue;
    const size_t v = static_cast<size_t>(output_values_[o]);
    if (const auto& c = graph_.values[v].constant) {
      outputs[o] = *c;
    } else if (host_values_[v]) {
      outputs[o] = *host_values_[v];
    } else {
      const gpu::BufferSlice source = output_source(o, current);
      bytes[o].resize(device_payload_bytes(descs_[v]));
      regions.push_back({source.buffer, source.offset, bytes[o]});
      downloaded.push_back(o);
    }
  }
  bool any_download = false;
  for (size_t o = 0; o < output_values_.size(); ++o) any_download = any_download || wanted_on_host(o);
  const bool check_status = any_download && run_status_ && run_status_->pending();
  if (check_status) regions.push_back(run_status_->region());
  if (extent_buffer_) {
    regions.push_back({extent_buffer_.get(), 0, std::as_writable_bytes(std::span<uint32_t>(&extent_, 1))});
  }
  device_.download(regions);
  if (check_status) {
    run_status_->check_downloaded([this](uint32_t tag) { return node_of_tag(graph_, tag); });
  }
  for (size_t o : downloaded) {
    const size_t v = static_cast<size_t>(output_values_[o]);
    outputs[o] = from_device_bytes(descs_[v], bytes[o]);
  }
  return outputs;
}

}  // namespace wgi::runtime
