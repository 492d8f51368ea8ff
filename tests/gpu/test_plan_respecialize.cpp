// Respecialized plans (docs/decoding.md): a new input-shape signature whose kernels are those of a cached
// plan rewrites that plan's uniforms and grids instead of planning afresh. Each test runs the same inputs
// through a session that respecializes (the default) and one that plans every signature in full
// (SessionOptions::respecialize_plans off, the path as it was): every output must be bit for bit the same,
// and the stats must say how many signatures were planned in full and how many respecialized. The decoder
// loops' results against PyTorch's are tests/gpu/test_decoder_loop.cpp's (which runs through this path).
// Unchanged nodes (SessionOptions::reuse_unchanged_nodes) are checked the same way: the loops with them,
// without them, and with a full plan per step give the same bytes; the per-node check is
// test_plan_node_reuse.cpp's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>

#include "core/npy.h"
#include "onnx/tensor_file.h"
#include "wgi/environment.h"
#include "wgi/session.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(WGI_TEST_DATA_DIR) / "models";

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.byte_size() == b.byte_size() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.byte_size()) == 0;
}

Tensor random_tensor(const Shape& shape, uint64_t seed) {
  Tensor t(DType::Float32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.data<float>()) v = dist(rng);
  return t;
}

// The argmax token of each row's last position of logits [batch, tokens, vocab], as input_ids [batch, 1].
Tensor next_tokens(const Tensor& logits) {
  const int64_t batch = logits.shape()[0], tokens = logits.shape()[1], vocab = logits.shape()[2];
  std::vector<int64_t> ids;
  for (int64_t b = 0; b < batch; ++b) {
    auto row = logits.data<float>().subspan(static_cast<size_t>((b * tokens + tokens - 1) * vocab),
                                            static_cast<size_t>(vocab));
    ids.push_back(std::max_element(row.begin(), row.end()) - row.begin());
  }
  return Tensor::from_vector<int64_t>({batch, 1}, ids);
}

// A decoder step model's greedy loop: `first` are the prompt step's inputs, `later` replace inputs from the
// second step on (the merged decoder's use_cache_branch). The presents stay on the device as the next past.
struct DecoderLoop {
  fs::path file;
  std::map<std::string, Tensor> first;
  std::map<std::string, Tensor> later;
};

struct LoopRun {
  std::vector<std::map<std::string, Tensor>> outputs;  // per step, every output downloaded
  SessionStats stats;
  std::vector<SessionStats> step_stats;  // after each step
};

// On `environment` when given (sessions of one model then share compiled pipelines).
LoopRun run_loop(const DecoderLoop& loop, bool respecialize, int steps, bool reuse_unchanged = true,
                 const Environment* environment = nullptr, const std::map<std::string, int64_t>& growing = {},
                 bool plan_ahead = true, const std::vector<std::string>& as_data = {},
                 bool vary_tokens = false) {
  SessionOptions options;
  options.respecialize_plans = respecialize;
  options.reuse_unchanged_nodes = reuse_unchanged;
  options.plan_ahead = plan_ahead;
  Session session = environment ? Session::from_file(loop.file, *environment, options)
                                : Session::from_file(loop.file, options);
  std::map<std::string, Value> inputs;
  for (const auto& [name, tensor] : loop.first) inputs[name] = tensor;
  RunOptions keep;
  keep.all_outputs_on_device = true;
  keep.growing_dims = growing;
  keep.inputs_as_data = as_data;
  LoopRun result;
  for (int step = 0; step < steps; ++step) {
    std::map<std::string, Value> out = session.run(inputs, keep);
    std::map<std::string, Tensor> downloaded;
    for (const auto& [name, value] : out) downloaded[name] = value.device().download();
    Tensor ids = next_tokens(downloaded.at("logits"));
    if (vary_tokens) {
      // The tiny decoders' greedy token is the same at every step: a token of its own per step instead.
      for (int64_t& id : ids.data<int64_t>()) id = (id + step) % downloaded.at("logits").shape()[2];
    }
    inputs["input_ids"] = ids;
    for (const auto& [name, tensor] : loop.later) inputs[name] = tensor;
    for (auto& [name, value] : out) {
      if (name.rfind("present_", 0) == 0) inputs["past_" + name.substr(8)] = std::move(value);
    }
    result.outputs.push_back(std::move(downloaded));
    result.step_stats.push_back(session.stats());
  }
  result.stats = session.stats();
  return result;
}

