#include "graph/passes.h"

#include <algorithm>
#include <cmath>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

int fold_batch_norms(Graph& g) {
  NodeEditor editor(g);
  int count = 0;
  Readers readers(g);
  for (NodeId i : node_ids(g)) {
    const Node& bn = node_at(g, i);
    if (bn.info.op_type != "BatchNormalization" || bn.inputs.size() < 5) continue;
    if (bn.info.attributes.get_int("training_mode", 0) != 0) continue;
    if (bn.outputs.size() > 1 && std::any_of(bn.outputs.begin() + 1, bn.outputs.end(),
                                             [&](ValueId v) { return is_read(g, readers, v); })) {
      continue;
    }
    const Tensor *scale = constant_of(g, bn, 1), *shift = constant_of(g, bn, 2),
                 *mean = constant_of(g, bn, 3), *var = constant_of(g, bn, 4);
    if (!is_float(scale) || !is_float(shift) || !is_float(mean) || !is_float(var)) continue;
    NodeId p = sole_producer(g, readers, bn.inputs[0], i);
    if (!p || editor.removed(p)) continue;
    Node& producer = node_at(g, p);
    const bool is_conv = producer.info.op_type == "Conv";
    const bool is_gemm = producer.info.op_type == "Gemm";
    if (!is_conv && !is_gemm) continue;
    if (!ops::read_epilogue_attributes(producer.info).activation.empty()) continue;
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

}  // namespace wgi::graph
