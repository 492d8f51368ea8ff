// GPU throughput of single ops (GEMM through MatMul/Gemm, conv) on the adapter wgi picks.
//
// Each benchmark prepares the node once (plan, upload, prepack, bind), then per iteration encodes the node
// `repeats` times into one submission and waits: time per run = wall time / repeats, so submission latency is
// amortised. The FLOP rate counts 2 FLOP per multiply-add.
//
// Sizes: WGI_BENCH_SIZE=small (default; fits CPU adapters) or large (the H200 campaign: 4096^3 GEMM, ...).
// BM_Linear/M/N/K runs the planner's choice (WGI_BENCH_KERNEL=tiled|vec4|fast128|fast64|fast128x64|gemv
// forces one, as the wgi.kernel attribute); its names match bench/torch_peer.py's.
// BM_LinearKernel/<kernel>/M/N/K runs every GEMM kernel forced on the shapes it is meant for,
// BM_LinearConfig/<config>/M/N/K the fast kernels' workgroup memory configurations (K slab, buffers) and
// GEMV's lane counts, and BM_MatMulRuntimeB/<kernel>/M/N/K a product with a runtime B [K, N] (attention, 1x1
// conv) instead of the prepacked weight. The Gemms of BM_Linear, BM_LinearKernel, BM_LinearModel,
// BM_LinearSplit and BM_LinearConfig get a float16 weight with WGI_BENCH_WEIGHT_DTYPE=float16 (float32 by
// default), and the epilogue of a model's forms with WGI_BENCH_EPILOGUE=residual (a fused residual input, as
// graph::fuse_residual_adds makes), gelu (a fused Gelu) or residual_gelu (both); plain by default.
// BM_Conv/n:../ic:../oc:../hw:../k:../s:../g:.. runs the conv planner's choice (names as
// bench/torch_peer.py's), BM_ConvKernel/<implicit_gemm128|implicit_gemm64|depthwise_rows|depthwise|direct|
// gemm>/... each conv kernel forced, BM_ConvConfig/igemm<tile>_k<slab>s<buffers>/... the implicit GEMM's
// workgroup memory configurations and BM_ConvConfig/depthwise_rows<rows>/... the register-window depthwise
// kernel's rows per invocation. A forced kernel that cannot run a shape on the adapter is reported as skipped
// with the planner's reason.
#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench_timing.h"
#include "gpu/device.h"
#include "ops/float16.h"
#include "ops/gemm_launch.h"
#include "ops/internal_ops.h"
#include "runtime/node_runner.h"
#include "support/tensor_check.h"

