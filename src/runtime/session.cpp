#include "wgi/session.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "gpu/device.h"
#include "gpu/profiler.h"
#include "graph/passes.h"
#include "graph/token_candidates.h"
#include "onnx/importer.h"
#include "ops/gemm_tuning.h"
#include "runtime/device_tensor.h"
#include "runtime/environment.h"
#include "runtime/execution_plan.h"
#include "runtime/gemm_tuner.h"
#include "runtime/staged_run.h"
#include "runtime/tuning_cache.h"

namespace wgi {

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

TensorInfo describe_value(const graph::Value& v) {
  TensorInfo info;
  info.name = v.name;
  info.dtype = v.dtype;
  info.rank_known = v.shape.rank_known;
  for (const graph::Dim& d : v.shape.dims) {
    info.dims.push_back(d.is_known() ? d.value : -1);
    info.dim_names.push_back(d.symbol);
  }
  return info;
}

// One input of a run as the checks and the planner see it: a host tensor or a device tensor.
struct InputView {
  const Tensor* host = nullptr;
  detail::DeviceTensorState* device = nullptr;
  bool as_data = false;  // RunOptions::inputs_as_data: never planned with by value
  DType dtype() const { return host ? host->dtype() : device->desc.dtype; }
  const Shape& shape() const { return host ? host->shape() : device->desc.shape; }
  // The value, when the planner gets it (small inputs; see runtime::host_visible).
  const Tensor* value() const {
    if (as_data) return nullptr;
    if (host) return runtime::host_visible(*host) ? host : nullptr;
    return device->small_value ? &*device->small_value : nullptr;
  }
};

// What the planner sees of the inputs (in graph order): dtype, shape and the small values.
std::vector<runtime::PlanInput> plan_inputs_of(const std::vector<InputView>& ordered) {
  std::vector<runtime::PlanInput> plan_inputs;
  for (const InputView& t : ordered) plan_inputs.push_back({{t.dtype(), t.shape()}, t.value()});
  return plan_inputs;
}

// The names of the inputs' symbolic dims.
std::set<std::string> symbolic_dim_names(const std::vector<TensorInfo>& inputs) {
  std::set<std::string> symbolic;
  for (const TensorInfo& in : inputs) {
    for (const std::string& name : in.dim_names)
      if (!name.empty()) symbolic.insert(name);
  }
  return symbolic;
}

// RunOptions::growing_dims names symbolic dims of the inputs (`symbolic`), each with a positive limit.
void check_growing_dims(const std::map<std::string, int64_t>& growing,
                        const std::set<std::string>& symbolic) {
  for (const auto& [name, limit] : growing) {
    if (!symbolic.count(name)) {
      std::string known;
      for (const std::string& n : symbolic) known += (known.empty() ? "" : ", ") + n;
      throw Error("RunOptions::growing_dims names '" + name +
                  "', which is not a symbolic dim of the model's inputs (" +
                  (known.empty() ? std::string("it has none") : "they have: " + known) + ")");
    }
    if (limit < 1)
      throw Error("RunOptions::growing_dims: '" + name + "' must be at least 1, not " +
                  std::to_string(limit));
  }
}

// The inputs at the largest sizes RunOptions::growing_dims expects, for the room of a new plan; empty
// when no input dim is below its limit. A resized input loses its plan-time value (the capacity planning
// only measures sizes).
std::vector<runtime::PlanInput> capacity_inputs(const std::vector<runtime::PlanInput>& now,
                                                const std::vector<TensorInfo>& infos,
                                                const std::map<std::string, int64_t>& growing) {
  std::vector<runtime::PlanInput> largest = now;
  bool grows = false;
  for (size_t i = 0; i < largest.size() && i < infos.size(); ++i) {
    std::vector<int64_t>& shape = largest[i].desc.shape;
    for (size_t d = 0; d < shape.size() && d < infos[i].dim_names.size(); ++d) {
      auto it = growing.find(infos[i].dim_names[d]);
      if (it == growing.end() || shape[d] >= it->second) continue;
      shape[d] = it->second;
      largest[i].value = nullptr;
      grows = true;
    }
  }
  if (!grows) largest.clear();
  return largest;
}

// The next run's inputs in a loop whose growing dims (RunOptions::growing_dims) grew since the previous run
// (`previous`): each such dim grown again by what it grew, every other input as now (a resized input loses
// its plan-time value: its contents are not known ahead). Empty when the sizes did not change that way
// (nothing grew, something else changed, a dim shrank or grew unevenly) or a limit would be passed.
std::vector<runtime::PlanInput> predicted_inputs(const std::vector<runtime::PlanInput>& now,
                                                 const std::vector<ops::TensorDesc>& previous,
                                                 const std::vector<TensorInfo>& infos,
                                                 const std::map<std::string, int64_t>& growing) {
  if (growing.empty() || previous.size() != now.size() || infos.size() != now.size()) return {};
  std::map<std::string, int64_t> growth;
  for (size_t i = 0; i < now.size(); ++i) {
    const ops::TensorDesc &a = now[i].desc, &b = previous[i];
    if (a.dtype != b.dtype || a.shape.size() != b.shape.size()) return {};
    for (size_t d = 0; d < a.shape.size(); ++d) {
      if (a.shape[d] == b.shape[d]) continue;
      const std::string* name = d < infos[i].dim_names.size() ? &infos[i].dim_names[d] : nullptr;
      if (!name || !growing.count(*name) || a.shape[d] < b.shape[d]) return {};
      const auto [it, inserted] = growth.emplace(*name, a.shape[d] - b.shape[d]);
      if (!inserted && it->second != a.shape[d] - b.shape[d]) return {};
    }
  }
  if (growth.empty()) return {};
  std::vector<runtime::PlanInput> next = now;
  for (size_t i = 0; i < next.size(); ++i) {
    std::vector<int64_t>& shape = next[i].desc.shape;
    for (size_t d = 0; d < shape.size() && d < infos[i].dim_names.size(); ++d) {
      const auto it = growth.find(infos[i].dim_names[d]);
      if (it == growth.end()) continue;
      shape[d] += it->second;
      if (shape[d] > growing.at(it->first)) return {};
      next[i].value = nullptr;
    }
  }
  return next;
}

std::vector<ops::TensorDesc> descs_of(const std::vector<runtime::PlanInput>& inputs) {
  std::vector<ops::TensorDesc> descs;
  for (const runtime::PlanInput& in : inputs) descs.push_back(in.desc);
  return descs;
}

// Whether the inputs' plan-time values are `values` (the same ones given, and the same bytes).
bool same_values(const std::vector<std::optional<Tensor>>& values,
                 const std::vector<runtime::PlanInput>& inputs) {
  if (values.size() != inputs.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* now = inputs[i].value;
    if (!values[i] || !now) {
      if (values[i].has_value() != (now != nullptr)) return false;
      continue;
    }
    if (values[i]->dtype() != now->dtype() || values[i]->shape() != now->shape() ||
        values[i]->byte_size() != now->byte_size() ||
        std::memcmp(values[i]->bytes().data(), now->bytes().data(), now->byte_size()) != 0)
      return false;
  }
  return true;
}

// The capabilities a session's plans are made for: the device's, computing in float16 where a kernel can
// when `precision` is "f16" (only on a device with the features those kernels need: never a silent f32).
gpu::Capabilities session_capabilities(const gpu::Device& device, const std::string& precision) {
  gpu::Capabilities caps = device.capabilities();
  if (precision == "f32") return caps;
  if (precision != "f16") {
    throw Error("SessionOptions::precision '" + precision + "' is not one wgi has (expected f32 or f16)");
  }
  const gpu::Features& f = caps.features;
  if (!f.subgroup_matrix_f16) {
    std::string lacks =
        std::string(f.shader_f16 ? "" : "shader-f16, ") + (f.subgroups ? "" : "subgroups, ") +
        "chromium-experimental-subgroup-matrix with f16 x f16 -> f32 16x16x16 on subgroups of 32";
    throw Error(
        "precision f16 needs an adapter with shader-f16, subgroups and chromium-experimental-subgroup-" +
        std::string("matrix; ") + device.adapter_info().device + " lacks " + lacks +
        ". Only the WebAssembly build asks for subgroup matrices (on NVIDIA through dawn.node with the " +
        "Dawn toggles allow_unsafe_apis,vulkan_enable_f16_on_nvidia); use precision f32 elsewhere");
  }
  caps.f16_compute = true;
  return caps;
}

std::string names_of(const std::vector<TensorInfo>& infos) {
  std::string out;
  for (const auto& i : infos) out += (out.empty() ? "" : ", ") + i.name;
  return out;
}

}  // namespace