void expect_same_outputs(const LoopRun& got, const LoopRun& want) {
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  size_t compared = 0;
  for (size_t step = 0; step < want.outputs.size(); ++step) {
    ASSERT_EQ(got.outputs[step].size(), want.outputs[step].size());
    for (const auto& [name, tensor] : want.outputs[step]) {
      EXPECT_TRUE(same_bytes(got.outputs[step].at(name), tensor)) << "step " << step << " " << name;
      compared += tensor.element_count() > 0 ? 1 : 0;
    }
  }
  EXPECT_GT(compared, want.outputs.size());  // logits and presents, not empty tensors
}

// The split decoder with cached cross keys/values, as Florence-2 runs it: the prompt with an empty past (in a
// batch of the reference's rows), then one token per step.
DecoderLoop cached_cross_loop() {
  const fs::path dir = kModels / "bart_decoder_cached_cross_tiny_opset17";
  DecoderLoop loop{dir / "model.onnx", {}, {}};
  Session probe = Session::from_file(loop.file);
  const Tensor prompt = npy::load(dir / "greedy_prompt_ids.npy");
  loop.first["input_ids"] = prompt;
  for (const TensorInfo& in : probe.inputs()) {
    if (in.name == "input_ids") continue;
    if (in.name.rfind("past_", 0) == 0) {
      loop.first[in.name] = Tensor(DType::Float32, {prompt.shape()[0], in.dims[1], 0, in.dims[3]});
    } else {
      loop.first[in.name] = npy::load(dir / ("greedy_" + in.name + ".npy"));
    }
  }
  return loop;
}

// The merged decoder (an If on use_cache_branch, planned inline): the prompt with dummy past inputs and
// use_cache_branch false, then use_cache_branch true.
DecoderLoop merged_loop() {
  const fs::path dir = kModels / "merged_decoder_tiny_opset17";
  DecoderLoop loop{dir / "model.onnx", {}, {}};
  for (const std::string name :
       {"input_ids", "encoder_hidden_states", "past_key_0", "past_value_0", "past_key_1", "past_value_1"})
    loop.first[name] = npy::load(dir / ("no_past_" + name + ".npy"));
  Tensor no(DType::Bool, {1}), yes(DType::Bool, {1});
  no.bytes()[0] = std::byte{0};
  yes.bytes()[0] = std::byte{1};
  loop.first["use_cache_branch"] = no;
  loop.later["use_cache_branch"] = yes;
  return loop;
}

TEST(PlanRespecialize, SplitDecoderLoopPlansTheStepOnceAndMatchesFullPlans) {
  const DecoderLoop loop = cached_cross_loop();
  ASSERT_GT(loop.first.at("input_ids").shape()[0], 1) << "the loop should run a batch of rows (beams)";
  constexpr int kSteps = 8;
  const LoopRun full = run_loop(loop, false, kSteps);
  const LoopRun fast = run_loop(loop, true, kSteps);
  expect_same_outputs(fast, full);
  EXPECT_EQ(full.stats.plans.made, static_cast<size_t>(kSteps));
  EXPECT_EQ(full.stats.plans.respecialized, 0u);
  // The prompt step (3 tokens, its own kernels) and the first one-token step are planned; the later steps
  // only grow past_len and respecialize the step's plan, but for one: where a region outgrows its room (an
  // eighth of its size at first), the step is planned again with the grown regions doubled, replacing the
  // old plan, and that holds the rest of the loop.
  EXPECT_EQ(fast.stats.plans.made, 3u);
  EXPECT_EQ(fast.stats.plans.respecialized, static_cast<size_t>(kSteps - 3));
  EXPECT_TRUE(fast.stats.last_plan.respecialized);
  EXPECT_EQ(fast.stats.plans.cached, 2u);
}

