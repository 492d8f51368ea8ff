#include "graph/passes.h"

#include <cmath>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

namespace {

// `t` (float32) times `s`, as a new tensor.
Tensor scaled(const Tensor& t, float s) {
  Tensor out(DType::Float32, t.shape());
  const auto in = t.data<float>();
  auto dst = out.data<float>();
  for (size_t i = 0; i < in.size(); ++i) dst[i] = in[i] * s;
  return out;
}

}  // namespace

int fold_scales_into_weights(Graph& g) {
  NodeEditor editor(g);
  Readers readers(g);
  int count = 0;
  for (NodeId i : node_ids(g)) {
    const Node& mul = node_at(g, i);
    if (mul.info.op_type != "Mul" || !mul.info.domain.empty() || mul.inputs.size() != 2) continue;
    for (size_t side = 0; side < 2; ++side) {
      const Tensor* c = constant_of(g, mul, 1 - side);
      const std::optional<float> s = scalar_constant(g, mul.inputs[1 - side]);
      if (!c || c->dtype() != DType::Float32 || c->rank() > 1 || !s || !std::isfinite(*s)) continue;
      const NodeId p = sole_producer(g, readers, mul.inputs[side], i);
      if (!p || editor.removed(p)) continue;
      Node& mm = node_at(g, p);
      // A MatMul with a constant float32 B read by it alone and at most its fused bias: nothing after the
      // product yet (a residual or activation would come before the scale).
      if (mm.info.op_type != "MatMul" || !mm.info.domain.empty() || mm.inputs.size() < 2 ||
          mm.inputs.size() > 3)
        continue;
      const ops::EpilogueAttributes epilogue = ops::read_epilogue_attributes(mm.info);
      if (epilogue.residual || !epilogue.activation.empty()) continue;
      const Tensor* b = constant_of(g, mm, 1);
      if (!b || b->dtype() != DType::Float32 || b->rank() != 2 || !read_only_by(g, readers, mm.inputs[1], p))
        continue;
      const Tensor* bias = mm.inputs.size() == 3 ? constant_of(g, mm, 2) : nullptr;
      if (mm.inputs.size() == 3 && (!bias || bias->dtype() != DType::Float32)) continue;
      mm.inputs[1] = add_constant(g, g.value(mm.inputs[1]).name + "_scaled", scaled(*b, *s));
      if (bias) mm.inputs[2] = add_constant(g, g.value(mm.inputs[2]).name + "_scaled", scaled(*bias, *s));
      mm.outputs[0] = mul.outputs[0];
      editor.remove(i);
      ++count;
      break;
    }
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
