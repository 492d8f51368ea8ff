// plan_nodes (runtime/execution_plan.h): each node's kernels, or its outputs folded on the host, in order.
// NodePlanner holds one planning's tables; its steps are, per node: take the node's latest planning when its
// inputs are unchanged, look up its op, stop the stage for a read-back, plan control flow in place (If,
// Loop, Scan), fold on the host, or plan (or share) its GPU steps.
#include <algorithm>
#include <cstring>

#include "ops/control_flow.h"
#include "ops/data_dependent.h"
#include "runtime/execution_plan.h"
#include "runtime/loop_unrolling.h"

namespace wgi::runtime {

namespace {

// What a node's plan function sees of its inputs, as a memo key: type and shape of each input, and the bytes
// of values known at plan time (graph constants are the same in every plan, so their id is enough).
std::string node_plan_key(const UnrolledNodes& values, const graph::Node& node, const ops::PlanContext& ctx) {
  std::string key;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!ctx.inputs[i]) {
      key += "-;";
      continue;
    }
    key += std::to_string(static_cast<int>(ctx.inputs[i]->dtype)) + shape_to_string(ctx.inputs[i]->shape);
    if (values.value(node.inputs[i]).constant) {
      key += "c" + std::to_string(node.inputs[i]);
    } else if (const Tensor* t = ctx.constant_inputs[i]) {
      key += "=";
      key.append(reinterpret_cast<const char*>(t->bytes().data()), t->byte_size());
    }
    key += ";";
  }
  return key;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.byte_size()) == 0;
}

size_t index_of(graph::ValueId v) {
  return static_cast<size_t>(v);
}

// What plan_nodes was asked (its arguments, execution_plan.h says what each means).
struct PlanRequest {
  const graph::Graph& graph;
  const ops::OpRegistry& registry;
  const gpu::Capabilities& caps;
  std::vector<std::string>* errors;
  PlanSharing* sharing;
  const ops::GemmTuning* gemm_tuning;
  std::optional<StageEnd>* stage_end;
};

class NodePlanner {
 public:
  NodePlanner(const PlanRequest& request, const std::vector<graph::ValueId>& given,
              const std::vector<PlanInput>& inputs);

  // Plans `nodes` from `first_node` on, until the end or until the stage ends.
  NodePlans run(const std::vector<graph::Node>& nodes, size_t first_node,
                const std::function<void(size_t, size_t)>& progress);

 private:
  const Tensor* host_value(graph::ValueId v) const;
  bool known_value(graph::ValueId v) const { return v == graph::kNoValue || known_[index_of(v)]; }
  void mark_outputs_known(const graph::Node& node);
  // The node's output `v` is `source` from the next step on (an If's branch output, a Loop's last
  // iteration's value): the same memory, or the same host value.
  void alias(graph::ValueId v, graph::ValueId source, bool checking_only);
  // The tables cover the values unrolling adds (the copies' outputs, made when a copy is added).
  void cover_unrolled_values();

  // Plans `nodes` in order; `scope` ("If 'x' / then_branch / ") prefixes the errors of nodes in subgraphs.
  void plan_list(const std::vector<graph::Node>& nodes, const std::string& scope, bool checking_only);
  // One node, with its errors thrown or collected (PlanRequest::errors).
  void plan_node(const graph::Node& node, const std::string& scope, bool checking_only);
  void plan_known_inputs(const graph::Node& node, const std::string& scope, bool checking_only,
                         bool recordable);
  // Values the node's planner needs that the GPU computes: true if the node is left for later (checking:
  // planned when run; staging: the stage ends before it).
  bool waits_for_read_back(const graph::Node& node, const std::vector<size_t>& value_inputs,
                           const std::string& scope);
  // An If whose condition is known: its branch is planned here, in the If's place, and the If's outputs are
  // the branch's (NodePlans::aliases). When only checking (errors collected) an If whose condition is not
  // known is planned both ways, since a run gives a graph input by value and reads a GPU-computed one back.
  void plan_if(const graph::Node& node, const ops::PlanContext& ctx, const std::string& scope,
               bool checking_only);
  // Nodes whose outputs can be computed on the host (shape arithmetic on now-known shapes, constant
  // subgraphs) are folded instead of planned; false if this node's are not.
  bool fold_on_host(const graph::Node& node, const ops::OpRegistry::Entry& entry, const ops::PlanContext& ctx,
                    std::optional<PlannedNodeRecord>& record, bool checking_only);
  void plan_on_gpu(const graph::Node& node, const ops::OpRegistry::Entry& entry, const ops::PlanContext& ctx,
                   const ops::DataDependence* dependence, std::optional<PlannedNodeRecord>& record,
                   const std::string& scope, bool checking_only);

