#include "runtime/staged_run.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "runtime/data_dependent.h"
#include "runtime/device_tensor.h"

namespace wgi::runtime {

namespace {

// Content ids for the values stages hand on, apart from DeviceMemory's (which count from 1): a fresh one per
// run, since a stage's boundary buffer holds new contents every run.
constexpr uint64_t kFirstStageContentId = uint64_t{1} << 62;

}  // namespace

// What a run knows of a value that a stage takes as input: its real description, and its host value or
// where it is on the device.
struct StagedRunner::Known {
  ops::TensorDesc desc;
  const Tensor* host = nullptr;        // the caller's, or `owned`
  const Tensor* plan_value = nullptr;  // what the planner sees: graph inputs as the caller gives them
  std::shared_ptr<const Tensor> owned;
  gpu::BufferSlice device;
  uint64_t content_id = 0;
};

struct StagedRunner::Stage {
  size_t first = 0, stop = 0;           // graph.nodes[first, stop)
  std::unique_ptr<ExecutionPlan> plan;  // null when the stage has no node (it only reads back)
  StageValues io;
  enum class Role { GraphOutput, Boundary, ReadBack };
  struct Output {
    Role role;
    size_t graph_output = 0;              // GraphOutput
    std::unique_ptr<gpu::Buffer> buffer;  // Boundary: where the plan copies the value for later stages
  };
  std::vector<Output> outputs;  // per io.outputs
  // Values computed on the host (folded) that later stages read, and values the next stage needs by value
  // that earlier stages computed on the GPU (downloaded apart).
  std::vector<std::pair<graph::ValueId, Tensor>> host_values;
  std::vector<graph::ValueId> read_back_inputs;
};

StagedRunner::StagedRunner(gpu::Device& device, const graph::Graph& graph, const ops::OpRegistry& registry,
                           WeightStore& weights, PlanSharing* sharing, RunStatus* run_status,
                           const ops::GemmTuning* gemm_tuning, size_t max_stages)
    : device_(device),
      graph_(graph),
      registry_(registry),
      weights_(weights),
      sharing_(sharing),
      run_status_(run_status),
      gemm_tuning_(gemm_tuning),
      max_stages_(std::max<size_t>(1, max_stages)),
      last_reader_(graph.values.size(), -1),
      next_content_id_(kFirstStageContentId) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (graph::ValueId v : graph.nodes[n].inputs) {
      if (v != graph::kNoValue) last_reader_[static_cast<size_t>(v)] = static_cast<int32_t>(n);
    }
  }
}

StagedRunner::~StagedRunner() = default;

const std::vector<graph::ValueId>& StagedRunner::inputs_from(size_t first) {
  for (const auto& [at, values] : inputs_from_) {
    if (at == first) return values;
  }
  std::vector<graph::ValueId> values;
  if (first == 0) values = graph_.inputs;
  for (size_t n = first; n < graph_.nodes.size() && first > 0; ++n) {
    for (graph::ValueId v : graph_.nodes[n].inputs) {
      if (v == graph::kNoValue || graph_.value(v).constant) continue;
      const int32_t producer = graph_.value(v).producer;
      if (producer >= static_cast<int32_t>(first)) continue;
      if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    }
  }
  inputs_from_.emplace_back(first, std::move(values));
  return inputs_from_.back().second;
}

