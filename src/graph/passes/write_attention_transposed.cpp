#include "graph/passes.h"

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

int write_attention_transposed(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  const std::vector<int64_t> swap12 = {0, 2, 1, 3};
  const std::vector<int64_t> tokens_first = {0, 3, 1, 2};  // [B, heads, D, N] -> [B, N, heads, D]
  for (NodeId ai : node_ids(g)) {
    Node& attention = node_at(g, ai);
    if (attention.info.op_type != "Attention" || attention.info.domain != "wgi" ||
        attention.outputs.size() != 1)
      continue;
    ops::AttentionAttributes attributes = ops::read_attention_attributes(attention.info);
    if (attributes.transpose_output) continue;
    // Its only reader a Transpose(perm [0, 2, 1, 3]) or (DaViT's channel attention, whose product is the
    // transposed [B, heads, D, N]) perm [0, 3, 1, 2] (so the output has rank 4: two batch dims).
    const NodeId ti = sole_reader(g, readers, attention.outputs[0]);
    if (!ti || editor.removed(ti) || attributes.output_perm) continue;
    const Node& transpose = node_at(g, ti);
    const bool heads_back = is_transpose(transpose, swap12);
    if (!(heads_back || is_transpose(transpose, tokens_first)) || transpose.outputs.size() != 1) continue;
    attention.outputs[0] = transpose.outputs[0];
    if (heads_back) {
      attributes.transpose_output = true;
    } else {
      attributes.output_perm = tokens_first;
    }
    attention.info.attributes = ops::write_attention_attributes(attributes);
    editor.remove(ti);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