struct Session::Impl {
  SessionOptions options;
  std::optional<Environment> environment;  // set by create_device() or use_environment()
  std::shared_ptr<gpu::Device> device;     // the environment's
  gpu::Capabilities caps;                  // what plans are made for: the device's, with options.precision
  graph::Graph graph;
  std::vector<TensorInfo> inputs;
  std::set<std::string> symbolic_dims;  // of the inputs, for RunOptions::growing_dims
  std::vector<TensorInfo> outputs;      // names as the model declares them, even if passes rewired the values
  std::unique_ptr<runtime::WeightStore> weights;
  std::shared_ptr<runtime::DeviceMemory> memory;  // DeviceTensors' memory; handles keep it (and the device)
  // Plans by input-shape signature, most recently used first, at most options.max_cached_plans.
  struct CachedPlan {
    std::string signature;
    std::unique_ptr<runtime::ExecutionPlan> plan;
    std::vector<std::string> served;  // signatures it served before being respecialized, oldest first
  };
  std::list<CachedPlan> plans;
  std::unordered_map<std::string, std::list<CachedPlan>::iterator> plan_index;
  std::unique_ptr<runtime::PlanSharing> node_plans;
  // Graphs with data-dependent shapes run in stages (docs/dynamic_shapes.md): the signatures whose plan
  // splits, and the runner with the stage plans (made at the first such signature).
  std::set<std::string> staged_signatures;
  std::unique_ptr<runtime::StagedRunner> staged;
  // Shared by every plan, so that an error recorded by a run whose outputs stayed on the device is reported
  // by the next run that downloads, whichever plan it uses, or by synchronize().
  std::unique_ptr<runtime::RunStatus> run_status;
  std::unique_ptr<gpu::TimestampProfiler> profiler;
  std::vector<NodeTiming> profile;
  std::string profiling_note;
  SessionStats stats;

  // GEMM tuning (docs/tuning.md): the cache file, this adapter's entries as the planner's table, and the hook
  // that hands the table to the planner and counts what it did with it.
  runtime::AdapterKey adapter;
  std::string kernels;  // ops::gemm_kernels_fingerprint()
  bool cache_enabled = false;
  std::shared_ptr<runtime::TuningCache>
      cache;  // the environment's copy of the file; a private empty one if off
  ops::GemmTuningTable table;
  ops::GemmTuning tuning;
  size_t planned_gemms = 0, planned_tuned_gemms = 0;
  // SessionOptions::plan_ahead: the previous run's input descriptions; the ones whose node plans the latest
  // run made during its GPU work, with their plan-time values, the node plans themselves (taken whole by a
  // next run with exactly those inputs), that planning's GEMM counts and the time it took.
  std::vector<ops::TensorDesc> previous_descs, ahead_descs;
  std::vector<std::optional<Tensor>> ahead_values;
  std::optional<runtime::NodePlans> ahead_plans;
  size_t ahead_gemms = 0, ahead_tuned_gemms = 0;
  double ahead_ms = 0;
  // RunOptions::inputs_as_data names that a node needed by value (planning failed or would stage): planned
  // by value since.
  std::set<std::string> as_data_refused;

