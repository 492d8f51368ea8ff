// What the benchmarks share: their device, the size switch, and GPU timing (runs encoded many times into one
// submission, so that submission latency is amortised, timed as Google Benchmark's manual time; one
// benchmark iteration is one run).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/commands.h"
#include "gpu/device.h"
#include "runtime/node_runner.h"

namespace wgi::bench {

// The benchmarks' one device, made on first use.
inline gpu::Device& device() {
  static std::shared_ptr<gpu::Device> d = gpu::Device::create();
  return *d;
}

// WGI_BENCH_SIZE=large: the sizes of the H200 campaigns instead of the CPU adapters' small ones.
inline bool large() {
  const char* v = std::getenv("WGI_BENCH_SIZE");
  return v && std::string(v) == "large";
}

// Google Benchmark's main after the program has registered its benchmarks: 1 for an unknown flag.
inline int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// `encode(batch)` records one run. Chooses enough runs per submission for about 20 ms of GPU work (at most
// `max_runs`), then times submissions of that many until `state` has enough iterations. Returns the runs per
// submission (the runs_per_submit counter).
template <class Encode>
int time_runs_in_submissions(benchmark::State& state, gpu::Device& device, Encode&& encode,
                             int max_runs = 4096) {
  auto time_batch = [&](int repeats) {
    const auto start = std::chrono::steady_clock::now();
    gpu::CommandBatch batch(device);
    for (int i = 0; i < repeats; ++i) encode(batch);
    batch.submit();
    device.wait_idle();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  int repeats = 1;
  for (double s = time_batch(1); s < 0.02 && repeats < max_runs;) {
    repeats = std::min(max_runs, std::max(repeats * 2, static_cast<int>(repeats * 0.02 / std::max(s, 1e-7))));
    s = time_batch(repeats);
  }
  while (state.KeepRunningBatch(repeats)) state.SetIterationTime(time_batch(repeats));
  return repeats;
}

// The node prepared on the benchmarks' device, or null with the benchmark marked skipped and the planner's
// reason (a forced kernel that cannot run the shape on this adapter).
inline std::unique_ptr<runtime::PreparedNode> prepare_or_skip(
    benchmark::State& state, const ops::NodeInfo& node,
    const std::vector<std::optional<runtime::NodeInput>>& inputs) {
  try {
    return std::make_unique<runtime::PreparedNode>(device(), node, inputs,
                                                   runtime::NodeRunOptions{false, std::nullopt});
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    return nullptr;
  }
}

// Times runs of prepared nodes, taken in turn (copies of one product with their own weights, so that a run
// does not find the last one's in the GPU's cache), as time_runs_in_submissions does, after one run of each
// (pipelines compiled, first dispatches done). The benchmark is labelled with the first node's first kernel
// and counts runs_per_submit.
inline void time_prepared_nodes(benchmark::State& state, const std::vector<runtime::PreparedNode*>& nodes) {
  state.SetLabel(nodes.at(0)->plan().launches.at(0).program.label);
  for (runtime::PreparedNode* node : nodes) node->run();
  size_t next = 0;
  state.counters["runs_per_submit"] = time_runs_in_submissions(
      state, device(), [&](gpu::CommandBatch& batch) { nodes[next++ % nodes.size()]->encode(batch); });
}

inline void time_prepared_node(benchmark::State& state, runtime::PreparedNode& node) {
  time_prepared_nodes(state, {&node});
}

}  // namespace wgi::bench
