#include "runtime/loop_unrolling.h"

#include <algorithm>

#include "ops/control_flow.h"

namespace wgi::runtime {

const graph::Value& UnrolledNodes::value(graph::ValueId id) const {
  const size_t i = static_cast<size_t>(id);
  return i < first_value_ ? graph_.values.at(i) : values_.at(i - first_value_);
}

graph::ValueId UnrolledNodes::add_value(graph::Value value) {
  value.producer = -1;  // producers are the graph's node indices; these nodes have none
  values_.push_back(std::move(value));
  return static_cast<graph::ValueId>(first_value_ + values_.size() - 1);
}

graph::Node UnrolledNodes::copy_of(const graph::Node& node,
                                   std::unordered_map<graph::ValueId, graph::ValueId>& renamed) {
  auto read = [&](graph::ValueId v) {
    auto it = renamed.find(v);
    return it == renamed.end() ? v : it->second;
  };
  auto define = [&](graph::ValueId v) {
    if (v == graph::kNoValue) return v;
    const graph::Value& original = value(v);
    graph::Value copy;  // built first: add_value may move the table; a node's output is no constant
    copy.name = original.name;
    copy.dtype = original.dtype;
    copy.shape = original.shape;
    const graph::ValueId id = add_value(std::move(copy));
    renamed[v] = id;
    return id;
  };
  graph::Node copy;
  copy.info = node.info;
  copy.outer_reads = node.outer_reads;
  for (graph::ValueId v : node.inputs) copy.inputs.push_back(read(v));
  for (graph::ValueId v : node.outputs) copy.outputs.push_back(define(v));
  for (const graph::Subgraph& sub : node.subgraphs) {
    graph::Subgraph s;
    s.attribute = sub.attribute;
    s.name = sub.name;
    for (graph::ValueId v : sub.inputs) s.inputs.push_back(define(v));
    for (const graph::Node& n : sub.nodes) s.nodes.push_back(copy_of(n, renamed));
    for (graph::ValueId v : sub.outputs) s.outputs.push_back(read(v));
    copy.subgraphs.push_back(std::move(s));
  }
  ++node_count_;
  return copy;
}

void UnrolledNodes::add_origins(const graph::Node& copy, const graph::Node& original) {
  origins_[&copy] = origin(&original);
  for (size_t s = 0; s < copy.subgraphs.size(); ++s) {
    for (size_t n = 0; n < copy.subgraphs[s].nodes.size(); ++n)
      add_origins(copy.subgraphs[s].nodes[n], original.subgraphs[s].nodes[n]);
  }
}

const graph::Node& UnrolledNodes::add_copy(const graph::Node& node,
                                           std::unordered_map<graph::ValueId, graph::ValueId>& renamed) {
  nodes_.push_back(copy_of(node, renamed));
  add_origins(nodes_.back(), node);
  return nodes_.back();
}

const graph::Node& UnrolledNodes::add_node(graph::Node node, const graph::Node& origin) {
  nodes_.push_back(std::move(node));
  origins_[&nodes_.back()] = this->origin(&origin);
  made_.insert(&nodes_.back());
  ++node_count_;
  return nodes_.back();
}

const graph::Node* UnrolledNodes::origin(const graph::Node* node) const {
  auto it = origins_.find(node);
  return it == origins_.end() ? node : it->second;
}

namespace {

const graph::Subgraph& body_of(const ops::PlanContext& ctx, const graph::Node& node) {
  for (const graph::Subgraph& sub : node.subgraphs) {
    if (sub.attribute == ops::kLoopBody) return sub;
  }
  ctx.fail("has no graph attribute 'body'");
}

}  // namespace

size_t nodes_in(const std::vector<graph::Node>& nodes) {
  size_t n = nodes.size();
  for (const graph::Node& node : nodes) {
    for (const graph::Subgraph& sub : node.subgraphs) n += nodes_in(sub.nodes);
  }
  return n;
}

namespace {

// Fails unless iteration `iteration` of `nodes` more unrolled nodes fits under kMaxUnrolledNodes. Iterations
// count at least as `nodes` each, so that a body of no nodes cannot loop forever.
void reserve(const UnrollPlanner& planner, const ops::PlanContext& ctx, size_t nodes, int64_t iteration) {
  const size_t iterations = static_cast<size_t>(iteration) + 1;
  if (planner.unrolled.node_count() + nodes <= kMaxUnrolledNodes && iterations <= kMaxUnrolledNodes / nodes)
    return;
  ctx.fail("unrolling iteration " + std::to_string(iteration) + " would take this plan past " +
           std::to_string(kMaxUnrolledNodes) + " unrolled nodes (" + std::to_string(nodes) +
           " per iteration); wgi unrolls " + ctx.node.op_type +
           " when planning, one copy of the body per iteration, and refuses more than that");
}

std::string iteration_scope(const std::string& scope, const graph::Node& node, int64_t iteration) {
  return scope + node.info.op_type + " '" + node.info.name + "' / body / iteration " +
         std::to_string(iteration) + " / ";
}

// A new value for `what` (named for messages), unknown until a node produces it.
graph::ValueId new_value(const UnrollPlanner& planner, const std::string& name) {
  graph::Value v;
  v.name = name;
  return planner.add_value(std::move(v), std::nullopt);
}

// A node made for unrolling, standing for `owner`, planned now; returns its output.
graph::ValueId plan_made_node(const UnrollPlanner& planner, const graph::Node& owner,
                              const std::string& op_type, int opset, const std::string& what,
                              graph::ValueId input, graph::ValueId output, ops::Attributes attributes,
                              const std::string& scope, bool checking_only) {
  graph::Node node;
  node.info.name = owner.info.name + " / " + what;
  node.info.op_type = op_type;
  node.info.opset = opset;
  node.info.attributes = std::move(attributes);
  node.info.input_names = {planner.unrolled.value(input).name};
  node.inputs = {input};
  if (output == graph::kNoValue) output = new_value(planner, node.info.name);
  node.outputs = {output};
  node.info.output_names = {planner.unrolled.value(output).name};
  planner.plan_node(planner.unrolled.add_node(std::move(node), owner), scope, checking_only);
  return output;
}

int64_t normalized_axis(const ops::PlanContext& ctx, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) {
    ctx.fail(what + " is " + std::to_string(axis) + ", outside the " + std::to_string(rank) +
             " axes of its tensor");
  }
  return axis < 0 ? axis + rank : axis;
}

// Element `index` of `v` along `axis`, without that axis (Slice then Squeeze).
graph::ValueId slice_of(const UnrollPlanner& planner, const graph::Node& owner, graph::ValueId v,
                        int64_t axis, int64_t index, const std::string& what, const std::string& scope,
                        bool checking_only) {
  ops::Attributes slice;
  slice.set("starts", std::vector<int64_t>{index});
  slice.set("ends", std::vector<int64_t>{index + 1});
  slice.set("axes", std::vector<int64_t>{axis});
  const graph::ValueId sliced = plan_made_node(planner, owner, "Slice", 9, what + " (slice)", v,
                                               graph::kNoValue, std::move(slice), scope, checking_only);
  if (!planner.known(sliced)) return sliced;
  ops::Attributes squeeze;
  squeeze.set("axes", std::vector<int64_t>{axis});
  return plan_made_node(planner, owner, "Squeeze", 11, what, sliced, graph::kNoValue, std::move(squeeze),
                        scope, checking_only);
}

graph::ValueId unsqueezed(const UnrollPlanner& planner, const graph::Node& owner, graph::ValueId v,
                          int64_t axis, const std::string& what, const std::string& scope,
                          bool checking_only) {
  ops::Attributes attributes;
  attributes.set("axes", std::vector<int64_t>{axis});
  return plan_made_node(planner, owner, "Unsqueeze", 11, what, v, graph::kNoValue, std::move(attributes),
                        scope, checking_only);
}

// Writes the iterations' slices (each already with its unit axis at `axis`), stacked along `axis` in
// iteration order (reversed: last first), into `target`. No iterations: an empty tensor of the body output's
// declared shape, which must then be fully known.
void stack_into(const UnrollPlanner& planner, const ops::PlanContext& ctx, const graph::Node& owner,
                std::vector<graph::ValueId> slices, bool reversed, int64_t axis, graph::ValueId target,
                graph::Value declared, const std::string& what, const std::string& scope,
                bool checking_only) {
  if (target == graph::kNoValue) return;
  if (slices.empty()) {
    const std::optional<Shape> shape = declared.shape.concrete();
    if (!shape || axis > static_cast<int64_t>(shape->size())) {
      ctx.fail("runs no iterations, and its body's output '" + declared.name + "' (" + what +
               ") declares no complete shape " + declared.shape.to_string() +
               "; the empty stacked output's shape is then unknown");
    }
    Shape stacked = *shape;
    stacked.insert(stacked.begin() + axis, 0);
    planner.set_host_value(target, Tensor(declared.dtype, stacked));
    return;
  }
  if (reversed) std::reverse(slices.begin(), slices.end());
  graph::Node concat;
  concat.info.name = owner.info.name + " / " + what + " (concat)";
  concat.info.op_type = "Concat";
  concat.info.opset = 11;
  concat.info.attributes.set("axis", axis);
  for (graph::ValueId v : slices) concat.info.input_names.push_back(planner.unrolled.value(v).name);
  concat.inputs = std::move(slices);
  concat.outputs = {target};
  planner.plan_node(planner.unrolled.add_node(std::move(concat), owner), scope, checking_only);
}

// The tensors a body takes as its iteration number and condition: scalars, or of shape [1] when the body
// declares rank 1 (as some exporters write them).
Shape body_scalar_shape(const graph::Value& declared) {
  return declared.shape.rank_known && declared.shape.dims.size() == 1 ? Shape{1} : Shape{};
}

}  // namespace