  // A session is made in two parts that overlap (Session::from_file): its private environment's device, on
  // the calling thread, while another reads the model; then load() checks and optimises the graph and sets
  // up the device's stores. On a given Environment, use_environment() instead of create_device().
  void create_device();
  void use_environment(const Environment& given);
  void load(graph::Graph imported);
  static Session make(const SessionOptions& options, std::function<graph::Graph()> import,
                      const Environment* given);
  void init_tuning();
  // The GEMM problems a plan for `inputs` contains (those no attribute forces), with the nodes that use each
  // and whether the table has an entry the device runs for it. Plans without memo: every node reports.
  struct ProblemUses {
    size_t first = 0;  // in the order the plan meets them
    std::vector<std::string> nodes;
    bool tuned = false;
  };
  std::map<ops::GemmProblemKey, ProblemUses> gemm_problems(const std::vector<runtime::PlanInput>& inputs);
  // Measures the problems of `inputs`' plan that the table lacks (all with `force`), adds them to the table
  // and the cache, and saves the cache. Throws wgi::Error when the cache cannot be saved (the table keeps
  // the results); with `refuse_unsavable`, already before measuring when the file is not one save() would
  // replace.
  TuneReport tune_problems(const std::vector<runtime::PlanInput>& inputs, bool force, int runs,
                           bool refuse_unsavable);
  // Checks the inputs and returns them in graph order, with the shape signature of this call.
  std::vector<InputView> check_inputs(const std::map<std::string, InputView>& given,
                                      std::string& signature) const;
  // The plan for these inputs: from the cache, or made now (dropping the least recently used beyond the
  // capacity). Null when the graph must run in stages for them (staged_signatures). `growing`: as
  // RunOptions::growing_dims.
  runtime::ExecutionPlan* plan_for(const std::vector<InputView>& ordered, const std::string& signature,
                                   std::span<const runtime::InputSource> sources,
                                   const std::map<std::string, int64_t>& growing);
  // plan_for's steps after planning the nodes (`start`: when that began; `kernel_plans_ms`: what it took).
  // A cached plan with the same kernels rewritten for `signature` (respecialized), or null; `too_small` is
  // set to a cached plan with those kernels but too little room, if any.
  runtime::ExecutionPlan* respecialize_cached(runtime::NodePlans& planned,
                                              std::span<const runtime::InputSource> sources,
                                              const std::string& signature,
                                              std::chrono::steady_clock::time_point start,
                                              double kernel_plans_ms,
                                              std::list<CachedPlan>::iterator& too_small);
  // A new plan for `signature` (room from `capacity`, or grown from `too_small`, which it replaces), cached
  // first, the least recently used ones dropped beyond the capacity.
  runtime::ExecutionPlan* add_plan(runtime::NodePlans planned, const runtime::NodePlans* capacity,
                                   std::list<CachedPlan>::iterator too_small,
                                   std::span<const runtime::InputSource> sources,
                                   const std::string& signature, std::chrono::steady_clock::time_point start,
                                   double kernel_plans_ms);
  // SessionOptions::plan_ahead: what to do during this run's GPU work (nothing when no next sizes are
  // predicted), given its inputs; remembers them as the previous run's.
  std::function<void()> planning_ahead(const std::vector<InputView>& ordered,
                                       const std::map<std::string, int64_t>& growing);
  // What a run does with each output (RunOptions::device_outputs, RunOptions::outputs).
  enum class OutputUse { Download, KeepOnDevice, Unused };
  // Runs with outputs o for which `uses[o]` is KeepOnDevice copied into new DeviceTensors (returned in
  // `kept`); Unused ones come back as empty tensors.
  std::vector<Tensor> run(const std::map<std::string, InputView>& given, const std::vector<OutputUse>& uses,
                          std::vector<DeviceTensor>& kept,
                          const std::map<std::string, int64_t>& growing = {});
  std::vector<Tensor> run_in_stages(const std::vector<InputView>& ordered, const std::string& signature,
                                    std::span<const runtime::InputSource> sources,
                                    const std::vector<OutputUse>& uses, std::vector<DeviceTensor>& kept);
};

void Session::Impl::create_device() {
  environment = Environment::create(options.environment_options());
  device = environment->impl_->device;
  stats.load.device_ms = environment->device_ms();
}

void Session::Impl::use_environment(const Environment& given) {
  const EnvironmentOptions& chosen = given.options();
  const auto differs = [](const std::string& asked, const std::string& has) {
    return !asked.empty() && asked != has;
  };
  if (differs(options.backend, chosen.backend) || differs(options.adapter, chosen.adapter) ||
      (options.shader_robustness && !chosen.shader_robustness)) {
    const auto describe = [](const EnvironmentOptions& o) {
      return "backend '" + o.backend + "', adapter '" + o.adapter + "', shader_robustness " +
             (o.shader_robustness ? "on" : "off");
    };
    throw Error("SessionOptions ask for " + describe(options.environment_options()) +
                ", but the session is made on an Environment created with " + describe(chosen) +
                ": choose the device in EnvironmentOptions (or leave these SessionOptions empty)");
  }
  environment = given;
  device = given.impl_->device;
}

void Session::Impl::load(graph::Graph imported) {
  auto start = std::chrono::steady_clock::now();
  graph = std::move(imported);
  caps = session_capabilities(*device, options.precision);
  const ops::OpRegistry& registry = ops::builtin_registry();
  if (const auto& tc = options.token_candidates)
    graph::add_token_candidates(graph, tc->logits, tc->top_k, tc->log_sum_exp);
  auto unsupported = onnx::find_unsupported(graph, registry);
  if (!unsupported.empty()) throw Error(onnx::format_unsupported(unsupported));
  for (graph::ValueId v : graph.inputs) inputs.push_back(describe_value(graph.value(v)));
  symbolic_dims = symbolic_dim_names(inputs);
  for (graph::ValueId v : graph.outputs) outputs.push_back(describe_value(graph.value(v)));
  graph::optimize(graph, registry, graph::DisabledPasses::from_environment(options.disabled_passes));
  stats.load.optimize_ms = ms_since(start);

  weights = std::make_unique<runtime::WeightStore>(*device);
  memory = std::make_shared<runtime::DeviceMemory>(device);
  node_plans = std::make_unique<runtime::PlanSharing>(options.max_cached_plans);
  node_plans->reuse_unchanged_nodes = options.reuse_unchanged_nodes;
  run_status = std::make_unique<runtime::RunStatus>(*device);
  init_tuning();
  if (options.profiling) {
    if (device->features().timestamp_query) {
      profiling_note = "per-dispatch GPU time from timestamp queries";
    } else {
      profiling_note = "the adapter (" + device->adapter_info().device +
                       ") has no timestamp-query feature: no per-node GPU times";
    }
  }
  stats.load.nodes = graph.nodes.size();
  stats.load.ms = ms_since(start);
}

void Session::Impl::init_tuning() {
  adapter = runtime::adapter_key(*device);
  kernels = ops::gemm_kernels_fingerprint();
  if (options.use_tuning_cache) {
    const std::filesystem::path path =
        options.tuning_cache.empty() ? runtime::default_tuning_cache_path() : options.tuning_cache;
    cache_enabled = !path.empty();
    if (cache_enabled) {
      cache = environment->impl_->tuning_cache(path);
      table = cache->table_for(adapter, kernels);
    }
  }
  if (!cache) cache = std::make_shared<runtime::TuningCache>();
  tuning.table = &table;
  tuning.observe = [this](const ops::GemmProblemUse& use) {
    ++planned_gemms;
    planned_tuned_gemms += use.from_table ? 1 : 0;
    if (!use.ignored.empty()) {
      runtime::warn_once("the tuned configuration for the GEMM " + ops::to_string(use.problem) +
                         " does not run on this device (" + use.ignored + "); the planner's rules apply");
    }
  };
}