std::shared_ptr<StagedRunner::Stage> StagedRunner::make_stage(size_t first,
                                                              const std::vector<graph::ValueId>& inputs,
                                                              const std::vector<PlanInput>& plan_inputs,
                                                              std::span<const InputSource> sources) {
  auto stage = std::make_shared<Stage>();
  stage->first = first;
  stage->io.inputs = inputs;
  const auto start = std::chrono::steady_clock::now();
  std::optional<StageEnd> end;
  NodePlans planned = plan_nodes(graph_, registry_, device_.capabilities(), plan_inputs, {}, nullptr,
                                 sharing_, gemm_tuning_, &end, first, &inputs);
  const double kernel_plans_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  stage->stop = end ? end->end : graph_.nodes.size();
  const size_t stop = stage->stop;
  auto produced_here = [&](graph::ValueId v) {
    const int32_t p = graph_.value(v).producer;
    return p >= static_cast<int32_t>(first) && p < static_cast<int32_t>(stop);
  };
  auto host_value = [&](graph::ValueId v) -> const Tensor* {
    if (const auto& c = graph_.value(v).constant) return &*c;
    const auto& h = planned.host_values[static_cast<size_t>(v)];
    return h ? &*h : nullptr;
  };
  auto add_output = [&](graph::ValueId v, Stage::Role role, size_t graph_output) {
    stage->io.outputs.push_back(v);
    stage->outputs.push_back({role, graph_output, nullptr});
  };
  // The graph's outputs computed here (the first stage also returns those that are inputs or constants).
  for (size_t o = 0; o < graph_.outputs.size(); ++o) {
    const graph::ValueId v = graph_.outputs[o];
    if (produced_here(v) || (first == 0 && graph_.value(v).producer < 0))
      add_output(v, Stage::Role::GraphOutput, o);
  }
  // Values later stages read: kept on the device, or passed on as host values.
  for (size_t n = first; n < stop; ++n) {
    for (graph::ValueId v : graph_.nodes[n].outputs) {
      if (v == graph::kNoValue || last_reader_[static_cast<size_t>(v)] < static_cast<int32_t>(stop)) continue;
      if (const Tensor* h = host_value(v)) {
        stage->host_values.emplace_back(v, *h);
      } else {
        add_output(v, Stage::Role::Boundary, 0);
      }
    }
  }
  if (end) {
    for (graph::ValueId v : end->read_back) {
      if (produced_here(v)) {
        add_output(v, Stage::Role::ReadBack, 0);
      } else {
        stage->read_back_inputs.push_back(v);
      }
    }
  }
  if (stop > first) {
    stage->plan =
        std::make_unique<ExecutionPlan>(device_, graph_, weights_, std::move(planned), kernel_plans_ms,
                                        sharing_, sources, nullptr, run_status_, &stage->io);
    for (size_t o = 0; o < stage->outputs.size(); ++o) {
      if (stage->outputs[o].role != Stage::Role::Boundary) continue;
      const uint64_t bytes = std::max<uint64_t>(16, device_byte_size(stage->plan->output_desc(o)));
      stage->outputs[o].buffer = std::make_unique<gpu::Buffer>(
          device_.create_buffer(bytes, "stage value '" + graph_.value(stage->io.outputs[o]).name + "'"));
    }
  }
  return stage;
}

