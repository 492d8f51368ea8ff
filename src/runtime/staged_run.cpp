#include "runtime/staged_run.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <unordered_map>

#include "gpu/commands.h"
#include "ops/control_flow.h"
#include "runtime/data_dependent.h"
#include "runtime/device_tensor.h"
#include "runtime/loop_unrolling.h"

namespace wgi::runtime {

namespace {

// Content ids for the values stages hand on, apart from DeviceMemory's (which count from 1): a fresh one per
// run, since a stage's boundary buffer holds new contents every run.
constexpr uint64_t kFirstStageContentId = uint64_t{1} << 62;

}  // namespace

// The buffers one run of a stage copies its boundary values into (per output; Boundary ones only). A stage
// that runs again while values of an earlier run are still read (a Loop's iterations hand values on, and a
// rotation of carried values keeps one for several iterations) takes a set that no known value holds.
struct StagedRunner::BufferSet {
  std::vector<std::unique_ptr<gpu::Buffer>> buffers;
};

// What a run knows of a value that a stage takes as input: its real description, and its host value or
// where it is on the device.
struct StagedRunner::Known {
  ops::TensorDesc desc;
  const Tensor* host = nullptr;        // the caller's, or `owned`
  const Tensor* plan_value = nullptr;  // what the planner sees: graph inputs as the caller gives them
  std::shared_ptr<const Tensor> owned;
  gpu::BufferSlice device;
  uint64_t content_id = 0;
  std::shared_ptr<const BufferSet> holds;  // the stage buffers `device` lies in, kept from reuse
};

// The graph or a subgraph the runner walks: its nodes, and who produces and last reads each value there.
struct StagedRunner::Scope {
  const std::vector<graph::Node>* nodes = nullptr;
  bool is_graph = false;
  std::vector<graph::ValueId> by_value;  // outputs the enclosing scope needs on the host (a body's condition)
  std::unordered_map<graph::ValueId, int32_t> producer;     // the node of this scope producing the value
  std::unordered_map<graph::ValueId, int32_t> last_reader;  // nodes->size(): read after the scope
  std::vector<std::pair<size_t, std::vector<graph::ValueId>>> inputs_from;
  std::string key;  // what its stages' cache keys start with