  // Unchanged nodes (PlannedNodeRecord): when planning for a run (no errors collected), with sharing.
  bool same_inputs(const graph::Node& node, const PlannedNodeRecord& record) const;
  // Takes the node's latest planning if its inputs are the same; false if it must be planned.
  bool take_unchanged(const graph::Node& node, const PlannedNodeRecord& record);
  // What the node's planner saw of its inputs, for its record.
  PlannedNodeRecord record_of_inputs(const graph::Node& node) const;

  const PlanRequest& request_;
  const bool staging_;
  PlanSharing* const records_;
  // The run-status tag of a node of the graph (lazily: a planning that takes every node unchanged needs
  // none).
  uint32_t status_tag(const graph::Node* node);

  std::unordered_map<const graph::Node*, uint32_t> own_tags_;  // without sharing
  const std::unordered_map<const graph::Node*, uint32_t>* status_tags_ = nullptr;
  std::shared_ptr<UnrolledNodes> unrolled_;
  NodePlans out_;
  std::vector<bool> known_;
  UnrollPlanner unroll_;
  size_t current_ = 0;    // the top-level node being planned
  bool stopped_ = false;  // the stage ends (stage_end says where)
};

NodePlanner::NodePlanner(const PlanRequest& request, const std::vector<graph::ValueId>& given,
                         const std::vector<PlanInput>& inputs)
    : request_(request),
      staging_(request.stage_end != nullptr && request.errors == nullptr),
      records_(request.errors == nullptr && request.sharing && request.sharing->reuse_unchanged_nodes
                   ? request.sharing
                   : nullptr),
      unrolled_(std::make_shared<UnrolledNodes>(request.graph)),
      // Loop and Scan: unrolled (runtime/loop_unrolling.h), each iteration's body planned here, in their
      // place.
      unroll_{*unrolled_,
              [this](const graph::Node& node, const std::string& scope, bool checking_only) {
                plan_node(node, scope, checking_only);
              },
              [this](graph::ValueId v) { return known_value(v); },
              [this](graph::ValueId v) -> const ops::TensorDesc& { return out_.descs[index_of(v)]; },
              [this](graph::ValueId v) { return host_value(v); },
              [this](graph::Value value, std::optional<Tensor> host) {
                const graph::ValueId id = unrolled_->add_value(std::move(value));
                cover_unrolled_values();
                if (host) {
                  out_.descs[index_of(id)] = {host->dtype(), host->shape()};
                  out_.host_values[index_of(id)] = std::move(host);
                  known_[index_of(id)] = true;
                }
                return id;
              },
              [this](graph::ValueId v, Tensor host) {
                out_.descs[index_of(v)] = {host.dtype(), host.shape()};
                out_.host_values[index_of(v)] = std::move(host);
                known_[index_of(v)] = true;
              },
              [this](graph::ValueId v, graph::ValueId source, bool checking_only) {
                alias(v, source, checking_only);
              },
              staging_ || request.errors != nullptr} {
  const graph::Graph& graph = request.graph;
  if (request.stage_end) request.stage_end->reset();
  const size_t value_count = graph.values.size();
  out_.unrolled = unrolled_;
  out_.descs.resize(value_count);
  out_.host_values.resize(value_count);
  known_.assign(value_count, false);
  for (size_t v = 0; v < value_count; ++v) {
    if (const auto& c = graph.values[v].constant) {
      out_.descs[v] = {c->dtype(), c->shape()};
      known_[v] = true;
    }
  }
  for (size_t i = 0; i < given.size(); ++i) {
    const size_t v = index_of(given[i]);
    out_.descs[v] = inputs.at(i).desc;
    if (inputs[i].value) out_.host_values[v] = *inputs[i].value;
    known_[v] = true;
  }
}

uint32_t NodePlanner::status_tag(const graph::Node* node) {
  if (!status_tags_) {
    if (request_.sharing) {
      status_tags_ = &request_.sharing->status_tags(request_.graph);
    } else {
      own_tags_ = status_tags_of(request_.graph);
      status_tags_ = &own_tags_;
    }
  }
  return status_tags_->at(node);
}

