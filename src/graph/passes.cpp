#include "graph/passes.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <set>

#include "ops/conv_channels_last.h"
#include "ops/fused_activation.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"
#include "ops/reshape.h"

namespace wgi::graph {

namespace {

// Marks nodes for removal and rebuilds the node list once, so indices stay valid while a pass works.
class NodeEditor {
 public:
  explicit NodeEditor(Graph& graph) : graph_(graph), removed_(graph.nodes.size(), false) {}
  void remove(size_t node) { removed_[node] = true; }
  bool removed(size_t node) const { return removed_[node]; }
  // A node that replaces removed ones; appended at commit, which re-sorts.
  void add(Node node) { added_.push_back(std::move(node)); }
  void commit() {
    std::vector<Node> kept;
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      if (!removed_[i]) kept.push_back(std::move(graph_.nodes[i]));
    }
    for (Node& n : added_) kept.push_back(std::move(n));
    graph_.nodes = std::move(kept);
    graph_.sort_topologically();
  }

 private:
  Graph& graph_;
  std::vector<bool> removed_;
  std::vector<Node> added_;
};

bool is_graph_output(const Graph& g, ValueId v) {
  return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

// Redirects every reader of `from` (nodes, inside their subgraphs too, and graph outputs) to `to`.
void replace_uses(Graph& g, ValueId from, ValueId to) {
  for (Node& n : g.nodes) replace_reads(n, from, to);
  std::replace(g.outputs.begin(), g.outputs.end(), from, to);
}

// The node producing `v` if its only reader is `consumer` and it is not a graph output; else -1.
int32_t sole_producer(const Graph& g, const std::vector<std::vector<int32_t>>& consumers, ValueId v,
                      size_t consumer) {
  if (v == kNoValue || is_graph_output(g, v)) return -1;
  const auto& readers = consumers[static_cast<size_t>(v)];
  if (readers.size() != 1 || static_cast<size_t>(readers[0]) != consumer) return -1;
  return g.value(v).producer;
}

const Tensor* constant_of(const Graph& g, const Node& n, size_t input) {
  if (input >= n.inputs.size() || n.inputs[input] == kNoValue) return nullptr;
  const auto& c = g.value(n.inputs[input]).constant;
  return c ? &*c : nullptr;
}

ValueId add_constant(Graph& g, const std::string& name, Tensor t) {
  Value v;
  std::string unique = name;
  for (int i = 1; g.find(unique) != kNoValue; ++i) unique = name + "_" + std::to_string(i);
  v.name = unique;
  v.dtype = t.dtype();
  v.shape = ValueShape::of(t.shape());
  v.constant = std::move(t);
  return g.add_value(std::move(v));
}

// Whether a Transpose node swaps exactly the last two dims.
bool swaps_last_two(const Node& t) {
  std::vector<int64_t> perm = t.info.attributes.get_ints("perm", {});
  if (perm.size() < 2) return false;
  for (size_t i = 0; i + 2 < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  const auto r = static_cast<int64_t>(perm.size());
  return perm[perm.size() - 2] == r - 1 && perm.back() == r - 2;
}

bool is_float(const Tensor* t) {
  return t && t->dtype() == DType::Float32;
}

}  // namespace

PassReport& PassReport::operator+=(const PassReport& o) {
  for (auto [field, add] : {std::pair{&identities_removed, o.identities_removed},
                            {&dead_nodes_removed, o.dead_nodes_removed},
                            {&constants_folded, o.constants_folded},
                            {&batch_norms_folded, o.batch_norms_folded},
                            {&transposed_weights_read, o.transposed_weights_read},
                            {&bias_adds_fused, o.bias_adds_fused},
                            {&residual_adds_fused, o.residual_adds_fused},
                            {&gelus_fused, o.gelus_fused},
                            {&activations_fused, o.activations_fused},
                            {&attentions_fused, o.attentions_fused},
                            {&packed_qkv_read, o.packed_qkv_read},
                            {&split_heads_read, o.split_heads_read},
                            {&attentions_transposed, o.attentions_transposed},
                            {&depthwise_convs_fused, o.depthwise_convs_fused},
                            {&windows_read, o.windows_read},
                            {&windows_written, o.windows_written}}) {
    *field += add;
  }
  return *this;
}

std::string PassReport::summary() const {
  std::string s;
  auto add = [&s](int n, const char* what) {
    if (n) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(identities_removed, "Identity/Dropout removed");
  add(dead_nodes_removed, "dead nodes removed");
  add(constants_folded, "nodes folded into constants");
  add(batch_norms_folded, "BatchNormalization folded");
  add(transposed_weights_read, "transposed weights read in place");
  add(bias_adds_fused, "MatMul+Add fused");
  add(residual_adds_fused, "residual Adds fused");
  add(gelus_fused, "GELUs fused into Gelu");
  add(activations_fused, "activations fused");
  add(attentions_fused, "attentions fused");
  add(packed_qkv_read, "attentions read packed Q, K, V");
  add(split_heads_read, "attentions read split heads in place");
  add(attentions_transposed, "attention outputs written transposed");
  add(depthwise_convs_fused, "channels-last depthwise convs fused");
  add(windows_read, "window partitions read in place");
  add(windows_written, "window reverses written in place");
  return s.empty() ? "no changes" : s;
}

int eliminate_identities(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  auto consumers = g.consumers();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
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
      if (n.outputs.size() > 1 && n.outputs[1] != kNoValue &&
          (!consumers[static_cast<size_t>(n.outputs[1])].empty() || is_graph_output(g, n.outputs[1]))) {
        continue;
      }
    }
    replace_uses(g, n.outputs[0], n.inputs[0]);
    editor.remove(i);
    ++count;
  }
  editor.commit();
  return count;
}

int remove_dead_nodes(Graph& g) {
  std::vector<bool> live(g.values.size(), false);
  for (ValueId v : g.outputs) {
    if (v != kNoValue) live[static_cast<size_t>(v)] = true;
  }
  std::vector<bool> keep(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    keep[i] = std::any_of(n.outputs.begin(), n.outputs.end(),
                          [&](ValueId v) { return v != kNoValue && live[static_cast<size_t>(v)]; });
    if (!keep[i]) continue;
    for (ValueId v : n.inputs) {
      if (v != kNoValue) live[static_cast<size_t>(v)] = true;
    }
  }
  NodeEditor editor(g);
  int count = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!keep[i]) {
      editor.remove(i);
      ++count;
    }
  }
  editor.commit();
  return count;
}

int fold_constants(Graph& g, const ops::OpRegistry& registry) {
  NodeEditor editor(g);
  int count = 0;
  const gpu::Capabilities no_device;  // host evaluation does not depend on the device
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
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

int fold_batch_norms(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  auto consumers = g.consumers();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& bn = g.nodes[i];
    if (bn.info.op_type != "BatchNormalization" || bn.inputs.size() < 5) continue;
    if (bn.info.attributes.get_int("training_mode", 0) != 0) continue;
    if (bn.outputs.size() > 1 && std::any_of(bn.outputs.begin() + 1, bn.outputs.end(), [&](ValueId v) {
          return v != kNoValue && (!consumers[static_cast<size_t>(v)].empty() || is_graph_output(g, v));
        })) {
      continue;
    }
    const Tensor *scale = constant_of(g, bn, 1), *shift = constant_of(g, bn, 2),
                 *mean = constant_of(g, bn, 3), *var = constant_of(g, bn, 4);
    if (!is_float(scale) || !is_float(shift) || !is_float(mean) || !is_float(var)) continue;
    int32_t p = sole_producer(g, consumers, bn.inputs[0], i);
    if (p < 0 || editor.removed(static_cast<size_t>(p))) continue;
    Node& producer = g.nodes[static_cast<size_t>(p)];
    const bool is_conv = producer.info.op_type == "Conv";
    const bool is_gemm = producer.info.op_type == "Gemm";
    if (!is_conv && !is_gemm) continue;
    if (producer.info.attributes.has(ops::kFusedActivationAttribute)) continue;
    const Tensor* weight = constant_of(g, producer, 1);
    const Tensor* bias = constant_of(g, producer, 2);
    bool has_bias_input = producer.inputs.size() > 2 && producer.inputs[2] != kNoValue;
    if (!is_float(weight) || (has_bias_input && !is_float(bias))) continue;
    const int64_t channels = scale->element_count();
    if (shift->element_count() != channels || mean->element_count() != channels ||
        var->element_count() != channels) {
      continue;
    }
    const double epsilon = bn.info.attributes.get_float("epsilon", 1e-5f);
    std::vector<double> s(static_cast<size_t>(channels)), t(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) {
      s[c] = scale->data<float>()[c] / std::sqrt(static_cast<double>(var->data<float>()[c]) + epsilon);
      t[c] = shift->data<float>()[c] - mean->data<float>()[c] * s[c];
    }
    Tensor new_weight = *weight;
    auto w = new_weight.data<float>();
    std::vector<float> new_bias(static_cast<size_t>(channels));
    if (is_conv) {
      // Conv weight [OC, IC/group, k...]: scale each output channel's filter.
      if (weight->rank() < 3 || weight->shape()[0] != channels) continue;
      if (has_bias_input && bias->element_count() != channels) continue;
      const int64_t per_channel = weight->element_count() / channels;
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t j = 0; j < per_channel; ++j)
          w[c * per_channel + j] = static_cast<float>(w[c * per_channel + j] * s[c]);
        double b = has_bias_input ? bias->data<float>()[c] : 0.0;
        new_bias[c] = static_cast<float>(b * s[c] + t[c]);
      }
    } else {
      // Gemm: out[m, n] = alpha * A op(B) + beta * C, channels along n. Fold into B's columns and a new C.
      if (weight->rank() != 2 || producer.info.attributes.get_int("transA", 0) != 0) continue;
      const bool trans_b = producer.info.attributes.get_int("transB", 0) != 0;
      const int64_t n_dim = trans_b ? weight->shape()[0] : weight->shape()[1];
      const int64_t k_dim = trans_b ? weight->shape()[1] : weight->shape()[0];
      if (n_dim != channels) continue;
      if (has_bias_input && bias->element_count() != channels && bias->element_count() != 1) continue;
      const double beta = producer.info.attributes.get_float("beta", 1.0f);
      for (int64_t k = 0; k < k_dim; ++k) {
        for (int64_t n = 0; n < channels; ++n) {
          float& x = trans_b ? w[n * k_dim + k] : w[k * channels + n];
          x = static_cast<float>(x * s[n]);
        }
      }
      for (int64_t n = 0; n < channels; ++n) {
        double c = has_bias_input ? beta * bias->data<float>()[bias->element_count() == 1 ? 0 : n] : 0.0;
        new_bias[n] = static_cast<float>(c * s[n] + t[n]);  // s * (beta * C - mean) + shift
      }
      producer.info.attributes.set("beta", 1.0f);
    }
    ValueId w_id = add_constant(g, g.value(producer.inputs[1]).name + "_bn_folded", std::move(new_weight));
    ValueId b_id =
        add_constant(g, bn.info.name + "_bn_folded_bias", Tensor::from_vector<float>({channels}, new_bias));
    producer.inputs.resize(std::max<size_t>(producer.inputs.size(), 3), kNoValue);
    producer.inputs[1] = w_id;
    producer.inputs[2] = b_id;
    producer.outputs[0] = bn.outputs[0];
    editor.remove(i);
    ++count;
  }
  editor.commit();
  return count;
}