  int32_t producer_of(graph::ValueId v) const {
    auto it = producer.find(v);
    return it == producer.end() ? -1 : it->second;
  }
  int32_t last_reader_of(graph::ValueId v) const {
    auto it = last_reader.find(v);
    return it == last_reader.end() ? -1 : it->second;
  }
};

struct StagedRunner::Stage {
  size_t first = 0, stop = 0;           // scope nodes[first, stop)
  bool descend = false;                 // nodes[stop] runs its subgraph scope by scope
  std::unique_ptr<ExecutionPlan> plan;  // null when the stage has no node (it only reads back)
  StageValues io;
  enum class Role { GraphOutput, Boundary, ReadBack };
  struct Output {
    Role role;
    size_t graph_output = 0;  // GraphOutput
  };
  std::vector<Output> outputs;  // per io.outputs
  // Values computed on the host (folded) that later stages read, and values the next stage needs by value
  // that earlier stages computed on the GPU (downloaded apart).
  std::vector<std::pair<graph::ValueId, Tensor>> host_values;
  std::vector<graph::ValueId> read_back_inputs;
  // Where the plan copies the Boundary values for later stages: a set no known value holds (BufferSet).
  std::vector<std::shared_ptr<BufferSet>> buffer_sets;
};

StagedRunner::StagedRunner(gpu::Device& device, const gpu::Capabilities& caps, const graph::Graph& graph,
                           const ops::OpRegistry& registry, WeightStore& weights, PlanSharing* sharing,
                           RunStatus* run_status, const ops::GemmTuning* gemm_tuning, size_t max_stages)
    : device_(device),
      graph_(graph),
      registry_(registry),
      weights_(weights),
      sharing_(sharing),
      run_status_(run_status),
      gemm_tuning_(gemm_tuning),
      caps_(caps),
      max_stages_(std::max<size_t>(1, max_stages)),
      next_content_id_(kFirstStageContentId) {}

StagedRunner::~StagedRunner() = default;

StagedRunner::Scope& StagedRunner::scope_of(const std::vector<graph::Node>* nodes,
                                            const std::vector<graph::ValueId>& outputs,
                                            const std::vector<graph::ValueId>& by_value) {
  const std::vector<graph::Node>* key = nodes ? nodes : &graph_.nodes;
  std::unique_ptr<Scope>& scope = scopes_[key];
  if (scope) return *scope;
  scope = std::make_unique<Scope>();
  scope->nodes = key;
  scope->is_graph = nodes == nullptr;
  scope->by_value = by_value;
  scope->key = scope->is_graph ? "graph/" : "scope " + std::to_string(scopes_.size()) + "/";
  for (size_t n = 0; n < key->size(); ++n) {
    const graph::Node& node = (*key)[n];
    for (graph::ValueId v : node.inputs) {
      if (v != graph::kNoValue) scope->last_reader[v] = static_cast<int32_t>(n);
    }
    for (graph::ValueId v : node.outputs) {
      if (v != graph::kNoValue) scope->producer[v] = static_cast<int32_t>(n);
    }
  }
  // A subgraph's outputs are read after it (the graph's are returned as graph outputs).
  if (!scope->is_graph) {
    for (graph::ValueId v : outputs) {
      if (v != graph::kNoValue) scope->last_reader[v] = static_cast<int32_t>(key->size());
    }
  }
  return *scope;
}

const std::vector<graph::ValueId>& StagedRunner::inputs_from(Scope& scope, size_t first) {
  for (const auto& [at, values] : scope.inputs_from) {
    if (at == first) return values;
  }
  std::vector<graph::ValueId> values;
  if (scope.is_graph && first == 0) {
    values = graph_.inputs;
  } else {
    for (size_t n = first; n < scope.nodes->size(); ++n) {
      for (graph::ValueId v : (*scope.nodes)[n].inputs) {
        if (v == graph::kNoValue || graph_.value(v).constant) continue;
        if (scope.producer_of(v) >= static_cast<int32_t>(first)) continue;
        if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
      }
    }
  }
  scope.inputs_from.emplace_back(first, std::move(values));
  return scope.inputs_from.back().second;
}

StagedRunner::Known StagedRunner::lookup(const KnownValues& known, graph::ValueId v,
                                         const graph::Node& node) const {
  if (const auto& c = graph_.value(v).constant) {
    Known k;
    k.desc = {c->dtype(), c->shape()};
    k.host = k.plan_value = &*c;
    return k;
  }
  auto it = known.find(v);
  if (it == known.end()) {
    throw Error(node.info.describe() + ": internal: value '" + graph_.value(v).name +
                "' is not known when its subgraph runs in stages");
  }
  return it->second;
}

std::shared_ptr<StagedRunner::Stage> StagedRunner::make_stage(Scope& scope, size_t first,
                                                              const std::vector<graph::ValueId>& inputs,
                                                              const std::vector<PlanInput>& plan_inputs,
                                                              std::span<const InputSource> sources) {
  auto stage = std::make_shared<Stage>();
  stage->first = first;
  stage->io.inputs = inputs;
  const auto start = std::chrono::steady_clock::now();
  std::optional<StageEnd> end;
  NodePlans planned = plan_nodes(graph_, registry_, caps_, plan_inputs, {}, nullptr, sharing_, gemm_tuning_,
                                 &end, first, &inputs, scope.is_graph ? nullptr : scope.nodes);
  const double kernel_plans_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::vector<graph::Node>& nodes = *scope.nodes;
  stage->stop = end ? end->end : nodes.size();
  stage->descend = end && end->descend;
  const size_t stop = stage->stop;
  auto produced_here = [&](graph::ValueId v) {
    const int32_t p = scope.producer_of(v);
    return p >= static_cast<int32_t>(first) && p < static_cast<int32_t>(stop);
  };
  auto host_value = [&](graph::ValueId v) -> const Tensor* {
    if (const auto& c = graph_.value(v).constant) return &*c;
    const auto& h = planned.host_values[static_cast<size_t>(v)];
    return h ? &*h : nullptr;
  };
  auto add_output = [&](graph::ValueId v, Stage::Role role, size_t graph_output) {
    stage->io.outputs.push_back(v);
    stage->outputs.push_back({role, graph_output});
  };
  if (stop > first) {
    // The graph's outputs computed here (the first stage also returns those that are inputs or constants).
    for (size_t o = 0; o < graph_.outputs.size() && scope.is_graph; ++o) {
      const graph::ValueId v = graph_.outputs[o];
      if (produced_here(v) || (first == 0 && graph_.value(v).producer < 0))
        add_output(v, Stage::Role::GraphOutput, o);
    }
    // Values later stages read: kept on the device, or passed on as host values.
    for (size_t n = first; n < stop; ++n) {
      for (graph::ValueId v : nodes[n].outputs) {
        if (v == graph::kNoValue || scope.last_reader_of(v) < static_cast<int32_t>(stop)) continue;
        if (const Tensor* h = host_value(v)) {
          stage->host_values.emplace_back(v, *h);
        } else {
          add_output(v, Stage::Role::Boundary, 0);
        }
      }
    }
    // The scope's outputs needed on the host, when the GPU computes them here.
    for (graph::ValueId v : scope.by_value) {
      if (produced_here(v) && !host_value(v)) add_output(v, Stage::Role::ReadBack, 0);
    }
  }
  if (end) {
    for (graph::ValueId v : end->read_back) {
      if (produced_here(v)) {
        add_output(v, Stage::Role::ReadBack, 0);
      } else {
        stage->read_back_inputs.push_back(v);
      }
    }
  }
  if (stop > first) {
    stage->plan =
        std::make_unique<ExecutionPlan>(device_, graph_, weights_, std::move(planned), kernel_plans_ms,
                                        sharing_, sources, PlanRoom{}, run_status_, &stage->io);
  }
  return stage;
}

// A stage's inputs as plan_nodes and ExecutionPlan::run take them, and the key of its cached plan: where it
// starts and what it sees of its inputs (types, shapes, the values the planner reads).
struct StagedRunner::StageInputs {
  const std::vector<graph::ValueId>* values = nullptr;  // inputs_from's
  std::vector<PlanInput> plan_inputs;
  std::vector<InputSource> sources;
  std::string key;
};

StagedRunner::StageInputs StagedRunner::stage_inputs(Scope& scope, size_t first, const KnownValues& known) {
  const std::vector<graph::ValueId>& inputs = inputs_from(scope, first);
  StageInputs in;
  in.values = &inputs;
  std::vector<PlanInput>& stage_plan_inputs = in.plan_inputs;
  std::vector<InputSource>& stage_sources = in.sources;
  std::string& key = in.key;
  key = scope.key + std::to_string(first) + ":";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto found = known.find(inputs[i]);
    if (found == known.end()) {
      throw Error("internal: value '" + graph_.value(inputs[i]).name + "' is not known at stage " +
                  std::to_string(first) + " of " + scope.key);
    }
    const Known& k = found->second;
    const Tensor* value = k.plan_value;
    stage_plan_inputs.push_back({k.desc, value});
    stage_sources.push_back({k.host, k.host ? gpu::BufferSlice{} : k.device, k.host ? 0 : k.content_id});
    key += std::to_string(static_cast<int>(k.desc.dtype)) + shape_to_string(k.desc.shape);
    if (value) {
      key += "=";
      key.append(reinterpret_cast<const char*>(value->bytes().data()), value->byte_size());
    }
    key += ";";
  }
  return in;
}

