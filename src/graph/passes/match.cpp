#include "graph/passes/match.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/float16.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

NodeId NodeId::producer_of(const Graph& g, ValueId v) {
  if (v == kNoValue) return NodeId();
  const int32_t p = g.value(v).producer;
  return p < 0 ? NodeId() : NodeId(static_cast<size_t>(p));
}

std::vector<NodeId> node_ids(const Graph& g) {
  std::vector<NodeId> ids;
  ids.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) ids.emplace_back(i);
  return ids;
}

Readers::Readers(const Graph& g) : readers_(g.values.size()) {
  for (NodeId n : node_ids(g)) {
    for (ValueId v : node_at(g, n).inputs) {
      if (v != kNoValue) readers_.at(static_cast<size_t>(v)).push_back(n);
    }
  }
}

const std::vector<NodeId>& Readers::of(ValueId v) const {
  static const std::vector<NodeId> none;
  return v == kNoValue ? none : readers_.at(static_cast<size_t>(v));
}

bool NodeEditor::any_removed(const std::vector<NodeId>& nodes) const {
  return std::any_of(nodes.begin(), nodes.end(), [&](NodeId n) { return removed(n); });
}

void NodeEditor::commit() {
  std::vector<Node> kept;
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    if (!removed_[i]) kept.push_back(std::move(graph_.nodes[i]));
  }
  for (Node& n : added_) kept.push_back(std::move(n));
  graph_.nodes = std::move(kept);
  graph_.sort_topologically();
}

