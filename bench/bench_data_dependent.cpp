// GPU time of the data-dependent ops (docs/dynamic_shapes.md) at detection-head sizes, and of a staged run
// end to end:
//   BM_NonMaxSuppression/boxes/classes: one NonMaxSuppression node (corner boxes, max 200 per class, IoU 0.5,
//     score threshold 0.05): the candidate ranking, the IoU bit matrix, the greedy selection and the packing,
//     encoded `repeats` times per submission (bench_timing.h);
//   BM_TopK/rows/width/k: TopK along the last axis (largest, sorted);
//   BM_StagedNmsGather/boxes: Session::run of tests/data/models/dynamic_shapes/nms_gather.onnx (NMS, its
//     count read back, then the Gather planned for it): host wall time per run, uploads and the stage
//     downloads included.
// Each configuration is checked once against the CPU references of the tests (support/reference_selection.h,
// support/reference_topk.h; exact: indices and copied values) before it is timed; a mismatch is reported as
// the benchmark's error. The staged run reports the median of 5 repetitions (`_median` rows).
// WGI_BENCH_SIZE=large: 10000 boxes and 50000-wide rows (the H200 sizes); default: small sizes for the CPU
// adapters.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "gpu/device.h"
#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/reference_selection.h"
#include "support/reference_topk.h"
#include "support/tensor_check.h"
#include "wgi/session.h"

