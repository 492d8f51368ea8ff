#include "graph/passes.h"

#include "graph/passes/match.h"

namespace wgi::graph {

int eliminate_identities(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  for (NodeId i : node_ids(g)) {
    Node& n = node_at(g, i);
    const std::string& op = n.info.op_type;
    if (!n.info.domain.empty() && n.info.domain != "ai.onnx") continue;
    if (op != "Identity" && op != "Dropout") continue;
    if (n.inputs.empty() || n.inputs[0] == kNoValue || n.outputs.empty()) continue;
    if (op == "Dropout") {
      // Inference: the output is the input. Keep the node (it is then reported unsupported) if the model asks
      // for training mode or reads the mask.
      if (n.info.attributes.get_int("is_test", 1) == 0 && n.info.opset < 7) continue;
      if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
        const Tensor* mode = constant_of(g, n, 2);
        if (!mode || mode->byte_size() == 0 || mode->bytes()[0] != std::byte{0}) continue;
      }
      if (n.outputs.size() > 1 && is_read(g, readers, n.outputs[1])) continue;
    }
    replace_uses(g, n.outputs[0], n.inputs[0]);
    editor.remove(i);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