TEST(PlanRespecialize, MergedDecoderLoopPlansTheStepOnceAndMatchesFullPlans) {
  const DecoderLoop loop = merged_loop();
  constexpr int kSteps = 6;
  const LoopRun full = run_loop(loop, false, kSteps);
  const LoopRun fast = run_loop(loop, true, kSteps);
  expect_same_outputs(fast, full);
  EXPECT_EQ(full.stats.plans.made, static_cast<size_t>(kSteps));
  // The prompt takes the If's other branch (other nodes, other kernels): a plan of its own; then the step's
  // plan, planned once more when its regions double (as above).
  EXPECT_EQ(fast.stats.plans.made, 3u);
  EXPECT_EQ(fast.stats.plans.respecialized, static_cast<size_t>(kSteps - 3));
}

// The name of the past inputs' growing dim (past_key_0 [batch, heads, past_len, head_size]).
std::string past_dim_name(const fs::path& file) {
  const Session session = Session::from_file(file);
  for (const TensorInfo& in : session.inputs()) {
    if (in.name.rfind("past_", 0) == 0 && in.dim_names.size() == 4) return in.dim_names[2];
  }
  return {};
}

// RunOptions::growing_dims: the first one-token step is planned with room for the last step's past, so
// every later step respecializes it (no plan when the regions would have doubled), with the same bytes.
TEST(PlanRespecialize, GrowingDimsPlanADecoderLoopOnce) {
  constexpr int kSteps = 12;
  for (const DecoderLoop& loop : {cached_cross_loop(), merged_loop()}) {
    SCOPED_TRACE(loop.file.string());
    const std::string past = past_dim_name(loop.file);
    ASSERT_FALSE(past.empty());
    const LoopRun full = run_loop(loop, false, kSteps);
    const LoopRun once = run_loop(loop, true, kSteps, true, nullptr, {{past, 4 + kSteps}});
    expect_same_outputs(once, full);
    // The prompt (its own kernels, or the If's other branch) and the first one-token step.
    EXPECT_EQ(once.stats.plans.made, 2u);
    EXPECT_EQ(once.stats.plans.respecialized, static_cast<size_t>(kSteps - 2));
    // A limit the loop outgrows: the plans grow by doubling again from there, still the same bytes.
    const LoopRun short_limit = run_loop(loop, true, kSteps, true, nullptr, {{past, 5}});
    expect_same_outputs(short_limit, full);
    EXPECT_GT(short_limit.stats.plans.made, 2u);
  }
}