std::map<ops::GemmProblemKey, Session::Impl::ProblemUses> Session::Impl::gemm_problems(
    const std::vector<runtime::PlanInput>& plan_inputs) {
  std::map<ops::GemmProblemKey, ProblemUses> problems;
  ops::GemmTuning collect;
  collect.table = &table;
  collect.observe = [&problems](const ops::GemmProblemUse& use) {
    if (use.forced) return;  // node attributes win over any entry: nothing to tune
    auto [it, inserted] = problems.try_emplace(use.problem);
    ProblemUses& p = it->second;
    if (inserted) p.first = problems.size();
    const std::string name = use.node && !use.node->name.empty() ? use.node->name : "(unnamed)";
    if (std::find(p.nodes.begin(), p.nodes.end(), name) == p.nodes.end()) p.nodes.push_back(name);
    p.tuned |= use.from_table;
  };
  runtime::plan_nodes(graph, ops::builtin_registry(), caps, plan_inputs, {}, nullptr, nullptr, &collect);
  return problems;
}

TuneReport Session::Impl::tune_problems(const std::vector<runtime::PlanInput>& plan_inputs, bool force,
                                        int runs, bool refuse_unsavable) {
  TuneReport report;
  report.adapter = runtime::to_string(adapter);
  if (cache_enabled) report.cache_path = cache->path().string();
  // A file that save() would refuse to replace, or a directory it cannot create: say so before minutes of
  // measuring, not after.
  if (refuse_unsavable && cache_enabled) {
    if (!cache->problem().empty()) {
      throw Error("the tuning cache " + cache->path().string() + " is not one this build can update (" +
                  cache->problem() + "); not overwriting it: remove it, or use another path");
    }
    cache->create_directory();
  }
  const auto problems = gemm_problems(plan_inputs);
  // The candidates of every problem to measure, counted first for the progress callback.
  size_t total = 0, done = 0;
  for (const auto& [key, uses] : problems) {
    if (force || !uses.tuned) total += runtime::gemm_candidates(key, caps).size();
  }
  std::vector<std::pair<ops::GemmProblemKey, const ProblemUses*>> ordered;
  for (const auto& [key, uses] : problems) ordered.emplace_back(key, &uses);
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.second->first < b.second->first; });
  bool measured_any = false;
  for (const auto& [key, uses_pointer] : ordered) {
    const ProblemUses& uses = *uses_pointer;
    TunedProblem t;
    t.problem = ops::to_string(key);
    t.nodes = uses.nodes;
    if (!force && uses.tuned) {
      t.tuned_config = ops::to_string(*table.find(key));
      if (const runtime::TuningEntry* e = cache->find(adapter, kernels, key)) {
        t.default_config = ops::to_string(e->record.default_choice);
        t.default_ms = e->record.default_ms;
        t.tuned_ms = e->record.tuned_ms;
        t.candidates = e->record.candidates;
        t.timer = e->record.timer;
      }
      report.problems.push_back(std::move(t));
      continue;
    }
    runtime::GemmTuneOptions tune_options;
    tune_options.runs = runs;
    if (options.progress) {
      tune_options.progress = [this, &done, total](size_t d, size_t) {
        options.progress(done + d, total, "tuning");
      };
    }
    const runtime::GemmTuneResult result = runtime::tune_gemm(*device, key, tune_options);
    done += result.candidates.size();
    table.set(key, result.best);
    runtime::TuningEntry entry;
    entry.adapter = adapter;
    entry.kernels = kernels;
    entry.problem = key;
    entry.choice = result.best;
    entry.record.tuned_ms = result.best_ms;
    entry.record.default_ms = result.default_ms;
    entry.record.default_choice = result.default_choice;
    entry.record.candidates = static_cast<uint32_t>(result.candidates.size());
    entry.record.runs = static_cast<uint32_t>(result.runs);
    entry.record.timer = result.timer;
    if (cache_enabled) cache->set(std::move(entry));
    measured_any = true;
    t.measured = true;
    t.default_config = ops::to_string(result.default_choice);
    t.tuned_config = ops::to_string(result.best);
    t.default_ms = result.default_ms;
    t.tuned_ms = result.best_ms;
    t.candidates = result.candidates.size();
    t.mismatches = result.mismatches;
    t.timer = result.timer;
    report.problems.push_back(std::move(t));
  }
  if (measured_any && cache_enabled) {
    cache->save();
    report.saved = true;
  }
  return report;
}

std::vector<InputView> Session::Impl::check_inputs(const std::map<std::string, InputView>& given,
                                                   std::string& signature) const {
  std::vector<InputView> ordered;
  std::map<std::string, int64_t> symbols;
  for (const TensorInfo& info : inputs) {
    auto it = given.find(info.name);
    if (it == given.end())
      throw Error("input '" + info.name + "' is missing (the model's inputs: " + names_of(inputs) + ")");
    InputView t = it->second;
    if (t.device) {
      if (!t.device->memory) {
        throw Error("input '" + info.name + "': its DeviceTensor " + shape_to_string(t.device->desc.shape) +
                    " was released");
      }
      if (&t.device->memory->device() != device.get()) {
        throw Error("input '" + info.name + "': its DeviceTensor " + std::string(runtime::kOtherDevice));
      }
    }
    const Shape& shape = t.shape();
    const int64_t rank = static_cast<int64_t>(shape.size());
    if (t.dtype() != info.dtype) {
      throw Error("input '" + info.name + "' has type " + std::string(dtype_name(t.dtype())) +
                  "; the model expects " + std::string(dtype_name(info.dtype)));
    }
    if (!info.dims.empty() || rank == 0) {
      if (static_cast<size_t>(rank) != info.dims.size()) {
        throw Error("input '" + info.name + "' has shape " + shape_to_string(shape) + " (rank " +
                    std::to_string(rank) + "); the model expects rank " + std::to_string(info.dims.size()));
      }
    }
    for (size_t d = 0; d < info.dims.size(); ++d) {
      const int64_t got = shape[d];
      if (info.dims[d] >= 0 && got != info.dims[d]) {
        throw Error("input '" + info.name + "' has shape " + shape_to_string(shape) + "; dim " +
                    std::to_string(d) + " must be " + std::to_string(info.dims[d]));
      }
      const std::string& symbol = info.dim_names[d];
      if (!symbol.empty()) {
        auto [sym, inserted] = symbols.emplace(symbol, got);
        if (!inserted && sym->second != got) {
          throw Error("input '" + info.name + "' dim " + std::to_string(d) + " ('" + symbol + "') is " +
                      std::to_string(got) + ", but another input set '" + symbol + "' to " +
                      std::to_string(sym->second));
        }
      }
    }
    // Small inputs are planned with by value (shape-like inputs): a small device tensor is read back once.
    if (t.device && !t.as_data && !t.device->small_value &&
        element_count(shape) <= runtime::kHostVisibleInputElements)
      t.device->small_value = runtime::read_tensor(*device, t.device->slice(), t.device->desc);
    ordered.push_back(t);
    signature += shape_to_string(shape);
    if (const Tensor* value = t.value()) {
      // Small inputs are planned with by value (shape-like inputs), so their value is part of the key.
      signature += "=";
      signature.append(reinterpret_cast<const char*>(value->bytes().data()), value->byte_size());
    }
    signature += ";";
  }
  for (const auto& entry : given) {
    const std::string& name = entry.first;
    bool known =
        std::any_of(inputs.begin(), inputs.end(), [&name](const TensorInfo& i) { return i.name == name; });
    if (!known) throw Error("the model has no input '" + name + "' (its inputs: " + names_of(inputs) + ")");
  }
  return ordered;
}

