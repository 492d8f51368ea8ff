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
      // A MatMul with a constant float32 B, or a MatMulNBits with float32 scales (the dequantised weight is
      // (code - zero point) * scale), read by it alone, or a rescaled MatMulInteger / ConvInteger (its
      // weight's scale, one value or one per column; a copy where it is shared, which is small), and at most
      // its fused bias: nothing after the product yet (a residual or activation would come before the scale).
      const bool nbits = is_matmul_nbits(mm), integer = is_scaled_integer_product(mm);
      if (!nbits && !integer &&
          (mm.info.op_type != "MatMul" || !mm.info.domain.empty() || mm.inputs.size() < 2 ||
           mm.inputs.size() > 3))
        continue;
      const ops::EpilogueAttributes epilogue = ops::read_epilogue_attributes(mm.info);
      if (epilogue.residual || !epilogue.activation.empty()) continue;
      const size_t weight = nbits ? 2 : integer ? ops::ScaledIntegerInput::kBScale : 1;
      const size_t bias_input = nbits ? ops::kNBitsBiasInput : integer ? ops::ScaledIntegerInput::kBias : 2;
      const Tensor* b = mm.inputs.size() > weight ? constant_of(g, mm, weight) : nullptr;
      if (!b || b->dtype() != DType::Float32 || (!nbits && !integer && b->rank() != 2) ||
          (!integer && !read_only_by(g, readers, mm.inputs[weight], p)))
        continue;
      const bool has_bias = mm.inputs.size() > bias_input && mm.inputs[bias_input] != kNoValue;
      if ((nbits || integer) && mm.inputs.size() > bias_input + 1) continue;
      const Tensor* bias = has_bias ? constant_of(g, mm, bias_input) : nullptr;
      if (has_bias && (!bias || bias->dtype() != DType::Float32)) continue;
      mm.inputs[weight] = add_constant(g, g.value(mm.inputs[weight]).name + "_scaled", scaled(*b, *s));
      if (bias) {
        mm.inputs[bias_input] =
            add_constant(g, g.value(mm.inputs[bias_input]).name + "_scaled", scaled(*bias, *s));
      }
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
