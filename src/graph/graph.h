// The model as wgi sees it after import: values (tensors) and nodes, independent of ONNX's protobuf classes.
//
// A Value is produced by at most one node (or is a graph input or a constant) and read by any number of
// nodes. Shapes may hold symbolic dims (e.g. "batch") until the runtime resolves them from the actual inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ops/op.h"
#include "wgi/tensor.h"

namespace wgi::graph {

// One dimension: a known size, a named symbol, or unknown (neither).
struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string symbol;  // e.g. "batch"; empty when known or unknown

  static Dim known(int64_t v) { return Dim{v, {}}; }
  static Dim named(std::string s) { return Dim{-1, std::move(s)}; }
  bool is_known() const { return value >= 0; }
};

struct ValueShape {
  bool rank_known = false;
  std::vector<Dim> dims;

  static ValueShape of(const Shape& shape);
  // The concrete shape if every dim is known.
  std::optional<Shape> concrete() const;
  std::string to_string() const;  // "[batch, 3, ?, 224]"
};

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;  // an optional input that is not given

struct Value {
  std::string name;
  DType dtype = DType::Float32;
  ValueShape shape;
  std::optional<Tensor> constant;  // initializers, Constant nodes, folded subgraphs
  int32_t producer = -1;           // index of the producing node; -1 for inputs and constants
};

struct Node;

// A graph-valued attribute of a node (If's then_branch / else_branch, Loop's body). Its values live in the
// root Graph's value table like every other value of the model (added there unnamed: Graph::find sees the
// root scope only), so a node inside reads a value of an enclosing scope by its id, and a pass that moves the
// production of a value elsewhere changes nothing inside.
struct Subgraph {
  std::string attribute;         // e.g. "then_branch"
  std::string name;              // the GraphProto's name
  std::vector<Node> nodes;       // in a valid topological order
  std::vector<ValueId> inputs;   // the body's formal inputs (Loop, Scan); none for If
  std::vector<ValueId> outputs;  // may be values of enclosing scopes
};

struct Node {
  ops::NodeInfo info;  // name, op type, domain, opset, attributes, input/output names
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::vector<Subgraph> subgraphs;
  // The last `outer_reads` inputs are not the op's: they are the values of enclosing scopes that the
  // subgraphs read (set_outer_reads). As inputs, every pass sees them read (dead-node removal, the
  // sole-reader checks of the fusions, folding), the topological sort orders the node after their producers
  // and the planner plans them first.
  size_t outer_reads = 0;
  size_t op_input_count() const { return inputs.size() - outer_reads; }
};

class Graph;
// The non-constant values of `graph` that `sub` (its nodes, nested subgraphs, outputs) reads but does not
// define, in order of first read.
std::vector<ValueId> outer_reads_of(const Graph& graph, const Subgraph& sub);
// Recomputes the node's outer reads (the union over its subgraphs, less the op's own inputs) as its trailing
// inputs.
void set_outer_reads(const Graph& graph, Node& node);
// Redirects every read of `from` by the node, inside its subgraphs too, to `to`.
void replace_reads(Node& node, ValueId from, ValueId to);

class Graph {
 public:
  std::string name;
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
  std::vector<Value> values;
  std::vector<Node> nodes;      // in a valid topological order after import
  std::vector<ValueId> inputs;  // runtime inputs (not initializers)
  std::vector<ValueId> outputs;

  ValueId add_value(Value value);
  // A value of a subgraph: in the table, but not found by name (subgraph scopes have their own names).
  ValueId add_scoped_value(Value value);
  // The id of the value with this name, or kNoValue.
  ValueId find(const std::string& value_name) const;
  Value& value(ValueId id) { return values.at(static_cast<size_t>(id)); }
  const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }

  // Nodes reading each value (recomputed on demand; passes call it after they rewrite the graph).
  std::vector<std::vector<int32_t>> consumers() const;
  // Re-sorts nodes topologically and re-links producers. Throws wgi::Error naming a node on a cycle or on an
  // input that nothing produces.
  void sort_topologically();
  // Runs `fn` with the subgraph in this graph's place (its nodes as the nodes, its outputs as the outputs,
  // its formal inputs and the values it reads from enclosing scopes as the inputs), so that graph passes run
  // inside it unchanged; a value produced outside then has no producer, as a graph input. Restores the graph
  // afterwards (producers re-linked) and recomputes `node`'s outer reads, which the passes may have changed.
  // `node` must be one of this graph's nodes.
  void edit_subgraph(Node& node, size_t subgraph, const std::function<void(Graph&)>& fn);

 private:
  void link_producers();  // Value::producer from the nodes' outputs
  std::map<std::string, ValueId> by_name_;
};

}  // namespace wgi::graph