runtime::ExecutionPlan* Session::Impl::plan_for(const std::vector<InputView>& ordered,
                                                const std::string& signature,
                                                std::span<const runtime::InputSource> sources,
                                                const std::map<std::string, int64_t>& growing) {
  auto found = plan_index.find(signature);
  if (found != plan_index.end()) {
    plans.splice(plans.begin(), plans, found->second);  // most recently used first
    return plans.front().plan.get();
  }
  const std::vector<runtime::PlanInput> plan_inputs = plan_inputs_of(ordered);
  if (options.tune) {
    // Before planning, so that no node plan (memoised for later plans too) is made without its entry. A
    // cache file that cannot be saved still leaves this session its measurements; a failure leaves the
    // rules for the problems not measured (and planning reports real errors itself).
    try {
      tune_problems(plan_inputs, false, options.tune_runs, false);
    } catch (const Error& e) {
      runtime::warn_once(std::string("GEMM tuning: ") + e.what());
    }
  }
  const auto start = std::chrono::steady_clock::now();
  std::function<void(size_t, size_t)> progress;
  if (options.progress) {
    progress = [this](size_t done, size_t total) { options.progress(done, total, "planning"); };
  }
  planned_gemms = planned_tuned_gemms = 0;
  const bool predicted = !ahead_descs.empty() && ahead_descs == descs_of(plan_inputs);
  runtime::NodePlans planned;
  const bool whole = predicted && ahead_plans && same_values(ahead_values, plan_inputs);
  if (whole) {
    // Everything the planner would see is what it saw during the previous run's GPU work.
    planned = std::move(*ahead_plans);
    planned_gemms = ahead_gemms;
    planned_tuned_gemms = ahead_tuned_gemms;
    ++stats.plans.ahead_whole;
  } else {
    std::optional<runtime::StageEnd> stage_end;
    planned = runtime::plan_nodes(graph, ops::builtin_registry(), caps, plan_inputs, progress, nullptr,
                                  node_plans.get(), &tuning, &stage_end);
    if (stage_end) return nullptr;
  }
  ahead_plans.reset();
  ahead_values.clear();
  const double kernel_plans_ms = ms_since(start);
  // Node plans taken whole were all planned ahead: none on this run's critical path.
  stats.last_plan.unchanged_nodes = planned.unchanged + (whole ? planned.replanned : 0);
  stats.last_plan.replanned_nodes = whole ? 0 : planned.replanned;
  stats.last_plan.planned_ahead_ms = predicted ? ahead_ms : 0;
  stats.plans.ahead_hits += predicted ? 1 : 0;
  ahead_descs.clear();
  stats.last_plan.gemms = planned_gemms;
  stats.last_plan.tuned_gemms = planned_tuned_gemms;
  std::list<CachedPlan>::iterator too_small = plans.end();
  if (options.respecialize_plans) {
    if (runtime::ExecutionPlan* plan =
            respecialize_cached(planned, sources, signature, start, kernel_plans_ms, too_small))
      return plan;
  }
  // A first plan for sizes that will grow (RunOptions::growing_dims) takes its room from the node plans
  // at the largest sizes. Only room: a failure there (e.g. a limit beyond what the model accepts) leaves
  // the plan exact, to grow by doubling.
  std::optional<runtime::NodePlans> capacity;
  if (too_small == plans.end() && !growing.empty()) {
    const std::vector<runtime::PlanInput> largest = capacity_inputs(plan_inputs, inputs, growing);
    if (!largest.empty()) {
      try {
        std::optional<runtime::StageEnd> capacity_stage_end;
        capacity = runtime::plan_nodes(graph, ops::builtin_registry(), caps, largest, {}, nullptr,
                                       node_plans.get(), &tuning, &capacity_stage_end);
      } catch (const Error& e) {
        runtime::warn_once(std::string("RunOptions::growing_dims: the largest sizes do not plan (") +
                           e.what() + "); plans grow by doubling instead");
      }
    }
  }
  return add_plan(std::move(planned), capacity ? &*capacity : nullptr, too_small, sources, signature, start,
                  kernel_plans_ms);
}

runtime::ExecutionPlan* Session::Impl::respecialize_cached(runtime::NodePlans& planned,
                                                           std::span<const runtime::InputSource> sources,
                                                           const std::string& signature,
                                                           std::chrono::steady_clock::time_point start,
                                                           double kernel_plans_ms,
                                                           std::list<CachedPlan>::iterator& too_small) {
  // Unless one of the cached plans served this signature before: shapes that come back get a plan of their
  // own, so that alternating shapes hit the cache instead of rewriting one plan back and forth.
  const bool recurring = std::any_of(plans.begin(), plans.end(), [&signature](const CachedPlan& p) {
    return std::find(p.served.begin(), p.served.end(), signature) != p.served.end();
  });
  if (recurring) return nullptr;
  for (auto it = plans.begin(); it != plans.end(); ++it) {
    const auto rewrite_start = std::chrono::steady_clock::now();
    const runtime::Respecialized result = it->plan->respecialize(planned, sources);
    if (result == runtime::Respecialized::NeedsMoreRoom && too_small == plans.end()) too_small = it;
    if (result != runtime::Respecialized::Done) continue;
    // Served history bounded like the cache: a signature older than that would have been evicted anyway.
    plan_index.erase(it->signature);
    it->served.push_back(std::move(it->signature));
    if (it->served.size() > options.max_cached_plans) it->served.erase(it->served.begin());
    it->signature = signature;
    plans.splice(plans.begin(), plans, it);
    plan_index[signature] = plans.begin();
    runtime::ExecutionPlan& plan = *plans.front().plan;
    stats.last_plan.ms = ms_since(start);
    stats.last_plan.kernel_plans_ms = kernel_plans_ms;
    stats.last_plan.memory_ms = stats.last_plan.pipelines_ms = stats.last_plan.weight_uploads_ms = 0;
    stats.last_plan.bind_ms = ms_since(rewrite_start);
    stats.last_plan.reused_nodes = plan.reused_node_plans();
    stats.last_plan.gpu_nodes = plan.gpu_node_count();
    stats.last_plan.respecialized = true;
    ++stats.plans.respecialized;
    return &plan;
  }
  return nullptr;
}

