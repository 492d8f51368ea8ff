// If through the public Session API (docs/control_flow.md). The models are written by
// tests/models/merged_decoder.py:
//   - merged_decoder_tiny_opset17: a no-past and a with-past BART decoder merged as optimum's merge_decoders
//     does (If on use_cache_branch, shared weights in the outer graph); each branch must match onnxruntime's
//     CPU provider on the same merged file, and be bit for bit what wgi gives for the split model, with the
//     same number of dispatches (the branch is planned in the If's place: no extra launches), also over a
//     greedy decoding loop;
//   - control_flow/: a nested If on two graph inputs, an If on a shape comparison folded when planning (both
//     against float64 references computed here), a condition computed on the GPU (read back, then the
//     branch planned: docs/dynamic_shapes.md), and models that must fail to load with messages naming what
//     is wrong; the small Loop model, which runs since Loop is supported.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/npy.h"
#include "graph/passes.h"
#include "onnx/importer.h"
#include "onnxruntime_reference.h"
#include "runtime/execution_plan.h"
#include "support/expect_text.h"
#include "support/model_reference.h"
#include "support/tensor_check.h"
#include "support/test_device.h"
#include "wgi/session.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(WGI_TEST_DATA_DIR) / "models";
const fs::path kMerged = kModels / "merged_decoder_tiny_opset17";
const fs::path kControlFlow = kModels / "control_flow";

Tensor bool_tensor(const Shape& shape, bool value) {
  Tensor t(DType::Bool, shape);
  for (std::byte& b : t.bytes()) b = std::byte{value ? uint8_t{1} : uint8_t{0}};
  return t;
}

test::Float64Array as_float64(const Tensor& t) {
  test::Float64Array out{t.shape(), {}};
  for (float v : t.data<float>()) out.values.push_back(v);
  return out;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.byte_size() == b.byte_size() &&
         std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin());
}

// The merged decoder's inputs for one branch: the split model's inputs (input_ids, encoder_hidden_states and,
// with past, past_*), the past inputs anyway (the merged model takes them in both branches), and
// use_cache_branch.
std::map<std::string, Tensor> merged_inputs(const std::string& prefix, bool use_cache) {
  std::map<std::string, Tensor> inputs;
  for (const std::string name :
       {"input_ids", "encoder_hidden_states", "past_key_0", "past_value_0", "past_key_1", "past_value_1"})
    inputs[name] = npy::load(kMerged / (prefix + "_" + name + ".npy"));
  inputs["use_cache_branch"] = bool_tensor({1}, use_cache);
  return inputs;
}

void expect_branch_matches(bool use_cache) {
  const std::string prefix = use_cache ? "with_past" : "no_past";
  const fs::path split_file = kMerged / (use_cache ? "decoder_with_past_model.onnx" : "decoder_model.onnx");
  std::map<std::string, Tensor> inputs = merged_inputs(prefix, use_cache);
  Session merged = Session::from_file(kMerged / "model.onnx");
  const std::map<std::string, Tensor> got = merged.run(inputs);
  const size_t merged_dispatches = merged.stats().plans.dispatches;
  const size_t merged_gpu_nodes = merged.stats().last_plan.gpu_nodes;

  // onnxruntime on the same merged file and inputs.
  std::vector<std::string> output_names;
  for (const TensorInfo& out : merged.outputs()) output_names.push_back(out.name);
  const std::map<std::string, Tensor> ort =
      test::run_onnxruntime(kMerged / "model.onnx", inputs, output_names);
  ASSERT_EQ(ort.size(), 5u);  // logits and present key/value of both layers
  ASSERT_EQ(got.size(), ort.size());
  for (const auto& [name, want] : ort) {
    ASSERT_TRUE(got.count(name)) << name;
    // Both float32; sums over at most 64 terms in different orders: observed relative L2 ~1e-7.
    auto result = test::close_in_l2(got.at(name), as_float64(want), 1e-5);
    EXPECT_TRUE(result) << prefix << " " << name;
    std::cerr << "[ merged decoder " << prefix << " / " << name << " vs onnxruntime: " << result.message()
              << " ]\n";
  }

  // The split model on wgi: the branch's nodes after the passes are the split model's, planned for the same
  // shapes, so the same kernels run in the same order: identical bits and as many dispatches.
  std::map<std::string, Tensor> split_inputs = {
      {"input_ids", inputs.at("input_ids")}, {"encoder_hidden_states", inputs.at("encoder_hidden_states")}};
  if (use_cache) {
    for (const std::string name : {"past_key_0", "past_value_0", "past_key_1", "past_value_1"})
      split_inputs[name] = inputs.at(name);
  }
  Session split = Session::from_file(split_file);
  const std::map<std::string, Tensor> split_got = split.run(split_inputs);
  for (const auto& [name, want] : split_got)
    EXPECT_TRUE(same_bytes(got.at(name), want)) << prefix << " " << name;
  EXPECT_EQ(merged_dispatches, split.stats().plans.dispatches);
  EXPECT_EQ(merged_gpu_nodes, split.stats().last_plan.gpu_nodes);

  // The other branch is another plan; the first one replayed gives the same bits without planning again.
  std::map<std::string, Tensor> other = merged_inputs(use_cache ? "no_past" : "with_past", !use_cache);
  merged.run(other);
  const size_t plans = merged.stats().plans.made;
  const std::map<std::string, Tensor> again = merged.run(inputs);
  EXPECT_EQ(merged.stats().plans.made, plans);
  for (const auto& [name, t] : again) EXPECT_TRUE(same_bytes(t, got.at(name))) << "replayed " << name;
}