int fuse_bias_adds(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  auto consumers = g.consumers();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& add = g.nodes[i];
    if (add.info.op_type != "Add" || add.inputs.size() != 2) continue;
    for (size_t side = 0; side < 2; ++side) {
      int32_t p = sole_producer(g, consumers, add.inputs[side], i);
      if (p < 0 || editor.removed(static_cast<size_t>(p))) continue;
      Node& mm = g.nodes[static_cast<size_t>(p)];
      if (mm.info.op_type != "MatMul" || mm.inputs.size() != 2) continue;
      const Tensor* b = constant_of(g, mm, 1);
      const Tensor* c = constant_of(g, add, 1 - side);
      if (!is_float(b) || b->rank() != 2 || !is_float(c)) continue;
      const int64_t n = b->shape()[mm.info.attributes.get_int(ops::kMatMulTransBAttribute, 0) ? 0 : 1];
      // The bias must be a row vector: [N] or [1, ..., 1, N].
      const auto& cs = c->shape();
      if (cs.empty() || cs.back() != n || c->element_count() != n) continue;
      // Broadcasting must not raise the output's rank: a [N] bias never does; [1, ..., N] only if A's rank is
      // known to be at least as large.
      const auto& a_shape = g.value(mm.inputs[0]).shape;
      if (cs.size() > 1 && (!a_shape.rank_known || cs.size() > std::max<size_t>(a_shape.dims.size(), 2)))
        continue;
      Tensor bias = *c;
      ValueId bias_id = add_constant(g, g.value(add.inputs[1 - side]).name + "_row",
                                     Tensor(DType::Float32, {n}, bias.bytes()));
      mm.inputs.push_back(bias_id);
      mm.outputs[0] = add.outputs[0];
      editor.remove(i);
      ++count;
      break;
    }
  }
  editor.commit();
  return count;
}

namespace {

// Whether two graph shapes may be those of one tensor: false only where both are given and differ (rank, a
// known dim, a symbolic dim, or a known against a symbolic dim).
bool shapes_may_match(const ValueShape& a, const ValueShape& b) {
  if (!a.rank_known || !b.rank_known) return true;
  if (a.dims.size() != b.dims.size()) return false;
  for (size_t i = 0; i < a.dims.size(); ++i) {
    const Dim &x = a.dims[i], &y = b.dims[i];
    const bool x_unknown = !x.is_known() && x.symbol.empty(), y_unknown = !y.is_known() && y.symbol.empty();
    if (x_unknown || y_unknown) continue;
    if (x.is_known() != y.is_known()) return false;
    if (x.is_known() ? x.value != y.value : x.symbol != y.symbol) return false;
  }
  return true;
}

bool produced_by(const Graph& g, ValueId v, const char* op) {
  if (v == kNoValue) return false;
  const int32_t p = g.value(v).producer;
  return p >= 0 && g.nodes[static_cast<size_t>(p)].info.op_type == op;
}

}  // namespace

int fuse_residual_adds(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  auto consumers = g.consumers();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& add = g.nodes[i];
    if (add.info.op_type != "Add" || (!add.info.domain.empty() && add.info.domain != "ai.onnx")) continue;
    if (add.inputs.size() != 2 || add.outputs.size() != 1 || add.inputs[0] == add.inputs[1]) continue;
    // An attention mask added to the scores: fuse_attention's.
    const auto& readers = consumers[static_cast<size_t>(add.outputs[0])];
    if (std::any_of(readers.begin(), readers.end(),
                    [&](int32_t r) { return g.nodes[static_cast<size_t>(r)].info.op_type == "Softmax"; }))
      continue;
    for (size_t side = 0; side < 2; ++side) {
      const int32_t p = sole_producer(g, consumers, add.inputs[side], i);
      if (p < 0 || editor.removed(static_cast<size_t>(p))) continue;
      Node& producer = g.nodes[static_cast<size_t>(p)];
      const std::string& op = producer.info.op_type;
      if ((op != "MatMul" && op != "Gemm" && op != "Conv") || !producer.info.domain.empty()) continue;
      const ops::Attributes& attrs = producer.info.attributes;
      // A window reverse written in place (write_windows_in_place) keeps an empty input 3 for the residual
      // before its shape inputs.
      const bool windows_out = op == "MatMul" && attrs.get_int(ops::kMatMulWindowsOutAttribute, 0) != 0 &&
                               producer.inputs.size() > ops::kMatMulWindowInputs &&
                               producer.inputs[ops::kFusedResidualInput] == kNoValue;
      if (producer.outputs.size() != 1 || producer.inputs.size() < 2 ||
          (producer.inputs.size() > 3 && !windows_out))
        continue;
      if (attrs.has(ops::kFusedActivationAttribute) || attrs.has(ops::kFusedResidualAttribute)) continue;
      if (op == "MatMul" &&
          (produced_by(g, producer.inputs[0], "Softmax") || produced_by(g, producer.inputs[1], "Softmax")))
        continue;  // attention's P V
      const ValueId residual = add.inputs[1 - side];
      const Value& r = g.value(residual);
      if (r.dtype != DType::Float32 || g.value(add.inputs[side]).dtype != DType::Float32) continue;
      if (!shapes_may_match(g.value(add.inputs[side]).shape, r.shape) ||
          !shapes_may_match(g.value(add.outputs[0]).shape, r.shape))
        continue;
      if (windows_out) {
        producer.inputs[ops::kFusedResidualInput] = residual;
      } else {
        producer.inputs.resize(ops::kFusedResidualInput, kNoValue);
        producer.inputs.push_back(residual);
      }
      producer.info.attributes.set(ops::kFusedResidualAttribute, int64_t{1});
      producer.outputs[0] = add.outputs[0];
      editor.remove(i);
      ++count;
      break;
    }
  }
  editor.commit();
  return count;
}

int read_transposed_weights(Graph& g) {
  int count = 0;
  for (Node& mm : g.nodes) {
    if (mm.info.op_type != "MatMul" || mm.info.domain != "" || mm.inputs.size() != 2) continue;
    if (mm.info.attributes.get_int(ops::kMatMulTransBAttribute, 0) != 0) continue;
    const int32_t p = g.value(mm.inputs[1]).producer;
    if (p < 0) continue;
    const Node& t = g.nodes[static_cast<size_t>(p)];
    if (t.info.op_type != "Transpose" || !swaps_last_two(t) || t.inputs.empty()) continue;
    const Tensor* w = constant_of(g, t, 0);
    if (!is_float(w) || w->rank() < 2) continue;
    mm.inputs[1] = t.inputs[0];  // the Transpose stays for other readers; dead-node removal drops it
    mm.info.attributes.set(ops::kMatMulTransBAttribute, int64_t{1});
    ++count;
  }
  return count;
}

