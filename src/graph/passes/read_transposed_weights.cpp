#include "graph/passes.h"

#include "graph/passes/match.h"
#include "ops/gemm_launch.h"

namespace wgi::graph {

int read_transposed_weights(Graph& g) {
  int count = 0;
  for (Node& mm : g.nodes) {
    if (mm.info.op_type != "MatMul" || mm.info.domain != "" || mm.inputs.size() != 2) continue;
    if (mm.info.attributes.get_int(ops::kMatMulTransBAttribute, 0) != 0) continue;
    const NodeId p = NodeId::producer_of(g, mm.inputs[1]);
    if (!p) continue;
    const Node& t = node_at(g, p);
    if (t.info.op_type != "Transpose" || !swaps_last_two(t) || t.inputs.empty()) continue;
    const Tensor* w = constant_of(g, t, 0);
    if (!is_float_or_half(w) || w->rank() < 2) continue;  // a float16 B is read packed either way
    mm.inputs[1] = t.inputs[0];  // the Transpose stays for other readers; dead-node removal drops it
    mm.info.attributes.set(ops::kMatMulTransBAttribute, int64_t{1});
    ++count;
  }
  return count;
}

}  // namespace wgi::graph
