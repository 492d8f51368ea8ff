#include "graph/passes.h"

#include <algorithm>
#include <vector>

#include "graph/passes/match.h"

namespace wgi::graph {

namespace {

// A Concat of two inputs whose first is an input of the graph (or of the subgraph's scope): a decoder's past
// keys or values with the step's new ones.
bool is_past_concat(const Graph& g, const Node& n) {
  return n.info.op_type == "Concat" && n.info.domain.empty() && n.inputs.size() == 2 &&
         n.outputs.size() == 1 && n.outer_reads == 0 && n.inputs[0] != kNoValue && n.inputs[1] != kNoValue &&
         std::find(g.inputs.begin(), g.inputs.end(), n.inputs[0]) != g.inputs.end();
}

}  // namespace

int merge_past_concats(Graph& g) {
  std::vector<NodeId> waiting;  // past Concats not paired yet, in node order
  std::vector<std::pair<NodeId, NodeId>> pairs;
  for (NodeId i : node_ids(g)) {
    const Node& n = node_at(g, i);
    if (!is_past_concat(g, n)) continue;
    const int64_t axis = n.info.attributes.get_int("axis", 0);
    const auto partner = std::find_if(waiting.begin(), waiting.end(), [&](NodeId w) {
      const Node& m = node_at(g, w);
      return m.info.attributes.get_int("axis", 0) == axis &&
             shapes_may_match(g.value(m.inputs[0]).shape, g.value(n.inputs[0]).shape) &&
             shapes_may_match(g.value(m.inputs[1]).shape, g.value(n.inputs[1]).shape);
    });
    if (partner == waiting.end()) {
      waiting.push_back(i);
      continue;
    }
    pairs.emplace_back(*partner, i);
    waiting.erase(partner);
  }
  NodeEditor editor(g);
  for (const auto& [a, b] : pairs) {
    const Node& first = node_at(g, a);
    const Node& second = node_at(g, b);
    Node merged;
    merged.info.name = first.info.name + "+" + second.info.name;
    merged.info.op_type = "ConcatPairs";
    merged.info.domain = "wgi";
    merged.info.opset = 1;
    merged.info.attributes.set("axis", first.info.attributes.get_int("axis", 0));
    merged.inputs = {first.inputs[0], first.inputs[1], second.inputs[0], second.inputs[1]};
    merged.outputs = {first.outputs[0], second.outputs[0]};
    for (ValueId v : merged.inputs) merged.info.input_names.push_back(g.value(v).name);
    for (ValueId v : merged.outputs) merged.info.output_names.push_back(g.value(v).name);
    editor.remove(a);
    editor.remove(b);
    editor.add(std::move(merged));
  }
  editor.commit();
  return static_cast<int>(2 * pairs.size());
}

}  // namespace wgi::graph