bool is_graph_output(const Graph& g, ValueId v) {
  return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

void replace_uses(Graph& g, ValueId from, ValueId to) {
  for (Node& n : g.nodes) replace_reads(n, from, to);
  std::replace(g.outputs.begin(), g.outputs.end(), from, to);
}

bool is_read(const Graph& g, const Readers& readers, ValueId v) {
  return v != kNoValue && (!readers.of(v).empty() || is_graph_output(g, v));
}

NodeId sole_producer(const Graph& g, const Readers& readers, ValueId v, NodeId consumer) {
  if (v == kNoValue || is_graph_output(g, v)) return NodeId();
  const auto& r = readers.of(v);
  if (r.size() != 1 || r[0] != consumer) return NodeId();
  return NodeId::producer_of(g, v);
}

NodeId sole_reader(const Graph& g, const Readers& readers, ValueId v) {
  if (v == kNoValue || is_graph_output(g, v)) return NodeId();
  const auto& r = readers.of(v);
  return r.size() == 1 ? r[0] : NodeId();
}

NodeId next_in_chain(const Graph& g, const Readers& readers, const Node& n) {
  if (n.outputs.size() != 1) return NodeId();
  const NodeId r = sole_reader(g, readers, n.outputs[0]);
  if (!r) return NodeId();
  const Node& reader = node_at(g, r);
  return reader.inputs.empty() || reader.inputs[0] != n.outputs[0] ||
                 std::count(reader.inputs.begin(), reader.inputs.end(), n.outputs[0]) != 1
             ? NodeId()
             : r;
}

bool read_only_by(const Graph& g, const Readers& readers, ValueId v, NodeId reader) {
  if (v == kNoValue || is_graph_output(g, v)) return false;
  const auto& r = readers.of(v);
  return !r.empty() && std::all_of(r.begin(), r.end(), [&](NodeId n) { return n == reader; });
}

bool others_read_only_shape(const Graph& g, const Readers& readers, ValueId v, NodeId except,
                            std::vector<NodeId>& shape_readers) {
  for (NodeId r : readers.of(v)) {
    if (r == except) continue;
    const Node& n = node_at(g, r);
    if (n.info.op_type != "Shape" || !n.info.domain.empty()) return false;
    shape_readers.push_back(r);
  }
  return true;
}

bool produced_by(const Graph& g, ValueId v, const char* op) {
  const NodeId p = NodeId::producer_of(g, v);
  return p && node_at(g, p).info.op_type == op;
}

const Tensor* constant_of(const Graph& g, const Node& n, size_t input) {
  if (input >= n.inputs.size() || n.inputs[input] == kNoValue) return nullptr;
  const auto& c = g.value(n.inputs[input]).constant;
  return c ? &*c : nullptr;
}

std::string unique_value_name(const Graph& g, const std::string& name) {
  std::string unique = name;
  for (int i = 1; g.find(unique) != kNoValue; ++i) unique = name + "_" + std::to_string(i);
  return unique;
}

ValueId add_constant(Graph& g, const std::string& name, Tensor t) {
  Value v;
  v.name = unique_value_name(g, name);
  v.dtype = t.dtype();
  v.shape = ValueShape::of(t.shape());
  v.constant = std::move(t);
  return g.add_value(std::move(v));
}

bool is_float(const Tensor* t) {
  return t && t->dtype() == DType::Float32;
}

bool is_float_type(DType d) {
  return d == DType::Float32 || d == DType::Float16;
}

bool is_float_or_half(const Tensor* t) {
  return t && is_float_type(t->dtype());
}

std::optional<float> scalar_constant(const Graph& g, ValueId v) {
  if (v == kNoValue) return std::nullopt;
  const auto& c = g.value(v).constant;
  if (!c || c->element_count() != 1) return std::nullopt;
  if (c->dtype() == DType::Float32) return c->data<float>()[0];
  if (c->dtype() == DType::Float16) {
    uint16_t half;
    std::memcpy(&half, c->bytes().data(), sizeof half);
    return ops::half_to_float(half);
  }
  return std::nullopt;
}

bool close_to_constant(const Graph& g, ValueId v, double want) {
  const std::optional<float> c = scalar_constant(g, v);
  // float32: the exporter's double rounded once (and a little more); float16: half an ulp of 2^-10.
  const double tolerance = g.value(v).dtype == DType::Float16 ? 0x1p-11 : 1e-6;
  if (!c) return false;
  // A float32 constant that holds `want` rounded to float16: a float16 file's constant widened by
  // compute_float16_in_float32.
  const float want_f32 = static_cast<float>(want);
  if (*c == ops::half_to_float(ops::float_to_half(want_f32))) return true;
  return std::abs(*c - want) <= tolerance * std::abs(want);
}

std::optional<std::vector<int64_t>> constant_ints(const Graph& g, ValueId v) {
  const auto& c = g.value(v).constant;
  if (!c) return std::nullopt;
  if (c->dtype() == DType::Int64)
    return std::vector<int64_t>(c->data<int64_t>().begin(), c->data<int64_t>().end());
  if (c->dtype() == DType::Int32)
    return std::vector<int64_t>(c->data<int32_t>().begin(), c->data<int32_t>().end());
  return std::nullopt;
}

std::optional<std::vector<int64_t>> known_target(const Graph& g, ValueId v) {
  return v == kNoValue ? std::nullopt : constant_ints(g, v);
}

bool derived_from_shapes(const Graph& g, ValueId v, int depth) {
  if (v == kNoValue || g.value(v).constant) return true;
  const NodeId p = NodeId::producer_of(g, v);
  if (!p || depth > 32) return false;
  const Node& n = node_at(g, p);
  if (n.info.op_type == "Shape" || n.info.op_type == "Size") return true;
  return std::all_of(n.inputs.begin(), n.inputs.end(),
                     [&](ValueId in) { return derived_from_shapes(g, in, depth + 1); });
}

bool shapes_may_match(const ValueShape& a, const ValueShape& b) {
  if (!a.rank_known || !b.rank_known) return true;
  if (a.dims.size() != b.dims.size()) return false;
  for (size_t i = 0; i < a.dims.size(); ++i) {
    const Dim &x = a.dims[i], &y = b.dims[i];
    const bool x_unknown = !x.is_known() && x.symbol.empty(), y_unknown = !y.is_known() && y.symbol.empty();
    if (x_unknown || y_unknown) continue;
    if (x.is_known() != y.is_known()) return false;
    if (x.is_known() ? x.value != y.value : x.symbol != y.symbol) return false;
  }
  return true;
}

bool same_known_shape(const Graph& g, ValueId a, ValueId b) {
  const std::optional<Shape> sa = g.value(a).shape.concrete(), sb = g.value(b).shape.concrete();
  return sa && sb && *sa == *sb;
}

bool swaps_last_two(const Node& t) {
  std::vector<int64_t> perm = t.info.attributes.get_ints("perm", {});
  if (perm.size() < 2) return false;
  for (size_t i = 0; i + 2 < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  const auto r = static_cast<int64_t>(perm.size());
  return perm[perm.size() - 2] == r - 1 && perm.back() == r - 2;
}

bool is_transpose(const Node& n, const std::vector<int64_t>& perm) {
  return n.info.op_type == "Transpose" && n.info.domain.empty() && n.inputs.size() == 1 &&
         n.info.attributes.get_ints("perm", {}) == perm;
}

bool is_plain_reshape(const Node& n) {
  return n.info.op_type == "Reshape" && n.info.domain.empty() && n.inputs.size() == 2 &&
         n.inputs[1] != kNoValue && n.info.attributes.get_int("allowzero", 0) == 0;
}

bool is_matmul_nbits(const Node& n) {
  return n.info.op_type == "MatMulNBits" && n.info.domain == "com.microsoft";
}

bool is_scaled_integer_product(const Node& n) {
  return (n.info.op_type == "MatMulInteger" || n.info.op_type == "ConvInteger") && n.info.domain.empty() &&
         n.info.attributes.get_int(ops::kIntegerScaledOutputAttribute, 0) != 0;
}

ValueId other_operand(const Node& n, ValueId v) {
  if (n.inputs.size() != 2) return kNoValue;
  if (n.inputs[0] == v && n.inputs[1] != v) return n.inputs[1];
  if (n.inputs[1] == v && n.inputs[0] != v) return n.inputs[0];
  return kNoValue;
}

ValueId scaled_operand(const Graph& g, const Node& n, double factor) {
  if (n.info.op_type != "Mul" || n.inputs.size() != 2) return kNoValue;
  for (size_t side = 0; side < 2; ++side) {
    if (close_to_constant(g, n.inputs[side], factor)) return n.inputs[1 - side];
  }
  return kNoValue;
}

}  // namespace wgi::graph
