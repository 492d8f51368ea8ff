#include "graph/token_candidates.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "graph/passes/match.h"
#include "wgi/error.h"

namespace wgi::graph {

namespace {

ValueId add_output_value(Graph& g, const std::string& name, DType dtype, std::vector<Dim> dims) {
  if (g.find(name) != kNoValue) {
    throw Error("token candidates: the model already has a value named '" + name + "'");
  }
  Value v;
  v.name = name;
  v.dtype = dtype;
  v.shape.rank_known = true;
  v.shape.dims = std::move(dims);
  return g.add_value(std::move(v));
}

ValueId add_inner_value(Graph& g, const std::string& name, DType dtype) {
  Value v;
  v.name = unique_value_name(g, name);
  v.dtype = dtype;
  return g.add_value(std::move(v));
}

void add_node(Graph& g, const std::string& op, int opset, ops::Attributes attributes,
              std::vector<ValueId> inputs, std::vector<ValueId> outputs) {
  Node n;
  n.info.name = "token_candidates/" + op + "/" + g.value(outputs.at(0)).name;
  n.info.op_type = op;
  n.info.opset = opset;
  n.info.attributes = std::move(attributes);
  for (ValueId v : inputs) n.info.input_names.push_back(g.value(v).name);
  for (ValueId v : outputs) n.info.output_names.push_back(g.value(v).name);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  g.nodes.push_back(std::move(n));
}

ValueId ints(Graph& g, const std::string& name, std::vector<int64_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return add_constant(g, name, Tensor::from_vector<int64_t>({n}, values));
}

}  // namespace

TokenCandidateOutputs add_token_candidates(Graph& g, const std::string& logits, int64_t top_k,
                                           bool log_sum_exp) {
  const ValueId l = g.find(logits);
  if (l == kNoValue || std::find(g.outputs.begin(), g.outputs.end(), l) == g.outputs.end()) {
    std::string names;
    for (ValueId o : g.outputs) names += (names.empty() ? "" : ", ") + g.value(o).name;
    throw Error("token candidates: the model has no output '" + logits + "' (its outputs: " + names + ")");
  }
  const Value& lv = g.value(l);
  if (lv.dtype != DType::Float32) {
    throw Error("token candidates: output '" + logits + "' is " + std::string(dtype_name(lv.dtype)) +
                "; float32 logits [batch, tokens, vocab] are expected");
  }
  if (lv.shape.rank_known && lv.shape.dims.size() != 3) {
    throw Error("token candidates: output '" + logits + "' has shape " + lv.shape.to_string() +
                "; logits [batch, tokens, vocab] are expected");
  }
  if (top_k < 1 || top_k > kMaxTokenCandidates) {
    throw Error("token candidates: top_k is " + std::to_string(top_k) + "; it must be 1 to " +
                std::to_string(kMaxTokenCandidates));
  }
  const Dim batch = lv.shape.rank_known ? lv.shape.dims[0] : Dim{};
  TokenCandidateOutputs names{logits + ".top_k_values", logits + ".top_k_indices",
                              log_sum_exp ? logits + ".log_sum_exp" : ""};
  const ValueId values = add_output_value(g, names.values, DType::Float32, {batch, Dim::known(top_k)});
  const ValueId indices = add_output_value(g, names.indices, DType::Int64, {batch, Dim::known(top_k)});
  ValueId lse = kNoValue;
  if (log_sum_exp) lse = add_output_value(g, names.log_sum_exp, DType::Float32, {batch, Dim::known(1)});

  // The last position [batch, 1, vocab]: a Slice of the whole input (a one-token step) aliases it.
  const ValueId last = add_inner_value(g, logits + ".last", DType::Float32);
  add_node(g, "Slice", 13, {},
           {l, ints(g, logits + ".last_start", {-1}),
            ints(g, logits + ".last_end", {std::numeric_limits<int64_t>::max()}),
            ints(g, logits + ".last_axis", {1})},
           {last});
  const ValueId axis1 = ints(g, logits + ".position_axis", {1});
  const ValueId top_values = add_inner_value(g, logits + ".top_k_values_3d", DType::Float32);
  const ValueId top_indices = add_inner_value(g, logits + ".top_k_indices_3d", DType::Int64);
  ops::Attributes topk;
  topk.set("axis", int64_t{-1});
  topk.set("largest", int64_t{1});
  topk.set("sorted", int64_t{1});
  add_node(g, "TopK", 11, std::move(topk), {last, ints(g, logits + ".top_k", {top_k})},
           {top_values, top_indices});
  add_node(g, "Squeeze", 13, {}, {top_values, axis1}, {values});
  add_node(g, "Squeeze", 13, {}, {top_indices, axis1}, {indices});
  g.outputs.push_back(values);
  g.outputs.push_back(indices);
  if (log_sum_exp) {
    const ValueId row = add_inner_value(g, logits + ".log_sum_exp_3d", DType::Float32);
    ops::Attributes reduce;
    reduce.set("axes", std::vector<int64_t>{-1});
    reduce.set("keepdims", int64_t{1});
    add_node(g, "ReduceLogSumExp", 13, std::move(reduce), {last}, {row});
    add_node(g, "Squeeze", 13, {}, {row, axis1}, {lse});
    g.outputs.push_back(lse);
  }
  g.sort_topologically();
  return names;
}

}  // namespace wgi::graph
