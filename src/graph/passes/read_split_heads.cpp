#include "graph/passes.h"

#include <algorithm>
#include <array>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

int read_split_heads(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  const std::vector<int64_t> heads_first = {0, 2, 1, 3};  // [B, N, heads, D] -> [B, heads, N, D]
  const std::vector<int64_t> keys_last = {0, 2, 3, 1};    // [B, N, heads, D] -> [B, heads, D, N] = K^T
  for (NodeId ai : node_ids(g)) {
    Node& attention = node_at(g, ai);
    using In = ops::AttentionInput;
    if (attention.info.op_type != "Attention" || attention.info.domain != "wgi" ||
        attention.inputs.size() < 3 || attention.inputs.size() > In::kScale + 1)
      continue;
    ops::AttentionAttributes attributes = ops::read_attention_attributes(attention.info);
    if (attributes.qkv_packed || attributes.heads_views) continue;
    const bool k_transposed = attributes.k_transposed;
    std::array<bool, 3> views = {false, false, false};
    std::vector<ValueId> sources(3, kNoValue), targets(3, kNoValue);
    std::vector<NodeId> chain;
    bool k_now_plain = false;
    for (size_t i = 0; i < 3; ++i) {
      const ValueId operand = attention.inputs[i];
      // Q, K or V read twice (self-attention on one tensor) stays as it is.
      if (std::count(attention.inputs.begin(), attention.inputs.begin() + 3, operand) != 1) continue;
      if (!read_only_by(g, readers, operand, ai)) continue;
      const NodeId ti = NodeId::producer_of(g, operand);
      if (!ti || editor.removed(ti)) continue;
      const Node& transpose = node_at(g, ti);
      const bool as_keys_last = i == 1 && k_transposed && is_transpose(transpose, keys_last);
      if (!is_transpose(transpose, heads_first) && !as_keys_last) continue;
      const ValueId r = transpose.inputs[0];
      const NodeId ri = sole_producer(g, readers, r, ti);
      if (!ri || editor.removed(ri) || !is_plain_reshape(node_at(g, ri))) continue;
      const Node& reshape = node_at(g, ri);
      const ValueId target = reshape.inputs[1];
      if (!derived_from_shapes(g, target)) continue;
      if (const auto ints = constant_ints(g, target); ints && ints->size() != 4) continue;
      if (g.value(target).shape.rank_known && g.value(target).shape.dims.size() != 1) continue;
      views[i] = true;
      sources[i] = reshape.inputs[0];
      targets[i] = target;
      chain.push_back(ti);
      chain.push_back(ri);
      if (as_keys_last) k_now_plain = true;
    }
    if (chain.empty()) continue;
    attention.inputs.resize(In::kCountWithHeads, kNoValue);
    for (size_t i = 0; i < 3; ++i) {
      if (!views[i]) continue;
      attention.inputs[i] = sources[i];
      attention.inputs[In::heads_target(i)] = targets[i];
    }
    attributes.heads_views = views;
    if (k_now_plain) attributes.k_transposed = false;
    attention.info.attributes = ops::write_attention_attributes(attributes);
    for (NodeId n : chain) editor.remove(n);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
