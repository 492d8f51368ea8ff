#include "graph/passes.h"

#include "graph/passes/match.h"

namespace wgi::graph {

int fold_constants(Graph& g, const ops::OpRegistry& registry) {
  NodeEditor editor(g);
  int count = 0;
  const gpu::Capabilities no_device;  // host evaluation does not depend on the device
  for (NodeId i : node_ids(g)) {
    Node& n = node_at(g, i);
    const auto* entry = registry.find(n.info.domain, n.info.op_type, n.info.opset);
    if (!entry || !entry->handler.evaluate_on_host) continue;
    bool all_constant = true;
    ops::PlanContext ctx{n.info, {}, {}, no_device};
    std::vector<const Tensor*> values;
    for (ValueId v : n.inputs) {
      if (v == kNoValue) {
        ctx.inputs.push_back(std::nullopt);
        ctx.constant_inputs.push_back(nullptr);
        values.push_back(nullptr);
        continue;
      }
      const auto& c = g.value(v).constant;
      if (!c) {
        all_constant = false;
        break;
      }
      ctx.inputs.push_back(ops::TensorDesc{c->dtype(), c->shape()});
      ctx.constant_inputs.push_back(&*c);
      values.push_back(&*c);
    }
    if (!all_constant) continue;
    std::vector<Tensor> results = entry->handler.evaluate_on_host(ctx, values);
    if (results.size() != n.outputs.size()) continue;  // the op declined (e.g. too large to fold)
    for (size_t o = 0; o < results.size(); ++o) {
      if (n.outputs[o] == kNoValue) continue;
      Value& out = g.value(n.outputs[o]);
      out.dtype = results[o].dtype();
      out.shape = ValueShape::of(results[o].shape());
      out.constant = std::move(results[o]);
    }
    editor.remove(i);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
