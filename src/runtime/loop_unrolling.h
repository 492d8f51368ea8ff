// Loop and Scan, unrolled when planning: each iteration's body is planned in the node's place as if its nodes
// were the main graph's, loop-carried values wired from one iteration to the next, scan inputs cut by Slice
// and scan outputs stacked by Concat (nodes made here, planned like any other), so a replayed plan runs the
// iterations' dispatches with no host round trip (docs/control_flow.md). The iteration count must be known
// when planning; a body condition computed on the GPU makes the Loop run iteration by iteration in stages
// (ReadBackInside, runtime/staged_run.h).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"

namespace wgi::runtime {

// A plan unrolls at most this many nodes (iterations x body nodes, nested bodies included, plus the nodes
// that cut and stack scan values): past it, planning fails naming the Loop or Scan, before a huge trip count
// makes a plan of millions of steps.
inline constexpr size_t kMaxUnrolledNodes = size_t{1} << 16;

// The nodes and values unrolling adds to one plan: each iteration's copy of a body (every value the body
// defines is new; constants and values of enclosing scopes are shared) and the nodes made to cut and stack
// scan values. Values are numbered after the graph's, from graph.values.size() on. Nodes never move once
// added (plans point at them); each remembers the graph's node it stands for (`origin`), which names it in
// run-status reports and keys its shared kernel plan: a copy plans exactly as its original would.
class UnrolledNodes {
 public:
  explicit UnrolledNodes(const graph::Graph& graph) : graph_(graph), first_value_(graph.values.size()) {}

  const graph::Value& value(graph::ValueId id) const;
  size_t value_count() const { return first_value_ + values_.size(); }
  graph::ValueId add_value(graph::Value value);

  // Adds a copy of `node` (nested subgraphs included): reads go through `renamed` (values not in it are
  // shared), every value it defines gets a new id, recorded in `renamed`. `origin` is the graph's node the
  // copy stands for (for a copy of a copy, its original's).
  const graph::Node& add_copy(const graph::Node& node,
                              std::unordered_map<graph::ValueId, graph::ValueId>& renamed);
  // Adds a node made for unrolling (e.g. the Concat of a scan output), standing for the Loop or Scan
  // `origin`.
  const graph::Node& add_node(graph::Node node, const graph::Node& origin);
  // The graph's node that `node` stands for; `node` itself when it is none of these.
  const graph::Node* origin(const graph::Node* node) const;
  // Whether `node` was made by add_node: it plans unlike its origin, so its kernel plan is not shared.
  bool made(const graph::Node* node) const { return made_.count(node) != 0; }
  size_t node_count() const { return node_count_; }

 private:
  graph::Node copy_of(const graph::Node& node, std::unordered_map<graph::ValueId, graph::ValueId>& renamed);
  void add_origins(const graph::Node& copy, const graph::Node& original);

  const graph::Graph& graph_;
  size_t first_value_;
  std::vector<graph::Value> values_;
  std::deque<graph::Node> nodes_;
  std::unordered_map<const graph::Node*, const graph::Node*> origins_;
  std::unordered_set<const graph::Node*> made_;
  size_t node_count_ = 0;  // nodes added, at every depth
};

// Thrown while staging (runtime::plan_nodes with a StageEnd) by a node inside an If branch or a Loop / Scan
// body that needs a read-back there: a data-dependent output, a value needed by value that the GPU computes,
// a Loop body's condition computed on the GPU. Not a wgi::Error: plan_nodes catches it at the top-level node
// it was planning, ends the stage before that node, and the staged runner runs the node's subgraph scope by
// scope (StageEnd::descend).
struct ReadBackInside {};

// The nodes of `nodes`, those of nested subgraphs included: what an iteration counts against
// kMaxUnrolledNodes (unrolled, or run iteration by iteration in stages).
size_t nodes_in(const std::vector<graph::Node>& nodes);

// The iteration number and condition a Loop's body takes (scalars, or [1] where the body declares rank 1).
Tensor iteration_number(const graph::Value& declared, int64_t i);
Tensor true_condition(const graph::Value& declared);

// What unrolling needs from the planner (runtime::plan_nodes).
struct UnrollPlanner {
  UnrolledNodes& unrolled;
  // Plans one node in order; `scope` prefixes its errors.
  std::function<void(const graph::Node& node, const std::string& scope, bool checking_only)> plan_node;
  std::function<bool(graph::ValueId)> known;  // false after a failed node (only when collecting errors)
  std::function<const ops::TensorDesc&(graph::ValueId)> desc;
  std::function<const Tensor*(graph::ValueId)> host_value;
  // A new value; known from now on with that value when `host` is given.
  std::function<graph::ValueId(graph::Value value, std::optional<Tensor> host)> add_value;
  // Sets `value` to an empty host tensor (a scan output of no iterations).
  std::function<void(graph::ValueId value, Tensor host)> set_host_value;
  // `value` (the node's output) is `source` from now on: the same memory, or the same host value.
  std::function<void(graph::ValueId value, graph::ValueId source, bool checking_only)> alias;
  // Staging or checking: a body condition computed on the GPU throws ReadBackInside instead of failing.
  bool read_back_inside = false;
};

// Plans a Loop / Scan node (its op inputs planned, `ctx` its plan context) as its unrolled iterations.
// `check_one_iteration`: only checking (wgi check) and the bounds come from graph inputs not given by value:
// plans one iteration to report its errors, and leaves the node's outputs unknown.
void plan_loop(const UnrollPlanner& planner, const graph::Node& node, const ops::PlanContext& ctx,
               const std::string& scope, bool checking_only, bool check_one_iteration);
void plan_scan(const UnrollPlanner& planner, const graph::Node& node, const ops::PlanContext& ctx,
               const std::string& scope, bool checking_only);

}  // namespace wgi::runtime
