// What the graph passes (one per file in this folder, ordered in pass_table.cpp) share: typed node ids, the
// readers of each value, a node editor that keeps indices valid while a pass works, and the small pattern
// tests (sole readers, constants, Transposes, Reshapes) their matchers are made of. Internal to the passes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace wgi::graph {

// A node's position in Graph::nodes, or none: a graph input, a constant, or no match. Value ids stay the
// Graph's (ValueId, kNoValue the 'none'); node positions are typed so that a pass cannot mix them up with
// value ids or test "< 0" on them.
class NodeId {
 public:
  constexpr NodeId() = default;  // none
  constexpr explicit NodeId(size_t index) : index_(index) {}
  // The node producing `v`, none for graph inputs, constants and kNoValue.
  static NodeId producer_of(const Graph& g, ValueId v);

  constexpr explicit operator bool() const { return index_ != kNone; }
  constexpr size_t index() const { return index_; }
  friend constexpr bool operator==(NodeId, NodeId) = default;

 private:
  static constexpr size_t kNone = SIZE_MAX;
  size_t index_ = kNone;
};

// Every node of the graph, in order: `for (NodeId i : node_ids(g))`.
std::vector<NodeId> node_ids(const Graph& g);
inline Node& node_at(Graph& g, NodeId n) {
  return g.nodes.at(n.index());
}
inline const Node& node_at(const Graph& g, NodeId n) {
  return g.nodes.at(n.index());
}

// The nodes reading each value, as when built (a pass adds the readers it creates with add).
class Readers {
 public:
  explicit Readers(const Graph& g);
  // No readers for kNoValue.
  const std::vector<NodeId>& of(ValueId v) const;
  void add(ValueId v, NodeId reader) { readers_.at(static_cast<size_t>(v)).push_back(reader); }

 private:
  std::vector<std::vector<NodeId>> readers_;
};

// A flag per value of the graph (kNoValue never set).
class ValueFlags {
 public:
  explicit ValueFlags(const Graph& g) : flags_(g.values.size(), false) {}
  bool has(ValueId v) const { return v != kNoValue && flags_.at(static_cast<size_t>(v)); }
  void set(ValueId v) {
    if (v != kNoValue) flags_.at(static_cast<size_t>(v)) = true;
  }

 private:
  std::vector<bool> flags_;
};

// Marks nodes for removal and rebuilds the node list once, so indices stay valid while a pass works.
class NodeEditor {
 public:
  explicit NodeEditor(Graph& graph) : graph_(graph), removed_(graph.nodes.size(), false) {}
  void remove(NodeId node) { removed_.at(node.index()) = true; }
  bool removed(NodeId node) const { return removed_.at(node.index()); }
  bool any_removed(const std::vector<NodeId>& nodes) const;
  // A node that replaces removed ones; appended at commit, which re-sorts.
  void add(Node node) { added_.push_back(std::move(node)); }
  void commit();

 private:
  Graph& graph_;
  std::vector<bool> removed_;
  std::vector<Node> added_;
};

bool is_graph_output(const Graph& g, ValueId v);
// Redirects every reader of `from` (nodes, inside their subgraphs too, and graph outputs) to `to`.
void replace_uses(Graph& g, ValueId from, ValueId to);
// Whether `v` has readers or is a graph output.
bool is_read(const Graph& g, const Readers& readers, ValueId v);

// Sole-reader chains. The node producing `v` if its only reader is `consumer` and it is not a graph output.
NodeId sole_producer(const Graph& g, const Readers& readers, ValueId v, NodeId consumer);
// The reader of `v` if it has exactly one and is not a graph output.
NodeId sole_reader(const Graph& g, const Readers& readers, ValueId v);
// The next node along a chain: the only reader of `n`'s only output, reading it once, as its input 0.
NodeId next_in_chain(const Graph& g, const Readers& readers, const Node& n);
// Whether every reader of `v` is node `reader` (at least one) and `v` is not a graph output.
bool read_only_by(const Graph& g, const Readers& readers, ValueId v, NodeId reader);
// The reader nodes of `v` other than `except`, if every one is a Shape node (which only needs v's shape):
// appended to `shape_readers`.
bool others_read_only_shape(const Graph& g, const Readers& readers, ValueId v, NodeId except,
                            std::vector<NodeId>& shape_readers);