Tensor iteration_number(const graph::Value& declared, int64_t i) {
  return Tensor::from_vector<int64_t>(body_scalar_shape(declared), std::vector<int64_t>{i});
}

Tensor true_condition(const graph::Value& declared) {
  Tensor t(DType::Bool, body_scalar_shape(declared));
  t.bytes()[0] = std::byte{1};
  return t;
}

namespace {

// The node's output `o`, or none when the node lists fewer (trailing outputs left out).
graph::ValueId output_of(const graph::Node& node, size_t o) {
  return o < node.outputs.size() ? node.outputs[o] : graph::kNoValue;
}

void check_output_count(const ops::PlanContext& ctx, const graph::Node& node, size_t carried, size_t scans) {
  if (node.outputs.size() > carried + scans) {
    ctx.fail("has " + std::to_string(node.outputs.size()) + " outputs, but its body gives " +
             std::to_string(carried) + " loop-carried values and " + std::to_string(scans) + " scan outputs");
  }
}

// Plans one iteration's copy of the body, its formal inputs taking `inputs`. Returns the body's outputs as
// the copy's values, or nothing when one of them is unknown (a body node failed, only when collecting
// errors).
std::optional<std::vector<graph::ValueId>> plan_iteration(const UnrollPlanner& planner,
                                                          const graph::Subgraph& body,
                                                          const std::vector<graph::ValueId>& inputs,
                                                          const std::string& scope, bool checking_only) {
  std::unordered_map<graph::ValueId, graph::ValueId> renamed;
  for (size_t i = 0; i < body.inputs.size(); ++i) renamed[body.inputs[i]] = inputs[i];
  for (const graph::Node& n : body.nodes)
    planner.plan_node(planner.unrolled.add_copy(n, renamed), scope, checking_only);
  std::vector<graph::ValueId> outputs;
  for (graph::ValueId v : body.outputs) {
    auto it = renamed.find(v);
    outputs.push_back(it == renamed.end() ? v : it->second);
    if (!planner.known(outputs.back())) return std::nullopt;
  }
  return outputs;
}

}  // namespace

