// Host time of planning a decoder step (docs/decoding.md): runtime::plan_nodes with a session's PlanSharing,
// each iteration one past row longer than the last, as `wgi bench --decode` plans it (no GPU work, no
// respecialization: those are timed by `wgi bench --decode` itself).
//   BM_DecoderStepPlanning/<model>[/after_ahead]: tests/data/models/<model> (the tiny split and merged
//   decoders), or
//     WGI_BENCH_DECODER=path/to/model.onnx (e.g. build/models-large/bart_decoder_cached_cross_base_opset17).
// after_ahead: what is left once the step's sizes were planned ahead with another token
// (SessionOptions::plan_ahead). Counters: unchanged / replanned nodes per planning. The planning is checked
// once: the steady steps must take more nodes unchanged than they plan again (else the benchmark times
// something else and says so).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "graph/passes.h"
#include "onnx/importer.h"
#include "runtime/execution_plan.h"

namespace {

namespace fs = std::filesystem;
using wgi::DType;
using wgi::Tensor;

// The past length planned first, and how far the loop grows before it starts again (within the tiny
// models' position tables).
constexpr int64_t kFirstPast = 8, kPastSpan = 48;

struct Decoder {
  wgi::graph::Graph graph;
  int64_t source_len = 0;  // cross key/value rows, or encoder tokens
};

Decoder load(const fs::path& path) {
  Decoder d{wgi::onnx::import_model_file(path), 0};
  wgi::graph::optimize(d.graph, wgi::ops::builtin_registry());
  return d;
}

// One step's inputs (its token from `past` and `token_seed`): batch 1, one new token, `past` rows of past
// key/values; symbolic dims of other inputs (cross key/values, encoder states) at 16.
std::vector<wgi::runtime::PlanInput> step_inputs(const wgi::graph::Graph& g, int64_t past, int64_t token_seed,
                                                 std::vector<Tensor>& values) {
  std::vector<wgi::runtime::PlanInput> inputs;
  values.clear();
  values.reserve(g.inputs.size());
  for (wgi::graph::ValueId v : g.inputs) {
    const wgi::graph::Value& value = g.value(v);
    wgi::ops::TensorDesc desc{value.dtype, {}};
    const bool is_past = value.name.rfind("past_", 0) == 0;
    for (const wgi::graph::Dim& dim : value.shape.dims) {
      if (dim.is_known()) {
        desc.shape.push_back(dim.value);
      } else if (dim.symbol == "batch" || dim.symbol == "batch_size" || dim.symbol == "new_tokens" ||
                 dim.symbol == "decoder_sequence_length") {
        desc.shape.push_back(1);
      } else {
        desc.shape.push_back(is_past ? past : 16);
      }
    }
    wgi::runtime::PlanInput in{desc, nullptr};
    if (value.name == "input_ids") {
      values.push_back(
          Tensor::from_vector<int64_t>({1, 1}, {static_cast<int64_t>((past + token_seed) % 7) + 2}));
      in.value = &values.back();
    } else if (value.name == "use_cache_branch") {
      Tensor yes(DType::Bool, {1});
      yes.bytes()[0] = std::byte{1};
      values.push_back(yes);
      in.value = &values.back();
    }
    inputs.push_back(in);
  }
  return inputs;
}

// `ahead`: each timed planning follows an untimed one of the same sizes with another token, as a step's
// planning follows the previous step's planning ahead (SessionOptions::plan_ahead): what is left on the
// step's critical path.
void BM_DecoderStepPlanning(benchmark::State& state, const fs::path& path, bool ahead) {
  const Decoder d = load(path);
  const wgi::gpu::Capabilities& caps = wgi::bench::device().capabilities();
  const wgi::ops::OpRegistry& registry = wgi::ops::builtin_registry();
  wgi::runtime::PlanSharing sharing(4);
  std::vector<Tensor> values;
  auto plan = [&](int64_t past, int64_t token_seed = 0) {
    const auto inputs = step_inputs(d.graph, past, token_seed, values);
    return wgi::runtime::plan_nodes(d.graph, registry, caps, inputs, {}, nullptr, &sharing);
  };
  plan(kFirstPast);
  const wgi::runtime::NodePlans second = plan(kFirstPast + 1);
  if (second.unchanged <= second.replanned) {
    state.SkipWithError(("the second step took " + std::to_string(second.unchanged) +
                         " nodes unchanged and " + std::to_string(second.replanned) +
                         " planned again: not a decoder step's planning")
                            .c_str());
    return;
  }
  int64_t step = 2;
  size_t unchanged = 0, replanned = 0;
  for (auto _ : state) {
    if (ahead) {
      state.PauseTiming();
      plan(kFirstPast + step % kPastSpan, 1);
      state.ResumeTiming();
    }
    const wgi::runtime::NodePlans p = plan(kFirstPast + step % kPastSpan);
    unchanged = p.unchanged;
    replanned = p.replanned;
    ++step;
  }
  state.counters["unchanged"] = static_cast<double>(unchanged);
  state.counters["replanned"] = static_cast<double>(replanned);
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path models = fs::path(WGI_TEST_DATA_DIR) / "models";
  std::vector<std::pair<std::string, fs::path>> decoders{
      {"bart_decoder_cached_cross_tiny", models / "bart_decoder_cached_cross_tiny_opset17" / "model.onnx"},
      {"bart_decoder_tiny", models / "bart_decoder_tiny_opset17" / "model.onnx"},
      {"merged_decoder_tiny", models / "merged_decoder_tiny_opset17" / "model.onnx"}};
  if (const char* extra = std::getenv("WGI_BENCH_DECODER"))
    decoders.emplace_back(fs::path(extra).parent_path().filename().string(), extra);
  for (const auto& [name, path] : decoders) {
    for (const bool ahead : {false, true}) {
      benchmark::RegisterBenchmark(("BM_DecoderStepPlanning/" + name + (ahead ? "/after_ahead" : "")).c_str(),
                                   BM_DecoderStepPlanning, path, ahead)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