std::vector<Tensor> StagedRunner::run(std::span<const InputSource> sources,
                                      const std::vector<PlanInput>& plan_inputs) {
  report_ = {};
  std::map<graph::ValueId, Known> known;
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    Known k;
    k.desc = plan_inputs.at(i).desc;
    k.host = sources[i].host;
    k.plan_value = plan_inputs[i].value;
    k.device = sources[i].device;
    k.content_id = sources[i].content_id;
    known[graph_.inputs[i]] = std::move(k);
  }
  std::vector<Tensor> results(graph_.outputs.size());
  std::vector<std::shared_ptr<Stage>> used;  // alive until the run ends: later stages read their buffers
  size_t first = 0;
  while (true) {
    const std::vector<graph::ValueId>& inputs = inputs_from(first);
    std::vector<PlanInput> stage_plan_inputs;
    std::vector<InputSource> stage_sources;
    std::string key = std::to_string(first) + ":";
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Known& k = known.at(inputs[i]);
      const Tensor* value = k.plan_value;
      stage_plan_inputs.push_back({k.desc, value});
      stage_sources.push_back({k.host, k.host ? gpu::BufferSlice{} : k.device, k.host ? 0 : k.content_id});
      key += std::to_string(static_cast<int>(k.desc.dtype)) + shape_to_string(k.desc.shape);
      if (value) {
        key += "=";
        key.append(reinterpret_cast<const char*>(value->bytes().data()), value->byte_size());
      }
      key += ";";
    }
    std::shared_ptr<Stage> stage;
    for (auto it = stages_.begin(); it != stages_.end(); ++it) {
      if (it->first != key) continue;
      stages_.splice(stages_.begin(), stages_, it);
      stage = stages_.front().second;
      break;
    }
    if (!stage) {
      stage = make_stage(first, inputs, stage_plan_inputs, stage_sources);
      ++report_.plans_made;
      stages_.emplace_front(key, stage);
      while (stages_.size() > max_stages_) stages_.pop_back();
    }
    used.push_back(stage);
    ++report_.stages;

    // Run: boundary values copied out to the stage's buffers, the rest (graph outputs, read-backs, the
    // extent) in one download.
    std::vector<Tensor> outs;
    std::vector<ops::TensorDesc> real;  // per output
    if (stage->plan) {
      std::vector<gpu::BufferSlice> targets(stage->outputs.size());
      for (size_t o = 0; o < stage->outputs.size(); ++o) {
        if (stage->outputs[o].buffer) targets[o] = {stage->outputs[o].buffer.get()};
      }
      outs = stage->plan->run(stage_sources, targets, nullptr);
      report_.dispatches += stage->plan->dispatch_count();
      ++report_.read_backs;
      for (size_t o = 0; o < stage->outputs.size(); ++o) real.push_back(stage->plan->output_desc(o));
      if (const ExecutionPlan::DataDependentStep* dd = stage->plan->data_dependent_step()) {
        const graph::Node* node = dd->node;
        const std::vector<ops::TensorDesc> exact =
            real_output_descs(node->info, dd->outputs, dd->data_dependent, stage->plan->extent());
        for (const ops::DataDependentOutput& d : dd->data_dependent) {
          if (d.output >= node->outputs.size() || node->outputs[d.output] == graph::kNoValue) continue;
          for (size_t o = 0; o < stage->outputs.size(); ++o) {
            if (stage->io.outputs[o] != node->outputs[d.output]) continue;
            real[o] = exact[d.output];
            if (stage->outputs[o].role != Stage::Role::Boundary)
              outs[o] = leading_elements(outs[o], real[o].shape);
          }
        }
      }
    }
    for (size_t o = 0; o < stage->outputs.size(); ++o) {
      const graph::ValueId v = stage->io.outputs[o];
      Stage::Output& out = stage->outputs[o];
      if (out.role == Stage::Role::GraphOutput) {
        results[out.graph_output] = std::move(outs[o]);
      } else if (out.role == Stage::Role::Boundary) {
        Known k;
        k.desc = real[o];
        k.device = {out.buffer.get(), 0, out.buffer->size()};
        k.content_id = next_content_id_++;
        known[v] = std::move(k);
      } else {
        Known& k = known[v];
        k.desc = real[o];
        k.owned = std::make_shared<const Tensor>(std::move(outs[o]));
        k.host = k.plan_value = k.owned.get();
      }
    }
    for (const auto& [v, tensor] : stage->host_values) {
      Known k;
      k.desc = {tensor.dtype(), tensor.shape()};
      k.host = k.plan_value = &tensor;
      known[v] = std::move(k);
    }
    // Values a stage needs by value that an earlier stage left on the device (rare: one more download).
    for (graph::ValueId v : stage->read_back_inputs) {
      Known& k = known.at(v);
      if (k.host) {
        k.plan_value = k.host;
        continue;
      }
      std::vector<std::byte> bytes(device_payload_bytes(k.desc));
      std::vector<gpu::Device::DownloadRegion> regions{{k.device.buffer, k.device.offset, bytes}};
      device_.download(regions);
      ++report_.read_backs;
      k.owned = std::make_shared<const Tensor>(from_device_bytes(k.desc, bytes));
      k.host = k.plan_value = k.owned.get();
    }
    if (stage->stop >= graph_.nodes.size()) break;
    if (stage->stop == first && stage->read_back_inputs.empty())
      throw Error("internal: a stage at node " + std::to_string(first) +
                  " ran no node and read nothing back");
    first = stage->stop;
  }
  return results;
}

}  // namespace wgi::runtime