int fuse_activations(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  auto consumers = g.consumers();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& act = g.nodes[i];
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
          const Tensor* bound = constant_of(g, act, k);
          if (!is_float(bound) || bound->element_count() != 1) {
            ok = false;
            break;
          }
          (k == 1 ? lo : hi) = bound->data<float>()[0];
        }
        if (!ok) continue;
      }
    }
    int32_t p = sole_producer(g, consumers, act.inputs[0], i);
    if (p < 0 || editor.removed(static_cast<size_t>(p))) continue;
    Node& producer = g.nodes[static_cast<size_t>(p)];
    const std::string& pop = producer.info.op_type;
    if (pop != "Conv" && pop != "ConvTranspose" && pop != "Gemm" && pop != "MatMul") continue;
    if (producer.info.attributes.has(ops::kFusedActivationAttribute)) continue;
    producer.info.attributes.set(ops::kFusedActivationAttribute, fused);
    if (op == "Clip") {
      // Absent bounds stay absent: the epilogue then clamps at the largest finite float.
      if (!std::isinf(lo)) producer.info.attributes.set(ops::kFusedActivationMinAttribute, lo);
      if (!std::isinf(hi)) producer.info.attributes.set(ops::kFusedActivationMaxAttribute, hi);
    }
    producer.outputs[0] = act.outputs[0];
    editor.remove(i);
    ++count;
  }
  editor.commit();
  return count;
}

namespace {

// The scalar value of a constant input, if it is one.
std::optional<float> scalar_constant(const Graph& g, ValueId v) {
  if (v == kNoValue) return std::nullopt;
  const auto& c = g.value(v).constant;
  if (!c || c->element_count() != 1 || c->dtype() != DType::Float32) return std::nullopt;
  return c->data<float>()[0];
}

// Whether `v` depends only on constants and on the shapes (not the values) of other tensors: then the planner
// knows it before any GPU work (e.g. an attention scale computed as head_dim ** -0.5 from Shape).
bool derived_from_shapes(const Graph& g, ValueId v, int depth = 0) {
  if (v == kNoValue || g.value(v).constant) return true;
  const int32_t p = g.value(v).producer;
  if (p < 0 || depth > 32) return false;
  const Node& n = g.nodes[static_cast<size_t>(p)];
  if (n.info.op_type == "Shape" || n.info.op_type == "Size") return true;
  return std::all_of(n.inputs.begin(), n.inputs.end(),
                     [&](ValueId in) { return derived_from_shapes(g, in, depth + 1); });
}

// The reader of `v` if it has exactly one and is not a graph output; else -1.
int32_t sole_reader(const Graph& g, const std::vector<std::vector<int32_t>>& consumers, ValueId v) {
  if (v == kNoValue || is_graph_output(g, v)) return -1;
  const auto& readers = consumers[static_cast<size_t>(v)];
  return readers.size() == 1 ? readers[0] : -1;
}

bool close_to(std::optional<float> c, double want) {
  return c && std::abs(*c - want) <= 1e-6 * std::abs(want);
}

// The other operand of a binary node reading `v` once; kNoValue when it is not binary or reads v twice.
ValueId other_operand(const Node& n, ValueId v) {
  if (n.inputs.size() != 2) return kNoValue;
  if (n.inputs[0] == v && n.inputs[1] != v) return n.inputs[1];
  if (n.inputs[1] == v && n.inputs[0] != v) return n.inputs[0];
  return kNoValue;
}

// Mul(v, c) or Mul(c, v) with a scalar constant c close to `factor`: returns v; else kNoValue.
ValueId scaled_operand(const Graph& g, const Node& n, double factor) {
  if (n.info.op_type != "Mul" || n.inputs.size() != 2) return kNoValue;
  for (size_t side = 0; side < 2; ++side) {
    if (close_to(scalar_constant(g, n.inputs[side]), factor)) return n.inputs[1 - side];
  }
  return kNoValue;
}

// A GELU as exporters write it out, element by element:
//   erf form   0.5 x (1 + erf(x / sqrt 2))                             (nn.GELU(): Div, Erf, Add, Mul, Mul)
//   tanh form  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))          (approximate="tanh": 8 nodes)
// matched from its Erf / Tanh outwards. Every intermediate value must have that one reader (x may have more).
struct GeluMatch {
  ValueId x = kNoValue;
  std::vector<size_t> nodes;  // every node of the pattern
  size_t last = 0;            // the node whose output is the GELU's
  bool tanh = false;
};

std::optional<GeluMatch> match_gelu(const Graph& g, const std::vector<std::vector<int32_t>>& consumers,
                                    size_t core) {
  GeluMatch m;
  const Node& f = g.nodes[core];
  m.tanh = f.info.op_type == "Tanh";
  m.nodes.push_back(core);
  // `v`'s producer, when its only reader is node `reader`.
  auto producer_read_by = [&](ValueId v, size_t reader) -> const Node* {
    const int32_t p = sole_producer(g, consumers, v, reader);
    if (p < 0) return nullptr;
    m.nodes.push_back(static_cast<size_t>(p));
    return &g.nodes[static_cast<size_t>(p)];
  };
  if (f.inputs.size() != 1) return std::nullopt;
  const Node* arg = producer_read_by(f.inputs[0], core);
  if (!arg) return std::nullopt;
  const size_t arg_index = m.nodes.back();
  if (!m.tanh) {
    // x / sqrt(2), or x * (1 / sqrt(2)).
    if (arg->info.op_type == "Div" && arg->inputs.size() == 2 &&
        close_to(scalar_constant(g, arg->inputs[1]), std::sqrt(2.0))) {
      m.x = arg->inputs[0];
    } else {
      m.x = scaled_operand(g, *arg, std::sqrt(0.5));
    }
  } else {
    // sqrt(2/pi) * (x + 0.044715 * x^3), x^3 as x * (x * x), (x * x) * x or Pow(x, 3).
    const ValueId inner = scaled_operand(g, *arg, std::sqrt(2.0 / std::numbers::pi));
    const Node* sum = producer_read_by(inner, arg_index);
    if (!sum || sum->info.op_type != "Add" || sum->inputs.size() != 2) return std::nullopt;
    const size_t sum_index = m.nodes.back();
    const size_t matched = m.nodes.size();
    for (size_t side = 0; side < 2 && m.x == kNoValue; ++side) {
      m.nodes.resize(matched);
      const ValueId x = sum->inputs[side];
      const Node* cubic = producer_read_by(sum->inputs[1 - side], sum_index);
      if (!cubic) continue;
      const size_t cubic_index = m.nodes.back();
      const Node* cube = producer_read_by(scaled_operand(g, *cubic, 0.044715), cubic_index);
      if (!cube) continue;
      const size_t cube_index = m.nodes.back();
      if (cube->info.op_type == "Pow" && cube->inputs.size() == 2 && cube->inputs[0] == x &&
          close_to(scalar_constant(g, cube->inputs[1]), 3.0)) {
        m.x = x;
      } else if (cube->info.op_type == "Mul") {
        const ValueId square = other_operand(*cube, x);
        const Node* sq = producer_read_by(square, cube_index);
        if (sq && sq->info.op_type == "Mul" && sq->inputs.size() == 2 && sq->inputs[0] == x &&
            sq->inputs[1] == x) {
          m.x = x;
        }
      }
    }
  }
  if (m.x == kNoValue || g.value(m.x).dtype != DType::Float32) return std::nullopt;
  // 1 + f(...), then the product of x, that and 0.5 in any order: (x p) 0.5, (p x) 0.5, (x 0.5) p, ...
  const int32_t one_plus = sole_reader(g, consumers, f.outputs[0]);
  if (one_plus < 0) return std::nullopt;
  const Node& add = g.nodes[static_cast<size_t>(one_plus)];
  if (add.info.op_type != "Add" || !close_to(scalar_constant(g, other_operand(add, f.outputs[0])), 1.0))
    return std::nullopt;
  m.nodes.push_back(static_cast<size_t>(one_plus));
  const int32_t first = sole_reader(g, consumers, add.outputs[0]);
  if (first < 0 || g.nodes[static_cast<size_t>(first)].info.op_type != "Mul") return std::nullopt;
  const Node& mul1 = g.nodes[static_cast<size_t>(first)];
  m.nodes.push_back(static_cast<size_t>(first));
  const ValueId partner = other_operand(mul1, add.outputs[0]);
  if (partner == m.x || close_to(scalar_constant(g, partner), 0.5)) {
    // (p x) 0.5 or (p 0.5) x: one more Mul by what is missing.
    const int32_t second = sole_reader(g, consumers, mul1.outputs[0]);
    if (second < 0) return std::nullopt;
    const Node& mul2 = g.nodes[static_cast<size_t>(second)];
    if (mul2.info.op_type != "Mul") return std::nullopt;
    const ValueId rest = other_operand(mul2, mul1.outputs[0]);
    const bool complete = partner == m.x ? close_to(scalar_constant(g, rest), 0.5) : rest == m.x;
    if (!complete) return std::nullopt;
    m.nodes.push_back(static_cast<size_t>(second));
    m.last = static_cast<size_t>(second);
  } else {
    // p (0.5 x): the half of x computed first.
    const Node* half = producer_read_by(partner, static_cast<size_t>(first));
    if (!half || scaled_operand(g, *half, 0.5) != m.x) return std::nullopt;
    m.last = static_cast<size_t>(first);
  }
  // A constant of shape [1, 1] would broadcast a [N] x to [1, N]: Gelu keeps x's shape, so only constants
  // that cannot raise the rank.
  const ValueShape& x_shape = g.value(m.x).shape;
  for (size_t n : m.nodes) {
    for (ValueId in : g.nodes[n].inputs) {
      const auto& c = g.value(in).constant;
      if (c && c->rank() > 0 &&
          !(x_shape.rank_known && static_cast<size_t>(c->rank()) <= x_shape.dims.size()))
        return std::nullopt;
    }
  }
  return m;
}

}  // namespace