TEST(ControlFlow, MergedDecoderWithoutCacheMatchesOnnxRuntimeAndTheSplitDecoder) {
  // The past inputs have past_len 1 and random contents here: the no-past branch must not read them.
  expect_branch_matches(false);
}

TEST(ControlFlow, MergedDecoderWithCacheMatchesOnnxRuntimeAndTheSplitDecoder) {
  expect_branch_matches(true);
}

// Greedy decoding as Florence-2's generation runs the merged decoder: the prompt with use_cache_branch false
// (dummy past inputs), then one token per step with the presents fed back and use_cache_branch true. Each
// step's outputs are bit for bit the split decoders' run the same way, and the last step agrees with
// onnxruntime on the merged file.
TEST(ControlFlow, MergedDecoderGreedyLoopMatchesTheSplitDecoders) {
  Session merged = Session::from_file(kMerged / "model.onnx");
  Session no_past = Session::from_file(kMerged / "decoder_model.onnx");
  Session with_past = Session::from_file(kMerged / "decoder_with_past_model.onnx");
  const std::vector<std::string> past = {"past_key_0", "past_value_0", "past_key_1", "past_value_1"};
  std::map<std::string, Tensor> inputs = merged_inputs("no_past", false);  // the prompt: 3 tokens per row
  std::map<std::string, Tensor> split_out = no_past.run(
      {{"input_ids", inputs.at("input_ids")}, {"encoder_hidden_states", inputs.at("encoder_hidden_states")}});
  for (int step = 0; step < 4; ++step) {
    const std::map<std::string, Tensor> out = merged.run(inputs);
    for (const auto& [name, want] : split_out)
      EXPECT_TRUE(same_bytes(out.at(name), want)) << "step " << step << " " << name;
    if (step == 3) {
      auto ort = test::run_onnxruntime(kMerged / "model.onnx", inputs, {"logits"});
      auto result = test::close_in_l2(out.at("logits"), as_float64(ort.at("logits")), 1e-5);  // as above
      EXPECT_TRUE(result) << result.message();
      break;
    }
    // The next token: each row's argmax at the last position.
    const Tensor& logits = out.at("logits");
    const int64_t batch = logits.shape()[0], tokens = logits.shape()[1], vocab = logits.shape()[2];
    std::vector<int64_t> next;
    for (int64_t b = 0; b < batch; ++b) {
      auto row = logits.data<float>().subspan(static_cast<size_t>((b * tokens + tokens - 1) * vocab),
                                              static_cast<size_t>(vocab));
      next.push_back(std::max_element(row.begin(), row.end()) - row.begin());
    }
    inputs["input_ids"] = Tensor::from_vector<int64_t>({batch, 1}, next);
    inputs["use_cache_branch"] = bool_tensor({1}, true);
    std::map<std::string, Tensor> split_in = {{"input_ids", inputs.at("input_ids")},
                                              {"encoder_hidden_states", inputs.at("encoder_hidden_states")}};
    for (size_t k = 0; k < past.size(); ++k) {
      const std::string present = "present_" + past[k].substr(5);  // past_key_0 -> present_key_0
      inputs[past[k]] = out.at(present);
      split_in[past[k]] = out.at(present);
    }
    split_out = with_past.run(split_in);
  }
  // One new signature per step: the prompt and the first one-token step are planned, the later steps
  // respecialize the step's plan, or plan it again where a region outgrew its room (adapter-dependent).
  EXPECT_EQ(merged.stats().plans.made + merged.stats().plans.respecialized, 4u);
  EXPECT_GE(merged.stats().plans.respecialized, 1u);
}