std::shared_ptr<StagedRunner::Stage> StagedRunner::find_or_make_stage(Scope& scope, size_t first,
                                                                      const StageInputs& in) {
  const std::string& key = in.key;
  std::shared_ptr<Stage> stage;
  for (auto it = stages_.begin(); it != stages_.end(); ++it) {
    if (it->first != key) continue;
    stages_.splice(stages_.begin(), stages_, it);
    stage = stages_.front().second;
    break;
  }
  if (!stage) {
    stage = make_stage(scope, first, *in.values, in.plan_inputs, in.sources);
    ++report_.plans_made;
    stages_.emplace_front(key, stage);
    while (stages_.size() > max_stages_) stages_.pop_back();
  }
  return stage;
}

std::shared_ptr<StagedRunner::BufferSet> StagedRunner::free_buffer_set(Stage& stage) {
  std::shared_ptr<BufferSet> buffer_set;
  for (const std::shared_ptr<BufferSet>& set : stage.buffer_sets) {
    if (set.use_count() == 1) {  // only the stage holds it: no value of an earlier run lies there
      buffer_set = set;
      break;
    }
  }
  if (!buffer_set) {
    buffer_set = stage.buffer_sets.emplace_back(std::make_shared<BufferSet>());
    buffer_set->buffers.resize(stage.outputs.size());
  }
  return buffer_set;
}

