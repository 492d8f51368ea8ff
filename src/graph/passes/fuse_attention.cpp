#include "graph/passes.h"

#include <algorithm>
#include <optional>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

int fuse_attention(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  for (NodeId si : node_ids(g)) {
    const Node& softmax = node_at(g, si);
    if (softmax.info.op_type != "Softmax" || editor.removed(si)) continue;
    // Only a softmax over the last axis: -1, or (opset < 13, whose default 1 flattens) rank - 1 when known.
    const auto& in_shape = g.value(softmax.inputs[0]).shape;
    const int64_t axis = softmax.info.attributes.get_int("axis", softmax.info.opset < 13 ? 1 : -1);
    const bool last_axis =
        axis == -1 || (in_shape.rank_known && axis == static_cast<int64_t>(in_shape.dims.size()) - 1);
    if (!last_axis) continue;
    // Softmax -> MatMul(P, V) as the only reader.
    const ValueId probabilities = softmax.outputs[0];
    if (is_graph_output(g, probabilities) || readers.of(probabilities).size() != 1) continue;
    const NodeId mi2 = readers.of(probabilities)[0];
    const Node& matmul2 = node_at(g, mi2);
    if (matmul2.info.op_type != "MatMul" || matmul2.inputs.size() != 2 || matmul2.inputs[0] != probabilities)
      continue;
    // Walk back: [Add mask] <- [Mul/Div scale] <- MatMul(Q, B).
    std::vector<NodeId> chain = {si, mi2};
    ValueId cur = softmax.inputs[0];
    NodeId cur_reader = si;  // the node of the chain that reads `cur`
    ValueId mask = kNoValue;
    float scale = 1.0f;
    NodeId p = sole_producer(g, readers, cur, si);
    if (p && node_at(g, p).info.op_type == "Add") {
      const Node& add = node_at(g, p);
      // The scores side is the one produced by the scale or the first MatMul; the other is the mask.
      for (size_t side = 0; side < 2 && mask == kNoValue; ++side) {
        NodeId q = NodeId::producer_of(g, add.inputs[side]);
        if (!q) continue;
        const std::string& op = node_at(g, q).info.op_type;
        if ((op == "MatMul" || op == "Mul" || op == "Div") &&
            sole_producer(g, readers, add.inputs[side], p) == q) {
          mask = add.inputs[1 - side];
          cur = add.inputs[side];
          cur_reader = p;
          chain.push_back(p);
          p = q;
        }
      }
      if (mask == kNoValue) continue;
    }
    ValueId scale_tensor = kNoValue;  // a shape-derived scale, known only when planning
    bool scale_divides = false;
    if (p && (node_at(g, p).info.op_type == "Mul" || node_at(g, p).info.op_type == "Div")) {
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
          scale = is_div ? 1.0f / *c : *c;
        } else if (derived_from_shapes(g, factor)) {
          scale_tensor = factor;
          scale_divides = is_div;
        } else {
          break;
        }
        other = op.inputs[side];
      }
      if (other == kNoValue || !sole_producer(g, readers, other, p)) continue;
      chain.push_back(p);
      cur_reader = p;
      p = NodeId::producer_of(g, other);
      cur = other;
    }
    if (!p || node_at(g, p).info.op_type != "MatMul" || sole_producer(g, readers, cur, cur_reader) != p) {
      continue;
    }
    const Node& matmul1 = node_at(g, p);
    if (matmul1.inputs.size() != 2) continue;
    chain.push_back(p);
    // K^T as Transpose(K) over the last two dims: read K itself; otherwise read K^T as it is.
    ValueId k = matmul1.inputs[1];
    bool k_transposed = true;
    const NodeId t = sole_producer(g, readers, k, p);
    if (t && node_at(g, t).info.op_type == "Transpose" && swaps_last_two(node_at(g, t))) {
      k = node_at(g, t).inputs[0];
      k_transposed = false;
      chain.push_back(t);
    }
    // No scale on the scores: exporters that scale Q instead (DaViT's window and channel attention:
    // q * head_dim ** -0.5) write Mul(Q, scalar) before the first MatMul, possibly under a Transpose of Q.
    // The scalar moves into the fused node; a Transpose in between then reads the unscaled Q.
    ValueId q = matmul1.inputs[0];
    NodeId q_transpose;  // the Transpose between the Mul and the MatMul, if there is one
    NodeId q_mul;
    if (scale == 1.0f && scale_tensor == kNoValue) {
      NodeId qp = sole_producer(g, readers, q, p);
      if (qp && node_at(g, qp).info.op_type == "Transpose") {
        q_transpose = qp;
        qp = sole_producer(g, readers, node_at(g, qp).inputs[0], qp);
      }
      if (qp && node_at(g, qp).info.op_type == "Mul" && node_at(g, qp).inputs.size() == 2) {
        const Node& mul = node_at(g, qp);
        for (size_t side = 0; side < 2 && !q_mul; ++side) {
          const ValueId factor = mul.inputs[1 - side];
          if (auto c = scalar_constant(g, factor)) {
            scale = *c;
          } else if (derived_from_shapes(g, factor) && !derived_from_shapes(g, mul.inputs[side]) &&
                     g.value(factor).shape.concrete() &&
                     element_count(*g.value(factor).shape.concrete()) == 1) {
            scale_tensor = factor;
          } else {
            continue;
          }
          q_mul = qp;
          q = mul.inputs[side];
        }
      }
    }
    if (!q_mul) {
      q = matmul1.inputs[0];
      q_transpose = NodeId();
    } else {
      chain.push_back(q_mul);
    }
    if (editor.any_removed(chain)) continue;
    if (q_transpose) {
      node_at(g, q_transpose).inputs[0] = q;  // Transpose(Q * s) = Transpose(Q) * s
      readers.add(q, q_transpose);            // later matches see the new reader
      q = matmul1.inputs[0];
    }
    Node fused;
    fused.info.name = softmax.info.name.empty() ? "attention" : softmax.info.name + "_attention";
    fused.info.op_type = "Attention";
    fused.info.domain = "wgi";
    fused.info.opset = 1;
    ops::AttentionAttributes attributes;
    attributes.scale = scale;
    attributes.k_transposed = k_transposed;
    attributes.scale_divides = scale_divides;
    fused.info.attributes = ops::write_attention_attributes(attributes);
    using In = ops::AttentionInput;
    fused.inputs.assign(In::kScale + 1, kNoValue);
    fused.inputs[In::kQ] = q;
    fused.inputs[In::kK] = k;
    fused.inputs[In::kV] = matmul2.inputs[1];
    fused.inputs[In::kMask] = mask;
    fused.inputs[In::kScale] = scale_tensor;
    while (!fused.inputs.empty() && fused.inputs.back() == kNoValue) fused.inputs.pop_back();
    fused.outputs = {matmul2.outputs[0]};
    for (NodeId n : chain) editor.remove(n);
    editor.add(std::move(fused));
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
