#include "graph/passes.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "graph/passes/match.h"

namespace wgi::graph {

namespace {

// A GELU as exporters write it out, element by element:
//   erf form   0.5 x (1 + erf(x / sqrt 2))                             (nn.GELU(): Div, Erf, Add, Mul, Mul)
//   tanh form  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))          (approximate="tanh": 8 nodes)
// matched from its Erf / Tanh outwards. Every intermediate value must have that one reader (x may have more).
struct GeluMatch {
  ValueId x = kNoValue;
  std::vector<NodeId> nodes;  // every node of the pattern
  NodeId last;                // the node whose output is the GELU's
  bool tanh = false;
};

std::optional<GeluMatch> match_gelu(const Graph& g, const Readers& readers, NodeId core) {
  GeluMatch m;
  const Node& f = node_at(g, core);
  m.tanh = f.info.op_type == "Tanh";
  m.nodes.push_back(core);
  // `v`'s producer, when its only reader is node `reader`.
  auto producer_read_by = [&](ValueId v, NodeId reader) -> const Node* {
    const NodeId p = sole_producer(g, readers, v, reader);
    if (!p) return nullptr;
    m.nodes.push_back(p);
    return &node_at(g, p);
  };
  if (f.inputs.size() != 1) return std::nullopt;
  const Node* arg = producer_read_by(f.inputs[0], core);
  if (!arg) return std::nullopt;
  const NodeId arg_index = m.nodes.back();
  if (!m.tanh) {
    // x / sqrt(2), or x * (1 / sqrt(2)).
    if (arg->info.op_type == "Div" && arg->inputs.size() == 2 &&
        close_to_constant(g, arg->inputs[1], std::sqrt(2.0))) {
      m.x = arg->inputs[0];
    } else {
      m.x = scaled_operand(g, *arg, std::sqrt(0.5));
    }
  } else {
    // sqrt(2/pi) * (x + 0.044715 * x^3), x^3 as x * (x * x), (x * x) * x or Pow(x, 3).
    const ValueId inner = scaled_operand(g, *arg, std::sqrt(2.0 / std::numbers::pi));
    const Node* sum = producer_read_by(inner, arg_index);
    if (!sum || sum->info.op_type != "Add" || sum->inputs.size() != 2) return std::nullopt;
    const NodeId sum_index = m.nodes.back();
    const size_t matched = m.nodes.size();
    for (size_t side = 0; side < 2 && m.x == kNoValue; ++side) {
      m.nodes.resize(matched);
      const ValueId x = sum->inputs[side];
      const Node* cubic = producer_read_by(sum->inputs[1 - side], sum_index);
      if (!cubic) continue;
      const NodeId cubic_index = m.nodes.back();
      const Node* cube = producer_read_by(scaled_operand(g, *cubic, 0.044715), cubic_index);
      if (!cube) continue;
      const NodeId cube_index = m.nodes.back();
      if (cube->info.op_type == "Pow" && cube->inputs.size() == 2 && cube->inputs[0] == x &&
          close_to_constant(g, cube->inputs[1], 3.0)) {
        m.x = x;
      } else if (cube->info.op_type == "Mul") {
        const ValueId square = other_operand(*cube, x);
        const Node* sq = producer_read_by(square, cube_index);
        if (sq && sq->info.op_type == "Mul" && sq->inputs.size() == 2 && sq->inputs[0] == x &&
            sq->inputs[1] == x) {
          m.x = x;
        }
      }
    }
  }
  if (m.x == kNoValue || !is_float_type(g.value(m.x).dtype)) return std::nullopt;
  // 1 + f(...), then the product of x, that and 0.5 in any order: (x p) 0.5, (p x) 0.5, (x 0.5) p, ...
  const NodeId one_plus = sole_reader(g, readers, f.outputs[0]);
  if (!one_plus) return std::nullopt;
  const Node& add = node_at(g, one_plus);
  if (add.info.op_type != "Add" || !close_to_constant(g, other_operand(add, f.outputs[0]), 1.0))
    return std::nullopt;
  m.nodes.push_back(one_plus);
  const NodeId first = sole_reader(g, readers, add.outputs[0]);
  if (!first || node_at(g, first).info.op_type != "Mul") return std::nullopt;
  const Node& mul1 = node_at(g, first);
  m.nodes.push_back(first);
  const ValueId partner = other_operand(mul1, add.outputs[0]);
  if (partner == m.x || close_to_constant(g, partner, 0.5)) {
    // (p x) 0.5 or (p 0.5) x: one more Mul by what is missing.
    const NodeId second = sole_reader(g, readers, mul1.outputs[0]);
    if (!second) return std::nullopt;
    const Node& mul2 = node_at(g, second);
    if (mul2.info.op_type != "Mul") return std::nullopt;
    const ValueId rest = other_operand(mul2, mul1.outputs[0]);
    const bool complete = partner == m.x ? close_to_constant(g, rest, 0.5) : rest == m.x;
    if (!complete) return std::nullopt;
    m.nodes.push_back(second);
    m.last = second;
  } else {
    // p (0.5 x): the half of x computed first.
    const Node* half = producer_read_by(partner, first);
    if (!half || scaled_operand(g, *half, 0.5) != m.x) return std::nullopt;
    m.last = first;
  }
  // A constant of shape [1, 1] would broadcast a [N] x to [1, N]: Gelu keeps x's shape, so only constants
  // that cannot raise the rank.
  const ValueShape& x_shape = g.value(m.x).shape;
  for (NodeId n : m.nodes) {
    for (ValueId in : node_at(g, n).inputs) {
      const auto& c = g.value(in).constant;
      if (c && c->rank() > 0 &&
          !(x_shape.rank_known && static_cast<size_t>(c->rank()) <= x_shape.dims.size()))
        return std::nullopt;
    }
  }
  return m;
}

}  // namespace

int fuse_gelu(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  for (NodeId i : node_ids(g)) {
    const std::string& op = node_at(g, i).info.op_type;
    const std::string& domain = node_at(g, i).info.domain;
    if ((op != "Erf" && op != "Tanh") || (domain != "" && domain != "ai.onnx") || editor.removed(i)) continue;
    std::optional<GeluMatch> m = match_gelu(g, readers, i);
    if (!m || editor.any_removed(m->nodes)) continue;
    const Node& last = node_at(g, m->last);
    Node gelu;
    gelu.info.name = last.info.name + "_gelu";
    gelu.info.op_type = "Gelu";
    gelu.info.opset = 20;  // ONNX's Gelu, whatever the model's opset
    if (m->tanh) gelu.info.attributes.set("approximate", std::string("tanh"));
    gelu.inputs = {m->x};
    gelu.outputs = {last.outputs[0]};
    for (NodeId n : m->nodes) editor.remove(n);
    editor.add(std::move(gelu));
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
