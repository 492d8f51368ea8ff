// GPU time of one ONNX LSTM / GRU / RNN node (src/ops/recurrent.cpp): the input projection GEMM, R's
// transpose where it is not an initializer (here it is), the state's initialisation and one step launch per
// time step (two for GRU with linear_before_reset 0), on the adapter wgi picks.
//
// BM_Recurrent/<cell>/batch/seq/hidden with cell lstm, gru (linear_before_reset 1, cuDNN's GRU), gru_lbr0
// (ONNX's default) or rnn (tanh); input size = hidden, one direction, with biases. Timed like
// bench_quantized.cpp: the node prepared once, encoded `repeats` times per submission. Counters: FLOP (the
// GEMM's 2 * seq * batch * gates * hidden * input plus the steps' 2 * seq * batch * gates * hidden^2), bytes
// (the least traffic, for bench/compare.py's bandwidth column) and steps/s. WGI_BENCH_SIZE=large: batch 1 and
// 16, sequence 256, hidden 512 (what bench/recurrent_torch_peer.py times with cuDNN under the same names);
// default: small shapes for the CPU adapters.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "gpu/device.h"
#include "runtime/node_runner.h"
#include "support/tensor_check.h"

namespace {

using wgi::runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;

using wgi::bench::device;
using wgi::bench::large;

void run_cell(benchmark::State& state, const std::string& cell) {
  const int64_t batch = state.range(0), seq = state.range(1), hidden = state.range(2), input = hidden;
  const int64_t gates = cell == "lstm" ? 4 : cell == "rnn" ? 1 : 3;
  const std::string op = cell == "lstm" ? "LSTM" : cell == "rnn" ? "RNN" : "GRU";
  wgi::ops::NodeInfo node{"recurrent", op, "", 14, {}, {}, {"y", "y_h"}};
  if (op == "LSTM") node.output_names.push_back("y_c");
  node.attributes.set("hidden_size", hidden);
  if (cell == "gru") node.attributes.set("linear_before_reset", int64_t{1});
  const float scale = 1.0f / std::sqrt(static_cast<float>(hidden));
  Inputs inputs = {NodeInput{wgi::test::random_tensor({seq, batch, input}, 1)},
                   NodeInput{wgi::test::random_tensor({1, gates * hidden, input}, 2, -scale, scale), true},
                   NodeInput{wgi::test::random_tensor({1, gates * hidden, hidden}, 3, -scale, scale), true},
                   NodeInput{wgi::test::random_tensor({1, 2 * gates * hidden}, 4, -scale, scale), true}};
  std::unique_ptr<wgi::runtime::PreparedNode> prepared = wgi::bench::prepare_or_skip(state, node, inputs);
  if (!prepared) return;
  std::string step_kernel;
  for (const auto& launch : prepared->plan().launches) {
    if (launch.program.label.starts_with("recurrent_")) step_kernel = launch.program.label;
  }
  state.SetLabel(step_kernel + ", " + std::to_string(prepared->dispatch_count()) + " dispatches");
  wgi::gpu::Device& d = device();
  prepared->run();  // warm up: pipelines compiled, first dispatch done
  const int repeats = wgi::bench::time_runs_in_submissions(
      state, d, [&](wgi::gpu::CommandBatch& commands) { prepared->encode(commands); }, 256);
  const double flop = 2.0 * seq * batch * gates * hidden * (input + hidden);
  state.counters["FLOP"] = benchmark::Counter(flop, benchmark::Counter::kIsIterationInvariantRate);
  // The least memory traffic: W, R, B, X read once and Y written once (R is re-read every step, from cache).
  const double bytes = 4.0 * (gates * hidden * (input + hidden + 2) + seq * batch * (input + hidden));
  state.counters["bytes"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["steps"] =
      benchmark::Counter(static_cast<double>(seq), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["runs_per_submit"] = repeats;
}

void register_benchmarks() {
  const std::vector<std::array<int64_t, 3>> shapes =
      large() ? std::vector<std::array<int64_t, 3>>{{1, 256, 512}, {16, 256, 512}}
              : std::vector<std::array<int64_t, 3>>{{1, 16, 32}, {4, 16, 48}};
  for (const char* cell : {"lstm", "gru", "gru_lbr0", "rnn"}) {
    const std::string c = cell;
    auto* b = benchmark::RegisterBenchmark(("BM_Recurrent/" + c).c_str(),
                                           [c](benchmark::State& state) { run_cell(state, c); });
    for (const auto& s : shapes) b->Args({s[0], s[1], s[2]});
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  return wgi::bench::run_benchmarks(argc, argv);
}
