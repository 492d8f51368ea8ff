#include "graph/graph.h"

#include <algorithm>
#include <deque>
#include <set>

namespace wgi::graph {

namespace {

void collect_outer_reads(const Graph& graph, const Subgraph& sub, std::set<ValueId>& defined,
                         std::set<ValueId>& seen, std::vector<ValueId>& out) {
  defined.insert(sub.inputs.begin(), sub.inputs.end());
  for (const Node& n : sub.nodes) defined.insert(n.outputs.begin(), n.outputs.end());
  auto read = [&](ValueId v) {
    if (v != kNoValue && !graph.value(v).constant && !defined.count(v) && seen.insert(v).second)
      out.push_back(v);
  };
  // A node's inputs include its own subgraphs' outer reads, so nested scopes need no recursion here.
  for (const Node& n : sub.nodes) {
    for (ValueId v : n.inputs) read(v);
  }
  for (ValueId v : sub.outputs) read(v);
}

}  // namespace

std::vector<ValueId> outer_reads_of(const Graph& graph, const Subgraph& sub) {
  std::set<ValueId> defined, seen;
  std::vector<ValueId> out;
  collect_outer_reads(graph, sub, defined, seen, out);
  return out;
}

void set_outer_reads(const Graph& graph, Node& node) {
  node.inputs.resize(node.op_input_count());
  std::set<ValueId> seen(node.inputs.begin(), node.inputs.end());  // the op's own inputs are read already
  std::vector<ValueId> reads;
  for (const Subgraph& sub : node.subgraphs) {
    std::set<ValueId> defined;
    collect_outer_reads(graph, sub, defined, seen, reads);
  }
  node.inputs.insert(node.inputs.end(), reads.begin(), reads.end());
  node.outer_reads = reads.size();
}

void replace_reads(Node& node, ValueId from, ValueId to) {
  std::replace(node.inputs.begin(), node.inputs.end(), from, to);
  for (Subgraph& sub : node.subgraphs) {
    for (Node& n : sub.nodes) replace_reads(n, from, to);
    std::replace(sub.outputs.begin(), sub.outputs.end(), from, to);
  }
}

ValueShape ValueShape::of(const Shape& shape) {
  ValueShape s;
  s.rank_known = true;
  for (int64_t d : shape) s.dims.push_back(Dim::known(d));
  return s;
}

std::optional<Shape> ValueShape::concrete() const {
  if (!rank_known) return std::nullopt;
  Shape out;
  for (const Dim& d : dims) {
    if (!d.is_known()) return std::nullopt;
    out.push_back(d.value);
  }
  return out;
}

std::string ValueShape::to_string() const {
  if (!rank_known) return "[unknown rank]";
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i].is_known() ? std::to_string(dims[i].value) : (dims[i].symbol.empty() ? "?" : dims[i].symbol);
  }
  return s + "]";
}

ValueId Graph::add_value(Value value) {
  if (!value.name.empty()) {
    if (by_name_.count(value.name)) throw Error("two values are named '" + value.name + "'");
    by_name_[value.name] = static_cast<ValueId>(values.size());
  }
  values.push_back(std::move(value));
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Graph::add_scoped_value(Value value) {
  values.push_back(std::move(value));
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Graph::find(const std::string& value_name) const {
  auto it = by_name_.find(value_name);
  return it == by_name_.end() ? kNoValue : it->second;
}

std::vector<std::vector<int32_t>> Graph::consumers() const {
  std::vector<std::vector<int32_t>> out(values.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId v : nodes[n].inputs) {
      if (v != kNoValue) out[static_cast<size_t>(v)].push_back(static_cast<int32_t>(n));
    }
  }
  return out;
}

void Graph::sort_topologically() {
  // Which node produces each value; a value is ready when it is an input, a constant, or produced already.
  std::vector<int32_t> producer(values.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId v : nodes[n].outputs) {
      if (v == kNoValue) continue;
      if (producer[static_cast<size_t>(v)] != -1) {
        throw Error("value '" + value(v).name + "' is produced by two nodes: '" +
                    nodes[static_cast<size_t>(producer[static_cast<size_t>(v)])].info.name + "' and '" +
                    nodes[n].info.name + "'");
      }
      producer[static_cast<size_t>(v)] = static_cast<int32_t>(n);
    }
  }
  std::vector<int32_t> pending(nodes.size(), 0);
  std::vector<std::vector<int32_t>> waiting(values.size());
  std::deque<int32_t> ready;
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId v : nodes[n].inputs) {
      if (v == kNoValue) continue;
      const Value& val = value(v);
      if (producer[static_cast<size_t>(v)] == -1) {
        bool is_input = std::find(inputs.begin(), inputs.end(), v) != inputs.end();
        if (!val.constant && !is_input) {
          throw Error("node '" + nodes[n].info.name + "' (" + nodes[n].info.op_type + ") reads '" + val.name +
                      "', which no node, input or initializer provides");
        }
        continue;
      }
      ++pending[n];
      waiting[static_cast<size_t>(v)].push_back(static_cast<int32_t>(n));
    }
    if (pending[n] == 0) ready.push_back(static_cast<int32_t>(n));
  }
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  std::vector<bool> done(nodes.size(), false);
  while (!ready.empty()) {
    int32_t n = ready.front();
    ready.pop_front();
    done[static_cast<size_t>(n)] = true;
    for (ValueId v : nodes[static_cast<size_t>(n)].outputs) {
      if (v == kNoValue) continue;
      for (int32_t consumer : waiting[static_cast<size_t>(v)]) {
        if (--pending[static_cast<size_t>(consumer)] == 0) ready.push_back(consumer);
      }
    }
    sorted.push_back(std::move(nodes[static_cast<size_t>(n)]));
  }
  if (sorted.size() != nodes.size()) {
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (!done[n]) {
        throw Error("the graph has a cycle through node '" + nodes[n].info.name + "' (" +
                    nodes[n].info.op_type + ")");
      }
    }
  }
  nodes = std::move(sorted);
  link_producers();
}

void Graph::link_producers() {
  for (Value& v : values) v.producer = -1;
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId v : nodes[n].outputs) {
      if (v != kNoValue) value(v).producer = static_cast<int32_t>(n);
    }
  }
}

void Graph::edit_subgraph(Node& node, size_t subgraph, const std::function<void(Graph&)>& fn) {
  Subgraph& sub = node.subgraphs.at(subgraph);
  std::vector<ValueId> scope_inputs = sub.inputs;
  for (ValueId v : outer_reads_of(*this, sub)) {
    if (std::find(scope_inputs.begin(), scope_inputs.end(), v) == scope_inputs.end())
      scope_inputs.push_back(v);
  }
  std::vector<Node> outer_nodes = std::move(nodes);
  std::vector<ValueId> outer_inputs = std::exchange(inputs, std::move(scope_inputs));
  std::vector<ValueId> outer_outputs = std::exchange(outputs, sub.outputs);
  nodes = std::move(sub.nodes);
  auto restore = [&] {
    sub.nodes = std::exchange(nodes, std::move(outer_nodes));
    sub.outputs = std::exchange(outputs, std::move(outer_outputs));
    inputs = std::move(outer_inputs);
  };
  try {
    sort_topologically();
    fn(*this);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  // `node` lives in `nodes` again (moving a vector keeps its elements where they are). Passes inside only
  // drop reads or replace one by another the scope already read, so the node order stays valid.
  set_outer_reads(*this, node);
  link_producers();
}

}  // namespace wgi::graph
