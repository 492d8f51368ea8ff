#include "graph/passes.h"

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/passes/match.h"
#include "ops/internal_ops.h"

namespace wgi::graph {

namespace {

// A product of a merge: its node and its weight's column count (its block of the merged output).
struct Sibling {
  NodeId node;
  int64_t n = 0;
};

// The fused activation's part of a grouping key.
std::string epilogue_key(const ops::EpilogueAttributes& e) {
  return e.activation + ":" + (e.activation_min ? std::to_string(*e.activation_min) : "") + ":" +
         (e.activation_max ? std::to_string(*e.activation_max) : "");
}

// A rescaled MatMulInteger (wgi.scaled_output): A, a constant 2-D 8-bit B, A's zero point and scale (the same
// values for every sibling: one DynamicQuantizeLinear's), B's zero point (optional) and scale and the bias
// (optional), constants of one value or one per column; no residual, no forced kernel.
std::optional<std::string> integer_sibling_key(const Graph& g, const Node& n, int64_t& columns) {
  using In = ops::ScaledIntegerInput;
  if (n.outputs.size() != 1 || n.outer_reads != 0 || n.inputs.size() <= In::kBScale ||
      n.inputs.size() > In::kBias + 1 || g.value(n.inputs[0]).constant ||
      n.info.attributes.has(ops::kIntegerQuantizeAAttribute) ||
      n.info.attributes.has(ops::kSplitColumnsAttribute) ||
      n.info.attributes.has(ops::kForcedKernelAttribute))
    return std::nullopt;
  const ops::EpilogueAttributes epilogue = ops::read_epilogue_attributes(n.info);
  if (epilogue.residual) return std::nullopt;
  const Tensor* b = constant_of(g, n, 1);
  if (!b || b->rank() != 2 || (b->dtype() != DType::UInt8 && b->dtype() != DType::Int8)) return std::nullopt;
  columns = b->shape()[1];
  const auto per_column_or_one = [&](size_t i, DType dtype) {
    const Tensor* t = constant_of(g, n, i);
    return t && t->dtype() == dtype && (t->element_count() == 1 || t->element_count() == columns);
  };
  const bool has_b_zp = n.inputs.size() > 3 && n.inputs[3] != kNoValue;
  const bool has_bias = n.inputs.size() > In::kBias && n.inputs[In::kBias] != kNoValue;
  if ((has_b_zp && !per_column_or_one(3, b->dtype())) || !per_column_or_one(In::kBScale, DType::Float32) ||
      (has_bias && !per_column_or_one(In::kBias, DType::Float32)))
    return std::nullopt;
  return "MatMulInteger|" + std::to_string(b->shape()[0]) + "|" +
         std::to_string(static_cast<int>(b->dtype())) + "|" + std::to_string(n.inputs[2]) + "|" +
         std::to_string(n.inputs[In::kAScale]) + "|" + std::to_string(has_b_zp) + "|" +
         std::to_string(has_bias) + "|" + epilogue_key(epilogue);
}

// The grouping key of a product that can merge with others reading the same A (everything but N must
// agree: the kind of op, K, the operands' types, which optional inputs it has, the epilogue), or nullopt.
std::optional<std::string> sibling_key(const Graph& g, const Node& n, int64_t& columns) {
  if (is_scaled_integer_product(n) && n.info.op_type == "MatMulInteger")
    return integer_sibling_key(g, n, columns);
  const bool nbits = is_matmul_nbits(n);
  if (!(nbits || (n.info.op_type == "MatMul" && n.info.domain.empty())) || n.outputs.size() != 1 ||
      n.outer_reads != 0 || n.inputs.empty() || n.inputs[0] == kNoValue || g.value(n.inputs[0]).constant)
    return std::nullopt;
  auto dtype_name = [](const Tensor* t) { return t ? std::to_string(static_cast<int>(t->dtype())) : "-"; };
  if (!nbits) {  // MatMul
    if (n.inputs.size() != 2 && n.inputs.size() != 3) return std::nullopt;
    const ops::LinearAttributes linear = ops::read_linear_attributes(n.info);
    if (linear.windows_in || linear.windows_out || !linear.kernel.empty() ||
        linear.tuning != ops::GemmTuningAttributes{} || !linear.split_columns.empty() ||
        linear.epilogue.residual)
      return std::nullopt;
    const Tensor* b = constant_of(g, n, ops::LinearInput::kB);
    if (!is_float_or_half(b) || b->rank() != 2) return std::nullopt;
    const int64_t k = b->shape()[linear.trans_b ? 1 : 0];
    columns = b->shape()[linear.trans_b ? 0 : 1];
    const Tensor* bias = nullptr;
    if (n.inputs.size() == 3) {
      bias = constant_of(g, n, ops::LinearInput::kBias);
      if (!is_float_or_half(bias) || bias->rank() != 1 || bias->shape()[0] != columns) return std::nullopt;
    }
    return "MatMul|" + std::to_string(linear.trans_b) + "|" + std::to_string(k) + "|" + dtype_name(b) + "|" +
           dtype_name(bias) + "|" + epilogue_key(linear.epilogue);
  }
  // MatMulNBits: A, B, scales, zero points (optional), no g_idx, bias (optional); every one a constant but A.
  if (n.inputs.size() < 3 || n.inputs.size() > ops::kNBitsBiasInput + 1) return std::nullopt;
  if (n.inputs.size() > 4 && n.inputs[4] != kNoValue) return std::nullopt;
  const ops::NBitsAttributes attributes = ops::read_nbits_attributes(n.info);
  if (!attributes.kernel.empty() || attributes.tuning != ops::GemmTuningAttributes{} ||
      attributes.gemv_thread_columns != 0 || !attributes.split_columns.empty() ||
      attributes.epilogue.residual)
    return std::nullopt;
  const ops::Attributes& at = n.info.attributes;
  const int64_t k = at.get_int("K", 0), bits = at.get_int("bits", 4), block = at.get_int("block_size", 0);
  columns = at.get_int("N", 0);
  if (k <= 0 || columns <= 0 || block <= 0 || (bits != 2 && bits != 4 && bits != 8) ||
      at.get_int("weight_prepacked", 0) != 0)
    return std::nullopt;
  const Tensor* b = constant_of(g, n, 1);
  const Tensor* scales = constant_of(g, n, 2);
  const bool has_zp = n.inputs.size() > 3 && n.inputs[3] != kNoValue;
  const bool has_bias = n.inputs.size() > ops::kNBitsBiasInput && n.inputs[ops::kNBitsBiasInput] != kNoValue;
  const Tensor* zp = has_zp ? constant_of(g, n, 3) : nullptr;
  const Tensor* bias = has_bias ? constant_of(g, n, ops::kNBitsBiasInput) : nullptr;
  if (!b || !scales || (has_zp && !zp) || (has_bias && !bias)) return std::nullopt;
  // Every constant holds the same amount per column (what the planner checks; a mismatch stays unmerged
  // for the planner to report on the node as the model wrote it).
  const int64_t blocks = (k + block - 1) / block;
  const int64_t zp_per_column = zp && zp->dtype() == DType::UInt8 ? (blocks * bits + 7) / 8 : blocks;
  if (b->element_count() != columns * blocks * (block * bits / 8) || b->shape().empty() ||
      b->shape()[0] != columns || scales->element_count() != columns * blocks || scales->shape().empty() ||
      (zp && (zp->element_count() != columns * zp_per_column || zp->shape().empty())) ||
      (bias && (bias->element_count() != columns || bias->rank() != 1)))
    return std::nullopt;
  // Leading dims of N (or flat): concatenated along axis 0.
  if ((scales->rank() > 1 && scales->shape()[0] != columns) ||
      (zp && zp->rank() > 1 && zp->shape()[0] != columns))
    return std::nullopt;
  return "MatMulNBits|" + std::to_string(k) + "|" + std::to_string(bits) + "|" + std::to_string(block) + "|" +
         std::to_string(at.get_int("accuracy_level", 0)) + "|" + dtype_name(b) + "|" + dtype_name(scales) +
         "|" + std::to_string(scales->rank()) + "|" + dtype_name(zp) + "|" +
         (zp ? std::to_string(zp->rank()) : "") + "|" + dtype_name(bias) + "|" +
         epilogue_key(attributes.epilogue);
}

// A constant of one value or `n` values as `n` values [n] (one repeated).
Tensor per_column(const Tensor& t, int64_t n) {
  Tensor out(t.dtype(), {n});
  const size_t size = dtype_size(t.dtype());
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out.bytes().data() + static_cast<size_t>(i) * size,
                t.bytes().data() + (t.element_count() == 1 ? 0 : static_cast<size_t>(i) * size), size);
  return out;
}

// The tensors one after another along axis 0 (their other dims equal; rank 1: lengths added).
Tensor concat_rows(const std::vector<const Tensor*>& parts) {
  Shape shape = parts[0]->shape();
  shape[0] = 0;
  for (const Tensor* t : parts) shape[0] += t->shape()[0];
  Tensor out(parts[0]->dtype(), shape);
  std::byte* at = out.bytes().data();
  for (const Tensor* t : parts) {
    std::memcpy(at, t->bytes().data(), t->bytes().size());
    at += t->bytes().size();
  }
  return out;
}

// [K, N_i] matrices side by side: [K, sum N_i].
Tensor concat_columns(const std::vector<const Tensor*>& parts) {
  const int64_t k = parts[0]->shape()[0];
  const size_t element = dtype_size(parts[0]->dtype());
  int64_t total = 0;
  for (const Tensor* t : parts) total += t->shape()[1];
  Tensor out(parts[0]->dtype(), {k, total});
  std::byte* dst = out.bytes().data();
  for (int64_t row = 0; row < k; ++row) {
    for (const Tensor* t : parts) {
      const size_t row_bytes = static_cast<size_t>(t->shape()[1]) * element;
      std::memcpy(dst, t->bytes().data() + static_cast<size_t>(row) * row_bytes, row_bytes);
      dst += row_bytes;
    }
  }
  return out;
}

// One product node in place of `group` (two or more siblings in node order): weights, scales, zero points
// and biases side by side along N, wgi.split_columns giving each sibling's block, their outputs its outputs.
Node merged_node(Graph& g, const std::vector<Sibling>& group) {
  const Node& first = node_at(g, group[0].node);
  Node merged;
  merged.info = first.info;
  merged.inputs = {first.inputs[0]};
  merged.info.name.clear();
  merged.info.output_names.clear();
  std::vector<int64_t> widths;
  int64_t total = 0;
  for (const Sibling& s : group) {
    const Node& n = node_at(g, s.node);
    merged.info.name += (merged.info.name.empty() ? "" : "+") + n.info.name;
    merged.outputs.push_back(n.outputs[0]);
    merged.info.output_names.push_back(g.value(n.outputs[0]).name);
    widths.push_back(s.n);
    total += s.n;
  }
  // The constants of input `i` of every sibling, joined by `join`, as a new constant.
  auto joined = [&](size_t i, Tensor (*join)(const std::vector<const Tensor*>&)) {
    std::vector<const Tensor*> parts;
    for (const Sibling& s : group) parts.push_back(constant_of(g, node_at(g, s.node), i));
    const std::string name = g.value(first.inputs[i]).name + "_merged";
    return add_constant(g, name, join(parts));
  };
  if (is_scaled_integer_product(first)) {
    // B side by side; B's zero points and scales per column; A's zero point and scale as they are.
    using In = ops::ScaledIntegerInput;
    auto per_columns = [&](size_t i) {
      std::vector<Tensor> expanded;
      for (const Sibling& s : group)
        expanded.push_back(per_column(*constant_of(g, node_at(g, s.node), i), s.n));
      std::vector<const Tensor*> parts;
      for (const Tensor& t : expanded) parts.push_back(&t);
      return add_constant(g, g.value(first.inputs[i]).name + "_merged", concat_rows(parts));
    };
    merged.inputs.push_back(joined(1, concat_columns));
    merged.inputs.push_back(first.inputs[2]);
    merged.inputs.push_back(first.inputs.size() > 3 && first.inputs[3] != kNoValue ? per_columns(3)
                                                                                   : kNoValue);
    merged.inputs.push_back(first.inputs[In::kAScale]);
    merged.inputs.push_back(per_columns(In::kBScale));
    if (first.inputs.size() > In::kBias && first.inputs[In::kBias] != kNoValue)
      merged.inputs.push_back(per_columns(In::kBias));
    merged.info.attributes.set(ops::kSplitColumnsAttribute, widths);
  } else if (is_matmul_nbits(first)) {
    for (size_t i = 1; i < first.inputs.size(); ++i)
      merged.inputs.push_back(first.inputs[i] == kNoValue ? kNoValue : joined(i, concat_rows));
    merged.info.attributes.set("N", total);
    ops::NBitsAttributes nbits = ops::read_nbits_attributes(merged.info);
    nbits.split_columns = widths;
    ops::write_nbits_attributes(nbits, merged.info.attributes);
  } else {
    ops::LinearAttributes linear = ops::read_linear_attributes(merged.info);
    merged.inputs.push_back(joined(ops::LinearInput::kB, linear.trans_b ? concat_rows : concat_columns));
    if (first.inputs.size() > ops::LinearInput::kBias)
      merged.inputs.push_back(joined(ops::LinearInput::kBias, concat_rows));
    linear.split_columns = widths;
    ops::write_linear_attributes(linear, merged.info.attributes);
  }
  merged.info.input_names.clear();
  for (ValueId v : merged.inputs) merged.info.input_names.push_back(v == kNoValue ? "" : g.value(v).name);
  return merged;
}

}  // namespace

