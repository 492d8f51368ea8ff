// GPU throughput of single ops (GEMM through MatMul/Gemm, conv) on the adapter wgi picks.
//
// Each benchmark prepares the node once (plan, upload, prepack, bind), then per iteration encodes the node
// `repeats` times into one submission and waits: time per run = wall time / repeats, so submission latency is
// amortised. The FLOP rate counts 2 FLOP per multiply-add.
//
// Sizes: WGI_BENCH_SIZE=small (default; fits CPU adapters) or large (the H200 campaign: 4096^3 GEMM, ...).
// Kernel forcing: WGI_BENCH_KERNEL=tiled|vec4 sets the wgi.kernel attribute on GEMM nodes.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include "gpu/device.h"
#include "runtime/node_runner.h"
#include "support/tensor_check.h"

namespace {

using wgi::Shape;
using wgi::Tensor;
using wgi::runtime::NodeInput;

wgi::gpu::Device& device() {
  static std::shared_ptr<wgi::gpu::Device> d = wgi::gpu::Device::create();
  return *d;
}

bool large() {
  const char* v = std::getenv("WGI_BENCH_SIZE");
  return v && std::string(v) == "large";
}

void run_prepared(benchmark::State& state, wgi::runtime::PreparedNode& node, double flops) {
  wgi::gpu::Device& d = device();
  node.run();  // warm up: pipelines compiled, first dispatch done
  auto time_batch = [&](int repeats) {
    auto start = std::chrono::steady_clock::now();
    wgi::gpu::CommandBatch batch(d);
    for (int i = 0; i < repeats; ++i) node.encode(batch);
    batch.submit();
    d.wait_idle();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // Enough runs per submission for about 20 ms of GPU work, so that submission latency is amortised.
  int repeats = 1;
  for (double s = time_batch(1); s < 0.02 && repeats < 4096;) {
    repeats = std::min(4096, std::max(repeats * 2, static_cast<int>(repeats * 0.02 / std::max(s, 1e-7))));
    s = time_batch(repeats);
  }
  // One benchmark iteration is one run: each submission counts as `repeats` iterations.
  while (state.KeepRunningBatch(repeats)) state.SetIterationTime(time_batch(repeats));
  // Shown with SI prefixes, e.g. FLOP=31.2T/s.
  state.counters["FLOP"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["runs_per_submit"] = repeats;
}

// Gemm with transB = 1 and a bias: the seeds' linear, out = x W^T + b, W prepacked.
void BM_Linear(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  wgi::ops::NodeInfo node{"linear", "Gemm", "", 13, {}, {}, {}};
  node.attributes.set("transB", int64_t{1});
  if (const char* kernel = std::getenv("WGI_BENCH_KERNEL"))
    node.attributes.set("wgi.kernel", std::string(kernel));
  std::vector<std::optional<NodeInput>> inputs = {NodeInput{wgi::test::random_tensor({m, k}, 1)},
                                                  NodeInput{wgi::test::random_tensor({n, k}, 2), true},
                                                  NodeInput{wgi::test::random_tensor({n}, 3), true}};
  wgi::runtime::PreparedNode prepared(device(), node, inputs, {false, std::nullopt});
  state.SetLabel(prepared.plan().launches.at(0).program.label);
  run_prepared(state, prepared, 2.0 * m * n * k);
}

// Conv NCHW: batch, in channels, out channels, size (square), kernel, stride, groups.
void BM_Conv(benchmark::State& state) {
  const int64_t batch = state.range(0), ic = state.range(1), oc = state.range(2), size = state.range(3),
                kernel = state.range(4), stride = state.range(5), groups = state.range(6);
  const int64_t pad = kernel / 2;
  wgi::ops::NodeInfo node{"conv", "Conv", "", 13, {}, {}, {}};
  node.attributes.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  node.attributes.set("strides", std::vector<int64_t>{stride, stride});
  node.attributes.set("group", groups);
  std::vector<std::optional<NodeInput>> inputs = {
      NodeInput{wgi::test::random_tensor({batch, ic, size, size}, 1)},
      NodeInput{wgi::test::random_tensor({oc, ic / groups, kernel, kernel}, 2), true},
      NodeInput{wgi::test::random_tensor({oc}, 3), true}};
  wgi::runtime::PreparedNode prepared(device(), node, inputs, {false, std::nullopt});
  const auto& out = prepared.plan().outputs.at(0).shape;
  double flops = 2.0 * static_cast<double>(wgi::element_count(out)) * static_cast<double>(ic / groups) *
                 static_cast<double>(kernel * kernel);
  state.SetLabel(prepared.plan().launches.at(0).program.label);
  run_prepared(state, prepared, flops);
}

void linear_shapes(benchmark::internal::Benchmark* b) {
  if (large()) {
    for (int64_t s : {1024, 2048, 4096}) b->Args({s, s, s});
    // Transformer shapes of the target models: SigLIP-B/16 at 224 (196 tokens), DaViT stages, decoder steps.
    b->Args({196, 768, 768})->Args({196, 3072, 768})->Args({196, 768, 3072})->Args({4096, 1024, 1024});
    b->Args({9216, 256, 256})->Args({1, 768, 768})->Args({8, 3072, 768})->Args({1, 51289, 768});
  } else {
    b->Args({64, 64, 64})->Args({128, 256, 192})->Args({100, 257, 31});
  }
}

void conv_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "ic", "oc", "hw", "k", "s", "g"});
  if (large()) {
    b->Args({8, 256, 256, 56, 3, 1, 1});    // the anchor: 3x3 256->256 on 8x56x56
    b->Args({8, 256, 64, 56, 1, 1, 1});     // 1x1 projection
    b->Args({8, 128, 256, 56, 3, 2, 1});    // strided downsample
    b->Args({8, 256, 256, 56, 3, 1, 256});  // depthwise (DaViT position encoding)
    b->Args({8, 3, 64, 224, 7, 2, 1});      // stem
  } else {
    b->Args({1, 16, 32, 24, 3, 1, 1})->Args({1, 16, 16, 24, 3, 1, 16})->Args({1, 3, 16, 32, 7, 2, 1});
  }
}

BENCHMARK(BM_Linear)->Apply(linear_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv)->Apply(conv_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