// Whether `v` is the output of a node of this op type.
bool produced_by(const Graph& g, ValueId v, const char* op);

// Constants.
const Tensor* constant_of(const Graph& g, const Node& n, size_t input);
// `name`, or `name_1`, `name_2`, ...: the first that no value of the graph has.
std::string unique_value_name(const Graph& g, const std::string& name);
ValueId add_constant(Graph& g, const std::string& name, Tensor t);
bool is_float(const Tensor* t);  // a float32 constant
// Float32 or float16: the types the fusions match where the fused op takes float16 through the float16
// wrapper (ops/float16.h), computing in f32 as the unfused ops do (docs/float16.md).
bool is_float_type(DType d);
bool is_float_or_half(const Tensor* t);  // a float32 or float16 constant
// The scalar value of a float32 or float16 constant input, if it is one.
std::optional<float> scalar_constant(const Graph& g, ValueId v);
// Whether `v` is a scalar constant equal to `want` up to its type's rounding (float16 constants hold the
// exporter's value rounded to 11 bits).
bool close_to_constant(const Graph& g, ValueId v, double want);
// The int64 / int32 values of a constant, if it is one.
std::optional<std::vector<int64_t>> constant_ints(const Graph& g, ValueId v);
// constant_ints, nullopt for kNoValue too (shape-derived values are checked by the op when it is planned).
std::optional<std::vector<int64_t>> known_target(const Graph& g, ValueId v);
// Whether `v` depends only on constants and on the shapes (not the values) of other tensors: then the planner
// knows it before any GPU work (e.g. an attention scale computed as head_dim ** -0.5 from Shape).
bool derived_from_shapes(const Graph& g, ValueId v, int depth = 0);

// Shapes.
// Whether two graph shapes may be those of one tensor: false only where both are given and differ (rank, a
// known dim, a symbolic dim, or a known against a symbolic dim).
bool shapes_may_match(const ValueShape& a, const ValueShape& b);
// Whether the two values have the same fully known shape.
bool same_known_shape(const Graph& g, ValueId a, ValueId b);

// Node forms.
// Whether a Transpose node swaps exactly the last two dims.
bool swaps_last_two(const Node& t);
// A Transpose (default domain) with exactly this perm.
bool is_transpose(const Node& n, const std::vector<int64_t>& perm);
// A Reshape (default domain) whose 0 entries copy the input's dim (allowzero = 0).
bool is_plain_reshape(const Node& n);
// The Transpose of timm / DaViT / Swin's window partition and reverse: [B, H/wh, wh, W/ww, ww, C] <->
// [B, H/wh, W/ww, wh, ww, C].
inline const std::vector<int64_t> kSwapWindowAxes = {0, 1, 3, 2, 4, 5};
// com.microsoft MatMulNBits (src/ops/matmul_nbits.cpp): its epilogue takes a bias (input 5), a residual
// (input 6) and an activation as MatMul's does.
bool is_matmul_nbits(const Node& n);
// MatMulInteger or ConvInteger with dynamic quantization's rescale taken in (wgi.scaled_output,
// integer_linear.cpp): its
// float output takes a residual (input 7) and an activation as MatMul's does.
bool is_scaled_integer_product(const Node& n);
// The other operand of a binary node reading `v` once; kNoValue when it is not binary or reads v twice.
ValueId other_operand(const Node& n, ValueId v);
// Mul(v, c) or Mul(c, v) with a scalar constant c close to `factor`: returns v; else kNoValue.
ValueId scaled_operand(const Graph& g, const Node& n, double factor);

}  // namespace wgi::graph