// SessionOptions::plan_ahead: in a loop with growing dims, each step's GPU work overlaps the node plans for
// the next step's sizes (the past one longer), so that the next step plans again only the nodes that read
// its new token. The same bytes as without; nothing is planned ahead without growing dims, before the sizes
// have grown once, or past the limit.
TEST(PlanRespecialize, PlanAheadMakesTheNextStepsNodePlansDuringTheGpuWork) {
  constexpr int kSteps = 10;
  for (const DecoderLoop& loop : {cached_cross_loop(), merged_loop()}) {
    SCOPED_TRACE(loop.file.string());
    const std::string past = past_dim_name(loop.file);
    const Environment environment = Environment::create();
    const std::map<std::string, int64_t> growing{{past, 4 + kSteps}};
    const LoopRun ahead = run_loop(loop, true, kSteps, true, &environment, growing);
    const LoopRun when_due = run_loop(loop, true, kSteps, true, &environment, growing, false);
    expect_same_outputs(ahead, when_due);
    EXPECT_EQ(ahead.stats.plans.made, when_due.stats.plans.made);
    EXPECT_EQ(when_due.stats.plans.planned_ahead, 0u);
    // Steps 0 (prompt) and 1 (other shapes) predict nothing; step 1 -> 2 grew the past by the prompt's
    // length, not by one, so step 2 was predicted wrongly; every later step was predicted by the one before.
    EXPECT_EQ(ahead.stats.plans.planned_ahead, static_cast<size_t>(kSteps - 2));
    EXPECT_EQ(ahead.stats.plans.ahead_hits, static_cast<size_t>(kSteps - 3));
    for (int step = 3; step < kSteps; ++step) {
      const SessionStats& a = ahead.step_stats[static_cast<size_t>(step)];
      const SessionStats& b = when_due.step_stats[static_cast<size_t>(step)];
      EXPECT_GT(a.last_plan.planned_ahead_ms, 0.0) << "step " << step;
      EXPECT_EQ(b.last_plan.planned_ahead_ms, 0.0) << "step " << step;
      EXPECT_LT(a.last_plan.replanned_nodes, b.last_plan.replanned_nodes) << "step " << step;
      EXPECT_EQ(a.last_plan.unchanged_nodes + a.last_plan.replanned_nodes,
                b.last_plan.unchanged_nodes + b.last_plan.replanned_nodes)
          << "step " << step;
    }
    const LoopRun no_growing = run_loop(loop, true, 5, true, &environment);
    EXPECT_EQ(no_growing.stats.plans.planned_ahead, 0u);
    // A limit of 5: at past 5 the next size would pass it (the loop still runs, planned when due).
    const LoopRun short_limit = run_loop(loop, true, kSteps, true, &environment, {{past, 5}});
    expect_same_outputs(short_limit, when_due);
    EXPECT_LT(short_limit.stats.plans.planned_ahead, ahead.stats.plans.planned_ahead);
  }
}

// With the token ids as data (RunOptions::inputs_as_data), the planning ahead sees everything the next step's
// planner sees, so the step takes its node plans whole: no node planned on its critical path. The same bytes
// as by value and planned when due.
TEST(PlanRespecialize, TokenIdsAsDataPlanTheWholeNextStepAhead) {
  constexpr int kSteps = 10;
  for (const DecoderLoop& loop : {cached_cross_loop(), merged_loop()}) {
    SCOPED_TRACE(loop.file.string());
    const Environment environment = Environment::create();
    const std::map<std::string, int64_t> growing{{past_dim_name(loop.file), 4 + kSteps}};
    const LoopRun as_data =
        run_loop(loop, true, kSteps, true, &environment, growing, true, {"input_ids"}, true);
    const LoopRun by_value = run_loop(loop, true, kSteps, true, &environment, growing, false, {}, true);
    expect_same_outputs(as_data, by_value);
    EXPECT_EQ(as_data.stats.plans.made, by_value.stats.plans.made);
    // The tokens differ from step to step (else by value would plan nothing either: nothing shown).
    size_t token_changes = 0;
    for (int step = 3; step + 1 < kSteps; ++step) {
      const Tensor a = next_tokens(as_data.outputs[static_cast<size_t>(step)].at("logits"));
      const Tensor b = next_tokens(as_data.outputs[static_cast<size_t>(step + 1)].at("logits"));
      token_changes += !same_bytes(a, b);
    }
    EXPECT_GT(token_changes, 0u);
    EXPECT_EQ(as_data.stats.plans.ahead_hits, static_cast<size_t>(kSteps - 3));
    EXPECT_EQ(as_data.stats.plans.ahead_whole, as_data.stats.plans.ahead_hits);
    for (int step = 3; step < kSteps; ++step) {
      const SessionStats& a = as_data.step_stats[static_cast<size_t>(step)];
      const SessionStats& b = by_value.step_stats[static_cast<size_t>(step)];
      EXPECT_EQ(a.last_plan.replanned_nodes, 0u) << "step " << step;
      EXPECT_GT(b.last_plan.replanned_nodes, 0u) << "step " << step;
      EXPECT_TRUE(a.last_plan.respecialized) << "step " << step;
    }
  }
}