namespace {

using wgi::Shape;
using wgi::Tensor;
using wgi::runtime::NodeInput;

using wgi::bench::device;
using wgi::bench::large;
using wgi::bench::prepare_or_skip;

void run_prepared(benchmark::State& state, wgi::runtime::PreparedNode& node, double flops) {
  wgi::bench::time_prepared_node(state, node);
  // Shown with SI prefixes, e.g. FLOP=31.2T/s.
  state.counters["FLOP"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

// Gemm with transB = 1 and a bias: the seeds' linear, out = x W^T + b, W prepacked. Node attributes (kernel
// forcing, tuning knobs) in `attributes`.
void run_linear(benchmark::State& state,
                const std::vector<std::pair<std::string, wgi::ops::AttributeValue>>& attributes) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  wgi::ops::NodeInfo node{"linear", "Gemm", "", 13, {}, {}, {}};
  node.attributes.set("transB", int64_t{1});
  for (const auto& [name, value] : attributes) node.attributes.set(name, value);
  wgi::Tensor weight = wgi::test::random_tensor({n, k}, 2);
  // WGI_BENCH_WEIGHT_DTYPE=float16: the weight as a float16 file's MatMul has it once its activations are
  // computed in float32 (graph pass compute_float16_in_float32): read packed by the GEMM (B_F16).
  if (const char* dtype = std::getenv("WGI_BENCH_WEIGHT_DTYPE")) {
    if (std::string(dtype) == "float16") {
      weight = wgi::ops::narrow_to_float16(weight);
    } else if (std::string(dtype) != "float32") {
      state.SkipWithError("WGI_BENCH_WEIGHT_DTYPE must be float32 or float16");
      return;
    }
  }
  std::vector<std::optional<NodeInput>> inputs = {NodeInput{wgi::test::random_tensor({m, k}, 1)},
                                                  NodeInput{weight, true},
                                                  NodeInput{wgi::test::random_tensor({n}, 3), true}};
  // WGI_BENCH_EPILOGUE: the residual and Gelu forms of a transformer's products, whose kernels run the
  // epilogue in a second, in-place pass (linear/gemm_fast.wgsl's IN_PLACE_EPILOGUE).
  if (const char* epilogue = std::getenv("WGI_BENCH_EPILOGUE")) {
    const std::string e = epilogue;
    if (e != "plain" && e != "residual" && e != "gelu" && e != "residual_gelu") {
      state.SkipWithError("WGI_BENCH_EPILOGUE must be plain, residual, gelu or residual_gelu");
      return;
    }
    if (e == "residual" || e == "residual_gelu") {
      node.attributes.set(wgi::ops::kFusedResidualAttribute, int64_t{1});
      inputs.push_back(NodeInput{wgi::test::random_tensor({m, n}, 4)});
    }
    if (e == "gelu" || e == "residual_gelu")
      node.attributes.set(wgi::ops::kFusedActivationAttribute, std::string("Gelu"));
  }
  std::unique_ptr<wgi::runtime::PreparedNode> prepared = prepare_or_skip(state, node, inputs);
  if (!prepared) return;
  run_prepared(state, *prepared, 2.0 * m * n * k);
}

void BM_Linear(benchmark::State& state) {
  std::vector<std::pair<std::string, wgi::ops::AttributeValue>> attributes;
  if (const char* kernel = std::getenv("WGI_BENCH_KERNEL"))
    attributes.emplace_back("wgi.kernel", std::string(kernel));
  run_linear(state, attributes);
}

// MatMul with a runtime B stored [K, N]: the layout of attention's products and of 1x1 convolutions (B = X).
void run_matmul_runtime_b(benchmark::State& state, const std::string& kernel) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  wgi::ops::NodeInfo node{"matmul", "MatMul", "", 13, {}, {}, {}};
  if (!kernel.empty()) node.attributes.set("wgi.kernel", kernel);
  std::vector<std::optional<NodeInput>> inputs = {NodeInput{wgi::test::random_tensor({m, k}, 1)},
                                                  NodeInput{wgi::test::random_tensor({k, n}, 2)}};
  std::unique_ptr<wgi::runtime::PreparedNode> prepared = prepare_or_skip(state, node, inputs);
  if (!prepared) return;
  run_prepared(state, *prepared, 2.0 * m * n * k);
}

// Conv NCHW: batch, in channels, out channels, size (square), kernel, stride, groups; pads k / 2. Node
// attributes (kernel forcing, tuning knobs) in `attributes`; a forced kernel that cannot run the shape on the
// adapter is reported as skipped with the planner's reason.
void run_conv(benchmark::State& state,
              const std::vector<std::pair<std::string, wgi::ops::AttributeValue>>& attributes) {
  const int64_t batch = state.range(0), ic = state.range(1), oc = state.range(2), size = state.range(3),
                kernel = state.range(4), stride = state.range(5), groups = state.range(6);
  const int64_t pad = kernel / 2;
  wgi::ops::NodeInfo node{"conv", "Conv", "", 13, {}, {}, {}};
  node.attributes.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  node.attributes.set("strides", std::vector<int64_t>{stride, stride});
  node.attributes.set("group", groups);
  for (const auto& [name, value] : attributes) node.attributes.set(name, value);
  std::vector<std::optional<NodeInput>> inputs = {
      NodeInput{wgi::test::random_tensor({batch, ic, size, size}, 1)},
      NodeInput{wgi::test::random_tensor({oc, ic / groups, kernel, kernel}, 2), true},
      NodeInput{wgi::test::random_tensor({oc}, 3), true}};
  std::unique_ptr<wgi::runtime::PreparedNode> prepared = prepare_or_skip(state, node, inputs);
  if (!prepared) return;
  const auto& out = prepared->plan().outputs.at(0).shape;
  double flops = 2.0 * static_cast<double>(wgi::element_count(out)) * static_cast<double>(ic / groups) *
                 static_cast<double>(kernel * kernel);
  // Depthwise is bandwidth bound: report the bytes it must move at least (input and output once, weight).
  state.counters["bytes"] =
      benchmark::Counter(4.0 * static_cast<double>(batch * ic * size * size + wgi::element_count(out) +
                                                   oc * (ic / groups) * kernel * kernel),
                         benchmark::Counter::kIsIterationInvariantRate);
  run_prepared(state, *prepared, flops);
}

void BM_Conv(benchmark::State& state) {
  run_conv(state, {});
}

// Products with more than 8 rows: the tile kernels' domain.
std::vector<std::array<int64_t, 3>> tile_shapes() {
  if (!large()) return {{128, 256, 192}, {100, 257, 31}};
  // 4096^3 and 1024^3, then transformer shapes of the target models: SigLIP-B/16 at 224 (196 tokens), a
  // DaViT-like 4096-token projection, DaViT stage 1 (9216 tokens, 256 channels).
  return {{4096, 4096, 4096}, {1024, 1024, 1024}, {196, 768, 768}, {196, 3072, 768},
          {196, 768, 3072},   {4096, 1024, 1024}, {9216, 256, 256}};
}

// Decoder steps (BART-base: d = 768, FFN 3072, LM head 51289) with 1, 4 and 8 rows (beams): GEMV's domain.
std::vector<std::array<int64_t, 3>> gemv_shapes() {
  if (!large()) return {{1, 257, 192}, {8, 300, 100}};
  return {{1, 768, 768},  {1, 3072, 768}, {1, 768, 3072},  {4, 3072, 768},
          {8, 3072, 768}, {8, 768, 3072}, {1, 51289, 768}, {8, 51289, 768}};
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
    b->Args({8, 256, 256, 56, 3, 1, 1});     // the anchor: 3x3 256->256 on 8x56x56
    b->Args({8, 256, 64, 56, 1, 1, 1});      // 1x1 projection
    b->Args({8, 128, 256, 56, 3, 2, 1});     // strided downsample
    b->Args({8, 256, 256, 56, 3, 1, 256});   // depthwise (DaViT position encoding)
    b->Args({8, 3, 64, 224, 7, 2, 1});       // stem
    b->Args({1, 128, 128, 192, 3, 1, 128});  // depthwise, DaViT-base's position encoding at 768^2 (stage 1)
    b->Args({8, 128, 128, 112, 3, 2, 128});  // depthwise stride 2 (MobileNet-like)
    // DaViT-base's downsampling convs at 768^2 (3x3 s2, batch 1): 9216, 2304 and 576 output pixels over
    // K = 1152, 2304, 4608; 5.4 GFLOP each.
    b->Args({1, 128, 256, 192, 3, 2, 1})->Args({1, 256, 512, 96, 3, 2, 1})->Args({1, 512, 1024, 48, 3, 2, 1});
    // ResNet-50's batch-8 convs that lost most to cuDNN (bench/layer_table.py): stage 2's 3x3 (and its
    // stride-2 first), the stride-2 1x1 downsamples of stages 3 and 4, stage 3's and 4's 1x1 reductions;
    // stage 4's at batch 1 too.
    b->Args({8, 128, 128, 28, 3, 1, 1})->Args({8, 128, 128, 56, 3, 2, 1});
    b->Args({8, 512, 1024, 28, 1, 2, 1})->Args({8, 1024, 2048, 14, 1, 2, 1});
    b->Args({8, 1024, 256, 14, 1, 1, 1})->Args({8, 2048, 512, 7, 1, 1, 1})->Args({1, 2048, 512, 7, 1, 1, 1});
  } else {
    b->Args({1, 16, 32, 24, 3, 1, 1})->Args({1, 32, 64, 24, 1, 1, 1})->Args({1, 16, 16, 24, 3, 1, 16});
    b->Args({1, 3, 16, 32, 7, 2, 1});
  }
}

