// float16 activations computed and stored in float32 (docs/float16.md, "float16 graphs in float32"). On
// adapters without shader-f16 every kernel computes in f32 anyway; what the float16 wrapper (ops/float16.h)
// adds per op is an unpack launch per float16 input and a pack launch per output, and the fusions written
// for float32 do not see through them. Here the graph's float16 values become float32 values instead, so a
// `keep_io_types` export plans as its float32 model does: the boundary Casts become identities and go, the
// exporters' Casts around the ops they keep in float32 likewise, and every fusion matches. Weights the GEMM
// kernels read packed (MatMul / Gemm B, the implicit GEMM's conv weight) stay float16, at half the bytes;
// every other float16 constant is widened once here. Intermediate results are no longer rounded to float16
// between ops (they are computed as a float32 model would compute them from the float16 weights).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "graph/passes.h"
#include "graph/passes/match.h"
#include "ops/float16.h"

namespace wgi::graph {

namespace {

constexpr int64_t kTensorProtoFloat = 1;
constexpr int64_t kTensorProtoFloat16 = 10;

bool is_default_domain(const Node& n) {
  return n.info.domain.empty() || n.info.domain == "ai.onnx";
}

bool is_cast(const Node& n) {
  return is_default_domain(n) && n.info.op_type == "Cast" && n.inputs.size() == 1 && n.outputs.size() == 1;
}

// Whether input `slot` of `n` may stay a float16 constant: a kernel reads it packed without a cast launch.
bool keeps_float16(const Graph& g, const Readers& readers, const Node& n, size_t slot) {
  if (!is_default_domain(n) || slot != 1) return false;
  const std::string& op = n.info.op_type;
  if (op == "MatMul" || op == "Gemm") return true;
  if (op != "Conv" && op != "ConvTranspose") return false;
  // Depthwise and grouped convs read a float32 copy (and the channels-last depthwise fusion matches float32
  // weights only); a BatchNormalization after the conv folds into a float32 weight.
  if (n.info.attributes.get_int("group", 1) != 1 || n.outputs.empty()) return false;
  for (NodeId r : readers.of(n.outputs[0])) {
    if (node_at(g, r).info.op_type == "BatchNormalization") return false;
  }
  return true;
}

// The element types of the graph's values as the planner will see them: exports declare the types of graph
// inputs, outputs and initializers, rarely of the values between nodes (wgi's graph then holds Float32
// there), so they are inferred node by node with ONNX's type constraints: an op's float outputs have the type
// of its first float input (ops/float16.h), Cast and the generators their attribute's. nullopt: not inferred
// (a node with subgraphs, an op outside the tables below).
std::vector<std::optional<DType>> infer_types(const Graph& g) {
  std::vector<std::optional<DType>> type(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (g.values[v].constant || g.values[v].producer < 0) type[v] = g.values[v].dtype;
  }
  auto dtype_attribute = [](const Node& n, const char* name) -> std::optional<DType> {
    if (!n.info.attributes.has(name)) return std::nullopt;
    return ops::dtype_from_tensor_proto(n.info.attributes.get_int(name, 0));
  };
  static const std::set<std::string> boolean_outputs = {
      "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not",
      "And",   "Or",   "Xor",         "IsNaN",   "IsInf"};
  static const std::set<std::string> integer_outputs = {"Shape",
                                                        "Size",
                                                        "NonZero",
                                                        "ArgMax",
                                                        "ArgMin",
                                                        "QuantizeLinear",
                                                        "MatMulInteger",
                                                        "ConvInteger",
                                                        "QLinearMatMul",
                                                        "QLinearConv",
                                                        "DynamicQuantizeLinear"};
  // Ops whose outputs after the first are indices or masks.
  static const std::set<std::string> first_output_only = {"TopK", "MaxPool", "Dropout", "Unique"};
  for (const Node& n : g.nodes) {
    std::optional<DType> out;
    const std::string& op = n.info.op_type;
    bool inferred = true;
    if (!n.subgraphs.empty()) {
      inferred = false;
    } else if (!is_default_domain(n) && n.info.domain != "com.microsoft") {
      inferred = false;
    } else if (op == "Cast") {
      out = dtype_attribute(n, "to");
    } else if (op == "CastLike") {
      if (n.inputs.size() > 1 && n.inputs[1] != kNoValue) out = type[static_cast<size_t>(n.inputs[1])];
    } else if (op == "ConstantOfShape") {
      const Tensor* value = n.info.attributes.get_tensor("value");
      out = value ? value->dtype() : DType::Float32;
    } else if (op == "RandomNormal" || op == "RandomUniform" || op == "Bernoulli" || op == "EyeLike" ||
               op == "RandomNormalLike" || op == "RandomUniformLike" || op == "Multinomial") {
      out = dtype_attribute(n, "dtype");
      if (!out && op != "RandomNormal" && op != "RandomUniform" && !n.inputs.empty() &&
          n.inputs[0] != kNoValue)
        out = type[static_cast<size_t>(n.inputs[0])];
      if (!out) out = DType::Float32;
    } else if (boolean_outputs.count(op)) {
      out = DType::Bool;
    } else if (integer_outputs.count(op)) {
      out = DType::Int32;  // some integer type: not a float
    } else {
      // The first float input's type, else the first input's (integer arithmetic).
      for (size_t i = 0; i < n.op_input_count(); ++i) {
        const ValueId v = n.inputs[i];
        if (v == kNoValue) continue;
        const std::optional<DType> t = type[static_cast<size_t>(v)];
        if (!t) {
          inferred = false;
          break;
        }
        if (*t == DType::Float32 || *t == DType::Float16) {
          out = t;
          break;
        }
        if (!out) out = t;
      }
    }
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      if (n.outputs[o] == kNoValue) continue;
      if (!inferred || !out) continue;  // unknown
      type[static_cast<size_t>(n.outputs[o])] = o > 0 && first_output_only.count(op) ? DType::Int32 : *out;
    }
  }
  return type;
}

// A node with a float16 output made to produce float32 instead: Cast and the generators by their attribute
// (ConstantOfShape's value is widened with the constants); every other op follows its inputs.
void compute_in_float32(Node& n) {
  if (is_cast(n)) n.info.attributes.set("to", kTensorProtoFloat);
  const std::string& op = n.info.op_type;
  if (is_default_domain(n) && n.info.attributes.has("dtype") &&
      (op == "EyeLike" || op == "Bernoulli" || op.rfind("Random", 0) == 0))
    n.info.attributes.set("dtype", kTensorProtoFloat);
}

Value float32_like(const Value& v, const std::string& suffix) {
  Value out;
  out.name = v.name + suffix;
  out.dtype = DType::Float32;
  out.shape = v.shape;
  return out;
}

Node cast_node(const Graph& g, const std::string& name, ValueId from, ValueId to, int64_t type) {
  Node cast;
  cast.info.name = unique_value_name(g, name);
  cast.info.op_type = "Cast";
  cast.info.opset = g.opsets.count("") ? static_cast<int>(g.opsets.at("")) : 13;
  cast.info.attributes.set("to", type);
  cast.inputs = {from};
  cast.outputs = {to};
  return cast;
}

// Redirects the reads of `from` by every node but `except` to `to` (graph outputs unchanged).
void replace_reads_except(Graph& g, ValueId from, ValueId to, const Node* except) {
  for (Node& n : g.nodes) {
    if (&n != except) replace_reads(n, from, to);
  }
}

}  // namespace