int fuse_gelu(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  auto consumers = g.consumers();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const std::string& op = g.nodes[i].info.op_type;
    const std::string& domain = g.nodes[i].info.domain;
    if ((op != "Erf" && op != "Tanh") || (domain != "" && domain != "ai.onnx") || editor.removed(i)) continue;
    std::optional<GeluMatch> m = match_gelu(g, consumers, i);
    if (!m || std::any_of(m->nodes.begin(), m->nodes.end(), [&](size_t n) { return editor.removed(n); }))
      continue;
    const Node& last = g.nodes[m->last];
    Node gelu;
    gelu.info.name = last.info.name + "_gelu";
    gelu.info.op_type = "Gelu";
    gelu.info.opset = 20;  // ONNX's Gelu, whatever the model's opset
    if (m->tanh) gelu.info.attributes.set("approximate", std::string("tanh"));
    gelu.inputs = {m->x};
    gelu.outputs = {last.outputs[0]};
    for (size_t n : m->nodes) editor.remove(n);
    editor.add(std::move(gelu));
    ++count;
  }
  editor.commit();
  return count;
}

int fuse_attention(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  auto consumers = g.consumers();
  for (size_t si = 0; si < g.nodes.size(); ++si) {
    const Node& softmax = g.nodes[si];
    if (softmax.info.op_type != "Softmax" || editor.removed(si)) continue;
    // Only a softmax over the last axis: -1, or (opset < 13, whose default 1 flattens) rank - 1 when known.
    const auto& in_shape = g.value(softmax.inputs[0]).shape;
    const int64_t axis = softmax.info.attributes.get_int("axis", softmax.info.opset < 13 ? 1 : -1);
    const bool last_axis =
        axis == -1 || (in_shape.rank_known && axis == static_cast<int64_t>(in_shape.dims.size()) - 1);
    if (!last_axis) continue;
    // Softmax -> MatMul(P, V) as the only reader.
    const ValueId probabilities = softmax.outputs[0];
    if (is_graph_output(g, probabilities) || consumers[static_cast<size_t>(probabilities)].size() != 1)
      continue;
    const size_t mi2 = static_cast<size_t>(consumers[static_cast<size_t>(probabilities)][0]);
    const Node& matmul2 = g.nodes[mi2];
    if (matmul2.info.op_type != "MatMul" || matmul2.inputs.size() != 2 || matmul2.inputs[0] != probabilities)
      continue;
    // Walk back: [Add mask] <- [Mul/Div scale] <- MatMul(Q, B).
    std::vector<size_t> chain = {si, mi2};
    ValueId cur = softmax.inputs[0];
    size_t cur_reader = si;  // the node of the chain that reads `cur`
    ValueId mask = kNoValue;
    float scale = 1.0f;
    int32_t p = sole_producer(g, consumers, cur, si);
    if (p >= 0 && g.nodes[static_cast<size_t>(p)].info.op_type == "Add") {
      const Node& add = g.nodes[static_cast<size_t>(p)];
      // The scores side is the one produced by the scale or the first MatMul; the other is the mask.
      for (size_t side = 0; side < 2 && mask == kNoValue; ++side) {
        int32_t q = g.value(add.inputs[side]).producer;
        if (q < 0) continue;
        const std::string& op = g.nodes[static_cast<size_t>(q)].info.op_type;
        if ((op == "MatMul" || op == "Mul" || op == "Div") &&
            sole_producer(g, consumers, add.inputs[side], static_cast<size_t>(p)) == q) {
          mask = add.inputs[1 - side];
          cur = add.inputs[side];
          cur_reader = static_cast<size_t>(p);
          chain.push_back(static_cast<size_t>(p));
          p = q;
        }
      }
      if (mask == kNoValue) continue;
    }
    ValueId scale_tensor = kNoValue;  // a shape-derived scale, known only when planning
    bool scale_divides = false;
    if (p >= 0 && (g.nodes[static_cast<size_t>(p)].info.op_type == "Mul" ||
                   g.nodes[static_cast<size_t>(p)].info.op_type == "Div")) {
      const Node& op = g.nodes[static_cast<size_t>(p)];
      const bool is_div = op.info.op_type == "Div";
      ValueId other = kNoValue;
      // Which side is the scores: the one with a MatMul (or the mask Add's MatMul) behind it.
      for (size_t side = 0; side < 2 && other == kNoValue; ++side) {
        if (is_div && side == 1) break;  // scores / scale only
        const int32_t q = g.value(op.inputs[side]).producer;
        if (q < 0 || g.nodes[static_cast<size_t>(q)].info.op_type != "MatMul") continue;
        const ValueId factor = op.inputs[1 - side];
        if (auto c = scalar_constant(g, factor)) {
          scale = is_div ? 1.0f / *c : *c;
        } else if (derived_from_shapes(g, factor)) {
          scale_tensor = factor;
          scale_divides = is_div;
        } else {
          break;
        }
        other = op.inputs[side];
      }
      if (other == kNoValue || sole_producer(g, consumers, other, static_cast<size_t>(p)) < 0) continue;
      chain.push_back(static_cast<size_t>(p));
      cur_reader = static_cast<size_t>(p);
      p = g.value(other).producer;
      cur = other;
    }
    if (p < 0 || g.nodes[static_cast<size_t>(p)].info.op_type != "MatMul" ||
        sole_producer(g, consumers, cur, cur_reader) != p) {
      continue;
    }
    const Node& matmul1 = g.nodes[static_cast<size_t>(p)];
    if (matmul1.inputs.size() != 2) continue;
    chain.push_back(static_cast<size_t>(p));
    // K^T as Transpose(K) over the last two dims: read K itself; otherwise read K^T as it is.
    ValueId k = matmul1.inputs[1];
    bool k_transposed = true;
    const int32_t t = sole_producer(g, consumers, k, static_cast<size_t>(p));
    if (t >= 0 && g.nodes[static_cast<size_t>(t)].info.op_type == "Transpose" &&
        swaps_last_two(g.nodes[static_cast<size_t>(t)])) {
      k = g.nodes[static_cast<size_t>(t)].inputs[0];
      k_transposed = false;
      chain.push_back(static_cast<size_t>(t));
    }
    // No scale on the scores: exporters that scale Q instead (DaViT's window and channel attention:
    // q * head_dim ** -0.5) write Mul(Q, scalar) before the first MatMul, possibly under a Transpose of Q.
    // The scalar moves into the fused node; a Transpose in between then reads the unscaled Q.
    ValueId q = matmul1.inputs[0];
    int32_t q_transpose = -1;  // the Transpose between the Mul and the MatMul, if there is one
    int32_t q_mul = -1;
    if (scale == 1.0f && scale_tensor == kNoValue) {
      int32_t qp = sole_producer(g, consumers, q, static_cast<size_t>(p));
      if (qp >= 0 && g.nodes[static_cast<size_t>(qp)].info.op_type == "Transpose") {
        q_transpose = qp;
        qp = sole_producer(g, consumers, g.nodes[static_cast<size_t>(qp)].inputs[0], static_cast<size_t>(qp));
      }
      if (qp >= 0 && g.nodes[static_cast<size_t>(qp)].info.op_type == "Mul" &&
          g.nodes[static_cast<size_t>(qp)].inputs.size() == 2) {
        const Node& mul = g.nodes[static_cast<size_t>(qp)];
        for (size_t side = 0; side < 2 && q_mul < 0; ++side) {
          const ValueId factor = mul.inputs[1 - side];
          if (auto c = scalar_constant(g, factor)) {
            scale = *c;
          } else if (derived_from_shapes(g, factor) && !derived_from_shapes(g, mul.inputs[side]) &&
                     g.value(factor).shape.concrete() &&
                     element_count(*g.value(factor).shape.concrete()) == 1) {
            scale_tensor = factor;
          } else {
            continue;
          }
          q_mul = qp;
          q = mul.inputs[side];
        }
      }
    }
    if (q_mul < 0) {
      q = matmul1.inputs[0];
      q_transpose = -1;
    } else {
      chain.push_back(static_cast<size_t>(q_mul));
    }
    if (std::any_of(chain.begin(), chain.end(), [&](size_t n) { return editor.removed(n); })) continue;
    if (q_transpose >= 0) {
      g.nodes[static_cast<size_t>(q_transpose)].inputs[0] = q;   // Transpose(Q * s) = Transpose(Q) * s
      consumers[static_cast<size_t>(q)].push_back(q_transpose);  // later matches see the new reader
      q = matmul1.inputs[0];
    }
    Node fused;
    fused.info.name = softmax.info.name.empty() ? "attention" : softmax.info.name + "_attention";
    fused.info.op_type = "Attention";
    fused.info.domain = "wgi";
    fused.info.opset = 1;
    fused.info.attributes.set("scale", scale);
    fused.info.attributes.set("k_transposed", int64_t{k_transposed ? 1 : 0});
    fused.info.attributes.set("scale_divides", int64_t{scale_divides ? 1 : 0});
    fused.inputs = {q, k, matmul2.inputs[1], mask, scale_tensor};
    while (!fused.inputs.empty() && fused.inputs.back() == kNoValue) fused.inputs.pop_back();
    fused.outputs = {matmul2.outputs[0]};
    for (size_t n : chain) editor.remove(n);
    editor.add(std::move(fused));
    ++count;
  }
  editor.commit();
  return count;
}

