#include "graph/passes.h"

#include <algorithm>

#include "graph/passes/match.h"

namespace wgi::graph {

int remove_dead_nodes(Graph& g) {
  // Backwards from the outputs: a node is kept when one of its outputs is an output or read by a kept node.
  ValueFlags live(g);
  for (ValueId v : g.outputs) live.set(v);
  std::vector<bool> keep(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    keep[i] = std::any_of(n.outputs.begin(), n.outputs.end(), [&](ValueId v) { return live.has(v); });
    if (!keep[i]) continue;
    for (ValueId v : n.inputs) live.set(v);
  }
  NodeEditor editor(g);
  int count = 0;
  for (NodeId i : node_ids(g)) {
    if (!keep[i.index()]) {
      editor.remove(i);
      ++count;
    }
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