const Tensor* NodePlanner::host_value(graph::ValueId v) const {
  if (v == graph::kNoValue) return nullptr;
  if (const auto& c = unrolled_->value(v).constant) return &*c;
  const auto& h = out_.host_values[index_of(v)];
  return h ? &*h : nullptr;
}

void NodePlanner::mark_outputs_known(const graph::Node& node) {
  for (graph::ValueId v : node.outputs) {
    if (v != graph::kNoValue) known_[index_of(v)] = true;
  }
}

void NodePlanner::alias(graph::ValueId v, graph::ValueId source, bool checking_only) {
  out_.descs[index_of(v)] = out_.descs[index_of(source)];
  // Host values are copied (so readers see a folded shape as folded), large constants only aliased.
  if (const Tensor* h = host_value(source); h && (!unrolled_->value(source).constant || host_visible(*h))) {
    out_.host_values[index_of(v)] = *h;
  }
  if (!checking_only) out_.aliases.push_back({out_.gpu_nodes.size(), v, source});
  known_[index_of(v)] = true;
}

void NodePlanner::cover_unrolled_values() {
  out_.descs.resize(unrolled_->value_count());
  out_.host_values.resize(unrolled_->value_count());
  known_.resize(unrolled_->value_count(), false);
}

void NodePlanner::plan_list(const std::vector<graph::Node>& nodes, const std::string& scope,
                            bool checking_only) {
  for (const graph::Node& node : nodes) plan_node(node, scope, checking_only);
}

void NodePlanner::plan_if(const graph::Node& node, const ops::PlanContext& ctx, const std::string& scope,
                          bool checking_only) {
  const graph::Subgraph* branches[2] = {nullptr, nullptr};
  for (const graph::Subgraph& sub : node.subgraphs) {
    if (sub.attribute == ops::kIfThenBranch) branches[0] = &sub;
    if (sub.attribute == ops::kIfElseBranch) branches[1] = &sub;
  }
  if (!branches[0] || !branches[1]) throw Error(node.info.describe() + ": internal: a branch is missing");
  // A condition the GPU computes is read back when run (docs/dynamic_shapes.md): either branch may run.
  const bool check_both = request_.errors && ctx.constant(0) == nullptr;
  const bool then_taken = check_both || ops::if_condition(ctx);
  const std::string inner = scope + "If '" + node.info.name + "' / ";
  if (check_both) plan_list(branches[1]->nodes, inner + ops::kIfElseBranch + " / ", true);
  const graph::Subgraph& taken = *branches[then_taken ? 0 : 1];
  plan_list(taken.nodes, inner + taken.attribute + " / ", checking_only);
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    const graph::ValueId v = node.outputs[o], source = taken.outputs.at(o);
    if (v == graph::kNoValue) continue;
    if (!known_[index_of(source)]) return;  // a branch node failed (only when collecting errors)
    alias(v, source, checking_only);
  }
}

bool NodePlanner::same_inputs(const graph::Node& node, const PlannedNodeRecord& record) const {
  if (record.input_descs.size() != node.inputs.size()) return false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const graph::ValueId v = node.inputs[i];
    if (v == graph::kNoValue || unrolled_->value(v).constant) continue;  // the same in every planning
    const ops::TensorDesc& desc = out_.descs[index_of(v)];
    if (desc.dtype != record.input_descs[i].dtype || desc.shape != record.input_descs[i].shape) return false;
    const std::optional<Tensor>& value = out_.host_values[index_of(v)];
    const std::optional<Tensor>& before = record.input_values[i];
    if (value.has_value() != before.has_value() || (value && !same_tensor(*value, *before))) return false;
  }
  return true;
}

bool NodePlanner::take_unchanged(const graph::Node& node, const PlannedNodeRecord& record) {
  if (!same_inputs(node, record)) return false;
  if (record.folded) {
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const graph::ValueId v = node.outputs[o];
      if (v == graph::kNoValue) continue;
      out_.descs[index_of(v)] = record.output_descs[o];
      out_.host_values[index_of(v)] = record.output_values[o];
    }
    ++out_.host_nodes;
  } else {
    std::shared_ptr<SharedNodePlan> plan = record.plan.lock();
    if (!plan) return false;  // dropped by every plan and the node-plan LRU
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o] != graph::kNoValue) out_.descs[index_of(node.outputs[o])] = plan->plan.outputs[o];
    }
    out_.gpu_nodes.push_back({&node, {}, std::move(plan), true, true});
    ++out_.reused;
  }
  ++out_.unchanged;
  mark_outputs_known(node);
  return true;
}

