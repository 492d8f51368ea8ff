// GPU time of the weight-only quantized matmuls (com.microsoft MatMulNBits, MatMulBnb4;
// src/ops/matmul_nbits.cpp) next to the float32 Gemm of the same shape (out = x W^T + b, W prepacked), on the
// adapter wgi picks.
//
// BM_QuantizedLinear/<form>/M/N/K with form q4 (symmetric, block 32), q4_zp (packed zero points), q8, nf4
// (MatMulBnb4, block 64) or f32 (the Gemm). Each run is timed like bench_ops.cpp's: the node prepared once,
// encoded `repeats` times per submission. Counters: FLOP (2 per multiply-add), weight_bytes/s (the packed
// weight streamed per second) and read_bytes/s (everything the product reads: weight, scales, zero points, A
// and bias; what bounds the M <= 8 GEMV). WGI_BENCH_WEIGHT_COPIES=n (n >= 1): n copies of the product with
// their own weights, run in turn, so that a run does not find its weights in the GPU's cache from the run
// before (the LM head's 25 MB fit an H100's 50 MB L2). WGI_BENCH_SIZE=large: the Florence-2-base decoder
// step (768x768, 768x3072, 3072x768 and the 51289x768 LM head at M = 1) and encoder-like products (M = 577,
// 2304); default: small shapes for the CPU adapters. WGI_BENCH_KERNEL=gemv|tiled forces the quantized kernel,
// WGI_BENCH_GEMV_THREAD_COLUMNS=1|2|4 the GEMV's columns per thread, WGI_BENCH_GEMV_LANES=4..128 its lanes
// per column, WGI_BENCH_ACCURACY_LEVEL=0 keeps A float32 (default 4, the exports' level). BM_DispatchFloor:
// one dispatch of a trivial kernel (Relu on 4 elements) encoded the same way, the per-dispatch time that
// every product's includes.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "gpu/device.h"
#include "runtime/node_runner.h"
#include "support/reference_quantized.h"
#include "support/tensor_check.h"