// A small input named as data that a node needs by value (a Reshape target): planned by value instead, with
// the right result; a name that is no input is an error listing the inputs.
TEST(PlanRespecialize, InputsAsDataThatANodeNeedsByValueArePlannedByValue) {
  const fs::path dir = "/usr/share/libonnx-testdata/data/node/test_reshape_reordered_all_dims";
  if (!fs::exists(dir)) GTEST_SKIP() << "Debian libonnx-testdata is not installed (" << dir << ")";
  Session session = Session::from_file(dir / "model.onnx");
  const std::string data_name = session.inputs().at(0).name, shape_name = session.inputs().at(1).name;
  std::map<std::string, Value> inputs{
      {data_name, onnx::load_tensor_file(dir / "test_data_set_0" / "input_0.pb").tensor},
      {shape_name, onnx::load_tensor_file(dir / "test_data_set_0" / "input_1.pb").tensor}};
  const Tensor expected = onnx::load_tensor_file(dir / "test_data_set_0" / "output_0.pb").tensor;
  RunOptions options;
  options.inputs_as_data = {shape_name};
  for (int run = 0; run < 2; ++run) {
    const Tensor got = session.run(inputs, options).begin()->second.host();
    EXPECT_EQ(got.shape(), expected.shape());
    EXPECT_TRUE(same_bytes(got, expected)) << "run " << run;
  }
  options.inputs_as_data = {"no_such_input"};
  try {
    session.run(inputs, options);
    FAIL() << "an unknown input name was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'no_such_input', which is not an input of the model"),
              std::string::npos)
        << e.what();
  }
}

TEST(PlanRespecialize, GrowingDimsNameSymbolicInputDims) {
  const DecoderLoop loop = cached_cross_loop();
  Session session = Session::from_file(loop.file);
  std::map<std::string, Value> inputs;
  for (const auto& [name, tensor] : loop.first) inputs[name] = tensor;
  RunOptions options;
  options.growing_dims = {{"no_such_dim", 10}};
  try {
    session.run(inputs, options);
    FAIL() << "an unknown dim name was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'no_such_dim', which is not a symbolic dim"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(past_dim_name(loop.file)), std::string::npos) << e.what();
  }
  options.growing_dims = {{past_dim_name(loop.file), 0}};
  EXPECT_THROW(session.run(inputs, options), Error);
}

// The loop with unchanged nodes taken from their latest planning (the default), without, and with a full plan
// per step (no respecializing, no unchanged nodes): the same bytes and the same plans. From the second
// one-token step on (the first follows the prompt: other shapes, or the If's other branch), every step has a
// longer past: most nodes are taken unchanged, and the others (the attention over the past, its concats and
// masks) are planned again, so that each step counts every node once.
void expect_unchanged_nodes(const DecoderLoop& loop, int steps) {
  const Environment environment = Environment::create();
  const LoopRun on = run_loop(loop, true, steps, true, &environment);
  const LoopRun off = run_loop(loop, true, steps, false, &environment);
  const LoopRun full = run_loop(loop, false, steps, false, &environment);
  expect_same_outputs(on, off);
  expect_same_outputs(on, full);
  EXPECT_EQ(on.stats.plans.made, off.stats.plans.made);
  EXPECT_EQ(on.stats.plans.respecialized, off.stats.plans.respecialized);
  EXPECT_EQ(full.stats.plans.made, static_cast<size_t>(steps));
  size_t checked = 0;
  for (int step = 2; step < steps; ++step) {
    const SessionStats &a = on.step_stats[static_cast<size_t>(step)],
                       &b = off.step_stats[static_cast<size_t>(step)];
    const SessionStats& before = on.step_stats[static_cast<size_t>(step - 1)];
    // A new signature at every step (past_len grows), so the last_plan fields are this step's.
    ASSERT_EQ(a.plans.made + a.plans.respecialized, before.plans.made + before.plans.respecialized + 1)
        << "step " << step;
    EXPECT_EQ(b.last_plan.unchanged_nodes, 0u) << "step " << step;
    EXPECT_EQ(full.step_stats[static_cast<size_t>(step)].last_plan.unchanged_nodes, 0u) << "step " << step;
    EXPECT_EQ(a.last_plan.unchanged_nodes + a.last_plan.replanned_nodes, b.last_plan.replanned_nodes)
        << "step " << step;
    EXPECT_GT(a.last_plan.unchanged_nodes, a.last_plan.replanned_nodes) << "step " << step;
    EXPECT_GT(a.last_plan.replanned_nodes, 0u) << "step " << step;
    ++checked;
  }
  EXPECT_GE(checked, 3u);
}

