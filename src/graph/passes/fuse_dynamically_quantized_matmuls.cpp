// Dynamic quantization's rescale taken into the MatMulInteger it follows. ONNX Runtime's quantize_dynamic
// (the _quantized / _int8 / _uint8 exports) writes, per linear layer with a constant weight:
//   (Aq, a_scale, a_zp) = DynamicQuantizeLinear(A)
//   Y = MatMulInteger(Aq, B, a_zp, b_zp)        B (and b_zp) constants
//   F = Cast(Y, to = float)
//   S = Mul(a_scale, b_scale)                    b_scale a float32 constant of 1 or N values
//   Z = Mul(F, S)                                either operand order in both Muls
//   [Z = Add(Z, bias)]                           bias a float32 constant of N values
// The MatMulInteger gets wgi.scaled_output with a_scale, b_scale (and the bias) as inputs 4-6
// (ops::ScaledIntegerInput) and writes Z in float32 itself (integer_linear.cpp): the Cast, the Mul by S and
// the Add are gone, and S's Mul with them once no other node reads S.
#include "graph/passes.h"
#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

namespace {

constexpr int64_t kTensorProtoFloat = 1;  // Cast's `to` for float32

// Whether `n` is Mul(v, c) or Mul(c, v) with c a float32 constant of 1 or `columns` values: returns c's
// value.
ValueId scale_operand(const Graph& g, const Node& n, ValueId v, int64_t columns) {
  if (n.info.op_type != "Mul" || !n.info.domain.empty()) return kNoValue;
  const ValueId c = other_operand(n, v);
  if (c == kNoValue) return kNoValue;
  const Tensor* t = constant_of(g, n, n.inputs[0] == c ? 0 : 1);
  if (!is_float(t) || (t->element_count() != 1 && t->element_count() != columns)) return kNoValue;
  return c;
}

}  // namespace

int fuse_dynamically_quantized_matmuls(Graph& g) {
  NodeEditor editor(g);
  Readers readers(g);
  int count = 0;
  for (NodeId i : node_ids(g)) {
    const Node& mi = node_at(g, i);
    if (mi.info.op_type != "MatMulInteger" || !mi.info.domain.empty() || mi.inputs.size() < 3 ||
        mi.inputs.size() > 4 || mi.outputs.size() != 1 ||
        mi.info.attributes.has(ops::kMatMulIntegerScaledAttribute))
      continue;
    // A from a DynamicQuantizeLinear, with its zero point; B (and its zero point) constants.
    const NodeId q = NodeId::producer_of(g, mi.inputs[0]);
    if (!q || editor.removed(q)) continue;
    const Node& dq = node_at(g, q);
    if (dq.info.op_type != "DynamicQuantizeLinear" || dq.outputs.size() != 3 ||
        dq.outputs[0] != mi.inputs[0] || mi.inputs[2] != dq.outputs[2])
      continue;
    const Tensor* b = constant_of(g, mi, 1);
    if (!b || b->rank() != 2) continue;
    if (mi.inputs.size() == 4 && mi.inputs[3] != kNoValue && !constant_of(g, mi, 3)) continue;
    const int64_t columns = b->shape()[1];
    // Cast(Y, float) -> Mul(F, S) with S = Mul(a_scale, b_scale).
    const NodeId cast_id = sole_reader(g, readers, mi.outputs[0]);
    if (!cast_id || editor.removed(cast_id)) continue;
    const Node& cast = node_at(g, cast_id);
    if (cast.info.op_type != "Cast" || !cast.info.domain.empty() ||
        cast.info.attributes.get_int("to", 0) != kTensorProtoFloat)
      continue;
    const NodeId mul_id = sole_reader(g, readers, cast.outputs[0]);
    if (!mul_id || editor.removed(mul_id)) continue;
    const Node& mul = node_at(g, mul_id);
    const ValueId s =
        mul.info.op_type == "Mul" && mul.info.domain.empty() ? other_operand(mul, cast.outputs[0]) : kNoValue;
    const NodeId s_id = NodeId::producer_of(g, s);
    if (!s_id || editor.removed(s_id)) continue;
    const ValueId b_scale = scale_operand(g, node_at(g, s_id), dq.outputs[1], columns);
    if (b_scale == kNoValue) continue;
    // An Add of a constant bias after it, where it is the Mul's only reader.
    ValueId out = mul.outputs[0], bias = kNoValue;
    const NodeId add_id = sole_reader(g, readers, out);
    if (add_id && !editor.removed(add_id)) {
      const Node& add = node_at(g, add_id);
      const ValueId c =
          add.info.op_type == "Add" && add.info.domain.empty() ? other_operand(add, out) : kNoValue;
      const Tensor* t = c == kNoValue ? nullptr : constant_of(g, add, add.inputs[0] == c ? 0 : 1);
      if (is_float(t) && t->element_count() == columns && t->shape().back() == columns) {
        bias = c;
        out = add.outputs[0];
        editor.remove(add_id);
      }
    }
    Node& fused = node_at(g, i);
    fused.info.attributes.set(ops::kMatMulIntegerScaledAttribute, int64_t{1});
    fused.inputs.resize(ops::ScaledIntegerInput::kAScale, kNoValue);
    fused.inputs.push_back(dq.outputs[1]);
    fused.inputs.push_back(b_scale);
    if (bias != kNoValue) fused.inputs.push_back(bias);
    fused.outputs[0] = out;
    if (!fused.info.output_names.empty()) fused.info.output_names = {g.value(out).name};
    editor.remove(cast_id);
    editor.remove(mul_id);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