void StagedRunner::run_stage(Stage& stage, BufferSet& buffer_set, std::span<const InputSource> sources,
                             std::vector<Tensor>& outs, std::vector<ops::TensorDesc>& real) {
  std::vector<gpu::BufferSlice> targets(stage.outputs.size());
  for (size_t o = 0; o < stage.outputs.size(); ++o) {
    if (stage.outputs[o].role != Stage::Role::Boundary) continue;
    std::unique_ptr<gpu::Buffer>& buffer = buffer_set.buffers[o];
    if (!buffer) {
      const uint64_t bytes = std::max<uint64_t>(16, device_byte_size(stage.plan->output_desc(o)));
      buffer = std::make_unique<gpu::Buffer>(
          device_.create_buffer(bytes, "stage value '" + graph_.value(stage.io.outputs[o]).name + "'"));
    }
    targets[o] = {buffer.get()};
  }
  outs = stage.plan->run(sources, targets, nullptr);
  report_.dispatches += stage.plan->dispatch_count();
  ++report_.read_backs;
  for (size_t o = 0; o < stage.outputs.size(); ++o) real.push_back(stage.plan->output_desc(o));
  if (const ExecutionPlan::DataDependentStep* dd = stage.plan->data_dependent_step()) {
    const graph::Node* node = dd->node;
    const std::vector<ops::TensorDesc> exact =
        real_output_descs(node->info, dd->outputs, dd->data_dependent, stage.plan->extent());
    for (const ops::DataDependentOutput& d : dd->data_dependent) {
      if (d.output >= node->outputs.size() || node->outputs[d.output] == graph::kNoValue) continue;
      for (size_t o = 0; o < stage.outputs.size(); ++o) {
        if (stage.io.outputs[o] != node->outputs[d.output]) continue;
        real[o] = exact[d.output];
        if (stage.outputs[o].role != Stage::Role::Boundary)
          outs[o] = leading_elements(outs[o], real[o].shape);
      }
    }
  }
}

void StagedRunner::take_stage_outputs(const Stage& stage, const std::shared_ptr<BufferSet>& buffer_set,
                                      std::vector<Tensor>& outs, const std::vector<ops::TensorDesc>& real,
                                      KnownValues& known, std::vector<Tensor>& results,
                                      std::vector<bool>& filled) {
  for (size_t o = 0; o < stage.outputs.size(); ++o) {
    const graph::ValueId v = stage.io.outputs[o];
    const Stage::Output& out = stage.outputs[o];
    if (out.role == Stage::Role::GraphOutput) {
      results[out.graph_output] = std::move(outs[o]);
      filled[out.graph_output] = true;
    } else if (out.role == Stage::Role::Boundary) {
      gpu::Buffer* buffer = buffer_set->buffers[o].get();
      Known k;
      k.desc = real[o];
      k.device = {buffer, 0, buffer->size()};
      k.content_id = next_content_id_++;
      k.holds = buffer_set;
      known[v] = std::move(k);
    } else {
      Known& k = known[v];
      k.desc = real[o];
      k.owned = std::make_shared<const Tensor>(std::move(outs[o]));
      k.host = k.plan_value = k.owned.get();
    }
  }
  for (const auto& [v, tensor] : stage.host_values) {
    Known k;
    k.desc = {tensor.dtype(), tensor.shape()};
    k.host = k.plan_value = &tensor;
    known[v] = std::move(k);
  }
}