namespace {

// A Transpose (default domain) with exactly this perm.
bool is_transpose(const Node& n, const std::vector<int64_t>& perm) {
  return n.info.op_type == "Transpose" && n.info.domain.empty() && n.inputs.size() == 1 &&
         n.info.attributes.get_ints("perm", {}) == perm;
}

// A Reshape (default domain) whose 0 entries copy the input's dim (allowzero = 0).
bool is_plain_reshape(const Node& n) {
  return n.info.op_type == "Reshape" && n.info.domain.empty() && n.inputs.size() == 2 &&
         n.inputs[1] != kNoValue && n.info.attributes.get_int("allowzero", 0) == 0;
}

// The int64 / int32 values of a constant, if it is one.
std::optional<std::vector<int64_t>> constant_ints(const Graph& g, ValueId v) {
  const auto& c = g.value(v).constant;
  if (!c) return std::nullopt;
  if (c->dtype() == DType::Int64)
    return std::vector<int64_t>(c->data<int64_t>().begin(), c->data<int64_t>().end());
  if (c->dtype() == DType::Int32)
    return std::vector<int64_t>(c->data<int32_t>().begin(), c->data<int32_t>().end());
  return std::nullopt;
}

// The reader nodes of `v` other than `except`, if every one is a Shape node (which only needs v's shape).
bool others_read_only_shape(const Graph& g, const std::vector<std::vector<int32_t>>& consumers, ValueId v,
                            size_t except, std::vector<size_t>& shape_readers) {
  for (int32_t r : consumers[static_cast<size_t>(v)]) {
    if (static_cast<size_t>(r) == except) continue;
    const Node& n = g.nodes[static_cast<size_t>(r)];
    if (n.info.op_type != "Shape" || !n.info.domain.empty()) return false;
    shape_readers.push_back(static_cast<size_t>(r));
  }
  return true;
}

// Whether the two values have the same fully known shape.
bool same_known_shape(const Graph& g, ValueId a, ValueId b) {
  const std::optional<Shape> sa = g.value(a).shape.concrete(), sb = g.value(b).shape.concrete();
  return sa && sb && *sa == *sb;
}

}  // namespace

int fuse_depthwise_conv_channels_last(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  auto consumers = g.consumers();
  const std::vector<int64_t> swap12 = {0, 2, 1};
  std::vector<bool> kept(g.nodes.size(), false);  // Transposes a fused node reads: never removed as a t1
  for (size_t ci = 0; ci < g.nodes.size(); ++ci) {
    const Node& conv = g.nodes[ci];
    if (conv.info.op_type != "Conv" || !conv.info.domain.empty() || editor.removed(ci)) continue;
    if (conv.inputs.size() < 2 || conv.outputs.size() != 1) continue;
    if (conv.info.attributes.has(ops::kFusedResidualAttribute)) continue;
    // Depthwise 2-D, weight [C, 1, KH, KW] and group C, kernels up to 7x7, dilation 1, explicit pads.
    const Tensor* w = constant_of(g, conv, 1);
    if (!is_float(w) || w->rank() != 4 || w->shape()[1] != 1) continue;
    const int64_t channels = w->shape()[0], kh = w->shape()[2], kw = w->shape()[3];
    if (kh < 1 || kw < 1 || kh > ops::kDepthwiseConvChannelsLastMaxKernel ||
        kw > ops::kDepthwiseConvChannelsLastMaxKernel)
      continue;
    const ops::Attributes& a = conv.info.attributes;
    if (a.get_int("group", 1) != channels) continue;
    if (a.get_string("auto_pad", "NOTSET") != "NOTSET") continue;
    if (a.has("kernel_shape") && a.get_ints("kernel_shape", {}) != std::vector<int64_t>{kh, kw}) continue;
    if (a.get_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1}) continue;
    const std::vector<int64_t> strides = a.get_ints("strides", {1, 1});
    const std::vector<int64_t> pads = a.get_ints("pads", {0, 0, 0, 0});
    if (strides.size() != 2 || strides[0] < 1 || strides[1] < 1 || pads.size() != 4 ||
        std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; }))
      continue;
    const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] != kNoValue;
    const Tensor* bias = constant_of(g, conv, 2);
    if (has_bias && (!is_float(bias) || bias->element_count() != channels)) continue;
    // The output has X's spatial size: then the conv's output shape is its input's.
    const bool same_size =
        strides == std::vector<int64_t>{1, 1} && pads[0] + pads[2] == kh - 1 && pads[1] + pads[3] == kw - 1;

    // Backwards: Reshape [B, C, H, W] <- Transpose(x, [0, 2, 1]).
    const ValueId nchw = conv.inputs[0];
    const int32_t r1 = g.value(nchw).producer;
    if (r1 < 0 || is_graph_output(g, nchw)) continue;
    const Node& reshape1 = g.nodes[static_cast<size_t>(r1)];
    if (!is_plain_reshape(reshape1)) continue;
    // Other readers of the NCHW tensor or of the conv's output may only take their shape (as exports do to
    // compute the next Reshape's target): they then read the first Reshape, applied to x directly.
    std::vector<size_t> shape_readers;
    if (!others_read_only_shape(g, consumers, nchw, ci, shape_readers)) continue;
    // x [B, N, C]: the input of the Transpose before the Reshape (removed with the chain), or, where the
    // exporter cancelled a Transpose pair (x = Transpose(v) read by the block, the Reshape reading v [B, C,
    // N] itself, as after DaViT's downsampling), the output of a Transpose of v (kept: the fused node reads
    // it).
    const ValueId v = reshape1.inputs[0];
    int32_t t1 = sole_producer(g, consumers, v, static_cast<size_t>(r1));
    if (t1 >= 0 && (!is_transpose(g.nodes[static_cast<size_t>(t1)], swap12) || kept[static_cast<size_t>(t1)]))
      t1 = -1;
    ValueId x = t1 >= 0 ? g.nodes[static_cast<size_t>(t1)].inputs[0] : kNoValue;
    int32_t x_producer = -1;  // the kept Transpose of v
    for (size_t k = 0; t1 < 0 && x == kNoValue && k < consumers[static_cast<size_t>(v)].size(); ++k) {
      const int32_t r = consumers[static_cast<size_t>(v)][k];
      const Node& n = g.nodes[static_cast<size_t>(r)];
      if (is_transpose(n, swap12) && !editor.removed(static_cast<size_t>(r)) && n.outputs.size() == 1) {
        x = n.outputs[0];
        x_producer = r;
      }
    }
    if (x == kNoValue || g.value(x).dtype != DType::Float32) continue;
    const ValueShape& xs = g.value(x).shape;
    if (xs.rank_known && (xs.dims.size() != 3 || (xs.dims[2].is_known() && xs.dims[2].value != channels)))
      continue;

    // Forwards: Reshape [B, C, Ho * Wo] -> Transpose([0, 2, 1]) -> [Add(R, .)].
    const ValueId conv_out = conv.outputs[0];
    if (is_graph_output(g, conv_out)) continue;
    const size_t input_shape_readers = shape_readers.size();
    int32_t r2 = -1;
    bool ok = true;
    for (int32_t r : consumers[static_cast<size_t>(conv_out)]) {
      const Node& n = g.nodes[static_cast<size_t>(r)];
      if (n.info.op_type == "Shape" && n.info.domain.empty()) {
        shape_readers.push_back(static_cast<size_t>(r));
      } else if (r2 < 0 && is_plain_reshape(n) && n.inputs[0] == conv_out && n.inputs[1] != conv_out) {
        r2 = r;
      } else {
        ok = false;
      }
    }
    // The conv's output shape is its input's only when the conv keeps the spatial size.
    if (!ok || r2 < 0 || (shape_readers.size() > input_shape_readers && !same_size)) continue;
    const Node& reshape2 = g.nodes[static_cast<size_t>(r2)];
    const int32_t t2 = sole_reader(g, consumers, reshape2.outputs[0]);
    if (t2 < 0 || !is_transpose(g.nodes[static_cast<size_t>(t2)], swap12)) continue;
    const ValueId y = g.nodes[static_cast<size_t>(t2)].outputs[0];
    // The residual: Add(R, y) or Add(y, R) as y's only reader, where R has y's shape for certain: x itself,
    // or a tensor of x's fully known shape, and the conv keeps the spatial size.
    int32_t add_index = sole_reader(g, consumers, y);
    ValueId residual = kNoValue;
    if (add_index >= 0) {
      const Node& add = g.nodes[static_cast<size_t>(add_index)];
      residual = add.info.op_type == "Add" && add.info.domain.empty() ? other_operand(add, y) : kNoValue;
      if (residual != kNoValue && !(same_size && g.value(residual).dtype == DType::Float32 &&
                                    (residual == x || same_known_shape(g, residual, x)))) {
        residual = kNoValue;
      }
      if (residual == kNoValue) add_index = -1;
    }

    // The Reshape targets: checked here when they are constants (and x's shape is known), else by the op when
    // it is planned (they must then be known: exports compute them from Shape nodes).
    const ValueId target1 = reshape1.inputs[1], target2 = reshape2.inputs[1];
    if (!derived_from_shapes(g, target1) || !derived_from_shapes(g, target2)) continue;
    const auto ints1 = constant_ints(g, target1), ints2 = constant_ints(g, target2);
    if (ints1 && (ints1->size() != 4 || ((*ints1)[1] != channels && (*ints1)[1] != 0))) continue;
    if (ints2 && (ints2->size() != 3 || ((*ints2)[1] != channels && (*ints2)[1] != 0))) continue;
    if (const std::optional<Shape> xc = xs.concrete(); xc && ints1 && ints2) {
      const int64_t b = (*xc)[0], n = (*xc)[1];
      const std::optional<Shape> s1 = ops::reshape_result({b, channels, n}, *ints1);
      if (!s1 || (*s1)[0] != b || (*s1)[1] != channels) continue;
      const int64_t out_h = (*s1)[2] + pads[0] + pads[2] - kh, out_w = (*s1)[3] + pads[1] + pads[3] - kw;
      if (out_h < 0 || out_w < 0) continue;
      const int64_t pixels = (out_h / strides[0] + 1) * (out_w / strides[1] + 1);
      const std::optional<Shape> s2 =
          ops::reshape_result({b, channels, out_h / strides[0] + 1, out_w / strides[1] + 1}, *ints2);
      if (!s2 || *s2 != Shape{b, channels, pixels}) continue;
    }

    std::vector<size_t> chain = {static_cast<size_t>(r1), ci, static_cast<size_t>(r2),
                                 static_cast<size_t>(t2)};
    if (t1 >= 0) chain.push_back(static_cast<size_t>(t1));
    if (add_index >= 0) chain.push_back(static_cast<size_t>(add_index));
    if (std::any_of(chain.begin(), chain.end(), [&](size_t n) { return editor.removed(n); })) continue;

    Node fused;
    fused.info.name =
        conv.info.name.empty() ? "depthwise_conv_channels_last" : conv.info.name + "_channels_last";
    fused.info.op_type = ops::kDepthwiseConvChannelsLastOp;
    fused.info.domain = ops::kDepthwiseConvChannelsLastDomain;
    fused.info.opset = 1;
    fused.info.attributes.set("kernel_shape", std::vector<int64_t>{kh, kw});
    fused.info.attributes.set("pads", pads);
    fused.info.attributes.set("strides", strides);
    for (const char* name : {ops::kFusedActivationAttribute, ops::kFusedActivationMinAttribute,
                             ops::kFusedActivationMaxAttribute}) {
      if (a.has(name)) fused.info.attributes.set(name, a.all().at(name));
    }
    fused.inputs = {x, conv.inputs[1], has_bias ? conv.inputs[2] : kNoValue, residual, target1, target2};
    fused.outputs = {add_index >= 0 ? g.nodes[static_cast<size_t>(add_index)].outputs[0] : y};
    if (shape_readers.empty()) {
      editor.remove(static_cast<size_t>(r1));
    } else {
      // Reshape(x, target1) has Reshape(Transpose(x), target1)'s shape (or fails when planned where a 0
      // copies a dim that differs): no kernel, as every Reshape.
      g.nodes[static_cast<size_t>(r1)].inputs[0] = x;
      for (size_t s : shape_readers) g.nodes[s].inputs[0] = nchw;
    }
    for (size_t n : chain) {
      if (n != static_cast<size_t>(r1)) editor.remove(n);
    }
    if (x_producer >= 0) kept[static_cast<size_t>(x_producer)] = true;
    editor.add(std::move(fused));
    ++count;
  }
  editor.commit();
  return count;
}