runtime::ExecutionPlan* Session::Impl::add_plan(
    runtime::NodePlans planned, const runtime::NodePlans* capacity, std::list<CachedPlan>::iterator too_small,
    std::span<const runtime::InputSource> sources, const std::string& signature,
    std::chrono::steady_clock::time_point start, double kernel_plans_ms) {
  // Drop the least recently used plans first, so that at most max_cached_plans exist at any time (the one
  // this plan grows from, which it replaces, meanwhile too).
  const size_t replaced = too_small != plans.end() ? 1 : 0;
  for (auto it = plans.end(); it != plans.begin() && plans.size() - replaced >= options.max_cached_plans;) {
    --it;
    if (it == too_small) continue;
    plan_index.erase(it->signature);
    it = plans.erase(it);
  }
  const size_t pipelines_before = device->pipelines().size();
  auto plan = std::make_unique<runtime::ExecutionPlan>(
      *device, graph, *weights, std::move(planned), kernel_plans_ms, node_plans.get(), sources,
      runtime::PlanRoom{too_small != plans.end() ? too_small->plan.get() : nullptr, capacity},
      run_status.get());
  stats.device.pipelines_compiled += device->pipelines().size() - pipelines_before;
  // The plan it grew from (the same kernels, too little room) is replaced by it.
  std::vector<std::string> served;
  if (too_small != plans.end()) {
    served = std::move(too_small->served);
    served.push_back(too_small->signature);
    plan_index.erase(too_small->signature);
    plans.erase(too_small);
  }
  stats.last_plan.ms = ms_since(start);
  const runtime::PlanPhases& phases = plan->phases();
  stats.last_plan.kernel_plans_ms = phases.kernel_plans;
  stats.last_plan.memory_ms = phases.memory;
  stats.last_plan.pipelines_ms = phases.pipelines;
  stats.last_plan.weight_uploads_ms = phases.weight_uploads;
  stats.last_plan.bind_ms = phases.bind;
  stats.last_plan.reused_nodes = plan->reused_node_plans();
  stats.last_plan.gpu_nodes = plan->gpu_node_count();
  stats.last_plan.respecialized = false;
  ++stats.plans.made;
  plans.push_front({signature, std::move(plan), std::move(served)});
  stats.memory.weight_bytes = weights->bytes() + node_plans->constant_bytes();
  plan_index[signature] = plans.begin();
  return plans.front().plan.get();
}

std::function<void()> Session::Impl::planning_ahead(const std::vector<InputView>& ordered,
                                                    const std::map<std::string, int64_t>& growing) {
  const std::vector<runtime::PlanInput> now = plan_inputs_of(ordered);
  std::vector<ops::TensorDesc> previous = std::exchange(previous_descs, descs_of(now));
  // Tuning measures a signature's GEMMs before its node plans are made (plan_for): not ahead.
  if (!options.plan_ahead || options.tune || growing.empty()) return {};
  std::vector<runtime::PlanInput> next = predicted_inputs(now, previous, inputs, growing);
  if (next.empty()) return {};
  return [this, next = std::move(next)] {
    const auto start = std::chrono::steady_clock::now();
    const size_t gemms = planned_gemms, tuned = planned_tuned_gemms;
    try {
      planned_gemms = planned_tuned_gemms = 0;
      std::optional<runtime::StageEnd> stage_end;
      runtime::NodePlans made = runtime::plan_nodes(graph, ops::builtin_registry(), caps, next, {}, nullptr,
                                                    node_plans.get(), &tuning, &stage_end);
      ahead_descs = descs_of(next);
      ahead_values.clear();
      for (const runtime::PlanInput& in : next)
        ahead_values.push_back(in.value ? std::optional<Tensor>(*in.value) : std::nullopt);
      if (!stage_end) ahead_plans = std::move(made);
      ahead_gemms = planned_gemms;
      ahead_tuned_gemms = planned_tuned_gemms;
      ahead_ms = ms_since(start);
      ++stats.plans.planned_ahead;
    } catch (const std::exception&) {
      // Sizes the model does not accept (e.g. past a position table), or anything else: guesses never fail
      // the run that made them. If those sizes do come, their own run reports the error.
      ahead_descs.clear();
      ahead_plans.reset();
    }
    planned_gemms = gemms;
    planned_tuned_gemms = tuned;
  };
}