namespace {

using wgi::Tensor;
using wgi::runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;

using wgi::bench::device;
using wgi::bench::large;

// Corner boxes [1, n, 4] (y1, x1, y2, x2) of sides 4-40 in a field whose area grows with n, so that a box
// overlaps a few others whatever n is.
Tensor random_boxes(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const float field = 10.0f * std::sqrt(static_cast<float>(n));
  std::uniform_real_distribution<float> corner(0, field), side(4, 40);
  Tensor t(wgi::DType::Float32, {1, n, 4});
  float* p = t.data<float>().data();
  for (int64_t i = 0; i < n; ++i, p += 4) {
    const float y = corner(rng), x = corner(rng);
    p[0] = y, p[1] = x, p[2] = y + side(rng), p[3] = x + side(rng);
  }
  return t;
}

Tensor int64_scalar(int64_t v) {
  return Tensor::from_vector<int64_t>({1}, {v});
}
Tensor float_scalar(float v) {
  return Tensor::from_vector<float>({1}, {v});
}

// Checks `got` against `want`; false (with the benchmark's error set) on a mismatch.
bool check(benchmark::State& state, const Tensor& got, const Tensor& want, const std::string& what) {
  const ::testing::AssertionResult same = wgi::test::identical(got, want);
  if (same) return true;
  state.SkipWithError((what + " differs from the CPU reference: " + same.message()).c_str());
  return false;
}

void run_nms(benchmark::State& state) {
  const int64_t boxes = state.range(0), classes = state.range(1);
  constexpr int64_t kMaxPerClass = 200;
  constexpr float kIou = 0.5f, kScoreThreshold = 0.05f;
  wgi::ops::NodeInfo node{"nms", "NonMaxSuppression", "", 11, {}, {}, {"selected"}};
  const Tensor b = random_boxes(boxes, 1), scores = wgi::test::random_tensor({1, classes, boxes}, 2, 0, 1);
  Inputs inputs = {NodeInput{b}, NodeInput{scores}, NodeInput{int64_scalar(kMaxPerClass), true},
                   NodeInput{float_scalar(kIou), true}, NodeInput{float_scalar(kScoreThreshold), true}};
  std::unique_ptr<wgi::runtime::PreparedNode> prepared;
  try {
    prepared = std::make_unique<wgi::runtime::PreparedNode>(
        device(), node, inputs, wgi::runtime::NodeRunOptions{false, std::nullopt});
    const std::vector<Tensor> out = prepared->run();  // also the warm-up
    const wgi::test::NmsOutputs want =
        wgi::test::nms_reference(b, scores, kMaxPerClass, kIou, kScoreThreshold, false);
    state.counters["selected"] = static_cast<double>(want.selected.shape()[0]);
    state.counters["near_threshold_pairs"] = static_cast<double>(want.near_threshold_pairs);
    // Pairs within 1e-5 of the threshold may be decided otherwise in float32 (reference_selection.h): the
    // selection is then only reported, not compared.
    if (want.near_threshold_pairs == 0 && !check(state, out.at(0), want.selected, "the selection")) return;
  } catch (const wgi::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.SetLabel(std::to_string(prepared->dispatch_count()) + " dispatches");
  const int repeats = wgi::bench::time_runs_in_submissions(
      state, device(), [&](wgi::gpu::CommandBatch& commands) { prepared->encode(commands); }, 256);
  state.counters["boxes"] =
      benchmark::Counter(static_cast<double>(boxes * classes), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["runs_per_submit"] = repeats;
}

void run_topk(benchmark::State& state) {
  const int64_t rows = state.range(0), width = state.range(1), k = state.range(2);
  wgi::ops::NodeInfo node{"topk", "TopK", "", 11, {}, {}, {"values", "indices"}};
  const Tensor x = wgi::test::random_tensor({rows, width}, 3);
  Inputs inputs = {NodeInput{x}, NodeInput{int64_scalar(k), true}};
  std::unique_ptr<wgi::runtime::PreparedNode> prepared;
  try {
    prepared = std::make_unique<wgi::runtime::PreparedNode>(
        device(), node, inputs, wgi::runtime::NodeRunOptions{false, std::nullopt});
    const std::vector<Tensor> out = prepared->run();
    const auto [values, indices] = wgi::test::topk_reference(x, k, 1, true);
    if (!check(state, out.at(0), values, "the values") || !check(state, out.at(1), indices, "the indices"))
      return;
  } catch (const wgi::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.SetLabel(std::to_string(prepared->dispatch_count()) + " dispatches");
  const int repeats = wgi::bench::time_runs_in_submissions(
      state, device(), [&](wgi::gpu::CommandBatch& commands) { prepared->encode(commands); }, 1024);
  state.counters["bytes"] = benchmark::Counter(4.0 * static_cast<double>(rows * width),
                                               benchmark::Counter::kIsIterationInvariantRate);
  state.counters["runs_per_submit"] = repeats;
}

void run_staged(benchmark::State& state) {
  const int64_t boxes = state.range(0);
  const std::filesystem::path model =
      std::filesystem::path(WGI_TEST_DATA_DIR) / "models" / "dynamic_shapes" / "nms_gather.onnx";
  const Tensor b = random_boxes(boxes, 4), scores = wgi::test::random_tensor({1, 4, boxes}, 5, 0, 1);
  std::unique_ptr<wgi::Session> session;
  try {
    session = std::make_unique<wgi::Session>(wgi::Session::from_file(model));
    auto out = session->run({{"boxes", b}, {"scores", scores}});  // plans both stages
    // nms_gather.onnx's initializers: at most 7 per class, IoU 0.45, score threshold 0.2, corner boxes.
    const wgi::test::NmsOutputs want = wgi::test::nms_reference(b, scores, 7, 0.45, 0.2, false);
    state.counters["near_threshold_pairs"] = static_cast<double>(want.near_threshold_pairs);
    if (want.near_threshold_pairs == 0 && !check(state, out.at("selected"), want.selected, "the selection"))
      return;
  } catch (const wgi::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto out = session->run({{"boxes", b}, {"scores", scores}});
    benchmark::DoNotOptimize(out);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.counters["plans"] = static_cast<double>(session->stats().plans.made);
}

void register_benchmarks() {
  const int64_t boxes = large() ? 10000 : 1000, width = large() ? 50000 : 5000;
  // The kernel benchmarks pick their runs per submission by measuring, so two repetitions may run different
  // iteration counts, which Google Benchmark's aggregates refuse: they report one mean over many submissions.
  auto kernel = [](benchmark::internal::Benchmark* b) { b->UseManualTime()->Unit(benchmark::kMillisecond); };
  kernel(benchmark::RegisterBenchmark("BM_NonMaxSuppression", run_nms)->Args({boxes, 1})->Args({boxes, 4}));
  // K 100 and 1000 sort the rows; K <= 16 selects (a decoder's token candidates: one row for greedy, three
  // beams, over BART's vocabulary at large sizes).
  const int64_t vocab = large() ? 51289 : 5000;
  kernel(benchmark::RegisterBenchmark("BM_TopK", run_topk)
             ->Args({8, width, 100})
             ->Args({8, width, 1000})
             ->Args({8, width, 16})
             ->Args({1, vocab, 1})
             ->Args({3, vocab, 16}));
  benchmark::RegisterBenchmark("BM_StagedNmsGather", run_staged)
      ->Args({boxes})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Repetitions(5)
      ->ReportAggregatesOnly(true);
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  return wgi::bench::run_benchmarks(argc, argv);
}