namespace {

using wgi::runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;

using wgi::bench::device;
using wgi::bench::large;

void run_form(benchmark::State& state, const std::string& form) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const char* copies_env = std::getenv("WGI_BENCH_WEIGHT_COPIES");
  const int copies = copies_env ? std::atoi(copies_env) : 1;
  if (copies < 1) {
    state.SkipWithError("WGI_BENCH_WEIGHT_COPIES must be a whole number >= 1");
    return;
  }
  wgi::ops::NodeInfo node{"linear", "", "com.microsoft", 1, {}, {}, {}};
  const int64_t bits = form == "f32" ? 32 : form == "q8" ? 8 : 4;
  const double weight_bytes = static_cast<double>(bits) / 8 * n * k;  // the packed weight, nominally
  // The product's inputs with copy c's own weights (seeds differ per copy).
  auto make_inputs = [&](uint64_t c) {
    const uint64_t seed = 10 * c;
    Inputs inputs = {NodeInput{wgi::test::random_tensor({m, k}, 1)}};
    if (form == "f32") {
      inputs.push_back(NodeInput{wgi::test::random_tensor({n, k}, seed + 2), true});
      inputs.push_back(NodeInput{wgi::test::random_tensor({n}, seed + 3), true});
    } else if (form == "nf4") {
      const int64_t block = 64, blocks = (n * k + block - 1) / block;
      inputs.push_back(NodeInput{wgi::test::random_bytes({(n * k + 1) / 2}, seed + 2), true});
      inputs.push_back(NodeInput{wgi::test::random_scales({blocks}, seed + 3, false), true});
    } else {
      const int64_t block = 32, blocks = (k + block - 1) / block;
      inputs.push_back(NodeInput{wgi::test::random_bytes({n, blocks, block * bits / 8}, seed + 2), true});
      inputs.push_back(NodeInput{wgi::test::random_scales({n, blocks}, seed + 3, false), true});
      if (form == "q4_zp")
        inputs.push_back(NodeInput{wgi::test::random_bytes({n, (blocks * bits + 7) / 8}, seed + 4), true});
    }
    return inputs;
  };
  if (form == "f32") {
    node = {"linear", "Gemm", "", 13, {}, {}, {}};
    node.attributes.set("transB", int64_t{1});
  } else if (form == "nf4") {
    node.op_type = "MatMulBnb4";
    node.attributes.set("K", k);
    node.attributes.set("N", n);
    node.attributes.set("block_size", int64_t{64});
    node.attributes.set("quant_type", int64_t{1});
  } else {
    node.op_type = "MatMulNBits";
    node.attributes.set("K", k);
    node.attributes.set("N", n);
    node.attributes.set("bits", bits);
    node.attributes.set("block_size", int64_t{32});
    // The exports' level 4 (int8 activations in the GEMV); WGI_BENCH_ACCURACY_LEVEL=0 keeps A float32.
    const char* level = std::getenv("WGI_BENCH_ACCURACY_LEVEL");
    node.attributes.set("accuracy_level", int64_t{level ? std::atoi(level) : 4});
  }
  if (const char* kernel = std::getenv("WGI_BENCH_KERNEL"); kernel && form != "f32")
    node.attributes.set("wgi.kernel", std::string(kernel));
  if (const char* columns = std::getenv("WGI_BENCH_GEMV_THREAD_COLUMNS"); columns && form != "f32")
    node.attributes.set("wgi.gemv_thread_columns", int64_t{std::atoi(columns)});
  if (const char* lanes = std::getenv("WGI_BENCH_GEMV_LANES"); lanes && form != "f32")
    node.attributes.set("wgi.gemv_lanes", int64_t{std::atoi(lanes)});
  std::vector<std::unique_ptr<wgi::runtime::PreparedNode>> prepared;
  std::vector<wgi::runtime::PreparedNode*> nodes;
  double read_bytes = 0;  // everything one run reads: A, the weight, scales, zero points, bias
  for (int c = 0; c < copies; ++c) {
    const Inputs inputs = make_inputs(static_cast<uint64_t>(c));
    if (c == 0)
      for (const auto& input : inputs) read_bytes += static_cast<double>(input->value.byte_size());
    prepared.push_back(wgi::bench::prepare_or_skip(state, node, inputs));
    if (!prepared.back()) return;
    nodes.push_back(prepared.back().get());
  }
  wgi::bench::time_prepared_nodes(state, nodes);
  state.counters["FLOP"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_bytes"] =
      benchmark::Counter(weight_bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["read_bytes"] =
      benchmark::Counter(read_bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_copies"] = copies;
}

// The time per run of a node whose kernel does almost nothing: what each product's time above includes for
// its dispatch alone (the bytes it reads over the rest give its streaming rate).
void run_dispatch_floor(benchmark::State& state) {
  const wgi::ops::NodeInfo node{"floor", "Relu", "", 14, {}, {}, {}};
  wgi::runtime::PreparedNode prepared(device(), node, Inputs{NodeInput{wgi::test::random_tensor({1, 4}, 1)}},
                                      wgi::runtime::NodeRunOptions{false, std::nullopt});
  wgi::bench::time_prepared_node(state, prepared);
}

void register_benchmarks() {
  benchmark::RegisterBenchmark("BM_DispatchFloor", run_dispatch_floor)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  const std::vector<std::array<int64_t, 3>> shapes =
      large() ? std::vector<std::array<int64_t, 3>>{{1, 768, 768},    {1, 3072, 768},    {1, 768, 3072},
                                                    {1, 51289, 768},  {4, 51289, 768},   {577, 768, 768},
                                                    {577, 3072, 768}, {2304, 1024, 1024}}
              : std::vector<std::array<int64_t, 3>>{{1, 300, 200}, {8, 300, 200}, {64, 96, 128}};
  for (const char* form : {"f32", "q4", "q4_zp", "q8", "nf4"}) {
    const std::string f = form;
    auto* b = benchmark::RegisterBenchmark(("BM_QuantizedLinear/" + f).c_str(),
                                           [f](benchmark::State& state) { run_form(state, f); });
    for (const auto& s : shapes) b->Args({s[0], s[1], s[2]});
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  return wgi::bench::run_benchmarks(argc, argv);
}