BENCHMARK(BM_Linear)->Apply(linear_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv)->Apply(conv_shapes)->UseManualTime()->Unit(benchmark::kMillisecond);

// The forced-kernel and configuration benchmarks, registered at start-up because their names carry strings.
void register_forced_kernels() {
  using Attributes = std::vector<std::pair<std::string, wgi::ops::AttributeValue>>;
  auto add = [](const std::string& name, auto fn, const std::vector<std::array<int64_t, 3>>& shapes) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), fn);
    for (const auto& s : shapes) b->Args({s[0], s[1], s[2]});
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  };
  for (const char* kernel : {"fast128", "fast64", "vec4", "tiled"}) {
    const Attributes attributes = {{"wgi.kernel", std::string(kernel)}};
    add(
        std::string("BM_LinearKernel/") + kernel,
        [attributes](benchmark::State& state) { run_linear(state, attributes); }, tile_shapes());
  }
  for (const char* kernel : {"gemv", "vec4"}) {
    const Attributes attributes = {{"wgi.kernel", std::string(kernel)}};
    add(
        std::string("BM_LinearKernel/") + kernel,
        [attributes](benchmark::State& state) { run_linear(state, attributes); }, gemv_shapes());
  }
  // GEMV's threads per column (the planner picks by how many workgroups N gives).
  for (int64_t lanes : {8, 16, 32, 64}) {
    const Attributes attributes = {{"wgi.kernel", std::string("gemv")}, {"wgi.gemv_lanes", lanes}};
    add(
        "BM_LinearConfig/gemv_l" + std::to_string(lanes),
        [attributes](benchmark::State& state) { run_linear(state, attributes); },
        large() ? std::vector<std::array<int64_t, 3>>{{1, 768, 768}, {8, 3072, 768}, {1, 51289, 768}}
                : gemv_shapes());
  }
  // The products of the target models (DaViT-base at 768^2: its four stages; SigLIP-B/16 at 224, batch 1 and
  // 8: 196 and 1576 rows) on the planner's choice, then each fast tile with K split into 1..8 chunks forced
  // (the K slab and buffers as the planner picks them for that split): what the split and tile rules are
  // fitted to.
  const std::vector<std::array<int64_t, 3>> model_products =
      large() ? std::vector<std::array<int64_t, 3>>{{36864, 384, 128}, {36864, 512, 128}, {36864, 128, 512},
                                                    {9216, 768, 256},  {9216, 1024, 256}, {9216, 256, 1024},
                                                    {2304, 1536, 512}, {2304, 512, 512},  {2304, 2048, 512},
                                                    {2304, 512, 2048}, {576, 3072, 1024}, {576, 1024, 1024},
                                                    {576, 4096, 1024}, {576, 1024, 4096}, {577, 768, 1024},
                                                    {196, 768, 768},   {196, 3072, 768},  {196, 768, 3072},
                                                    {1576, 2304, 768}, {1576, 768, 768},  {1576, 3072, 768},
                                                    {1576, 768, 3072}}
              : std::vector<std::array<int64_t, 3>>{{100, 257, 300}};
  add(
      "BM_LinearModel/planner", [](benchmark::State& state) { run_linear(state, {}); }, model_products);
  // The planner's choice as one launch: what it is without the wave tail (gemm_launch.h).
  const Attributes one_launch = {{"wgi.gemm_head_rows", int64_t{wgi::ops::kGemmOneLaunch}}};
  add(
      "BM_LinearModel/one_launch", [one_launch](benchmark::State& state) { run_linear(state, one_launch); },
      model_products);
  for (const char* kernel : {"fast128", "fast64", "fast128x64"}) {
    for (int64_t splits : {1, 2, 3, 4, 6, 8}) {
      const Attributes attributes = {{"wgi.kernel", std::string(kernel)}, {"wgi.gemm_split_k", splits}};
      add(
          std::string("BM_LinearSplit/") + kernel + "_s" + std::to_string(splits),
          [attributes](benchmark::State& state) { run_linear(state, attributes); }, model_products);
    }
  }
  // The fast kernels' workgroup memory configurations (K slab, buffers); those that do not fit the adapter
  // are skipped with the bytes they need.
  const std::vector<std::array<int64_t, 3>> config_shapes =
      large()
          ? std::vector<std::array<int64_t, 3>>{{4096, 4096, 4096}, {2048, 2048, 2048}, {1024, 1024, 1024}}
          : std::vector<std::array<int64_t, 3>>{{128, 256, 192}};
  for (const auto& [kernel, tile_k, stages] :
       std::vector<std::tuple<std::string, int64_t, int64_t>>{{"fast128", 16, 2},
                                                              {"fast128", 16, 1},
                                                              {"fast128", 8, 2},
                                                              {"fast128", 8, 1},
                                                              {"fast128", 32, 1},
                                                              {"fast64", 16, 2},
                                                              {"fast64", 16, 1},
                                                              {"fast64", 32, 1},
                                                              {"fast64", 32, 2},
                                                              {"fast128x64", 16, 2},
                                                              {"fast128x64", 16, 1},
                                                              {"fast128x64", 32, 1}}) {
    const Attributes attributes = {
        {"wgi.kernel", kernel}, {"wgi.gemm_tile_k", tile_k}, {"wgi.gemm_stages", stages}};
    add(
        "BM_LinearConfig/" + kernel + "_k" + std::to_string(tile_k) + "s" + std::to_string(stages),
        [attributes](benchmark::State& state) { run_linear(state, attributes); }, config_shapes);
  }
  // Every conv kernel forced on the conv shapes (BM_ConvKernel/<kernel>/n:../ic:../...; bench/compare.py
  // joins them with BM_Conv's PyTorch time), and the implicit GEMM's workgroup memory configurations
  // (BM_ConvConfig/igemm<tile>_k<slab>s<buffers>/...). Shapes a kernel cannot run are skipped with the
  // reason.
  auto add_conv = [](const std::string& name, const Attributes& attributes) {
    auto* b = benchmark::RegisterBenchmark(
        name.c_str(), [attributes](benchmark::State& state) { run_conv(state, attributes); });
    conv_shapes(b);
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  };
  for (const char* kernel : {"implicit_gemm128", "implicit_gemm64", "implicit_gemm128x64",
                             "implicit_gemm64x128", "depthwise_rows", "depthwise", "direct", "gemm"}) {
    add_conv(std::string("BM_ConvKernel/") + kernel, {{"wgi.kernel", std::string(kernel)}});
  }
  // The register-window depthwise kernel's output rows per invocation (the default is 4).
  for (int64_t rows : {1, 2, 8}) {
    add_conv("BM_ConvConfig/depthwise_rows" + std::to_string(rows),
             {{"wgi.kernel", std::string("depthwise_rows")}, {"wgi.depthwise_rows", rows}});
  }
  const std::vector<std::tuple<std::string, int64_t, int64_t>> igemm_configs = {
      {"128", 16, 1},   {"128", 16, 2},    {"128", 8, 1},     {"128", 8, 2},     {"128", 32, 1},
      {"64", 16, 1},    {"64", 16, 2},     {"64", 32, 1},     {"128x64", 16, 2}, {"128x64", 8, 1},
      {"128x64", 8, 2}, {"128x64", 32, 1}, {"64x128", 16, 2}, {"64x128", 32, 1}};
  for (const auto& [tile, tile_k, stages] : igemm_configs) {
    add_conv(
        "BM_ConvConfig/igemm" + tile + "_k" + std::to_string(tile_k) + "s" + std::to_string(stages),
        {{"wgi.kernel", "implicit_gemm" + tile}, {"wgi.gemm_tile_k", tile_k}, {"wgi.gemm_stages", stages}});
  }
  // The implicit GEMM's K split forced (wgi.gemm_split_k; 1 = unsplit), on the planner's tile.
  for (int64_t splits : {1, 2, 3, 4, 6}) {
    add_conv("BM_ConvSplit/" + std::to_string(splits), {{"wgi.gemm_split_k", splits}});
  }
  for (const char* kernel : {"", "fast128", "fast64", "tiled"}) {
    const std::string forced = kernel;
    add(
        std::string("BM_MatMulRuntimeB/") + (forced.empty() ? "auto" : kernel),
        [forced](benchmark::State& state) { run_matmul_runtime_b(state, forced); },
        large() ? std::vector<std::array<int64_t, 3>>{{4096, 4096, 4096}, {1024, 1024, 1024}, {196, 768, 768}}
                : std::vector<std::array<int64_t, 3>>{{128, 256, 192}});
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_forced_kernels();
  return wgi::bench::run_benchmarks(argc, argv);
}
