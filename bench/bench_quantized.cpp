// GPU time of the weight-only quantized matmuls (com.microsoft MatMulNBits, MatMulBnb4;
// src/ops/matmul_nbits.cpp) next to the float32 Gemm of the same shape (out = x W^T + b, W prepacked), on the
// adapter wgi picks.
//
// BM_QuantizedLinear/<form>/M/N/K with form q4 (symmetric, block 32), q4_zp (packed zero points), q8, nf4
// (MatMulBnb4, block 64) or f32 (the Gemm). Each run is timed like bench_ops.cpp's: the node prepared once,
// encoded `repeats` times per submission. Counters: FLOP (2 per multiply-add) and weight_bytes/s, the packed
// weight streamed per second (what bounds the M <= 8 GEMV). WGI_BENCH_SIZE=large: the Florence-2-base decoder
// step (768x768, 768x3072, 3072x768 and the 51289x768 LM head at M = 1) and encoder-like products (M = 577,
// 2304); default: small shapes for the CPU adapters. WGI_BENCH_KERNEL=gemv|tiled forces the quantized kernel,
// WGI_BENCH_GEMV_THREAD_COLUMNS=1|2|4 the GEMV's columns per thread, WGI_BENCH_GEMV_LANES=4..128 its lanes
// per column, WGI_BENCH_GEMV_QUAD_BATCH=1..8 its quads per column loaded before any is used.
// BM_DispatchFloor: one dispatch of a trivial kernel (Relu on 4 elements) encoded the same way, the
// per-dispatch time that every product's includes.
#include <benchmark/benchmark.h>

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
  wgi::ops::NodeInfo node{"linear", "", "com.microsoft", 1, {}, {}, {}};
  Inputs inputs = {NodeInput{wgi::test::random_tensor({m, k}, 1)}};
  double weight_bytes = 0;
  if (form == "f32") {
    node = {"linear", "Gemm", "", 13, {}, {}, {}};
    node.attributes.set("transB", int64_t{1});
    inputs.push_back(NodeInput{wgi::test::random_tensor({n, k}, 2), true});
    inputs.push_back(NodeInput{wgi::test::random_tensor({n}, 3), true});
    weight_bytes = 4.0 * n * k;
  } else if (form == "nf4") {
    const int64_t block = 64;
    node.op_type = "MatMulBnb4";
    node.attributes.set("K", k);
    node.attributes.set("N", n);
    node.attributes.set("block_size", block);
    node.attributes.set("quant_type", int64_t{1});
    inputs.push_back(NodeInput{wgi::test::random_bytes({(n * k + 1) / 2}, 2), true});
    inputs.push_back(NodeInput{wgi::test::random_scales({(n * k + block - 1) / block}, 3, false), true});
    weight_bytes = 0.5 * n * k;
  } else {
    const int64_t bits = form == "q8" ? 8 : 4, block = 32, blocks = (k + block - 1) / block;
    node.op_type = "MatMulNBits";
    node.attributes.set("K", k);
    node.attributes.set("N", n);
    node.attributes.set("bits", bits);
    node.attributes.set("block_size", block);
    // The exports' level 4 (int8 activations in the GEMV); WGI_BENCH_ACCURACY_LEVEL=0 keeps A float32.
    const char* level = std::getenv("WGI_BENCH_ACCURACY_LEVEL");
    node.attributes.set("accuracy_level", int64_t{level ? std::atoi(level) : 4});
    inputs.push_back(NodeInput{wgi::test::random_bytes({n, blocks, block * bits / 8}, 2), true});
    inputs.push_back(NodeInput{wgi::test::random_scales({n, blocks}, 3, false), true});
    if (form == "q4_zp")
      inputs.push_back(NodeInput{wgi::test::random_bytes({n, (blocks * bits + 7) / 8}, 4), true});
    weight_bytes = static_cast<double>(bits) / 8 * n * k;
  }
  if (const char* kernel = std::getenv("WGI_BENCH_KERNEL"); kernel && form != "f32")
    node.attributes.set("wgi.kernel", std::string(kernel));
  if (const char* columns = std::getenv("WGI_BENCH_GEMV_THREAD_COLUMNS"); columns && form != "f32")
    node.attributes.set("wgi.gemv_thread_columns", int64_t{std::atoi(columns)});
  if (const char* lanes = std::getenv("WGI_BENCH_GEMV_LANES"); lanes && form != "f32")
    node.attributes.set("wgi.gemv_lanes", int64_t{std::atoi(lanes)});
  std::unique_ptr<wgi::runtime::PreparedNode> prepared = wgi::bench::prepare_or_skip(state, node, inputs);
  if (!prepared) return;
  wgi::bench::time_prepared_node(state, *prepared);
  state.counters["FLOP"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_bytes"] =
      benchmark::Counter(weight_bytes, benchmark::Counter::kIsIterationInvariantRate);
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
