#include "graph/passes.h"

#include <algorithm>
#include <array>
#include <optional>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

namespace {

// A Gather (default domain) along axis 0 with a constant scalar index: the index; else nullopt.
std::optional<int64_t> gather_axis0_scalar(const Graph& g, const Node& n) {
  if (n.info.op_type != "Gather" || !n.info.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1 ||
      n.info.attributes.get_int("axis", 0) != 0)
    return std::nullopt;
  const auto& c = g.value(n.inputs[1]).constant;
  if (!c || c->rank() != 0) return std::nullopt;
  const std::optional<std::vector<int64_t>> ints = constant_ints(g, n.inputs[1]);
  if (!ints || ints->size() != 1) return std::nullopt;
  return (*ints)[0];
}

}  // namespace

int read_packed_qkv(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  const std::vector<int64_t> split_perm = {2, 0, 3, 1, 4};
  for (NodeId ai : node_ids(g)) {
    Node& attention = node_at(g, ai);
    if (attention.info.op_type != "Attention" || attention.info.domain != "wgi" ||
        attention.inputs.size() < 3 || attention.inputs.size() > ops::AttentionInput::kScale + 1)
      continue;
    ops::AttentionAttributes attributes = ops::read_attention_attributes(attention.info);
    if (attributes.qkv_packed) continue;
    // Q, K and V: Gather(T, scalar constant, axis 0) each, or a Transpose of one over its last two dims
    // (DaViT's channel attention: q^T, v^T), read only by the attention.
    std::vector<NodeId> gathers;
    std::vector<NodeId> transposes;
    std::vector<int64_t> indices;
    std::array<bool, 3> transposed = {false, false, false};
    ValueId t = kNoValue;
    bool ok = true;
    for (size_t i = 0; i < 3 && ok; ++i) {
      ValueId operand = attention.inputs[i];
      NodeId p = NodeId::producer_of(g, operand);
      ok = p && read_only_by(g, readers, operand, ai);
      if (ok && is_transpose(node_at(g, p), {0, 1, 3, 2})) {
        const NodeId ti = p;
        operand = node_at(g, ti).inputs[0];
        p = NodeId::producer_of(g, operand);
        ok = p && read_only_by(g, readers, operand, ti) &&
             std::count(attention.inputs.begin(), attention.inputs.begin() + 3, attention.inputs[i]) == 1;
        transposes.push_back(ti);
        transposed[i] = true;
      }
      const std::optional<int64_t> index = ok ? gather_axis0_scalar(g, node_at(g, p)) : std::nullopt;
      ok = index.has_value() && (t == kNoValue || node_at(g, p).inputs[0] == t);
      if (!ok) break;
      t = node_at(g, p).inputs[0];
      indices.push_back(*index);
      if (std::find(gathers.begin(), gathers.end(), p) == gathers.end()) gathers.push_back(p);
    }
    if (!ok) continue;
    // T = Transpose(R, perm [2, 0, 3, 1, 4]), read only by those Gathers.
    const NodeId ti = NodeId::producer_of(g, t);
    if (!ti || is_graph_output(g, t) || !is_transpose(node_at(g, ti), split_perm)) continue;
    const auto& t_readers = readers.of(t);
    if (std::any_of(t_readers.begin(), t_readers.end(),
                    [&](NodeId r) { return std::find(gathers.begin(), gathers.end(), r) == gathers.end(); }))
      continue;
    // R = Reshape(X, target [B, N, parts, heads, D]), read only by the Transpose; the target known when
    // planning (the op checks it then; here only a constant's rank).
    const ValueId r = node_at(g, ti).inputs[0];
    const NodeId ri = sole_producer(g, readers, r, ti);
    if (!ri || !is_plain_reshape(node_at(g, ri))) continue;
    const Node& reshape = node_at(g, ri);
    const ValueId target = reshape.inputs[1];
    if (!derived_from_shapes(g, target)) continue;
    if (const auto ints = constant_ints(g, target); ints && ints->size() != 5) continue;
    if (g.value(target).shape.rank_known && g.value(target).shape.dims.size() != 1) continue;
    std::vector<NodeId> chain = gathers;
    chain.insert(chain.end(), transposes.begin(), transposes.end());
    chain.push_back(ti);
    chain.push_back(ri);
    if (editor.any_removed(chain)) continue;
    const ValueId x = reshape.inputs[0];
    using In = ops::AttentionInput;
    attention.inputs.resize(In::kCountWithPacked, kNoValue);
    attention.inputs[In::kQ] = attention.inputs[In::kK] = attention.inputs[In::kV] = x;
    attention.inputs[In::kPackedTarget] = target;
    attributes.qkv_packed = true;
    attributes.qkv_indices = indices;
    if (!transposes.empty()) attributes.qkv_transposed = transposed;
    attention.info.attributes = ops::write_attention_attributes(attributes);
    for (NodeId n : chain) editor.remove(n);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