PlannedNodeRecord NodePlanner::record_of_inputs(const graph::Node& node) const {
  PlannedNodeRecord record;
  record.input_descs.resize(node.inputs.size());
  record.input_values.resize(node.inputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const graph::ValueId v = node.inputs[i];
    if (v == graph::kNoValue || unrolled_->value(v).constant) continue;
    record.input_descs[i] = out_.descs[index_of(v)];
    record.input_values[i] = out_.host_values[index_of(v)];
  }
  return record;
}

void NodePlanner::plan_node(const graph::Node& node, const std::string& scope, bool checking_only) {
  cover_unrolled_values();
  if (!std::all_of(node.inputs.begin(), node.inputs.end(), [&](graph::ValueId v) { return known_value(v); }))
    return;  // depends on a node that failed to plan (only when collecting errors)
  // Records exist only for nodes of the graph and its If branches (not of unrolled Loops and Scans, made
  // anew by each planning) that are neither control flow nor data-dependent (those are never recorded).
  const bool recordable = records_ && unrolled_->origin(&node) == &node && !unrolled_->made(&node);
  if (recordable) {
    if (const PlannedNodeRecord* record = records_->latest_planning(&node);
        record && take_unchanged(node, *record)) {
      return;
    }
  }
  try {
    plan_known_inputs(node, scope, checking_only, recordable);
  } catch (const Error& e) {
    // A branch node's error is prefixed once, by the scope it was raised in.
    const bool prefixed = !scope.empty() && std::string_view(e.what()).starts_with(scope);
    if (!request_.errors) {
      if (scope.empty() || prefixed) throw;
      throw Error(scope + e.what());
    }
    request_.errors->push_back(prefixed ? e.what() : scope + e.what());
  }
}

bool NodePlanner::waits_for_read_back(const graph::Node& node, const std::vector<size_t>& value_inputs,
                                      const std::string& scope) {
  std::vector<graph::ValueId> read_back;
  for (size_t i : value_inputs) {
    if (i < node.op_input_count() && node.inputs[i] != graph::kNoValue && !host_value(node.inputs[i]))
      read_back.push_back(node.inputs[i]);
  }
  if (read_back.empty()) return false;
  if (request_.errors) {
    // Only checking: a value this node needs that the GPU computes is read back when run, so the node and
    // the nodes after it that depend on it are planned then (If and Loop check their subgraphs anyway).
    return node.info.op_type != "If" && node.info.op_type != "Loop";
  }
  if (!staging_) return false;
  // The stage ends before this node, and the next is planned with the values read back
  // (docs/dynamic_shapes.md).
  if (!scope.empty()) throw ReadBackInside{};
  *request_.stage_end = StageEnd{current_, std::move(read_back), nullptr};
  stopped_ = true;
  return true;
}