namespace {

// A Gather (default domain) along axis 0 with a constant scalar index: the index; else nullopt.
std::optional<int64_t> gather_axis0_scalar(const Graph& g, const Node& n) {
  if (n.info.op_type != "Gather" || !n.info.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1 ||
      n.info.attributes.get_int("axis", 0) != 0)
    return std::nullopt;
  const auto& c = g.value(n.inputs[1]).constant;
  if (!c || c->rank() != 0) return std::nullopt;
  const std::optional<std::vector<int64_t>> ints = constant_ints(g, n.inputs[1]);
  if (!ints || ints->size() != 1) return std::nullopt;
  return (*ints)[0];
}

// Whether every reader of `v` is node `reader` (at least one) and `v` is not a graph output.
bool read_only_by(const Graph& g, const std::vector<std::vector<int32_t>>& consumers, ValueId v,
                  size_t reader) {
  if (v == kNoValue || is_graph_output(g, v)) return false;
  const auto& readers = consumers[static_cast<size_t>(v)];
  return !readers.empty() && std::all_of(readers.begin(), readers.end(),
                                         [&](int32_t r) { return static_cast<size_t>(r) == reader; });
}

}  // namespace

int read_packed_qkv(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  const auto consumers = g.consumers();
  const std::vector<int64_t> split_perm = {2, 0, 3, 1, 4};
  for (size_t ai = 0; ai < g.nodes.size(); ++ai) {
    Node& attention = g.nodes[ai];
    if (attention.info.op_type != "Attention" || attention.info.domain != "wgi" ||
        attention.inputs.size() < 3 || attention.inputs.size() > 5 ||
        attention.info.attributes.get_int("qkv_packed", 0) != 0)
      continue;
    // Q, K and V: Gather(T, scalar constant, axis 0) each, or a Transpose of one over its last two dims
    // (DaViT's channel attention: q^T, v^T), read only by the attention.
    std::vector<size_t> gathers;
    std::vector<size_t> transposes;
    std::vector<int64_t> indices;
    std::vector<int64_t> transposed(3, 0);
    ValueId t = kNoValue;
    bool ok = true;
    for (size_t i = 0; i < 3 && ok; ++i) {
      ValueId operand = attention.inputs[i];
      int32_t p = operand == kNoValue ? -1 : g.value(operand).producer;
      ok = p >= 0 && read_only_by(g, consumers, operand, ai);
      if (ok && is_transpose(g.nodes[static_cast<size_t>(p)], {0, 1, 3, 2})) {
        const size_t ti = static_cast<size_t>(p);
        operand = g.nodes[ti].inputs[0];
        p = g.value(operand).producer;
        ok = p >= 0 && read_only_by(g, consumers, operand, ti) &&
             std::count(attention.inputs.begin(), attention.inputs.begin() + 3, attention.inputs[i]) == 1;
        transposes.push_back(ti);
        transposed[i] = 1;
      }
      const std::optional<int64_t> index =
          ok ? gather_axis0_scalar(g, g.nodes[static_cast<size_t>(p)]) : std::nullopt;
      ok = index.has_value() && (t == kNoValue || g.nodes[static_cast<size_t>(p)].inputs[0] == t);
      if (!ok) break;
      t = g.nodes[static_cast<size_t>(p)].inputs[0];
      indices.push_back(*index);
      if (std::find(gathers.begin(), gathers.end(), static_cast<size_t>(p)) == gathers.end())
        gathers.push_back(static_cast<size_t>(p));
    }
    if (!ok) continue;
    // T = Transpose(R, perm [2, 0, 3, 1, 4]), read only by those Gathers.
    const int32_t ti = g.value(t).producer;
    if (ti < 0 || is_graph_output(g, t) || !is_transpose(g.nodes[static_cast<size_t>(ti)], split_perm))
      continue;
    const auto& t_readers = consumers[static_cast<size_t>(t)];
    if (std::any_of(t_readers.begin(), t_readers.end(), [&](int32_t r) {
          return std::find(gathers.begin(), gathers.end(), static_cast<size_t>(r)) == gathers.end();
        }))
      continue;
    // R = Reshape(X, target [B, N, parts, heads, D]), read only by the Transpose; the target known when
    // planning (the op checks it then; here only a constant's rank).
    const ValueId r = g.nodes[static_cast<size_t>(ti)].inputs[0];
    const int32_t ri = sole_producer(g, consumers, r, static_cast<size_t>(ti));
    if (ri < 0 || !is_plain_reshape(g.nodes[static_cast<size_t>(ri)])) continue;
    const Node& reshape = g.nodes[static_cast<size_t>(ri)];
    const ValueId target = reshape.inputs[1];
    if (!derived_from_shapes(g, target)) continue;
    if (const auto ints = constant_ints(g, target); ints && ints->size() != 5) continue;
    if (g.value(target).shape.rank_known && g.value(target).shape.dims.size() != 1) continue;
    std::vector<size_t> chain = gathers;
    chain.insert(chain.end(), transposes.begin(), transposes.end());
    chain.push_back(static_cast<size_t>(ti));
    chain.push_back(static_cast<size_t>(ri));
    if (std::any_of(chain.begin(), chain.end(), [&](size_t n) { return editor.removed(n); })) continue;
    const ValueId x = reshape.inputs[0];
    attention.inputs.resize(6, kNoValue);
    attention.inputs[0] = attention.inputs[1] = attention.inputs[2] = x;
    attention.inputs[5] = target;
    attention.info.attributes.set("qkv_packed", int64_t{1});
    attention.info.attributes.set("qkv_indices", indices);
    if (!transposes.empty()) attention.info.attributes.set("qkv_transposed", transposed);
    for (size_t n : chain) editor.remove(n);
    ++count;
  }
  editor.commit();
  return count;
}