int merge_sibling_products(Graph& g) {
  // Siblings by A and key, in the order their first member appears.
  std::map<std::pair<ValueId, std::string>, size_t> group_of;
  std::vector<std::vector<Sibling>> groups;
  for (NodeId i : node_ids(g)) {
    int64_t columns = 0;
    const std::optional<std::string> key = sibling_key(g, node_at(g, i), columns);
    if (!key) continue;
    const auto [it, added] = group_of.try_emplace({node_at(g, i).inputs[0], *key}, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back({i, columns});
  }
  NodeEditor editor(g);
  int count = 0;
  for (const std::vector<Sibling>& siblings : groups) {
    // At most kMaxSplitOutputs outputs a product (the storage bindings a kernel may have).
    for (size_t start = 0; start + 1 < siblings.size(); start += ops::kMaxSplitOutputs) {
      const size_t end = std::min(siblings.size(), start + ops::kMaxSplitOutputs);
      const std::vector<Sibling> group(siblings.begin() + static_cast<std::ptrdiff_t>(start),
                                       siblings.begin() + static_cast<std::ptrdiff_t>(end));
      if (group.size() < 2) break;
      Node merged = merged_node(g, group);
      for (const Sibling& s : group) editor.remove(s.node);
      editor.add(std::move(merged));
      count += static_cast<int>(group.size());
    }
  }
  editor.commit();
  return count;
}

}  // namespace wgi::graph