void plan_loop(const UnrollPlanner& planner, const graph::Node& node, const ops::PlanContext& ctx,
               const std::string& scope, bool checking_only, bool check_one_iteration) {
  const graph::Subgraph& body = body_of(ctx, node);
  const size_t op_inputs = node.op_input_count();
  if (op_inputs < 2) {
    ctx.fail("has " + std::to_string(op_inputs) +
             " inputs; Loop takes M, cond (either may be empty) and the loop-carried values");
  }
  const size_t carried = op_inputs - 2;
  if (body.inputs.size() != carried + 2) {
    ctx.fail("its body has " + std::to_string(body.inputs.size()) + " inputs; expected " +
             std::to_string(carried + 2) + ": the iteration number, the condition and the " +
             std::to_string(carried) + " loop-carried values");
  }
  if (body.outputs.size() < carried + 1) {
    ctx.fail("its body has " + std::to_string(body.outputs.size()) + " outputs; expected at least " +
             std::to_string(carried + 1) + ": the condition and the " + std::to_string(carried) +
             " loop-carried values, then the scan outputs");
  }
  const size_t scans = body.outputs.size() - 1 - carried;
  check_output_count(ctx, node, carried, scans);
  ops::LoopBounds bounds;
  if (check_one_iteration) {
    bounds.trip_count = 1;
    if (ctx.has_input(1)) bounds.condition = true;
    checking_only = true;
  } else {
    bounds = ops::loop_bounds(ctx);  // reads ctx's host values: before any value is added
  }
  const size_t per_iteration = std::max<size_t>(1, nodes_in(body.nodes)) + scans;
  if (bounds.trip_count && !bounds.condition && *bounds.trip_count > 0 &&
      static_cast<uint64_t>(*bounds.trip_count) > kMaxUnrolledNodes / per_iteration) {
    ctx.fail("its trip count is " + std::to_string(*bounds.trip_count) + " with " +
             std::to_string(per_iteration) + " nodes per iteration: more than the " +
             std::to_string(kMaxUnrolledNodes) +
             " unrolled nodes a plan may hold (wgi unrolls Loop when planning, one copy of the body per "
             "iteration)");
  }
  std::vector<graph::ValueId> values(node.inputs.begin() + 2,
                                     node.inputs.begin() + static_cast<long>(op_inputs));
  for (size_t j = 0; j < carried; ++j) {
    if (values[j] == graph::kNoValue)
      ctx.fail("its loop-carried input " + std::to_string(j + 2) + " is empty");
  }
  graph::ValueId condition = bounds.condition ? node.inputs[1] : graph::kNoValue;
  std::vector<std::vector<graph::ValueId>> stacked(scans);
  bool keep_going = bounds.condition.value_or(true);
  for (int64_t i = 0; keep_going && (!bounds.trip_count || i < *bounds.trip_count); ++i) {
    reserve(planner, ctx, per_iteration, i);
    const std::string inner = iteration_scope(scope, node, i);
    const graph::Value& iteration_input = planner.unrolled.value(body.inputs[0]);
    std::vector<graph::ValueId> inputs = {planner.add_value(
        graph::Value{iteration_input.name, DType::Int64, {}, {}, -1}, iteration_number(iteration_input, i))};
    if (condition == graph::kNoValue) {
      const graph::Value& declared = planner.unrolled.value(body.inputs[1]);
      inputs.push_back(
          planner.add_value(graph::Value{declared.name, DType::Bool, {}, {}, -1}, true_condition(declared)));
    } else {
      inputs.push_back(condition);
    }
    inputs.insert(inputs.end(), values.begin(), values.end());
    const auto outputs = plan_iteration(planner, body, inputs, inner, checking_only);
    if (!outputs) return;
    std::copy(outputs->begin() + 1, outputs->begin() + 1 + static_cast<long>(carried), values.begin());
    for (size_t k = 0; k < scans; ++k) {
      stacked[k].push_back(unsqueezed(planner, node, (*outputs)[1 + carried + k], 0,
                                      "scan output " + std::to_string(k) + ", iteration " + std::to_string(i),
                                      inner, checking_only));
      if (!planner.known(stacked[k].back())) return;
    }
    if (!bounds.condition) continue;  // the body's condition output is ignored without a cond input
    condition = (*outputs)[0];
    const Tensor* c = planner.host_value(condition);
    const std::string name = planner.unrolled.value(condition).name;
    if (!c) {
      if (planner.read_back_inside) throw ReadBackInside{};  // the Loop runs iteration by iteration
      ctx.fail("its body's condition output '" + name + "' is computed on the GPU (iteration " +
               std::to_string(i) +
               "); wgi unrolls a Loop when planning, so the condition must be known then (a constant, the "
               "condition input passed through, or arithmetic on the iteration number and shapes folded on "
               "the host); a condition that depends on the data would need a read-back between iterations");
    }
    if (c->dtype() != DType::Bool || c->element_count() != 1) {
      ctx.fail("its body's condition output '" + name + "' is " + std::string(dtype_name(c->dtype())) + " " +
               shape_to_string(c->shape()) + "; expected a single bool element");
    }
    keep_going = c->bytes()[0] != std::byte{0};
  }
  if (check_one_iteration) return;
  for (size_t j = 0; j < carried; ++j) {
    if (output_of(node, j) != graph::kNoValue) planner.alias(node.outputs[j], values[j], checking_only);
  }
  for (size_t k = 0; k < scans; ++k) {
    stack_into(planner, ctx, node, std::move(stacked[k]), false, 0, output_of(node, carried + k),
               planner.unrolled.value(body.outputs[1 + carried + k]), "scan output " + std::to_string(k),
               scope, checking_only);
  }
}