void StagedRunner::download_read_back_inputs(const Stage& stage, KnownValues& known) {
  for (graph::ValueId v : stage.read_back_inputs) {
    Known& k = known.at(v);
    if (k.host) {
      k.plan_value = k.host;
      continue;
    }
    std::vector<std::byte> bytes(device_payload_bytes(k.desc));
    std::vector<gpu::Device::DownloadRegion> regions{{k.device.buffer, k.device.offset, bytes}};
    device_.download(regions);
    ++report_.read_backs;
    k.owned = std::make_shared<const Tensor>(from_device_bytes(k.desc, bytes));
    k.host = k.plan_value = k.owned.get();
  }
}

void StagedRunner::run_scope(Scope& scope, KnownValues& known, std::vector<Tensor>& results,
                             std::vector<bool>& filled, std::vector<std::shared_ptr<Stage>>& used) {
  const std::vector<graph::Node>& nodes = *scope.nodes;
  size_t first = 0;
  while (true) {
    const StageInputs in = stage_inputs(scope, first, known);
    const std::shared_ptr<Stage> stage = find_or_make_stage(scope, first, in);
    used.push_back(stage);
    ++report_.stages;
    const std::shared_ptr<BufferSet> buffer_set = free_buffer_set(*stage);

    // Run: boundary values copied out to the stage's buffers, the rest (graph outputs, read-backs, the
    // extent) in one download.
    std::vector<Tensor> outs;
    std::vector<ops::TensorDesc> real;  // per output
    if (stage->plan) run_stage(*stage, *buffer_set, in.sources, outs, real);
    take_stage_outputs(*stage, buffer_set, outs, real, known, results, filled);
    // Values a stage needs by value that an earlier stage left on the device (rare: one more download).
    download_read_back_inputs(*stage, known);
    if (stage->descend) {
      run_control_flow(nodes[stage->stop], known, results, filled, used);
      if (stage->stop + 1 >= nodes.size()) break;
      first = stage->stop + 1;
      continue;
    }
    if (stage->stop >= nodes.size()) break;
    if (stage->stop == first && stage->read_back_inputs.empty())
      throw Error("internal: a stage at node " + std::to_string(first) +
                  " ran no node and read nothing back");
    first = stage->stop;
  }
}