std::vector<Tensor> Session::Impl::run(const std::map<std::string, InputView>& given,
                                       const std::vector<OutputUse>& uses, std::vector<DeviceTensor>& kept,
                                       const std::map<std::string, int64_t>& growing) {
  std::string signature;
  std::vector<InputView> ordered = check_inputs(given, signature);
  std::vector<runtime::InputSource> sources;
  for (const InputView& t : ordered) {
    if (t.host) {
      sources.push_back({t.host, {}, 0});
    } else {
      sources.push_back({nullptr, t.device->slice(), t.device->id});
    }
  }
  const bool any_as_data =
      std::any_of(ordered.begin(), ordered.end(), [](const InputView& t) { return t.as_data; });
  runtime::ExecutionPlan* planned = nullptr;
  try {
    if (!staged_signatures.count(signature)) planned = plan_for(ordered, signature, sources, growing);
  } catch (const Error&) {
    if (!any_as_data) throw;  // else planned again by value below, which reports an error of its own
  }
  if (!planned) {
    // Inputs given as data (RunOptions::inputs_as_data) that a node needs by value (planning fails, or the
    // graph would run in stages): by value from now on.
    std::map<std::string, InputView> by_value = given;
    std::string refused;
    for (auto& [name, view] : by_value) {
      if (!view.as_data) continue;
      view.as_data = false;
      as_data_refused.insert(name);
      refused += (refused.empty() ? "'" : ", '") + name + "'";
    }
    if (!refused.empty()) {
      runtime::warn_once(
          "RunOptions::inputs_as_data: " + refused +
          " planned by value instead (the graph needs a value it does not know when planning)");
      return run(by_value, uses, kept, growing);
    }
    return run_in_stages(ordered, signature, sources, uses, kept);
  }
  runtime::ExecutionPlan& plan = *planned;
  stats.plans.cached = plans.size();
  stats.plans.dispatches = plan.dispatch_count();
  stats.memory.peak_activation_bytes = plan.activation_bytes();
  stats.device.pipelines = device->pipelines().size();

  gpu::TimestampProfiler* timer = nullptr;
  if (options.profiling && device->features().timestamp_query) {
    const uint32_t needed = static_cast<uint32_t>(std::max<size_t>(1, plan.dispatch_count()));
    if (!profiler || profiler->capacity() < needed) {
      profiler = std::make_unique<gpu::TimestampProfiler>(*device, needed);
    }
    timer = profiler.get();
  }
  kept.assign(outputs.size(), DeviceTensor());
  std::vector<gpu::BufferSlice> targets(outputs.size());
  std::vector<bool> unused(outputs.size(), false);
  for (size_t o = 0; o < outputs.size(); ++o) {
    unused[o] = uses[o] == OutputUse::Unused;
    if (uses[o] != OutputUse::KeepOnDevice) continue;
    kept[o] = memory->allocate(plan.output_desc(o));
    targets[o] = detail::DeviceTensorState::of(kept[o])->slice();
  }
  std::vector<Tensor> results = plan.run(sources, targets, timer, planning_ahead(ordered, growing), unused);
  stats.device.buffers_created = device->buffers_created();
  if (timer) {
    std::vector<double> ms = timer->read(static_cast<uint32_t>(plan.dispatch_count()));
    profile.clear();
    for (const runtime::PlannedStep& step : plan.steps()) {
      const graph::Node& node = *step.node;
      NodeTiming t{node.info.name, node.info.op_type, step.kernel, 0.0};
      for (size_t d = 0; d < step.dispatch_count; ++d) t.gpu_ms += ms[step.first_dispatch + d];
      profile.push_back(std::move(t));
    }
  }
  return results;
}

std::vector<Tensor> Session::Impl::run_in_stages(const std::vector<InputView>& ordered,
                                                 const std::string& signature,
                                                 std::span<const runtime::InputSource> sources,
                                                 const std::vector<OutputUse>& uses,
                                                 std::vector<DeviceTensor>& kept) {
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (uses[o] == OutputUse::KeepOnDevice) {
      throw Error("output '" + outputs[o].name +
                  "' was asked for on the device, but this model's shapes depend on the data, so it runs in "
                  "stages (docs/dynamic_shapes.md) and returns its outputs on the host");
    }
  }
  // Bounded like the plan cache's history: a signature forgotten here only costs planning its first stage.
  if (staged_signatures.size() >= 16 * options.max_cached_plans) staged_signatures.clear();
  staged_signatures.insert(signature);
  if (!staged) {
    staged = std::make_unique<runtime::StagedRunner>(*device, caps, graph, ops::builtin_registry(), *weights,
                                                     node_plans.get(), run_status.get(), &tuning,
                                                     4 * options.max_cached_plans);
  }
  kept.assign(outputs.size(), DeviceTensor());
  std::vector<Tensor> results = staged->run(sources, plan_inputs_of(ordered));
  const runtime::StagedRunner::RunReport& report = staged->last_run();
  stats.plans.made += report.plans_made;
  stats.plans.dispatches = report.dispatches;
  stats.plans.cached = plans.size();
  stats.device.buffers_created = device->buffers_created();
  profile.clear();
  return results;
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

Session Session::Impl::make(const SessionOptions& options, std::function<graph::Graph()> import,
                            const Environment* given) {
  if (options.max_cached_plans == 0) throw Error("SessionOptions::max_cached_plans must be at least 1");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (given) {
    impl->use_environment(*given);
    const auto start = std::chrono::steady_clock::now();
    graph::Graph model = import();
    impl->stats.load.import_ms = ms_since(start);
    impl->load(std::move(model));
    return Session(std::move(impl));
  }
  // Reading a model (hundreds of MB of weights) and creating the device take comparable time
  // (docs/performance.md, "Measurements behind the planner's rules"), so they overlap: the import on another
  // thread, the device on this one, which then uses it (an OpenGL ES context belongs to the thread that made
  // it). Without threads (the browser build) the import runs when its result is asked for.
#ifdef __EMSCRIPTEN__
  constexpr auto policy = std::launch::deferred;
#else
  constexpr auto policy = std::launch::async;
#endif
  auto imported = std::async(policy, [&import] {
    const auto start = std::chrono::steady_clock::now();
    graph::Graph model = import();
    return std::make_pair(std::move(model), ms_since(start));
  });
  impl->create_device();
  auto [model, import_ms] = imported.get();
  impl->load(std::move(model));
  impl->stats.load.import_ms = import_ms;
  return Session(std::move(impl));
}

Session Session::from_file(const std::filesystem::path& path, const SessionOptions& options) {
  return Impl::make(
      options, [&path] { return onnx::import_model_file(path); }, nullptr);
}

Session Session::from_file(const std::filesystem::path& path, const Environment& environment,
                           const SessionOptions& options) {
  return Impl::make(
      options, [&path] { return onnx::import_model_file(path); }, &environment);
}

Session Session::from_bytes(std::span<const std::byte> model, const SessionOptions& options,
                            const std::filesystem::path& base_dir) {
  return Impl::make(
      options, [&model, &base_dir] { return onnx::import_model(model, base_dir); }, nullptr);
}

Session Session::from_bytes(std::span<const std::byte> model, const Environment& environment,
                            const SessionOptions& options, const std::filesystem::path& base_dir) {
  return Impl::make(
      options, [&model, &base_dir] { return onnx::import_model(model, base_dir); }, &environment);
}

const std::vector<TensorInfo>& Session::inputs() const {
  return impl_->inputs;
}
const std::vector<TensorInfo>& Session::outputs() const {
  return impl_->outputs;
}
const SessionStats& Session::stats() const {
  impl_->stats.memory.device_tensor_bytes = impl_->memory->live_bytes();
  impl_->stats.device.buffers_created = impl_->device->buffers_created();
  return impl_->stats;
}
const std::vector<NodeTiming>& Session::last_profile() const {
  return impl_->profile;
}
std::string Session::profiling_note() const {
  return impl_->profiling_note;
}