TEST(PlanRespecialize, SplitDecoderLoopTakesUnchangedNodesAndMatchesFullPlans) {
  expect_unchanged_nodes(cached_cross_loop(), 6);
}

TEST(PlanRespecialize, MergedDecoderLoopTakesUnchangedNodesAndMatchesFullPlans) {
  expect_unchanged_nodes(merged_loop(), 6);
}

// tiny_transformer with a token count that changes: where its regions have no room (3 -> 4 tokens, a third
// more rows) the plan is made again with doubled regions. On SwiftShader 5, 7 and 2 tokens then respecialize
// it; on GL ES (other limits) the kernel choice changes at 5 and 2: planned in full. Either way every output
// is the full plans' and every signature is counted once. (Changed kernels on every adapter: the decoder
// loops' prompt and first steps above.)
TEST(PlanRespecialize, SizesWithoutRoomOrWithOtherKernelsArePlannedInFull) {
  const fs::path file = kModels / "tiny_transformer_opset17" / "model.onnx";
  SessionOptions off;
  off.respecialize_plans = false;
  Session fast = Session::from_file(file);
  Session full = Session::from_file(file, off);
  struct Case {
    int64_t tokens;
    bool respecialized;
  };
  const std::vector<Case> cases = {{3, false}, {4, false}, {5, true}, {7, true}, {2, true}};
  size_t respecialized = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const Tensor x = random_tensor({2, cases[k].tokens, 16}, 300 + k);
    const Tensor y = fast.run({{"x", x}}).at("y");
    EXPECT_TRUE(same_bytes(y, full.run({{"x", x}}).at("y"))) << "tokens " << cases[k].tokens;
    if (k < 2) {
      EXPECT_EQ(fast.stats().last_plan.respecialized, cases[k].respecialized) << "tokens " << cases[k].tokens;
    }
    std::cerr << "[ tokens " << cases[k].tokens << ": " << fast.stats().plans.made << " plans, "
              << fast.stats().plans.respecialized << " respecialized ]\n";
    respecialized += fast.stats().last_plan.respecialized ? 1 : 0;
  }
  EXPECT_EQ(fast.stats().plans.respecialized, respecialized);
  EXPECT_GE(respecialized, 1u);
  EXPECT_EQ(fast.stats().plans.made + respecialized, full.stats().plans.made);
  EXPECT_EQ(full.stats().plans.made, cases.size());
}

TEST(PlanRespecialize, ShapesThatComeBackGetAPlanOfTheirOwn) {
  // 4 and 3 tokens alternate: 3 respecializes 4's plan once (it fits), then 4 (served before) gets its own
  // plan and both hit the cache from then on.
  Session s = Session::from_file(kModels / "tiny_transformer_opset17" / "model.onnx");
  SessionOptions off;
  off.respecialize_plans = false;
  Session reference = Session::from_file(kModels / "tiny_transformer_opset17" / "model.onnx", off);
  for (int k = 0; k < 6; ++k) {
    // Batch 2: more than 64 elements, so x is not planned with by value (its values would be in the key).
    const Tensor x = random_tensor({2, k % 2 == 0 ? 4 : 3, 16}, 400 + static_cast<uint64_t>(k % 2));
    EXPECT_TRUE(same_bytes(s.run({{"x", x}}).at("y"), reference.run({{"x", x}}).at("y"))) << "run " << k;
  }
  EXPECT_EQ(s.stats().plans.made, 2u);
  EXPECT_EQ(s.stats().plans.respecialized, 1u);
  EXPECT_EQ(s.stats().plans.cached, 2u);
}

}  // namespace
}  // namespace wgi