void StagedRunner::run_control_flow(const graph::Node& node, KnownValues& known, std::vector<Tensor>& results,
                                    std::vector<bool>& filled, std::vector<std::shared_ptr<Stage>>& used) {
  auto subgraph = [&](const char* attribute) -> const graph::Subgraph& {
    for (const graph::Subgraph& sub : node.subgraphs) {
      if (sub.attribute == attribute) return sub;
    }
    throw Error(node.info.describe() + ": has no graph attribute '" + attribute + "'");
  };
  // A bound read back (or known when planning) as one element of `dtype`.
  auto host_scalar = [&](graph::ValueId v, DType dtype, const char* what) {
    const Known k = lookup(known, v, node);
    const Tensor* t = k.host ? k.host : k.plan_value;
    if (!t) throw Error(node.info.describe() + ": internal: its " + what + " was not read back");
    if (t->dtype() != dtype || t->element_count() != 1) {
      throw Error(node.info.describe() + ": its " + what + " '" + graph_.value(v).name + "' is " +
                  std::string(dtype_name(t->dtype())) + " " + shape_to_string(t->shape()) +
                  "; expected a single " + std::string(dtype_name(dtype)) + " element");
    }
    return *t;
  };
  const bool onnx = node.info.domain.empty();
  if (onnx && node.info.op_type == "If") {
    const bool then_taken =
        host_scalar(node.inputs.at(0), DType::Bool, "condition").bytes()[0] != std::byte{0};
    const graph::Subgraph& branch = subgraph(then_taken ? ops::kIfThenBranch : ops::kIfElseBranch);
    run_scope(scope_of(&branch.nodes, branch.outputs, {}), known, results, filled, used);
    for (size_t o = 0; o < node.outputs.size() && o < branch.outputs.size(); ++o) {
      if (node.outputs[o] != graph::kNoValue) known[node.outputs[o]] = lookup(known, branch.outputs[o], node);
    }
    return;
  }
  if (!onnx || node.info.op_type != "Loop") {
    throw Error(node.info.describe() +
                ": a node in its body needs a value read back from the GPU (an output of data-dependent "
                "size, or a value needed by value), which wgi supports in If branches and Loop bodies only");
  }
  const graph::Subgraph& body = subgraph(ops::kLoopBody);
  const size_t carried = node.op_input_count() - 2;  // plan_loop checked the counts before it threw
  const size_t scans = body.outputs.size() - 1 - carried;
  std::optional<int64_t> trip_count;
  if (node.inputs[0] != graph::kNoValue)
    trip_count = host_scalar(node.inputs[0], DType::Int64, "trip count").data<int64_t>()[0];
  const bool has_condition = node.inputs[1] != graph::kNoValue;
  bool keep_going =
      !has_condition || host_scalar(node.inputs[1], DType::Bool, "condition").bytes()[0] != std::byte{0};
  std::vector<Known> values;
  for (size_t j = 0; j < carried; ++j) values.push_back(lookup(known, node.inputs[2 + j], node));
  std::vector<std::vector<Known>> scanned(scans);
  Scope& scope =
      scope_of(&body.nodes, body.outputs,
               has_condition ? std::vector<graph::ValueId>{body.outputs[0]} : std::vector<graph::ValueId>{});
  const size_t per_iteration = std::max<size_t>(1, nodes_in(body.nodes));
  auto host_known = [](Tensor t) {
    Known k;
    k.desc = {t.dtype(), t.shape()};
    k.owned = std::make_shared<const Tensor>(std::move(t));
    k.host = k.plan_value = k.owned.get();
    return k;
  };
  for (int64_t i = 0; keep_going && (!trip_count || i < *trip_count); ++i) {
    scope_nodes_ += per_iteration;
    if (scope_nodes_ > kMaxUnrolledNodes) {
      throw Error(node.info.describe() + ": iteration " + std::to_string(i) + " would take this run past " +
                  std::to_string(kMaxUnrolledNodes) + " body nodes run iteration by iteration (" +
                  std::to_string(per_iteration) +
                  " per iteration); wgi bounds a Loop whose condition the GPU computes as it bounds an "
                  "unrolled one, so a condition that stays true ends here");
    }
    known[body.inputs[0]] = host_known(iteration_number(graph_.value(body.inputs[0]), i));
    known[body.inputs[1]] = host_known(true_condition(graph_.value(body.inputs[1])));
    for (size_t j = 0; j < carried; ++j) known[body.inputs[2 + j]] = values[j];
    run_scope(scope, known, results, filled, used);
    for (size_t j = 0; j < carried; ++j) values[j] = lookup(known, body.outputs[1 + j], node);
    // Each iteration's scan values stay where they are (the values hold their buffers) until stacked.
    for (size_t k = 0; k < scans; ++k)
      scanned[k].push_back(lookup(known, body.outputs[1 + carried + k], node));
    if (has_condition) {
      keep_going =
          host_scalar(body.outputs[0], DType::Bool, "body's condition output").bytes()[0] != std::byte{0};
    }
  }
  for (size_t j = 0; j < carried && j < node.outputs.size(); ++j) {
    if (node.outputs[j] != graph::kNoValue) known[node.outputs[j]] = values[j];
  }
  for (size_t k = 0; k < scans && carried + k < node.outputs.size(); ++k) {
    if (node.outputs[carried + k] == graph::kNoValue) continue;
    known[node.outputs[carried + k]] =
        stack_scan_output(node, graph_.value(body.outputs[1 + carried + k]), k, scanned[k]);
  }
}