namespace {

struct ScanShape {
  size_t first_input = 0;  // 1 for opset 8 (sequence_lens first)
  size_t states = 0, scan_inputs = 0, scans = 0;
};

// One scan over `states` and `inputs` (the scan axes as in `a`): the final states, and each scan output
// stacked into `targets[k]`.
std::optional<std::vector<graph::ValueId>> run_scan(const UnrollPlanner& planner, const ops::PlanContext& ctx,
                                                    const graph::Node& node, const graph::Subgraph& body,
                                                    const ScanShape& s, const ops::ScanAttributes& a,
                                                    std::vector<graph::ValueId> states,
                                                    const std::vector<graph::ValueId>& inputs,
                                                    const std::vector<graph::ValueId>& targets,
                                                    const std::string& scope, const std::string& label,
                                                    bool checking_only) {
  int64_t length = -1;
  std::vector<int64_t> axes;
  for (size_t j = 0; j < s.scan_inputs; ++j) {
    const Shape& shape = planner.desc(inputs[j]).shape;
    const int64_t axis = normalized_axis(ctx, a.input_axes[j], static_cast<int64_t>(shape.size()),
                                         "the scan axis of scan input " + std::to_string(j));
    axes.push_back(axis);
    const int64_t n = shape[static_cast<size_t>(axis)];
    if (length >= 0 && n != length) {
      ctx.fail("scan input " + std::to_string(j) + " has " + std::to_string(n) +
               " elements along its scan axis " + std::to_string(axis) + ", scan input 0 has " +
               std::to_string(length) + "; they must match");
    }
    length = n;
  }
  if (length == 0) ctx.fail("its scan inputs have no elements along the scan axis; wgi runs no empty Scan");
  const size_t per_iteration = std::max<size_t>(1, nodes_in(body.nodes)) + 2 * s.scan_inputs + s.scans;
  std::vector<std::vector<graph::ValueId>> stacked(s.scans);
  std::vector<int64_t> output_axes(s.scans, 0);
  for (int64_t t = 0; t < length; ++t) {
    reserve(planner, ctx, per_iteration, t);
    const std::string inner = iteration_scope(scope, node, t);
    std::vector<graph::ValueId> body_inputs = states;
    for (size_t j = 0; j < s.scan_inputs; ++j) {
      body_inputs.push_back(
          slice_of(planner, node, inputs[j], axes[j], a.input_reversed[j] ? length - 1 - t : t,
                   label + "scan input " + std::to_string(j) + ", iteration " + std::to_string(t), inner,
                   checking_only));
      if (!planner.known(body_inputs.back())) return std::nullopt;
    }
    const auto outputs = plan_iteration(planner, body, body_inputs, inner, checking_only);
    if (!outputs) return std::nullopt;
    std::copy(outputs->begin(), outputs->begin() + static_cast<long>(s.states), states.begin());
    for (size_t k = 0; k < s.scans; ++k) {
      const graph::ValueId out = (*outputs)[s.states + k];
      const int64_t rank = static_cast<int64_t>(planner.desc(out).shape.size());
      output_axes[k] =
          normalized_axis(ctx, a.output_axes[k], rank + 1, "the axis of scan output " + std::to_string(k));
      stacked[k].push_back(
          unsqueezed(planner, node, out, output_axes[k],
                     label + "scan output " + std::to_string(k) + ", iteration " + std::to_string(t), inner,
                     checking_only));
      if (!planner.known(stacked[k].back())) return std::nullopt;
    }
  }
  for (size_t k = 0; k < s.scans; ++k) {
    stack_into(planner, ctx, node, std::move(stacked[k]), a.output_reversed[k], output_axes[k], targets[k],
               planner.unrolled.value(body.outputs[s.states + k]), label + "scan output " + std::to_string(k),
               scope, checking_only);
  }
  return states;
}

}  // namespace