int read_split_heads(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  const auto consumers = g.consumers();
  const std::vector<int64_t> heads_first = {0, 2, 1, 3};  // [B, N, heads, D] -> [B, heads, N, D]
  const std::vector<int64_t> keys_last = {0, 2, 3, 1};    // [B, N, heads, D] -> [B, heads, D, N] = K^T
  for (size_t ai = 0; ai < g.nodes.size(); ++ai) {
    Node& attention = g.nodes[ai];
    if (attention.info.op_type != "Attention" || attention.info.domain != "wgi" ||
        attention.inputs.size() < 3 || attention.inputs.size() > 5 ||
        attention.info.attributes.get_int("qkv_packed", 0) != 0 ||
        attention.info.attributes.has("heads_views"))
      continue;
    const bool k_transposed = attention.info.attributes.get_int("k_transposed", 0) != 0;
    std::vector<int64_t> views(3, 0);
    std::vector<ValueId> sources(3, kNoValue), targets(3, kNoValue);
    std::vector<size_t> chain;
    bool k_now_plain = false;
    for (size_t i = 0; i < 3; ++i) {
      const ValueId operand = attention.inputs[i];
      // Q, K or V read twice (self-attention on one tensor) stays as it is.
      if (std::count(attention.inputs.begin(), attention.inputs.begin() + 3, operand) != 1) continue;
      if (!read_only_by(g, consumers, operand, ai)) continue;
      const int32_t ti = g.value(operand).producer;
      if (ti < 0 || editor.removed(static_cast<size_t>(ti))) continue;
      const Node& transpose = g.nodes[static_cast<size_t>(ti)];
      const bool as_keys_last = i == 1 && k_transposed && is_transpose(transpose, keys_last);
      if (!is_transpose(transpose, heads_first) && !as_keys_last) continue;
      const ValueId r = transpose.inputs[0];
      const int32_t ri = sole_producer(g, consumers, r, static_cast<size_t>(ti));
      if (ri < 0 || editor.removed(static_cast<size_t>(ri)) ||
          !is_plain_reshape(g.nodes[static_cast<size_t>(ri)]))
        continue;
      const Node& reshape = g.nodes[static_cast<size_t>(ri)];
      const ValueId target = reshape.inputs[1];
      if (!derived_from_shapes(g, target)) continue;
      if (const auto ints = constant_ints(g, target); ints && ints->size() != 4) continue;
      if (g.value(target).shape.rank_known && g.value(target).shape.dims.size() != 1) continue;
      views[i] = 1;
      sources[i] = reshape.inputs[0];
      targets[i] = target;
      chain.push_back(static_cast<size_t>(ti));
      chain.push_back(static_cast<size_t>(ri));
      if (as_keys_last) k_now_plain = true;
    }
    if (chain.empty()) continue;
    attention.inputs.resize(9, kNoValue);
    for (size_t i = 0; i < 3; ++i) {
      if (!views[i]) continue;
      attention.inputs[i] = sources[i];
      attention.inputs[6 + i] = targets[i];
    }
    attention.info.attributes.set("heads_views", views);
    if (k_now_plain) attention.info.attributes.set("k_transposed", int64_t{0});
    for (size_t n : chain) editor.remove(n);
    ++count;
  }
  editor.commit();
  return count;
}

int write_attention_transposed(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  const auto consumers = g.consumers();
  const std::vector<int64_t> swap12 = {0, 2, 1, 3};
  const std::vector<int64_t> tokens_first = {0, 3, 1, 2};  // [B, heads, D, N] -> [B, N, heads, D]
  for (size_t ai = 0; ai < g.nodes.size(); ++ai) {
    Node& attention = g.nodes[ai];
    if (attention.info.op_type != "Attention" || attention.info.domain != "wgi" ||
        attention.outputs.size() != 1 || attention.info.attributes.get_int("transpose_output", 0) != 0)
      continue;
    // Its only reader a Transpose(perm [0, 2, 1, 3]) or (DaViT's channel attention, whose product is the
    // transposed [B, heads, D, N]) perm [0, 3, 1, 2] (so the output has rank 4: two batch dims).
    const int32_t ti = sole_reader(g, consumers, attention.outputs[0]);
    if (ti < 0 || editor.removed(static_cast<size_t>(ti)) || attention.info.attributes.has("output_perm"))
      continue;
    const Node& transpose = g.nodes[static_cast<size_t>(ti)];
    const bool heads_back = is_transpose(transpose, swap12);
    if (!(heads_back || is_transpose(transpose, tokens_first)) || transpose.outputs.size() != 1) continue;
    attention.outputs[0] = transpose.outputs[0];
    if (heads_back) {
      attention.info.attributes.set("transpose_output", int64_t{1});
    } else {
      attention.info.attributes.set("output_perm", tokens_first);
    }
    editor.remove(static_cast<size_t>(ti));
    ++count;
  }
  editor.commit();
  return count;
}

namespace {

const std::vector<int64_t> kSwapWindowAxes = {0, 1, 3, 2, 4, 5};

// The constant int list of `v` if every entry is known; else nullopt (shape-derived values are checked by
// the MatMul when it is planned).
std::optional<std::vector<int64_t>> known_target(const Graph& g, ValueId v) {
  return v == kNoValue ? std::nullopt : constant_ints(g, v);
}

// A Slice (default domain) of one axis `axis` from 0 with step 1, as the window reverse's crop is exported:
// starts [0], axes [axis], steps [1] or absent, as constants; the ends (computed from shapes) are input 2.
bool is_crop(const Graph& g, const Node& n, int64_t axis) {
  if (n.info.op_type != "Slice" || !n.info.domain.empty() || n.inputs.size() < 4 || n.inputs.size() > 5 ||
      n.outputs.size() != 1)
    return false;
  if (known_target(g, n.inputs[1]) != std::vector<int64_t>{0}) return false;
  if (known_target(g, n.inputs[3]) != std::vector<int64_t>{axis}) return false;
  if (n.inputs.size() == 5 && n.inputs[4] != kNoValue &&
      known_target(g, n.inputs[4]) != std::vector<int64_t>{1})
    return false;
  return n.inputs[2] != kNoValue && derived_from_shapes(g, n.inputs[2]);
}

// Where the window geometry is all constants (tests, exports with static shapes): whether
// Reshape(image [B, H, W, C], target) is [B, H / wh, wh, W / ww, ww, C], i.e. the windows divide H and W.
// True where it cannot be known before planning.
bool windows_may_divide(const ValueShape& image, const std::optional<std::vector<int64_t>>& target) {
  const std::optional<Shape> xs = image.concrete();
  if (!xs || !target) return true;
  const std::optional<Shape> r = ops::reshape_result(*xs, *target);
  return xs->size() == 4 && r && r->size() == 6 && (*r)[0] == (*xs)[0] && (*r)[1] * (*r)[2] == (*xs)[1] &&
         (*r)[3] * (*r)[4] == (*xs)[2] && (*r)[5] == (*xs)[3];
}

}  // namespace

int read_windows_in_place(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  const auto consumers = g.consumers();
  for (size_t mi = 0; mi < g.nodes.size(); ++mi) {
    Node& mm = g.nodes[mi];
    if (mm.info.op_type != "MatMul" || !mm.info.domain.empty() || mm.outputs.size() != 1) continue;
    if (mm.inputs.size() < 2 || mm.inputs.size() > 3 || mm.inputs[0] == mm.inputs[1]) continue;
    const ops::Attributes& attrs = mm.info.attributes;
    if (attrs.has(ops::kMatMulWindowsInAttribute) || attrs.has(ops::kMatMulWindowsOutAttribute) ||
        attrs.has(ops::kFusedResidualAttribute))
      continue;
    // Backwards from A: Reshape <- Reshape <- Transpose(perm [0, 1, 3, 2, 4, 5]) <- Reshape <- X. A may also
    // be read by Shape nodes (exports compute the attention's targets from it); every other step has one
    // reader.
    const ValueId a = mm.inputs[0];
    if (a == kNoValue || is_graph_output(g, a)) continue;
    const int32_t r5 = g.value(a).producer;
    if (r5 < 0 || editor.removed(static_cast<size_t>(r5)) ||
        !is_plain_reshape(g.nodes[static_cast<size_t>(r5)]))
      continue;
    std::vector<size_t> shape_readers;
    if (!others_read_only_shape(g, consumers, a, mi, shape_readers)) continue;
    const Node& reshape5 = g.nodes[static_cast<size_t>(r5)];
    const int32_t r4 = sole_producer(g, consumers, reshape5.inputs[0], static_cast<size_t>(r5));
    if (r4 < 0 || !is_plain_reshape(g.nodes[static_cast<size_t>(r4)])) continue;
    const Node& reshape4 = g.nodes[static_cast<size_t>(r4)];
    const int32_t ti = sole_producer(g, consumers, reshape4.inputs[0], static_cast<size_t>(r4));
    if (ti < 0 || !is_transpose(g.nodes[static_cast<size_t>(ti)], kSwapWindowAxes)) continue;
    const int32_t r3 =
        sole_producer(g, consumers, g.nodes[static_cast<size_t>(ti)].inputs[0], static_cast<size_t>(ti));
    if (r3 < 0 || !is_plain_reshape(g.nodes[static_cast<size_t>(r3)])) continue;
    const Node& reshape3 = g.nodes[static_cast<size_t>(r3)];
    const ValueId x = reshape3.inputs[0];
    if (g.value(x).dtype != DType::Float32) continue;
    const ValueId t3 = reshape3.inputs[1], t4 = reshape4.inputs[1], t5 = reshape5.inputs[1];
    if (!derived_from_shapes(g, t3) || !derived_from_shapes(g, t4) || !derived_from_shapes(g, t5)) continue;
    if (g.value(x).shape.rank_known && g.value(x).shape.dims.size() != 4) continue;
    if (!windows_may_divide(g.value(x).shape, known_target(g, t3))) continue;
    const std::vector<size_t> chain = {static_cast<size_t>(r3), static_cast<size_t>(ti),
                                       static_cast<size_t>(r4), static_cast<size_t>(r5)};
    if (std::any_of(chain.begin(), chain.end(), [&](size_t n) { return editor.removed(n); })) continue;

    const ValueId bias = mm.inputs.size() > 2 ? mm.inputs[2] : kNoValue;
    mm.inputs = {x, mm.inputs[1], bias, kNoValue, t3, t4, t5};
    mm.info.attributes.set(ops::kMatMulWindowsInAttribute, int64_t{1});
    if (shape_readers.empty()) {
      for (size_t n : chain) editor.remove(n);
    } else {
      // The Shape readers keep the Reshapes (no kernels), the second now reading the first: the same shape
      // unless a 0 in its target copies a dim the Transpose moved, which the MatMul's plan rejects.
      g.nodes[static_cast<size_t>(r4)].inputs[0] = reshape3.outputs[0];
      editor.remove(static_cast<size_t>(ti));
    }
    ++count;
  }
  editor.commit();
  return count;
}

