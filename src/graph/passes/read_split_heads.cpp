#include "graph/passes.h"

#include <algorithm>

#include "graph/passes/match.h"

namespace wgi::graph {

int read_split_heads(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  const std::vector<int64_t> heads_first = {0, 2, 1, 3};  // [B, N, heads, D] -> [B, heads, N, D]
  const std::vector<int64_t> keys_last = {0, 2, 3, 1};    // [B, N, heads, D] -> [B, heads, D, N] = K^T
  for (NodeId ai : node_ids(g)) {
    Node& attention = node_at(g, ai);
    if (attention.info.op_type != "Attention" || attention.info.domain != "wgi" ||
        attention.inputs.size() < 3 || attention.inputs.size() > 5 ||
        attention.info.attributes.get_int("qkv_packed", 0) != 0 ||
        attention.info.attributes.has("heads_views"))
      continue;
    const bool k_transposed = attention.info.attributes.get_int("k_transposed", 0) != 0;
    std::vector<int64_t> views(3, 0);
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
      views[i] = 1;
      sources[i] = reshape.inputs[0];
      targets[i] = target;
      chain.push_back(ti);
      chain.push_back(ri);
      if (as_keys_last) k_now_plain = true;
    }
    if (chain.empty()) continue;
    attention.inputs.resize(9, kNoValue);
    for (size_t i = 0; i < 3; ++i) {
      if (!views[i]) continue;
      attention.inputs[i] = sources[i];
      attention.inputs[6 + i] = targets[i];
    }
    attention.info.attributes.set("heads_views", views);
    if (k_now_plain) attention.info.attributes.set("k_transposed", int64_t{0});
    for (NodeId n : chain) editor.remove(n);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