void NodePlanner::plan_known_inputs(const graph::Node& node, const std::string& scope, bool checking_only,
                                    bool recordable) {
  const ops::OpRegistry& registry = request_.registry;
  const auto* entry = registry.find(node.info.domain, node.info.op_type, node.info.opset);
  if (!entry) {
    throw Error(node.info.describe() + ": " +
                registry.unsupported_reason(node.info.domain, node.info.op_type, node.info.opset).value());
  }
  // A node of an unrolled Loop or Scan plans as the graph's node it copies (its tag and shared plans).
  const graph::Node* origin = unrolled_->origin(&node);
  ops::PlanContext ctx{node.info, {}, {}, request_.caps, request_.gemm_tuning, status_tag(origin)};
  for (graph::ValueId v : node.inputs) {
    if (v == graph::kNoValue) {
      ctx.inputs.push_back(std::nullopt);
    } else {
      ctx.inputs.push_back(out_.descs[index_of(v)]);
    }
    ctx.constant_inputs.push_back(host_value(v));
  }
  const ops::DataDependence* dependence = ops::data_dependence(node.info);
  if (dependence && waits_for_read_back(node, dependence->value_inputs, scope)) return;
  const bool onnx_domain = node.info.domain.empty();
  if (onnx_domain && node.info.op_type == "If" && !node.subgraphs.empty()) {
    plan_if(node, ctx, scope, checking_only);
    return;
  }
  // Loop and Scan with or without a body (plan_loop / plan_scan say when it is missing).
  if (onnx_domain && node.info.op_type == "Loop") {
    // `wgi check` without values: bounds from graph inputs (given by value in a run) are not known.
    // Bounds the GPU computes are read back when run (docs/dynamic_shapes.md).
    const bool check_one_iteration =
        request_.errors &&
        std::any_of(node.inputs.begin(),
                    node.inputs.begin() + static_cast<long>(std::min<size_t>(2, node.inputs.size())),
                    [&](graph::ValueId v) { return v != graph::kNoValue && !host_value(v); });
    plan_loop(unroll_, node, ctx, scope, checking_only, check_one_iteration);
    return;
  }
  if (onnx_domain && node.info.op_type == "Scan") {
    plan_scan(unroll_, node, ctx, scope, checking_only);
    return;
  }
  // Its record: taken by the next planning whose inputs are the same (recorded once planned).
  std::optional<PlannedNodeRecord> record;
  if (recordable && !dependence) record = record_of_inputs(node);
  if (!fold_on_host(node, *entry, ctx, record, checking_only))
    plan_on_gpu(node, *entry, ctx, dependence, record, scope, checking_only);
  mark_outputs_known(node);
}

bool NodePlanner::fold_on_host(const graph::Node& node, const ops::OpRegistry::Entry& entry,
                               const ops::PlanContext& ctx, std::optional<PlannedNodeRecord>& record,
                               bool checking_only) {
  if (!entry.handler.evaluate_on_host) return false;
  std::vector<Tensor> results = entry.handler.evaluate_on_host(ctx, ctx.constant_inputs);
  if (results.size() != node.outputs.size()) return false;
  for (size_t o = 0; o < results.size(); ++o) {
    graph::ValueId v = node.outputs[o];
    if (v == graph::kNoValue) continue;
    out_.descs[index_of(v)] = {results[o].dtype(), results[o].shape()};
    out_.host_values[index_of(v)] = std::move(results[o]);
  }
  out_.host_nodes += checking_only ? 0 : 1;
  out_.replanned += checking_only ? 0 : 1;
  if (record) {
    record->folded = true;
    record->output_descs.resize(node.outputs.size());
    record->output_values.resize(node.outputs.size());
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const graph::ValueId v = node.outputs[o];
      if (v == graph::kNoValue) continue;
      record->output_descs[o] = out_.descs[index_of(v)];
      record->output_values[o] = out_.host_values[index_of(v)];
    }
    records_->record_planning(&node, std::move(*record));
  }
  return true;
}

void NodePlanner::plan_on_gpu(const graph::Node& node, const ops::OpRegistry::Entry& entry,
                              const ops::PlanContext& ctx, const ops::DataDependence* dependence,
                              std::optional<PlannedNodeRecord>& record, const std::string& scope,
                              bool checking_only) {
  const graph::Node* origin = unrolled_->origin(&node);
  NodePlans::GpuNode gpu_node{&node, {}, nullptr, false};
  std::string key;
  // Nodes made to cut and stack scan values plan unlike the Loop they stand for: never shared.
  PlanSharing* const sharing = unrolled_->made(&node) ? nullptr : request_.sharing;
  if (sharing) {
    key = node_plan_key(*unrolled_, node, ctx);
    gpu_node.shared = sharing->find(origin, key);
    gpu_node.reused = gpu_node.shared != nullptr;
  }
  if (!gpu_node.shared) {
    ops::OpPlan plan = entry.handler.plan(ctx);
    if (plan.outputs.size() < node.outputs.size()) {
      throw Error(node.info.describe() + ": the op planned " + std::to_string(plan.outputs.size()) +
                  " outputs but the node has " + std::to_string(node.outputs.size()));
    }
    if (sharing) {
      gpu_node.shared = std::make_shared<SharedNodePlan>();
      gpu_node.shared->plan = std::move(plan);
      sharing->insert(origin, std::move(key), gpu_node.shared);
    } else {
      gpu_node.plan = std::move(plan);
    }
  }
  const ops::OpPlan& plan = gpu_node.op_plan();
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (node.outputs[o] != graph::kNoValue) out_.descs[index_of(node.outputs[o])] = plan.outputs[o];
  }
  if (staging_ && dependence && dependence->outputs) {
    // Its readers need the real sizes: the stage ends after it.
    if (!scope.empty()) throw ReadBackInside{};
    *request_.stage_end = StageEnd{current_ + 1, {}, &node};
    stopped_ = true;
  }
  if (record) {
    record->plan = gpu_node.shared;
    records_->record_planning(&node, std::move(*record));
  }
  // A branch planned only to check it (see plan_if) has no steps.
  if (!checking_only) {
    out_.reused += gpu_node.reused ? 1 : 0;
    ++out_.replanned;
    out_.gpu_nodes.push_back(std::move(gpu_node));
  }
}