int write_windows_in_place(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  const auto consumers = g.consumers();
  // The next node along a chain: the only reader of `n`'s output, not yet removed.
  auto next = [&](const Node& n) -> int32_t {
    if (n.outputs.size() != 1) return -1;
    const int32_t r = sole_reader(g, consumers, n.outputs[0]);
    if (r < 0 || editor.removed(static_cast<size_t>(r))) return -1;
    const Node& reader = g.nodes[static_cast<size_t>(r)];
    return reader.inputs.empty() || reader.inputs[0] != n.outputs[0] ||
                   std::count(reader.inputs.begin(), reader.inputs.end(), n.outputs[0]) != 1
               ? -1
               : r;
  };
  for (size_t mi = 0; mi < g.nodes.size(); ++mi) {
    Node& mm = g.nodes[mi];
    if (mm.info.op_type != "MatMul" || !mm.info.domain.empty() || mm.outputs.size() != 1) continue;
    if (mm.inputs.size() < 2 || mm.inputs.size() > 3) continue;
    const ops::Attributes& attrs = mm.info.attributes;
    if (attrs.has(ops::kMatMulWindowsInAttribute) || attrs.has(ops::kMatMulWindowsOutAttribute) ||
        attrs.has(ops::kFusedResidualAttribute) || attrs.has(ops::kFusedActivationAttribute))
      continue;
    // Forwards: Reshape -> Reshape -> Transpose(perm [0, 1, 3, 2, 4, 5]) -> Reshape -> Slice(axis 1) ->
    // Slice(axis 2) -> Reshape, each the only reader of the one before.
    const int32_t r8 = next(mm);
    if (r8 < 0 || !is_plain_reshape(g.nodes[static_cast<size_t>(r8)])) continue;
    const int32_t r9 = next(g.nodes[static_cast<size_t>(r8)]);
    if (r9 < 0 || !is_plain_reshape(g.nodes[static_cast<size_t>(r9)])) continue;
    const int32_t ti = next(g.nodes[static_cast<size_t>(r9)]);
    if (ti < 0 || !is_transpose(g.nodes[static_cast<size_t>(ti)], kSwapWindowAxes)) continue;
    const int32_t r10 = next(g.nodes[static_cast<size_t>(ti)]);
    if (r10 < 0 || !is_plain_reshape(g.nodes[static_cast<size_t>(r10)])) continue;
    // The crop is exported only where the image was padded when traced (DaViT at 768 x 768 has none).
    int32_t s1 = next(g.nodes[static_cast<size_t>(r10)]), s2 = -1, r11 = s1;
    if (s1 >= 0 && is_crop(g, g.nodes[static_cast<size_t>(s1)], 1)) {
      s2 = next(g.nodes[static_cast<size_t>(s1)]);
      if (s2 < 0 || !is_crop(g, g.nodes[static_cast<size_t>(s2)], 2)) continue;
      r11 = next(g.nodes[static_cast<size_t>(s2)]);
    } else {
      s1 = -1;
    }
    if (r11 < 0 || !is_plain_reshape(g.nodes[static_cast<size_t>(r11)])) continue;
    const Node &reshape8 = g.nodes[static_cast<size_t>(r8)], &reshape9 = g.nodes[static_cast<size_t>(r9)],
               &reshape10 = g.nodes[static_cast<size_t>(r10)], &reshape11 = g.nodes[static_cast<size_t>(r11)];
    const ValueId t8 = reshape8.inputs[1], t9 = reshape9.inputs[1], t10 = reshape10.inputs[1],
                  t11 = reshape11.inputs[1];
    const ValueId end_h = s1 >= 0 ? g.nodes[static_cast<size_t>(s1)].inputs[2] : kNoValue,
                  end_w = s2 >= 0 ? g.nodes[static_cast<size_t>(s2)].inputs[2] : kNoValue;
    bool known = true;
    for (ValueId t : {t8, t9, t10, t11}) known = known && derived_from_shapes(g, t);
    if (!known) continue;
    // A crop that constants show to cut rows or columns (a padded image): the reverse is then not the
    // output; left as exported. Shape-derived crops are checked when planned (a non-empty one runs as
    // copies after the product).
    const std::optional<std::vector<int64_t>> image = known_target(g, t10);
    bool cuts = false;
    for (const auto& [end, axis] : {std::pair{end_h, size_t{1}}, std::pair{end_w, size_t{2}}}) {
      const std::optional<std::vector<int64_t>> e = known_target(g, end);
      if (e && image && image->size() == 4 && (*image)[axis] > 0 && e->size() == 1 &&
          std::clamp<int64_t>((*e)[0] < 0 ? (*e)[0] + (*image)[axis] : (*e)[0], 0, (*image)[axis]) !=
              (*image)[axis])
        cuts = true;
    }
    if (cuts) continue;
    // Where the product's shape and the targets are constants: the windows must divide the image.
    if (const std::optional<Shape> ps = g.value(mm.outputs[0]).shape.concrete(); ps) {
      const auto k8 = known_target(g, t8), k9 = known_target(g, t9);
      if (k8 && k9) {
        const std::optional<Shape> a8 = ops::reshape_result(*ps, *k8);
        const std::optional<Shape> a9 = a8 ? ops::reshape_result(*a8, *k9) : std::nullopt;
        if (!a9 || a9->size() != 6 || a9->back() != ps->back()) continue;
      }
    }
    std::vector<size_t> chain = {static_cast<size_t>(r8), static_cast<size_t>(r9), static_cast<size_t>(ti),
                                 static_cast<size_t>(r10), static_cast<size_t>(r11)};
    if (s1 >= 0) chain.insert(chain.end(), {static_cast<size_t>(s1), static_cast<size_t>(s2)});
    const ValueId out = reshape11.outputs[0];
    const ValueId bias = mm.inputs.size() > 2 ? mm.inputs[2] : kNoValue;
    mm.inputs = {mm.inputs[0], mm.inputs[1], bias, kNoValue, t8, t9, t10, end_h, end_w, t11};
    mm.outputs[0] = out;
    mm.info.attributes.set(ops::kMatMulWindowsOutAttribute, int64_t{1});
    for (size_t n : chain) editor.remove(n);
    ++count;
  }
  editor.commit();
  return count;
}

PassReport optimize(Graph& graph, const ops::OpRegistry& registry) {
  PassReport r;
  r.identities_removed = eliminate_identities(graph);
  r.transposed_weights_read = read_transposed_weights(graph);
  // The Transposes read around are dead now: gone before folding, which would otherwise still compute them.
  r.dead_nodes_removed = remove_dead_nodes(graph);
  r.constants_folded = fold_constants(graph, registry);
  r.batch_norms_folded = fold_batch_norms(graph);
  r.bias_adds_fused = fuse_bias_adds(graph);
  // After the bias fusion (the window MatMuls keep their bias) and before the residual fusion, which then
  // takes the Add after a window reverse written in place into the proj MatMul's epilogue.
  r.windows_read = read_windows_in_place(graph);
  r.windows_written = write_windows_in_place(graph);
  // Before the activation fusion: a Relu after the residual (ResNet's bottlenecks) then fuses too.
  r.residual_adds_fused = fuse_residual_adds(graph);
  r.gelus_fused = fuse_gelu(graph);
  r.activations_fused = fuse_activations(graph);
  // After the activation fusion, whose Relu / Clip / Gelu on the conv it takes over.
  r.depthwise_convs_fused = fuse_depthwise_conv_channels_last(graph);
  r.attentions_fused = fuse_attention(graph);
  r.packed_qkv_read = read_packed_qkv(graph);
  r.split_heads_read = read_split_heads(graph);
  r.attentions_transposed = write_attention_transposed(graph);
  r.dead_nodes_removed += remove_dead_nodes(graph);
  // Then inside subgraphs (If's branches), where a value read from an enclosing scope counts as a graph
  // input; what the passes folded out here is a constant there.
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (size_t s = 0; s < graph.nodes[n].subgraphs.size(); ++s)
      graph.edit_subgraph(graph.nodes[n], s, [&](Graph& sub) { r += optimize(sub, registry); });
  }
  return r;
}

}  // namespace wgi::graph
