// Dynamic quantization's rescale taken into the MatMulInteger or ConvInteger it follows. ONNX Runtime's
// quantize_dynamic (the _quantized / _int8 / _uint8 exports) writes, per linear layer or conv with a constant
// weight:
//   (Aq, a_scale, a_zp) = DynamicQuantizeLinear(A)
//   Y = MatMulInteger(Aq, B, a_zp, b_zp)        or ConvInteger(Aq, W, a_zp, w_zp); B / W (and their zero
//                                                points) constants
//   F = Cast(Y, to = float)
//   S = Mul(a_scale, b_scale)                    b_scale a float32 constant: one value, or one per output
//                                                column (MatMul, shape [N]) / channel (Conv, [M, 1, 1])
//   Z = Mul(F, S)                                either operand order in both Muls
//   [Z = Add(Z, bias)]                           bias a float32 constant of one value per column / channel
// The product gets wgi.scaled_output with a_scale, b_scale (and the bias) as inputs 4-6
// (ops::ScaledIntegerInput) and writes Z in float32 itself (integer_linear.cpp): the Cast, the Mul by S and
// the Add are gone, and S's Mul with them where that Mul was S's only reader.
#include "graph/passes.h"

#include <algorithm>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

namespace {

constexpr int64_t kTensorProtoFloat = 1;  // Cast's `to` for float32

// Where the product's per-output constants lie: `count` values along axis `axis` of its rank-`rank` output
// (the last axis of a MatMulInteger's, axis 1 of a ConvInteger's).
struct OutputAxis {
  size_t rank = 0, axis = 0;
  int64_t count = 0;
};

// Whether constant `t` broadcasts against the product's output as one value or one per element of the axis,
// without widening its rank (then the fused node's output is the Mul's / Add's).
bool per_axis_constant(const Tensor* t, const OutputAxis& out, bool one_allowed) {
  if (!is_float(t) || t->shape().size() > out.rank) return false;
  const size_t rank = t->shape().size();
  const int64_t n = t->element_count();
  if (n == 1) return one_allowed;
  if (n != out.count || out.axis + rank < out.rank) return false;  // (right-aligned: t reaches the axis)
  const size_t axis_in_t = out.axis + rank - out.rank;
  for (size_t d = 0; d < rank; ++d)
    if (t->shape()[d] != (d == axis_in_t ? out.count : 1)) return false;
  return true;
}

// Whether `n` is Mul(v, c) or Mul(c, v) with c a float32 constant of one value or one per output element of
// the axis: returns c's value.
ValueId scale_operand(const Graph& g, const Node& n, ValueId v, const OutputAxis& out) {
  if (n.info.op_type != "Mul" || !n.info.domain.empty()) return kNoValue;
  const ValueId c = other_operand(n, v);
  if (c == kNoValue) return kNoValue;
  return per_axis_constant(constant_of(g, n, n.inputs[0] == c ? 0 : 1), out, true) ? c : kNoValue;
}

// The output axis a MatMulInteger's or ConvInteger's constants lie along, given its constant weight; nullopt
// for shapes the kernels do not rescale (a batched B).
std::optional<OutputAxis> output_axis(const Graph& g, const Node& product, const Tensor& weight) {
  if (product.info.op_type == "MatMulInteger") {
    if (weight.rank() != 2) return std::nullopt;
    // A's rank (a vector's product is one too); unknown, only constants of rank <= 1 are safe.
    const ValueShape& a = g.value(product.inputs[0]).shape;
    const size_t rank = a.rank_known ? std::max<size_t>(1, a.dims.size()) : 1;
    return OutputAxis{rank, rank - 1, weight.shape()[1]};
  }
  if (weight.shape().size() < 3) return std::nullopt;              // the conv's error, when planned
  return OutputAxis{weight.shape().size(), 1, weight.shape()[0]};  // ConvInteger: [N, M, (H,) W]
}

}  // namespace

int fuse_dynamically_quantized_products(Graph& g) {
  NodeEditor editor(g);
  Readers readers(g);
  int count = 0;
  for (NodeId i : node_ids(g)) {
    const Node& mi = node_at(g, i);
    const std::string& op = mi.info.op_type;
    if ((op != "MatMulInteger" && op != "ConvInteger") || !mi.info.domain.empty() || mi.inputs.size() < 3 ||
        mi.inputs.size() > 4 || mi.outputs.size() != 1 ||
        mi.info.attributes.has(ops::kIntegerScaledOutputAttribute))
      continue;
    // A from a DynamicQuantizeLinear, with its zero point; B (and its zero point) constants.
    const NodeId q = NodeId::producer_of(g, mi.inputs[0]);
    if (!q || editor.removed(q)) continue;
    const Node& dq = node_at(g, q);
    if (dq.info.op_type != "DynamicQuantizeLinear" || dq.outputs.size() != 3 ||
        dq.outputs[0] != mi.inputs[0] || mi.inputs[2] != dq.outputs[2])
      continue;
    const Tensor* b = constant_of(g, mi, 1);
    if (!b) continue;
    if (mi.inputs.size() == 4 && mi.inputs[3] != kNoValue && !constant_of(g, mi, 3)) continue;
    const std::optional<OutputAxis> out_axis = output_axis(g, mi, *b);
    if (!out_axis) continue;
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
    const ValueId b_scale = scale_operand(g, node_at(g, s_id), dq.outputs[1], *out_axis);
    if (b_scale == kNoValue) continue;
    // An Add of a constant bias after it, where it is the Mul's only reader.
    ValueId out = mul.outputs[0], bias = kNoValue;
    const NodeId add_id = sole_reader(g, readers, out);
    if (add_id && !editor.removed(add_id)) {
      const Node& add = node_at(g, add_id);
      const ValueId c =
          add.info.op_type == "Add" && add.info.domain.empty() ? other_operand(add, out) : kNoValue;
      if (c != kNoValue &&
          per_axis_constant(constant_of(g, add, add.inputs[0] == c ? 0 : 1), *out_axis, false)) {
        bias = c;
        out = add.outputs[0];
        editor.remove(add_id);
      }
    }
    Node& fused = node_at(g, i);
    fused.info.attributes.set(ops::kIntegerScaledOutputAttribute, int64_t{1});
    fused.inputs.resize(ops::ScaledIntegerInput::kAScale, kNoValue);
    fused.inputs.push_back(dq.outputs[1]);
    fused.inputs.push_back(b_scale);
    if (bias != kNoValue) fused.inputs.push_back(bias);
    fused.outputs[0] = out;
    if (!fused.info.output_names.empty()) fused.info.output_names = {g.value(out).name};
    editor.remove(cast_id);
    editor.remove(mul_id);
    if (sole_reader(g, readers, s) == mul_id) editor.remove(s_id);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
