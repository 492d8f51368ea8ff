// Graphs whose shapes depend on data (docs/dynamic_shapes.md): NonZero, Compress, Unique, NonMaxSuppression,
// or a node whose planner needs a value the GPU computes (TopK's K, If's condition). plan_nodes ends a stage
// at such a node (StageEnd); the runner plans and runs that stage, reads back in the same download as its
// outputs the extents and values the next stage needs, then plans and runs the next stage for them. Stage
// plans are cached by where they start and what they see of their inputs (types, shapes, small values), so
// a run whose read-back sizes were seen before plans nothing.
//
// Inside control flow the same mechanism runs one scope at a time: when a node inside an If branch or a Loop
// body needs a read-back (plan_nodes' StageEnd::descend), the stage ends before the If / Loop, the runner
// takes the branch its (read back) condition names, or the Loop's iterations one by one, and runs that
// subgraph's nodes in stages exactly as the graph's (a Loop body's condition is read back with the last
// stage of each iteration). An iteration's stages are cached like any other, so iterations of the same
// shapes plan once.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/execution_plan.h"

namespace wgi::runtime {

class StagedRunner {
 public:
  // Plans share `sharing` (node plans, constants, activation buffers; may be null) and `run_status` (may be
  // null) with the caller's other plans; at most `max_stages` stage plans are kept (least recently used
  // dropped first).
  StagedRunner(gpu::Device& device, const gpu::Capabilities& caps, const graph::Graph& graph,
               const ops::OpRegistry& registry, WeightStore& weights, PlanSharing* sharing,
               RunStatus* run_status, const ops::GemmTuning* gemm_tuning, size_t max_stages);
  ~StagedRunner();

  // Runs the graph: `sources` and `plan_inputs` per graph input, as ExecutionPlan::run and plan_nodes take
  // them. Returns the graph's outputs, those of data-dependent size at their real shapes.
  std::vector<Tensor> run(std::span<const InputSource> sources, const std::vector<PlanInput>& plan_inputs);

  struct RunReport {
    size_t stages = 0;      // stages the last run ran
    size_t plans_made = 0;  // stage plans it made (0: all from the cache)
    size_t dispatches = 0;  // dispatches it ran
    size_t read_backs = 0;  // downloads it waited for
  };
  const RunReport& last_run() const { return report_; }
  size_t cached_stages() const { return stages_.size(); }

 private:
  struct Stage;
  struct BufferSet;
  struct Known;
  struct Scope;
  using KnownValues = std::map<graph::ValueId, Known>;
  // The graph (`nodes` null) or a subgraph, as the runner walks it.
  Scope& scope_of(const std::vector<graph::Node>* nodes, const std::vector<graph::ValueId>& outputs,
                  const std::vector<graph::ValueId>& by_value);
  std::shared_ptr<Stage> make_stage(Scope& scope, size_t first, const std::vector<graph::ValueId>& inputs,
                                    const std::vector<PlanInput>& plan_inputs,
                                    std::span<const InputSource> sources);
  // The values scope.nodes[first, ...) read that earlier nodes (or the caller) give: the inputs of a stage.
  const std::vector<graph::ValueId>& inputs_from(Scope& scope, size_t first);
  // run_scope's steps, per stage: its inputs (and cache key) from what the run knows; its plan, cached or
  // made; a buffer set no known value holds; the run; what the run then knows; values read back apart.
  struct StageInputs;
  StageInputs stage_inputs(Scope& scope, size_t first, const KnownValues& known);
  std::shared_ptr<Stage> find_or_make_stage(Scope& scope, size_t first, const StageInputs& in);
  static std::shared_ptr<BufferSet> free_buffer_set(Stage& stage);
  void run_stage(Stage& stage, BufferSet& buffer_set, std::span<const InputSource> sources,
                 std::vector<Tensor>& outs, std::vector<ops::TensorDesc>& real);
  void take_stage_outputs(const Stage& stage, const std::shared_ptr<BufferSet>& buffer_set,
                          std::vector<Tensor>& outs, const std::vector<ops::TensorDesc>& real,
                          KnownValues& known, std::vector<Tensor>& results, std::vector<bool>& filled);
  void download_read_back_inputs(const Stage& stage, KnownValues& known);
  // Runs the scope's nodes in stages; `known` gains its outputs (and `results` the graph outputs computed).
  void run_scope(Scope& scope, KnownValues& known, std::vector<Tensor>& results, std::vector<bool>& filled,
                 std::vector<std::shared_ptr<Stage>>& used);
  // An If or Loop whose subgraph needs read-backs inside: its branch, or its iterations, run scope by scope.
  void run_control_flow(const graph::Node& node, KnownValues& known, std::vector<Tensor>& results,
                        std::vector<bool>& filled, std::vector<std::shared_ptr<Stage>>& used);
  // A Loop's scan output `k` (the body output `declared`): `items`, one per iteration, stacked.
  Known stack_scan_output(const graph::Node& node, const graph::Value& declared, size_t k,
                          const std::vector<Known>& items);
  // What a run knows of `v`: a constant's value, or `known`'s entry (an error naming `node` if none).
  Known lookup(const KnownValues& known, graph::ValueId v, const graph::Node& node) const;

  gpu::Device& device_;
  const graph::Graph& graph_;
  const ops::OpRegistry& registry_;
  WeightStore& weights_;
  PlanSharing* sharing_;
  RunStatus* run_status_;
  const ops::GemmTuning* gemm_tuning_;
  gpu::Capabilities caps_;  // the session's (its precision)
  size_t max_stages_;
  std::map<const std::vector<graph::Node>*, std::unique_ptr<Scope>> scopes_;
  size_t scope_nodes_ = 0;  // nodes run scope by scope this run (bounded like unrolled nodes)
  std::list<std::pair<std::string, std::shared_ptr<Stage>>> stages_;  // most recently used first
  uint64_t next_content_id_;
  RunReport report_;
};

}  // namespace wgi::runtime
