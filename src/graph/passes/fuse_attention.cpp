#include "graph/passes.h"

#include <algorithm>
#include <optional>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

namespace {

// What the walk from the Softmax back to the scores' MatMul(Q, K^T) found, and the fused node's inputs.
struct AttentionMatch {
  NodeId pv_matmul;           // MatMul(P, V), the Softmax's only reader
  std::vector<NodeId> chain;  // the nodes the fused node replaces
  ValueId scores = kNoValue;  // where the walk back stands: the scores, scaled or masked or not
  NodeId scores_reader;       // the node of the chain that reads `scores`
  NodeId producer;            // the producer of `scores`, the next node to match
  ValueId mask = kNoValue;
  float scale = 1.0f;
  ValueId scale_tensor = kNoValue;  // a shape-derived scale, known only when planning
  bool scale_divides = false;
  ValueId q = kNoValue;
  ValueId k = kNoValue;
  bool k_transposed = true;
  NodeId q_transpose;  // the Transpose between Q's scaling Mul and the MatMul, if there is one
  NodeId q_mul;        // Q's scaling Mul, if the scale is there
};

// Only a softmax over the last axis: -1, or (opset < 13, whose default 1 flattens) rank - 1 when known.
bool softmax_over_last_axis(const Graph& g, const Node& softmax) {
  const auto& in_shape = g.value(softmax.inputs[0]).shape;
  const int64_t axis = softmax.info.attributes.get_int("axis", softmax.info.opset < 13 ? 1 : -1);
  return axis == -1 || (in_shape.rank_known && axis == static_cast<int64_t>(in_shape.dims.size()) - 1);
}

// Softmax -> MatMul(P, V) as the only reader.
NodeId probabilities_matmul(const Graph& g, const Readers& readers, const Node& softmax) {
  const ValueId probabilities = softmax.outputs[0];
  if (is_graph_output(g, probabilities) || readers.of(probabilities).size() != 1) return NodeId();
  const NodeId mi2 = readers.of(probabilities)[0];
  const Node& matmul2 = node_at(g, mi2);
  if (matmul2.info.op_type != "MatMul" || matmul2.inputs.size() != 2 || matmul2.inputs[0] != probabilities)
    return NodeId();
  return mi2;
}

// [Add mask]: the scores side is the one produced by the scale or the first MatMul; the other is the mask.
// False where the Add has no such side.
bool walk_mask(const Graph& g, const Readers& readers, AttentionMatch& m) {
  if (!m.producer || node_at(g, m.producer).info.op_type != "Add") return true;
  const NodeId p = m.producer;
  const Node& add = node_at(g, p);
  for (size_t side = 0; side < 2 && m.mask == kNoValue; ++side) {
    NodeId q = NodeId::producer_of(g, add.inputs[side]);
    if (!q) continue;
    const std::string& op = node_at(g, q).info.op_type;
    if ((op == "MatMul" || op == "Mul" || op == "Div") &&
        sole_producer(g, readers, add.inputs[side], p) == q) {
      m.mask = add.inputs[1 - side];
      m.scores = add.inputs[side];
      m.scores_reader = p;
      m.chain.push_back(p);
      m.producer = q;
    }
  }
  return m.mask != kNoValue;
}

// [Mul/Div scale]: a constant scalar, or a shape-derived one read when planned. False where neither side of a
// Mul / Div is the scores.
bool walk_scale(const Graph& g, const Readers& readers, AttentionMatch& m) {
  if (!m.producer ||
      (node_at(g, m.producer).info.op_type != "Mul" && node_at(g, m.producer).info.op_type != "Div"))
    return true;
  const NodeId p = m.producer;
  const Node& op = node_at(g, p);
  const bool is_div = op.info.op_type == "Div";
  ValueId other = kNoValue;
  // Which side is the scores: the one with a MatMul (or the mask Add's MatMul) behind it.
  for (size_t side = 0; side < 2 && other == kNoValue; ++side) {
    if (is_div && side == 1) break;  // scores / scale only
    const NodeId q = NodeId::producer_of(g, op.inputs[side]);
    if (!q || node_at(g, q).info.op_type != "MatMul") continue;
    const ValueId factor = op.inputs[1 - side];
    if (auto c = scalar_constant(g, factor)) {
      m.scale = is_div ? 1.0f / *c : *c;
    } else if (derived_from_shapes(g, factor)) {
      m.scale_tensor = factor;
      m.scale_divides = is_div;
    } else {
      break;
    }
    other = op.inputs[side];
  }
  if (other == kNoValue || !sole_producer(g, readers, other, p)) return false;
  m.chain.push_back(p);
  m.scores_reader = p;
  m.producer = NodeId::producer_of(g, other);
  m.scores = other;
  return true;
}

// MatMul(Q, B), where B is K^T: as Transpose(K) over the last two dims, K itself is read; otherwise K^T as it
// is.
bool take_scores_matmul(const Graph& g, const Readers& readers, AttentionMatch& m) {
  const NodeId p = m.producer;
  if (!p || node_at(g, p).info.op_type != "MatMul" ||
      sole_producer(g, readers, m.scores, m.scores_reader) != p) {
    return false;
  }
  const Node& matmul1 = node_at(g, p);
  if (matmul1.inputs.size() != 2) return false;
  m.chain.push_back(p);
  m.q = matmul1.inputs[0];
  m.k = matmul1.inputs[1];
  const NodeId t = sole_producer(g, readers, m.k, p);
  if (t && node_at(g, t).info.op_type == "Transpose" && swaps_last_two(node_at(g, t))) {
    m.k = node_at(g, t).inputs[0];
    m.k_transposed = false;
    m.chain.push_back(t);
  }
  return true;
}

// No scale on the scores: exporters that scale Q instead (DaViT's window and channel attention: q * head_dim
// ** -0.5) write Mul(Q, scalar) before the first MatMul, possibly under a Transpose of Q. The scalar moves
// into the fused node; a Transpose in between then reads the unscaled Q.
void take_q_scale(const Graph& g, const Readers& readers, AttentionMatch& m) {
  const NodeId p = m.producer;  // the first MatMul
  const ValueId matmul_q = m.q;
  if (m.scale == 1.0f && m.scale_tensor == kNoValue) {
    NodeId qp = sole_producer(g, readers, m.q, p);
    if (qp && node_at(g, qp).info.op_type == "Transpose") {
      m.q_transpose = qp;
      qp = sole_producer(g, readers, node_at(g, qp).inputs[0], qp);
    }
    if (qp && node_at(g, qp).info.op_type == "Mul" && node_at(g, qp).inputs.size() == 2) {
      const Node& mul = node_at(g, qp);
      for (size_t side = 0; side < 2 && !m.q_mul; ++side) {
        const ValueId factor = mul.inputs[1 - side];
        if (auto c = scalar_constant(g, factor)) {
          m.scale = *c;
        } else if (derived_from_shapes(g, factor) && !derived_from_shapes(g, mul.inputs[side]) &&
                   g.value(factor).shape.concrete() &&
                   element_count(*g.value(factor).shape.concrete()) == 1) {
          m.scale_tensor = factor;
        } else {
          continue;
        }
        m.q_mul = qp;
        m.q = mul.inputs[side];
      }
    }
  }
  if (!m.q_mul) {
    m.q = matmul_q;
    m.q_transpose = NodeId();
  } else {
    m.chain.push_back(m.q_mul);
  }
}

// Softmax -> MatMul(P, V), walked back through [Add mask] <- [Mul/Div scale] <- MatMul(Q, B) [<- Q's scale].
std::optional<AttentionMatch> match_attention(const Graph& g, const Readers& readers, NodeId si) {
  const Node& softmax = node_at(g, si);
  if (!softmax_over_last_axis(g, softmax)) return std::nullopt;
  AttentionMatch m;
  m.pv_matmul = probabilities_matmul(g, readers, softmax);
  if (!m.pv_matmul) return std::nullopt;
  m.chain = {si, m.pv_matmul};
  m.scores = softmax.inputs[0];
  m.scores_reader = si;
  m.producer = sole_producer(g, readers, m.scores, si);
  if (!walk_mask(g, readers, m) || !walk_scale(g, readers, m) || !take_scores_matmul(g, readers, m)) {
    return std::nullopt;
  }
  take_q_scale(g, readers, m);
  return m;
}

Node attention_node(const Graph& g, const Node& softmax, const AttentionMatch& m) {
  const Node& matmul2 = node_at(g, m.pv_matmul);
  Node fused;
  fused.info.name = softmax.info.name.empty() ? "attention" : softmax.info.name + "_attention";
  fused.info.op_type = "Attention";
  fused.info.domain = "wgi";
  fused.info.opset = 1;
  ops::AttentionAttributes attributes;
  attributes.scale = m.scale;
  attributes.k_transposed = m.k_transposed;
  attributes.scale_divides = m.scale_divides;
  fused.info.attributes = ops::write_attention_attributes(attributes);
  using In = ops::AttentionInput;
  fused.inputs.assign(In::kScale + 1, kNoValue);
  fused.inputs[In::kQ] = m.q;
  fused.inputs[In::kK] = m.k;
  fused.inputs[In::kV] = matmul2.inputs[1];
  fused.inputs[In::kMask] = m.mask;
  fused.inputs[In::kScale] = m.scale_tensor;
  while (!fused.inputs.empty() && fused.inputs.back() == kNoValue) fused.inputs.pop_back();
  fused.outputs = {matmul2.outputs[0]};
  return fused;
}

}  // namespace

int fuse_attention(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  for (NodeId si : node_ids(g)) {
    const Node& softmax = node_at(g, si);
    if (softmax.info.op_type != "Softmax" || editor.removed(si)) continue;
    std::optional<AttentionMatch> m = match_attention(g, readers, si);
    if (!m || editor.any_removed(m->chain)) continue;
    if (m->q_transpose) {
      node_at(g, m->q_transpose).inputs[0] = m->q;  // Transpose(Q * s) = Transpose(Q) * s
      readers.add(m->q, m->q_transpose);            // later matches see the new reader
      m->q = node_at(g, m->producer).inputs[0];
    }
    Node fused = attention_node(g, softmax, *m);
    for (NodeId n : m->chain) editor.remove(n);
    editor.add(std::move(fused));
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