uint64_t Session::max_buffer_size() const {
  return impl_->device->limits().max_buffer_size;
}

bool Session::has_timestamps() const {
  return impl_->device->features().timestamp_query;
}

std::string Session::adapter_description() const {
  return impl_->environment->adapter_description();
}

const Environment& Session::environment() const {
  return *impl_->environment;
}

std::string Session::tuning_note() const {
  const Impl& s = *impl_;
  if (!s.cache->loaded()) return "";
  size_t stale = 0;
  for (const runtime::TuningEntry& e : s.cache->entries())
    stale += e.adapter == s.adapter && e.kernels != s.kernels;
  std::string note = "tuning cache " + s.cache->path().string() + ": " +
                     std::to_string(s.cache->count_for(s.adapter, s.kernels)) +
                     " entries for this adapter (" + std::to_string(s.cache->entries().size()) +
                     " in the file";
  if (stale) note += ", " + std::to_string(stale) + " measured on other GEMM kernels: ignored until re-tuned";
  return note + ")";
}

TuneReport Session::tune(const std::map<std::string, Tensor>& inputs, const TuneOptions& options) {
  Impl& s = *impl_;
  std::map<std::string, InputView> given;
  for (const auto& entry : inputs) given[entry.first] = InputView{&entry.second, nullptr};
  std::string signature;
  const std::vector<InputView> ordered = s.check_inputs(given, signature);
  const std::vector<runtime::PlanInput> plan_inputs = plan_inputs_of(ordered);
  const ops::GemmTuningTable before = s.table;
  auto drop_plans = [&s, &before] {
    // Plans and memoised node plans made with the old table would keep the old configurations.
    if (s.table.entries() == before.entries()) return;
    s.plans.clear();
    s.plan_index.clear();
    s.node_plans = std::make_unique<runtime::PlanSharing>(s.options.max_cached_plans);
    s.node_plans->reuse_unchanged_nodes = s.options.reuse_unchanged_nodes;
    s.staged.reset();  // its plans and node plans were made with the old table (and it points at the old one)
    s.ahead_plans.reset();  // made with the old table too
    s.ahead_descs.clear();
    s.stats.plans.cached = 0;
  };
  try {
    TuneReport report = s.tune_problems(plan_inputs, options.force, options.runs, true);
    drop_plans();
    return report;
  } catch (...) {
    drop_plans();
    throw;
  }
}

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, InputView> given;
  for (const auto& entry : inputs) given[entry.first] = InputView{&entry.second, nullptr};
  std::vector<DeviceTensor> kept;
  std::vector<Tensor> results =
      impl_->run(given, std::vector<Impl::OutputUse>(impl_->outputs.size(), Impl::OutputUse::Download), kept);
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < results.size(); ++i) named[impl_->outputs[i].name] = std::move(results[i]);
  return named;
}

std::map<std::string, Value> Session::run(const std::map<std::string, Value>& inputs,
                                          const RunOptions& options) {
  Impl& s = *impl_;
  std::map<std::string, InputView> given;
  for (const auto& entry : inputs) {
    if (!entry.second.on_device()) {
      given[entry.first] = InputView{&entry.second.host(), nullptr};
      continue;
    }
    const auto& state = detail::DeviceTensorState::of(entry.second.device());
    if (!state)
      throw Error("input '" + entry.first + "' is an empty DeviceTensor (default-constructed or moved from)");
    given[entry.first] = InputView{nullptr, state.get()};
  }
  for (const std::string& name : options.inputs_as_data) {
    if (std::none_of(s.inputs.begin(), s.inputs.end(),
                     [&name](const TensorInfo& i) { return i.name == name; })) {
      throw Error("RunOptions::inputs_as_data names '" + name +
                  "', which is not an input of the model (its inputs: " + names_of(s.inputs) + ")");
    }
    auto it = given.find(name);
    if (it != given.end() && !s.as_data_refused.count(name)) it->second.as_data = true;
  }
  using Use = Impl::OutputUse;
  const auto output_index = [&s](const std::string& name, const char* option) {
    auto it = std::find_if(s.outputs.begin(), s.outputs.end(),
                           [&name](const TensorInfo& o) { return o.name == name; });
    if (it == s.outputs.end()) {
      throw Error(std::string("RunOptions::") + option + " names '" + name +
                  "', which is not an output of the model (its outputs: " + names_of(s.outputs) + ")");
    }
    return static_cast<size_t>(it - s.outputs.begin());
  };
  std::vector<Use> uses(s.outputs.size(), options.outputs.empty() ? Use::Download : Use::Unused);
  for (const std::string& name : options.outputs) uses[output_index(name, "outputs")] = Use::Download;
  for (size_t o = 0; o < uses.size(); ++o) {
    if (options.all_outputs_on_device && uses[o] == Use::Download) uses[o] = Use::KeepOnDevice;
  }
  for (const std::string& name : options.device_outputs) {
    const size_t o = output_index(name, "device_outputs");
    if (uses[o] == Use::Unused) {
      throw Error("RunOptions::device_outputs names '" + name + "', which RunOptions::outputs leaves out");
    }
    uses[o] = Use::KeepOnDevice;
  }
  check_growing_dims(options.growing_dims, s.symbolic_dims);
  std::vector<DeviceTensor> kept;
  std::vector<Tensor> results = s.run(given, uses, kept, options.growing_dims);
  std::map<std::string, Value> named;
  for (size_t i = 0; i < results.size(); ++i) {
    if (uses[i] == Use::KeepOnDevice) {
      named[s.outputs[i].name] = std::move(kept[i]);
    } else if (uses[i] == Use::Download) {
      named[s.outputs[i].name] = std::move(results[i]);
    }
  }
  return named;
}

DeviceTensor Session::upload(const Tensor& tensor) {
  return impl_->memory->upload(tensor);
}

DeviceTensor Session::gather_rows(const DeviceTensor& tensor, std::span<const int64_t> rows) {
  return impl_->memory->gather_rows(tensor, rows);
}

std::vector<DeviceTensor> Session::gather_rows(std::span<const DeviceTensor> tensors,
                                               std::span<const int64_t> rows) {
  return impl_->memory->gather_rows(tensors, rows);
}

void Session::synchronize() {
  impl_->device->wait_idle();
  const graph::Graph& graph = impl_->graph;
  impl_->run_status->synchronize([&graph](uint32_t tag) { return runtime::node_of_tag(graph, tag); });
}

}  // namespace wgi