TEST(ControlFlow, NestedIfTakesEachBranchWithoutExtraLaunches) {
  // z = If(c1, If(c2, relu(x + w), x * w), x - w) + x, x [13, 5]: more than 64 elements, so x is not given to
  // the planner by value (which would fold everything on the host).
  const std::vector<double> w = {0.5, -1.5, 2.0, 0.25, -0.75};
  const Tensor x = test::random_tensor({13, 5}, 71);
  Session session = Session::from_file(kControlFlow / "nested_if.onnx");
  for (bool c1 : {true, false}) {
    for (bool c2 : {true, false}) {
      std::vector<double> want;
      for (size_t i = 0; i < 65; ++i) {
        const double xi = x.data<float>()[i], wi = w[i % 5];
        const double y = c1 ? (c2 ? std::max(0.0, xi + wi) : xi * wi) : xi - wi;
        want.push_back(y + xi);
      }
      auto out = session.run({{"c1", bool_tensor({1}, c1)}, {"c2", bool_tensor({}, c2)}, {"x", x}});
      // Two or three float32 operations, each rounded once.
      EXPECT_TRUE(
          test::all_close(out.at("z"), {13, 5}, want, [](double r) { return 1e-6 * (1 + std::abs(r)); }))
          << "c1 " << c1 << ", c2 " << c2;
      // Only the taken branch's nodes run, and the Add after the If: no launch for the If itself.
      EXPECT_EQ(session.stats().last_plan.gpu_nodes, c1 && c2 ? 3u : 2u) << "c1 " << c1 << ", c2 " << c2;
      EXPECT_EQ(session.stats().plans.dispatches, c1 && c2 ? 3u : 2u) << "c1 " << c1 << ", c2 " << c2;
    }
  }
  // One signature per condition pair (the conditions are part of the plan's key); with c1 false, c2 changes
  // no node: that signature respecializes the plan of the other.
  EXPECT_EQ(session.stats().plans.made, 3u);
  EXPECT_EQ(session.stats().plans.respecialized, 1u);
}

TEST(ControlFlow, IfOnAShapeComparisonFoldedWhenPlanning) {
  // y = If(x.shape[1] > 4, x * 2, x + 1): Shape, Gather and Greater fold on the host, one launch remains.
  Session session = Session::from_file(kControlFlow / "if_shape_condition.onnx");
  // x [12, 7] and [24, 3]: more than 64 elements each, so not folded on the host.
  for (int64_t n : {7, 3}) {
    const int64_t rows = n > 4 ? 12 : 24;
    const Tensor x = test::random_tensor({rows, n}, 72 + static_cast<uint64_t>(n));
    std::vector<double> want;
    for (float v : x.data<float>()) want.push_back(n > 4 ? 2.0 * v : v + 1.0);
    auto out = session.run({{"x", x}});
    EXPECT_TRUE(
        test::all_close(out.at("y"), {rows, n}, want, [](double r) { return 1e-6 * (1 + std::abs(r)); }))
        << "n " << n;  // one float32 operation
    EXPECT_EQ(session.stats().last_plan.gpu_nodes, 1u);
    EXPECT_EQ(session.stats().plans.dispatches, 1u);
  }
}

TEST(ControlFlow, ABranchThatPassesAnOuterInputThrough) {
  // t = If(c, x, -x), y = t * 3 with x [14, 5]: the then branch's output is the graph input x itself, and t
  // is a graph output too (then read from the input's buffer).
  Session session = Session::from_file(kControlFlow / "if_passes_input_through.onnx");
  const Tensor x = test::random_tensor({14, 5}, 74);
  for (bool c : {true, false}) {
    std::vector<double> want;
    for (float v : x.data<float>()) want.push_back(3.0 * (c ? v : -v));
    auto out = session.run({{"c", bool_tensor({}, c)}, {"x", x}});
    EXPECT_TRUE(
        test::all_close(out.at("y"), {14, 5}, want, [](double r) { return 1e-6 * (1 + std::abs(r)); }))
        << "c " << c;  // one float32 operation (Neg is exact)
    // t, the If's output, is x itself or its negation: exact.
    std::vector<double> t;
    for (float v : x.data<float>()) t.push_back(c ? v : -v);
    EXPECT_TRUE(test::all_close(out.at("t"), {14, 5}, t, [](double) { return 0.0; })) << "c " << c;
    EXPECT_EQ(session.stats().plans.dispatches, c ? 1u : 2u);
  }
}