void plan_scan(const UnrollPlanner& planner, const graph::Node& node, const ops::PlanContext& ctx,
               const std::string& scope, bool checking_only) {
  const graph::Subgraph& body = body_of(ctx, node);
  ScanShape s;
  s.first_input = node.info.opset < 9 ? 1 : 0;
  s.scan_inputs =
      static_cast<size_t>(std::max<int64_t>(0, node.info.attributes.get_int("num_scan_inputs", 0)));
  const size_t op_inputs = node.op_input_count();
  if (op_inputs < s.first_input + s.scan_inputs || s.scan_inputs == 0) {
    ctx.fail("has " + std::to_string(op_inputs) + " inputs and num_scan_inputs " +
             std::to_string(s.scan_inputs) +
             "; expected at least one scan input after the loop-carried values");
  }
  s.states = op_inputs - s.first_input - s.scan_inputs;
  if (body.inputs.size() != s.states + s.scan_inputs) {
    ctx.fail("its body has " + std::to_string(body.inputs.size()) + " inputs; expected " +
             std::to_string(s.states + s.scan_inputs) + ": the " + std::to_string(s.states) +
             " loop-carried values and a slice of each of the " + std::to_string(s.scan_inputs) +
             " scan inputs");
  }
  if (body.outputs.size() < s.states) {
    ctx.fail("its body has " + std::to_string(body.outputs.size()) + " outputs; expected at least the " +
             std::to_string(s.states) + " loop-carried values");
  }
  s.scans = body.outputs.size() - s.states;
  check_output_count(ctx, node, s.states, s.scans);
  const ops::ScanAttributes a = ops::scan_attributes(ctx, s.scans);
  std::vector<graph::ValueId> states(node.inputs.begin() + static_cast<long>(s.first_input),
                                     node.inputs.begin() + static_cast<long>(s.first_input + s.states));
  std::vector<graph::ValueId> inputs(node.inputs.begin() + static_cast<long>(s.first_input + s.states),
                                     node.inputs.begin() + static_cast<long>(op_inputs));
  for (graph::ValueId v : states) {
    if (v == graph::kNoValue) ctx.fail("an initial state input is empty");
  }
  for (graph::ValueId v : inputs) {
    if (v == graph::kNoValue) ctx.fail("a scan input is empty");
  }
  std::vector<graph::ValueId> targets;
  for (size_t k = 0; k < s.scans; ++k) targets.push_back(output_of(node, s.states + k));
  if (s.first_input == 0) {
    const auto final_states =
        run_scan(planner, ctx, node, body, s, a, states, inputs, targets, scope, "", checking_only);
    if (!final_states) return;
    for (size_t j = 0; j < s.states; ++j) {
      if (output_of(node, j) != graph::kNoValue)
        planner.alias(node.outputs[j], (*final_states)[j], checking_only);
    }
    return;
  }
  // Opset 8: every tensor has a batch axis first, and each batch element is scanned on its own (its scan axis
  // is then axis 0); the results are stacked along the batch axis again.
  const Shape& first_shape = planner.desc(states.empty() ? inputs[0] : states[0]).shape;
  if (first_shape.empty()) ctx.fail("its inputs have no batch axis (opset 8 Scan has one first)");
  const int64_t batch = first_shape[0];
  for (graph::ValueId v : node.inputs) {
    if (v == graph::kNoValue || v == node.inputs[0]) continue;
    const Shape& shape = planner.desc(v).shape;
    if (shape.empty() || shape[0] != batch) {
      ctx.fail("input '" + planner.unrolled.value(v).name + "' has shape " + shape_to_string(shape) +
               "; every state and scan input has the batch size " + std::to_string(batch) + " first");
    }
  }
  if (node.inputs[0] != graph::kNoValue) {
    const Tensor* lens = planner.host_value(node.inputs[0]);
    const Shape& x = planner.desc(inputs[0]).shape;
    const int64_t full = x.size() > 1 ? x[1] : -1;
    bool all_full = lens != nullptr && lens->dtype() == DType::Int64;
    if (all_full) {
      for (int64_t n : lens->data<int64_t>()) all_full = all_full && n == full;
    }
    if (!all_full) {
      ctx.fail("its sequence_lens input is not known when planning or not the full sequence length " +
               std::to_string(full) + " for every batch element; wgi scans whole sequences only");
    }
  }
  std::vector<std::vector<graph::ValueId>> batch_states(s.states), batch_scans(s.scans);
  for (int64_t b = 0; b < batch; ++b) {
    const std::string label = "batch " + std::to_string(b) + ", ";
    std::vector<graph::ValueId> states_b, inputs_b, targets_b;
    for (size_t j = 0; j < s.states; ++j) {
      states_b.push_back(slice_of(planner, node, states[j], 0, b, label + "state " + std::to_string(j), scope,
                                  checking_only));
      if (!planner.known(states_b.back())) return;
    }
    for (size_t j = 0; j < s.scan_inputs; ++j) {
      inputs_b.push_back(slice_of(planner, node, inputs[j], 0, b, label + "scan input " + std::to_string(j),
                                  scope, checking_only));
      if (!planner.known(inputs_b.back())) return;
    }
    for (size_t k = 0; k < s.scans; ++k)
      targets_b.push_back(
          new_value(planner, node.info.name + " / " + label + "scan output " + std::to_string(k)));
    const auto final_states =
        run_scan(planner, ctx, node, body, s, a, states_b, inputs_b, targets_b, scope, label, checking_only);
    if (!final_states) return;
    for (size_t j = 0; j < s.states; ++j) {
      batch_states[j].push_back(unsqueezed(planner, node, (*final_states)[j], 0,
                                           label + "final state " + std::to_string(j), scope, checking_only));
    }
    for (size_t k = 0; k < s.scans; ++k) {
      if (!planner.known(targets_b[k])) return;
      batch_scans[k].push_back(unsqueezed(planner, node, targets_b[k], 0,
                                          label + "stacked scan output " + std::to_string(k), scope,
                                          checking_only));
    }
  }
  for (size_t j = 0; j < s.states; ++j) {
    stack_into(planner, ctx, node, std::move(batch_states[j]), false, 0, output_of(node, j),
               planner.unrolled.value(body.outputs[j]), "final state " + std::to_string(j), scope,
               checking_only);
  }
  for (size_t k = 0; k < s.scans; ++k) {
    stack_into(planner, ctx, node, std::move(batch_scans[k]), false, 0, output_of(node, s.states + k),
               planner.unrolled.value(body.outputs[s.states + k]), "scan output " + std::to_string(k), scope,
               checking_only);
  }
}

}  // namespace wgi::runtime
