// A DynamicQuantizeLinear taken into the one product that reads it. After
// fuse_dynamically_quantized_products, a rescaled MatMulInteger reads the quantized A, its zero point and its
// scale from a DynamicQuantizeLinear:
//   (Aq, a_scale, a_zp) = DynamicQuantizeLinear(A)
//   Y = MatMulInteger(Aq, B, a_zp, b_zp, a_scale, b_scale, ...)      wgi.scaled_output
// Where that product is the quantization's only reader, it takes A itself (wgi.quantize_a, inputs 2 and
// 4 empty) and the DynamicQuantizeLinear goes: the integer GEMV (a decoder step's products) computes the
// range, scale and zero point and quantizes A as it stages it, one launch where there were two; the other
// kernels run the quantization's launches first (integer_linear.cpp), as before.
#include "graph/passes.h"
#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

int fuse_dynamic_quantization_into_products(Graph& g) {
  NodeEditor editor(g);
  Readers readers(g);
  int count = 0;
  for (NodeId i : node_ids(g)) {
    const Node& product = node_at(g, i);
    if (!is_scaled_integer_product(product) || product.info.op_type != "MatMulInteger" ||
        product.info.attributes.has(ops::kIntegerQuantizeAAttribute) ||
        product.inputs.size() <= ops::ScaledIntegerInput::kAScale)
      continue;
    const NodeId q = NodeId::producer_of(g, product.inputs[0]);
    if (!q || editor.removed(q)) continue;
    const Node& dq = node_at(g, q);
    if (dq.info.op_type != "DynamicQuantizeLinear" || !dq.info.domain.empty() || dq.outputs.size() != 3 ||
        product.inputs[0] != dq.outputs[0] || product.inputs[2] != dq.outputs[2] ||
        product.inputs[ops::ScaledIntegerInput::kAScale] != dq.outputs[1] ||
        g.value(dq.inputs[0]).dtype != DType::Float32)
      continue;
    const Tensor* b = constant_of(g, product, 1);
    if (!b || b->rank() != 2) continue;  // the GEMV's form; nothing to gain elsewhere
    bool only_reader = true;
    for (ValueId v : dq.outputs)
      only_reader = only_reader && (v == kNoValue || read_only_by(g, readers, v, i));
    if (!only_reader) continue;
    Node& fused = node_at(g, i);
    fused.inputs[0] = dq.inputs[0];
    fused.inputs[2] = kNoValue;
    fused.inputs[ops::ScaledIntegerInput::kAScale] = kNoValue;
    fused.info.attributes.set(ops::kIntegerQuantizeAAttribute, int64_t{1});
    fused.info.input_names.clear();  // for messages: the inputs as they now are
    for (ValueId v : fused.inputs) fused.info.input_names.push_back(v == kNoValue ? "" : g.value(v).name);
    editor.remove(q);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