TEST(ControlFlow, AConditionComputedOnTheGpuIsReadBackAndTheBranchPlanned) {
  // x of 80 elements is not given to the planner by value, so its sum is computed on the GPU: the run reads
  // the condition back and plans the taken branch for the rest (docs/dynamic_shapes.md).
  Session session = Session::from_file(kControlFlow / "if_gpu_condition.onnx");
  size_t plans_after_first = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (bool positive : {true, false}) {
      SCOPED_TRACE(positive ? "positive sum" : "negative sum");
      const Tensor x = positive ? test::random_tensor({16, 5}, 73, -0.5f, 1.0f)
                                : test::random_tensor({16, 5}, 79, -1.0f, 0.5f);
      double sum = 0;
      for (float v : x.data<float>()) sum += v;
      ASSERT_EQ(sum > 0, positive);
      const Tensor y = session.run({{"x", x}}).at("y");
      test::Float64Array want{x.shape(), {}};
      for (float v : x.data<float>()) want.values.push_back(positive ? std::max(0.0f, v) : -v);
      EXPECT_TRUE(test::close_in_l2(y, want, 0.0)) << "relu and negation are exact";
    }
    if (pass == 0) plans_after_first = session.stats().plans.made;
  }
  EXPECT_EQ(session.stats().plans.made, plans_after_first) << "each condition's plans are cached";
}

// What `wgi check` runs: plan_nodes without input values, collecting errors. An If on a graph input (given by
// value when run) or on a GPU value (read back when run) is planned both ways, its steps from then_branch.
TEST(ControlFlow, CheckingPlansBothBranchesOfAnIfOnAGraphInput) {
  const std::vector<runtime::PlanInput> inputs = {
      {{DType::Bool, {1}}, nullptr}, {{DType::Bool, {}}, nullptr}, {{DType::Float32, {13, 5}}, nullptr}};
  graph::Graph g = onnx::import_model_file(kControlFlow / "nested_if.onnx");
  graph::optimize(g, ops::builtin_registry());
  std::vector<std::string> errors;
  runtime::NodePlans plans =
      runtime::plan_nodes(g, ops::builtin_registry(), test::device().capabilities(), inputs, {}, &errors);
  EXPECT_TRUE(errors.empty()) << errors.at(0);
  std::vector<std::string> steps;
  for (const auto& n : plans.gpu_nodes) steps.push_back(n.node->info.name);
  EXPECT_EQ(steps, (std::vector<std::string>{"add_w", "relu", "after"}));

  // A condition computed on the GPU is read back when run: both branches are checked, without errors.
  graph::Graph gpu = onnx::import_model_file(kControlFlow / "if_gpu_condition.onnx");
  graph::optimize(gpu, ops::builtin_registry());
  plans = runtime::plan_nodes(gpu, ops::builtin_registry(), test::device().capabilities(),
                              {{{DType::Float32, {16, 5}}, nullptr}}, {}, &errors);
  EXPECT_TRUE(errors.empty()) << errors.at(0);
  steps.clear();
  for (const auto& n : plans.gpu_nodes) steps.push_back(n.node->info.name);
  EXPECT_EQ(steps, (std::vector<std::string>{"total", "positive", "relu"}));
}

std::string load_error(const std::string& model) {
  try {
    Session::from_file(kControlFlow / (model + ".onnx"));
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << model << " loaded";
  return "";
}

TEST(ControlFlow, BadModelsFailToLoadNamingWhatIsWrong) {
  EXPECT_HAS(load_error("if_output_counts_differ"),
             "node 'if_0' (If, opset 16): else_branch has 2 outputs, but the node has 1");
  EXPECT_HAS(
      load_error("if_unknown_value"),
      "If 'if_0' / else_branch: node 'add' (Add, opset 16) reads 'nowhere' as input 1, but no graph input, "
      "initializer or node output of this subgraph or an enclosing graph has that name");
  EXPECT_HAS(
      load_error("if_unsupported_inside"),
      "Foo (ai.onnx opset 16): op missing: wgi has no Foo in domain ai.onnx\n      1 node: If 'if_0' / "
      "else_branch / node 'x'");
}

// The Loop that was refused before Loop was supported (tests/gpu/test_loop.cpp tests it in depth): 3 trips of
// relu while c holds, so y = relu(x) for c true (relu is idempotent), x for c false.
TEST(ControlFlow, TheLoopModelRunsNow) {
  Session session = Session::from_file(kControlFlow / "loop.onnx");
  const Tensor x = test::random_tensor({13, 5}, 75);
  for (bool c : {true, false}) {
    std::vector<double> want;
    for (float v : x.data<float>()) want.push_back(c ? std::max(0.0f, v) : v);
    auto out = session.run({{"c", bool_tensor({}, c)}, {"x", x}});
    EXPECT_TRUE(test::all_close(out.at("y"), {13, 5}, want, [](double) { return 0.0; }))
        << "c " << c;  // exact
  }
}

}  // namespace
}  // namespace wgi
