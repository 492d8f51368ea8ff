// The model as wgi sees it after import: values (tensors) and nodes, independent of ONNX's protobuf classes.
//
// A Value is produced by at most one node (or is a graph input or a constant) and read by any number of
// nodes. Shapes may hold symbolic dims (e.g. "batch") until the runtime resolves them from the actual inputs.
#pragma once

#include <cstdint>
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

struct Node {
  ops::NodeInfo info;  // name, op type, domain, opset, attributes, input/output names
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
};

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
  // The id of the value with this name, or kNoValue.
  ValueId find(const std::string& value_name) const;
  Value& value(ValueId id) { return values.at(static_cast<size_t>(id)); }
  const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }

  // Nodes reading each value (recomputed on demand; passes call it after they rewrite the graph).
  std::vector<std::vector<int32_t>> consumers() const;
  // Re-sorts nodes topologically and re-links producers. Throws wgi::Error naming a node on a cycle or on an
  // input that nothing produces.
  void sort_topologically();

 private:
  std::map<std::string, ValueId> by_name_;
};

}  // namespace wgi::graph
