#include "graph/passes.h"

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

int read_transposed_weights(Graph& g) {
  int count = 0;
  for (Node& mm : g.nodes) {
    if (mm.info.op_type != "MatMul" || mm.info.domain != "" || mm.inputs.size() != 2) continue;
    ops::LinearAttributes internal = ops::read_linear_attributes(mm.info);
    if (internal.trans_b) continue;
    const NodeId p = NodeId::producer_of(g, mm.inputs[ops::LinearInput::kB]);
    if (!p) continue;
    const Node& t = node_at(g, p);
    if (t.info.op_type != "Transpose" || !swaps_last_two(t) || t.inputs.empty()) continue;
    const Tensor* w = constant_of(g, t, 0);
    if (!is_float_or_half(w) || w->rank() < 2) continue;  // a float16 B is read packed either way
    // The Transpose stays for other readers; dead-node removal drops it.
    mm.inputs[ops::LinearInput::kB] = t.inputs[0];
    internal.trans_b = true;
    ops::write_linear_attributes(internal, mm.info.attributes);
    ++count;
  }
  return count;
}

}  // namespace wgi::graph
