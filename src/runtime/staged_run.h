// Graphs whose shapes depend on data (docs/dynamic_shapes.md): NonZero, Compress, Unique, NonMaxSuppression,
// or a node whose planner needs a value the GPU computes (TopK's K, If's condition). plan_nodes ends a stage
// at such a node (StageEnd); the runner plans and runs that stage, reads back in the same download as its
// outputs the extents and values the next stage needs, then plans and runs the next stage for them. Stage
// plans are cached by where they start and what they see of their inputs (types, shapes, small values), so
// a run whose read-back sizes were seen before plans nothing.
#pragma once

#include <list>
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
  StagedRunner(gpu::Device& device, const graph::Graph& graph, const ops::OpRegistry& registry,
               WeightStore& weights, PlanSharing* sharing, RunStatus* run_status,
               const ops::GemmTuning* gemm_tuning, size_t max_stages);
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
  struct Known;
  std::shared_ptr<Stage> make_stage(size_t first, const std::vector<graph::ValueId>& inputs,
                                    const std::vector<PlanInput>& plan_inputs,
                                    std::span<const InputSource> sources);
  // The values nodes[first, ...) read that earlier nodes (or the caller) give: the inputs of a stage there.
  const std::vector<graph::ValueId>& inputs_from(size_t first);

  gpu::Device& device_;
  const graph::Graph& graph_;
  const ops::OpRegistry& registry_;
  WeightStore& weights_;
  PlanSharing* sharing_;
  RunStatus* run_status_;
  const ops::GemmTuning* gemm_tuning_;
  size_t max_stages_;
  std::vector<int32_t> last_reader_;  // per value: the last top-level node reading it (-1: none)
  std::vector<std::pair<size_t, std::vector<graph::ValueId>>> inputs_from_;
  std::list<std::pair<std::string, std::shared_ptr<Stage>>> stages_;  // most recently used first
  uint64_t next_content_id_;
  RunReport report_;
};

}  // namespace wgi::runtime