int compute_float16_in_float32(Graph& g) {
  // Inside a subgraph (its values are scoped: not found by name) the types of the enclosing scope's values
  // are not known here; a graph with subgraph nodes keeps their interface float16 (not handled yet).
  for (const Node& n : g.nodes) {
    if (!n.subgraphs.empty()) return 0;
    for (ValueId o : n.outputs) {
      if (o != kNoValue && g.find(g.value(o).name) != o) return 0;
    }
  }
  const std::vector<std::optional<DType>> type = infer_types(g);
  auto is_half = [&](ValueId v) {
    return v != kNoValue && static_cast<size_t>(v) < type.size() &&
           type[static_cast<size_t>(v)] == DType::Float16;
  };
  bool any = false;
  for (size_t v = 0; v < type.size(); ++v) any = any || type[v] == DType::Float16;
  if (!any) return 0;
  int count = 0;
  std::vector<Node> added;
  // Values that hold float32 after the pass, as inferred (a Cast to float32 of one of them is an identity).
  std::set<ValueId> float32_values;
  for (size_t v = 0; v < type.size(); ++v) {
    if (type[v] == DType::Float32 ||
        (type[v] == DType::Float16 && !g.values[v].constant && g.values[v].producer >= 0))
      float32_values.insert(static_cast<ValueId>(v));
  }

  // Float16 constants: widened once for every reader that does not read them packed.
  {
    const Readers readers(g);
    std::map<ValueId, ValueId> widened;
    for (Node& n : g.nodes) {
      for (size_t slot = 0; slot < n.inputs.size(); ++slot) {
        const ValueId v = n.inputs[slot];
        if (v == kNoValue || !g.value(v).constant || g.value(v).dtype != DType::Float16) continue;
        if (keeps_float16(g, readers, n, slot)) continue;
        auto it = widened.find(v);
        if (it == widened.end()) {
          Tensor wide = ops::widen_float16(*g.value(v).constant);
          it = widened.emplace(v, add_constant(g, g.value(v).name + "_f32", std::move(wide))).first;
          float32_values.insert(it->second);
        }
        n.inputs[slot] = it->second;
        ++count;
      }
      if (const Tensor* value = n.info.attributes.get_tensor("value");
          value && value->dtype() == DType::Float16 && n.info.op_type == "ConstantOfShape") {
        n.info.attributes.set("value", ops::widen_float16(*value));
        ++count;
      }
    }
  }

  // Float16 graph inputs: cast to float32 once, where they enter.
  for (ValueId in : std::vector<ValueId>(g.inputs)) {
    if (!is_half(in) || is_graph_output(g, in)) continue;
    const ValueId wide = g.add_value(float32_like(g.value(in), "_f32"));
    float32_values.insert(wide);
    replace_reads_except(g, in, wide, nullptr);
    added.push_back(cast_node(g, g.value(in).name + "_to_float32", in, wide, kTensorProtoFloat));
    ++count;
  }

  // Float16 graph outputs: computed in float32 by their producer, cast to float16 where they leave.
  for (ValueId out : std::vector<ValueId>(g.outputs)) {
    if (!is_half(out) || g.value(out).producer < 0) continue;
    const ValueId computed = g.add_value(float32_like(g.value(out), "_f32"));
    float32_values.insert(computed);
    Node& producer = g.nodes.at(static_cast<size_t>(g.value(out).producer));
    for (ValueId& o : producer.outputs) {
      if (o == out) o = computed;
    }
    compute_in_float32(producer);
    replace_reads_except(g, out, computed, nullptr);
    added.push_back(cast_node(g, g.value(out).name + "_to_float16", computed, out, kTensorProtoFloat16));
    ++count;
  }

  // Every other float16 value: float32.
  for (Node& n : g.nodes) {
    for (ValueId o : n.outputs) {
      if (!is_half(o) || is_graph_output(g, o)) continue;
      compute_in_float32(n);
      g.value(o).dtype = DType::Float32;
      ++count;
    }
  }
  for (Node& cast : added) g.nodes.push_back(std::move(cast));
  g.sort_topologically();

  // Casts from float32 to float32 are identities now: the boundary Casts of keep_io_types exports and those
  // around the ops an export keeps in float32.
  NodeEditor editor(g);
  for (NodeId i : node_ids(g)) {
    Node& cast = node_at(g, i);
    if (!is_cast(cast) || cast.info.attributes.get_int("to", 0) != kTensorProtoFloat) continue;
    const ValueId in = cast.inputs[0], out = cast.outputs[0];
    if (in == kNoValue || !float32_values.count(in)) continue;
    if (!is_graph_output(g, out)) {
      replace_uses(g, out, in);
    } else {
      // The graph output keeps its name: the node computing the Cast's input writes it directly.
      const NodeId p = NodeId::producer_of(g, in);
      if (!p || is_graph_output(g, in) || g.value(in).constant) continue;
      Node& producer = node_at(g, p);
      for (ValueId& o : producer.outputs) {
        if (o == in) o = out;
      }
      replace_reads_except(g, in, out, &cast);
    }
    editor.remove(i);
    ++count;
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
