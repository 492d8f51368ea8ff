#include <algorithm>

#include "graph/passes.h"
#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

namespace {

// LayerNormalization over the last axis of a float32 X with constant float32 scale and bias (optional) of one
// value per element of that axis, and only its Y read: the form the fused product normalises (the length of
// the axis is the scale's).
bool fusable_layer_norm(const Graph& g, const Node& n) {
  if (n.info.op_type != "LayerNormalization" || (!n.info.domain.empty() && n.info.domain != "ai.onnx"))
    return false;
  if (n.inputs.size() < 2 || n.inputs.size() > 3 || n.outputs.empty() || n.outputs[0] == kNoValue)
    return false;
  for (size_t o = 1; o < n.outputs.size(); ++o) {
    if (n.outputs[o] != kNoValue) return false;  // Mean / InvStdDev requested
  }
  const Value& x = g.value(n.inputs[0]);
  if (x.dtype != DType::Float32) return false;
  const int64_t axis = n.info.attributes.get_int("axis", -1);
  const bool rank_known = x.shape.rank_known && !x.shape.dims.empty();
  if (axis != -1 && (!rank_known || axis != static_cast<int64_t>(x.shape.dims.size()) - 1)) return false;
  if (n.info.attributes.get_int("stash_type", 1) != 1) return false;
  const Tensor* scale = constant_of(g, n, 1);
  if (!is_float(scale) || scale->shape().size() != 1) return false;
  const int64_t k = scale->shape()[0];
  if (rank_known && x.shape.dims.back().is_known() && x.shape.dims.back().value != k) return false;
  if (n.inputs.size() == 3 && n.inputs[2] != kNoValue) {
    const Tensor* bias = constant_of(g, n, 2);
    if (!is_float(bias) || bias->shape() != Shape{k}) return false;
  }
  return true;
}

// A MatMul reading `y` as A with a constant B (and bias), no residual, no windows and no LayerNorm yet: the
// product that takes the LayerNormalization in.
bool fusable_matmul(const Graph& g, const Node& p, ValueId y) {
  if (p.info.op_type != "MatMul" || !p.info.domain.empty()) return false;
  if (p.inputs.size() < 2 || p.inputs[0] != y || p.inputs[1] == y) return false;
  if (p.inputs.size() > ops::kFusedResidualInput) return false;  // a residual (or windows) in its inputs
  if (!constant_of(g, p, 1)) return false;
  // A bias must be a constant too: one computed from Y would make the product read its own output.
  if (p.inputs.size() > ops::LinearInput::kBias && p.inputs[ops::LinearInput::kBias] != kNoValue &&
      !constant_of(g, p, ops::LinearInput::kBias))
    return false;
  const ops::LinearAttributes a = ops::read_linear_attributes(p.info);
  return !a.windows_in && !a.windows_out && !a.layer_norm_epsilon && !a.epilogue.residual;
}

// A com.microsoft MatMulNBits reading `y` as A (B, scales and zero points are constants, as its planner
// requires of B), with no residual and no LayerNorm yet: y read nowhere else among its inputs.
bool fusable_matmul_nbits(const Node& p, ValueId y) {
  if (!is_matmul_nbits(p) || p.inputs.size() < 3 || p.inputs[0] != y) return false;
  if (p.inputs.size() > ops::kNBitsResidualInput) return false;  // a residual in its inputs
  if (std::find(p.inputs.begin() + 1, p.inputs.end(), y) != p.inputs.end()) return false;
  const ops::NBitsAttributes a = ops::read_nbits_attributes(p.info);
  return !a.layer_norm_epsilon && !a.epilogue.residual;
}

// A MatMulInteger that quantizes its own A (wgi.quantize_a: fuse_dynamic_quantization_into_products) reading
// `y` as that A, with no residual and no LayerNorm yet: it normalises A before quantizing it.
bool fusable_quantizing_product(const Node& p, ValueId y) {
  if (!is_scaled_integer_product(p) || p.info.op_type != "MatMulInteger" ||
      !p.info.attributes.has(ops::kIntegerQuantizeAAttribute) ||
      p.info.attributes.has(ops::kMatMulLayerNormEpsilonAttribute) || p.inputs.empty() || p.inputs[0] != y)
    return false;
  if (p.inputs.size() > ops::ScaledIntegerInput::kResidual) return false;  // a residual in its inputs
  return std::find(p.inputs.begin() + 1, p.inputs.end(), y) == p.inputs.end();
}

// The LayerNormalization `ln` taken into product `p`: X becomes its A, scale and bias its inputs at
// `scale_input` and the next, epsilon its attribute, and Y its last output (the other readers of Y read it
// from the product, sorted after it at commit).
void take_layer_norm(const Graph& g, const Node& ln, size_t scale_input, Node& p) {
  p.inputs[0] = ln.inputs[0];
  p.inputs.resize(scale_input, kNoValue);
  p.inputs.push_back(ln.inputs[1]);
  p.inputs.push_back(ln.inputs.size() == 3 ? ln.inputs[2] : kNoValue);
  p.outputs.push_back(ln.outputs[0]);
  // The names the planner's messages and checks count the outputs by.
  if (p.info.output_names.size() + 1 == p.outputs.size())
    p.info.output_names.push_back(g.value(ln.outputs[0]).name);
}

}  // namespace

int fuse_layer_norm_into_products(Graph& g) {
  NodeEditor editor(g);
  Readers readers(g);
  int count = 0;
  for (NodeId i : node_ids(g)) {
    const Node& ln = node_at(g, i);
    if (!fusable_layer_norm(g, ln)) continue;
    const ValueId y = ln.outputs[0];
    if (is_graph_output(g, y)) continue;
    NodeId product;
    for (NodeId r : readers.of(y)) {
      const Node& reader = node_at(g, r);
      if (!editor.removed(r) && (fusable_matmul(g, reader, y) || fusable_matmul_nbits(reader, y) ||
                                 fusable_quantizing_product(reader, y))) {
        product = r;
        break;
      }
    }
    if (!product) continue;
    Node& p = node_at(g, product);
    const float epsilon = ln.info.attributes.get_float("epsilon", 1e-5f);
    if (is_scaled_integer_product(p)) {
      p.info.attributes.set(ops::kMatMulLayerNormEpsilonAttribute, epsilon);
      take_layer_norm(g, ln, ops::IntegerLayerNormInput::kScale, p);
    } else if (is_matmul_nbits(p)) {
      ops::NBitsAttributes a = ops::read_nbits_attributes(p.info);
      a.layer_norm_epsilon = epsilon;
      ops::write_nbits_attributes(a, p.info.attributes);
      take_layer_norm(g, ln, ops::NBitsLayerNormInput::kScale, p);
    } else {
      ops::LinearAttributes a = ops::read_linear_attributes(p.info);
      a.layer_norm_epsilon = epsilon;
      ops::write_linear_attributes(a, p.info.attributes);
      take_layer_norm(g, ln, ops::LayerNormInput::kScale, p);
    }
    editor.remove(i);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