// A Loop's scan output: the iterations' values along a new axis 0, copied one after the other into one
// buffer (the device layout of the stacked tensor is theirs end to end when each is whole 4-byte words).
StagedRunner::Known StagedRunner::stack_scan_output(const graph::Node& node, const graph::Value& declared,
                                                    size_t k, const std::vector<Known>& items) {
  const std::string what = node.info.describe() + ": scan output " + std::to_string(k);
  if (items.empty()) {
    // No iteration: an empty tensor of the body output's declared shape.
    const std::optional<Shape> shape = declared.shape.concrete();
    if (!shape) {
      throw Error(what + " ran no iteration, and the body declares its shape as " +
                  declared.shape.to_string() + "; an empty scan output needs every dim declared");
    }
    Shape stacked = {0};
    stacked.insert(stacked.end(), shape->begin(), shape->end());
    Known empty;
    empty.desc = {declared.dtype, stacked};
    empty.owned = std::make_shared<const Tensor>(declared.dtype, stacked);
    empty.host = empty.plan_value = empty.owned.get();
    return empty;
  }
  const ops::TensorDesc& each = items[0].desc;
  for (size_t i = 1; i < items.size(); ++i) {
    if (items[i].desc.dtype != each.dtype || items[i].desc.shape != each.shape) {
      throw Error(what + " is " + std::string(dtype_name(items[i].desc.dtype)) + " " +
                  shape_to_string(items[i].desc.shape) + " in iteration " + std::to_string(i) + " but " +
                  std::string(dtype_name(each.dtype)) + " " + shape_to_string(each.shape) +
                  " in iteration 0; stacking needs the same shape in every iteration");
    }
  }
  Known out;
  out.desc.dtype = each.dtype;
  out.desc.shape = {static_cast<int64_t>(items.size())};
  out.desc.shape.insert(out.desc.shape.end(), each.shape.begin(), each.shape.end());
  const uint64_t bytes = device_payload_bytes(each);
  if (bytes % 4 != 0 || device_payload_bytes(out.desc) != bytes * items.size()) {
    throw Error(what + " is " + std::string(dtype_name(each.dtype)) + " " + shape_to_string(each.shape) +
                " per iteration, whose device layout does not fill whole 4-byte words; wgi stacks the scan "
                "outputs of a Loop run iteration by iteration by copying whole words");
  }
  auto set = std::make_shared<BufferSet>();
  set->buffers.push_back(std::make_unique<gpu::Buffer>(device_.create_buffer(
      std::max<uint64_t>(16, device_byte_size(out.desc)), "scan output '" + declared.name + "'")));
  const gpu::Buffer& buffer = *set->buffers[0];
  gpu::CommandBatch copies(device_);
  for (size_t i = 0; i < items.size() && bytes > 0; ++i) {
    if (items[i].host) {
      device_.upload(buffer, i * bytes, to_device_bytes(*items[i].host, what));
    } else {
      copies.copy({items[i].device.buffer, items[i].device.offset, bytes}, {&buffer, i * bytes, bytes});
    }
  }
  copies.submit();
  out.device = {&buffer, 0, buffer.size()};
  out.content_id = next_content_id_++;
  out.holds = std::move(set);
  return out;
}

std::vector<Tensor> StagedRunner::run(std::span<const InputSource> sources,
                                      const std::vector<PlanInput>& plan_inputs) {
  report_ = {};
  scope_nodes_ = 0;
  KnownValues known;
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    Known k;
    k.desc = plan_inputs.at(i).desc;
    k.host = sources[i].host;
    k.plan_value = plan_inputs[i].value;
    k.device = sources[i].device;
    k.content_id = sources[i].content_id;
    known[graph_.inputs[i]] = std::move(k);
  }
  std::vector<Tensor> results(graph_.outputs.size());
  std::vector<bool> filled(graph_.outputs.size(), false);
  std::vector<std::shared_ptr<Stage>> used;  // alive until the run ends: later stages read their buffers
  run_scope(scope_of(nullptr, graph_.outputs, {}), known, results, filled, used);
  // Outputs of an If or Loop run scope by scope, and graph inputs or constants returned as outputs then.
  for (size_t o = 0; o < graph_.outputs.size(); ++o) {
    if (filled[o]) continue;
    const graph::ValueId v = graph_.outputs[o];
    Known k;
    if (const auto& c = graph_.value(v).constant) {
      k.desc = {c->dtype(), c->shape()};
      k.host = &*c;
    } else if (auto it = known.find(v); it != known.end()) {
      k = it->second;
    } else {
      throw Error("internal: graph output '" + graph_.value(v).name + "' was not computed by the stages");
    }
    if (k.host) {
      results[o] = *k.host;
      continue;
    }
    std::vector<std::byte> bytes(device_payload_bytes(k.desc));
    std::vector<gpu::Device::DownloadRegion> regions{{k.device.buffer, k.device.offset, bytes}};
    device_.download(regions);
    ++report_.read_backs;
    results[o] = from_device_bytes(k.desc, bytes);
  }
  return results;
}

}  // namespace wgi::runtime