NodePlans NodePlanner::run(const std::vector<graph::Node>& nodes, size_t first_node,
                           const std::function<void(size_t, size_t)>& progress) {
  for (size_t ni = first_node; ni < nodes.size() && !stopped_; ++ni) {
    if (progress) progress(ni, nodes.size());
    current_ = ni;
    const size_t steps = out_.gpu_nodes.size(), aliases = out_.aliases.size();
    const size_t host_nodes = out_.host_nodes, reused = out_.reused;
    try {
      plan_node(nodes[ni], "", false);
    } catch (const ReadBackInside&) {
      // Nothing of this node is planned here: staging, its subgraph runs scope by scope; checking, what it
      // reads back is only known when run.
      out_.gpu_nodes.erase(out_.gpu_nodes.begin() + static_cast<std::ptrdiff_t>(steps), out_.gpu_nodes.end());
      out_.aliases.erase(out_.aliases.begin() + static_cast<std::ptrdiff_t>(aliases), out_.aliases.end());
      out_.host_nodes = host_nodes;
      out_.reused = reused;
      if (staging_) {
        *request_.stage_end = StageEnd{ni, {}, nullptr, true};
        stopped_ = true;
      }
    }
  }
  if (progress) progress(nodes.size(), nodes.size());
  return std::move(out_);
}

}  // namespace

std::vector<const graph::Node*> nodes_by_tag(const graph::Graph& graph) {
  std::vector<const graph::Node*> out;
  std::function<void(const std::vector<graph::Node>&)> add = [&](const std::vector<graph::Node>& nodes) {
    for (const graph::Node& node : nodes) {
      out.push_back(&node);
      for (const graph::Subgraph& sub : node.subgraphs) add(sub.nodes);
    }
  };
  add(graph.nodes);
  return out;
}

std::unordered_map<const graph::Node*, uint32_t> status_tags_of(const graph::Graph& graph) {
  std::unordered_map<const graph::Node*, uint32_t> tags;
  const std::vector<const graph::Node*> tagged = nodes_by_tag(graph);
  for (size_t t = 0; t < tagged.size(); ++t) tags[tagged[t]] = static_cast<uint32_t>(t + 1);
  return tags;
}

const std::unordered_map<const graph::Node*, uint32_t>& PlanSharing::status_tags(const graph::Graph& graph) {
  if (tagged_graph_ != &graph) {
    status_tags_ = status_tags_of(graph);
    tagged_graph_ = &graph;
  }
  return status_tags_;
}

const ops::NodeInfo* node_of_tag(const graph::Graph& graph, uint32_t tag) {
  const std::vector<const graph::Node*> tagged = nodes_by_tag(graph);
  return tag >= 1 && tag <= tagged.size() ? &tagged[tag - 1]->info : nullptr;
}

NodePlans plan_nodes(const graph::Graph& graph, const ops::OpRegistry& registry,
                     const gpu::Capabilities& caps, const std::vector<PlanInput>& inputs,
                     const std::function<void(size_t, size_t)>& progress, std::vector<std::string>* errors,
                     PlanSharing* sharing, const ops::GemmTuning* gemm_tuning,
                     std::optional<StageEnd>* stage_end, size_t first_node,
                     const std::vector<graph::ValueId>* stage_inputs, const std::vector<graph::Node>* nodes) {
  const PlanRequest request{graph, registry, caps, errors, sharing, gemm_tuning, stage_end};
  NodePlanner planner(request, stage_inputs ? *stage_inputs : graph.inputs, inputs);
  return planner.run(nodes ? *nodes : graph.nodes, first_node, progress);
}

}  // namespace wgi::runtime
