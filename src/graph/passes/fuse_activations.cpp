#include "graph/passes.h"

#include <cmath>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

int fuse_activations(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  for (NodeId i : node_ids(g)) {
    const Node& act = node_at(g, i);
    const std::string& op = act.info.op_type;
    if ((op != "Relu" && op != "Clip" && op != "Gelu") || act.inputs.empty()) continue;
    std::string fused = op;
    if (op == "Gelu") {
      const std::string approximate = act.info.attributes.get_string("approximate", "none");
      if (approximate != "none" && approximate != "tanh") continue;  // the op reports it
      if (approximate == "tanh") fused = "GeluTanh";
    }
    float lo = -INFINITY, hi = INFINITY;
    if (op == "Clip") {
      if (act.info.opset < 11) {
        lo = act.info.attributes.get_float("min", -INFINITY);
        hi = act.info.attributes.get_float("max", INFINITY);
      } else {
        bool ok = true;
        for (size_t k : {size_t{1}, size_t{2}}) {
          if (k >= act.inputs.size() || act.inputs[k] == kNoValue) continue;
          const std::optional<float> bound = scalar_constant(g, act.inputs[k]);
          if (!bound) {
            ok = false;
            break;
          }
          (k == 1 ? lo : hi) = *bound;
        }
        if (!ok) continue;
      }
    }
    NodeId p = sole_producer(g, readers, act.inputs[0], i);
    if (!p || editor.removed(p)) continue;
    Node& producer = node_at(g, p);
    const std::string& pop = producer.info.op_type;
    if (pop != "Conv" && pop != "ConvTranspose" && pop != "Gemm" && pop != "MatMul" &&
        !is_matmul_nbits(producer) && !is_scaled_integer_product(producer))
      continue;
    ops::EpilogueAttributes epilogue = ops::read_epilogue_attributes(producer.info);
    if (!epilogue.activation.empty()) continue;
    epilogue.activation = fused;
    if (op == "Clip") {
      // Absent bounds stay absent: the epilogue then clamps at the largest finite float.
      if (!std::isinf(lo)) epilogue.activation_min = lo;
      if (!std::isinf(hi)) epilogue.activation_max = hi;
    }
    ops::write_epilogue_attributes(epilogue, producer.info.attributes);
    producer.outputs[0] = act.outputs[0];
    editor.remove(i);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
