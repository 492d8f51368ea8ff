// Loop and Scan unrolled by the planner (runtime/loop_unrolling.h), without a GPU: what plan_nodes makes of
// tests/data/models/loop (tests/models/loop_models.py). The results are checked on the GPU against float64
// in tests/gpu/test_loop.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "graph/passes.h"
#include "onnx/importer.h"
#include "ops/registry.h"
#include "runtime/execution_plan.h"
#include "runtime/loop_unrolling.h"
#include "support/expect_text.h"
#include "support/planner_devices.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kLoop = fs::path(WGI_TEST_DATA_DIR) / "models" / "loop";

graph::Graph load(const std::string& name) {
  graph::Graph g = onnx::import_model_file(kLoop / name);
  graph::optimize(g, ops::builtin_registry());
  return g;
}

const gpu::Capabilities kCaps = test::model_device(16384, 256);

TEST(LoopUnrolling, EachIterationPlansACopyOfTheBodyAndTheScanOutputsAreStacked) {
  const graph::Graph g = load("loop_scan.onnx");
  const Tensor m = Tensor::from_vector<int64_t>({}, {3});
  Tensor c(DType::Bool, {});
  c.bytes()[0] = std::byte{1};
  const std::vector<runtime::PlanInput> inputs = {{{DType::Int64, {}}, &m},
                                                  {{DType::Bool, {}}, &c},
                                                  {{DType::Float32, {13, 5}}, nullptr},
                                                  {{DType::Float32, {13, 5}}, nullptr}};
  const runtime::NodePlans plans = runtime::plan_nodes(g, ops::builtin_registry(), kCaps, inputs, {});
  ASSERT_TRUE(plans.unrolled);
  // Every GPU step is a copy of a body node or a node made for the scan output, never the Loop itself.
  std::map<std::string, size_t> steps;
  for (const auto& n : plans.gpu_nodes) {
    EXPECT_NE(n.node->info.op_type, "Loop");
    ++steps[n.node->info.op_type];
  }
  EXPECT_EQ(steps["Relu"], 3u);    // one per iteration
  EXPECT_EQ(steps["Concat"], 1u);  // the scan output, stacked once
  // The Loop's outputs: y is the last iteration's value, ys the 3 scan values stacked.
  EXPECT_EQ(plans.descs.at(static_cast<size_t>(g.outputs[0])).shape, (Shape{13, 5}));
  EXPECT_EQ(plans.descs.at(static_cast<size_t>(g.outputs[1])).shape, (Shape{3, 13, 5}));
  EXPECT_EQ(plans.descs.size(), plans.unrolled->value_count());
}

// Without a cond input the body's condition input is a true bool made per iteration (its condition output,
// Identity of it, is that value once the passes removed the Identity); the iteration number an int64 host
// value.
TEST(LoopUnrolling, TheBodyGetsABoolConditionAndAnInt64IterationNumber) {
  const graph::Graph g = load("if_in_loop.onnx");
  const Tensor m = Tensor::from_vector<int64_t>({}, {4});
  const std::vector<runtime::PlanInput> inputs = {{{DType::Int64, {}}, &m},
                                                  {{DType::Float32, {13, 5}}, nullptr}};
  const runtime::NodePlans plans = runtime::plan_nodes(g, ops::builtin_registry(), kCaps, inputs, {});
  size_t conditions = 0, iterations = 0;
  for (size_t v = g.values.size(); v < plans.unrolled->value_count(); ++v) {
    const std::string& name = plans.unrolled->value(static_cast<graph::ValueId>(v)).name;
    if (name == "cond_in") {
      ++conditions;
      ASSERT_TRUE(plans.host_values[v]) << name;
      EXPECT_EQ(plans.host_values[v]->dtype(), DType::Bool) << name;
      EXPECT_EQ(plans.host_values[v]->bytes()[0], std::byte{1}) << name;
    }
    if (name == "i") {
      ASSERT_TRUE(plans.host_values[v]);
      EXPECT_EQ(plans.host_values[v]->data<int64_t>()[0], static_cast<int64_t>(iterations++));
    }
  }
  EXPECT_EQ(conditions, 4u);  // one per iteration
  EXPECT_EQ(iterations, 4u);
  EXPECT_EQ(plans.gpu_nodes.size(), 4u);  // one branch op per iteration
}

TEST(LoopUnrolling, ScanInputsAreSlicedPerIteration) {
  const graph::Graph g = load("scan_axes.onnx");
  const std::vector<runtime::PlanInput> inputs = {{{DType::Float32, {13, 14}}, nullptr},
                                                  {{DType::Float32, {13, 5}}, nullptr},
                                                  {{DType::Float32, {5, 14}}, nullptr}};
  const runtime::NodePlans plans = runtime::plan_nodes(g, ops::builtin_registry(), kCaps, inputs, {});
  size_t slices = 0;
  for (const auto& n : plans.gpu_nodes) slices += n.node->info.op_type == "Slice" ? 1 : 0;
  EXPECT_EQ(slices, 10u);  // 2 scan inputs x 5 steps
  EXPECT_EQ(plans.descs.at(static_cast<size_t>(g.outputs[1])).shape, (Shape{13, 14, 5}));
  EXPECT_EQ(plans.descs.at(static_cast<size_t>(g.outputs[2])).shape, (Shape{5, 13}));
}

// What `wgi check` runs: no input values. A Loop whose bounds are graph inputs plans one iteration, checking
// only; a body node that fails is reported with the iteration's path.
TEST(LoopUnrolling, CheckingPlansOneIterationOfALoopOnGraphInputs) {
  const graph::Graph g = load("loop_scan.onnx");
  const std::vector<runtime::PlanInput> inputs = {{{DType::Int64, {}}, nullptr},
                                                  {{DType::Bool, {}}, nullptr},
                                                  {{DType::Float32, {13, 5}}, nullptr},
                                                  {{DType::Float32, {13, 5}}, nullptr}};
  std::vector<std::string> errors;
  const runtime::NodePlans plans =
      runtime::plan_nodes(g, ops::builtin_registry(), kCaps, inputs, {}, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_TRUE(plans.gpu_nodes.empty());  // checked, not planned
  // The body's elementwise ops get a y0 of the wrong width: the error names the iteration.
  const std::vector<runtime::PlanInput> bad = {{{DType::Int64, {}}, nullptr},
                                               {{DType::Bool, {}}, nullptr},
                                               {{DType::Float32, {13, 4}}, nullptr},
                                               {{DType::Float32, {13, 5}}, nullptr}};
  runtime::plan_nodes(g, ops::builtin_registry(), kCaps, bad, {}, &errors);
  ASSERT_FALSE(errors.empty());
  EXPECT_HAS(errors.front(), "Loop 'loop' / body / iteration 0 / node 'mul_w' (Mul, opset 16)");
}

TEST(LoopUnrolling, AHugeTripCountFailsBeforeUnrolling) {
  const graph::Graph g = load("loop_huge.onnx");
  const std::vector<runtime::PlanInput> inputs = {{{DType::Float32, {13, 5}}, nullptr},
                                                  {{DType::Float32, {13, 5}}, nullptr}};
  try {
    runtime::plan_nodes(g, ops::builtin_registry(), kCaps, inputs, {});
    ADD_FAILURE() << "planned a billion iterations";
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "node 'huge_loop' (Loop, opset 16): its trip count is 1000000000 with ");
    EXPECT_HAS(e.what(), std::to_string(runtime::kMaxUnrolledNodes) + " unrolled nodes");
  }
}

TEST(LoopUnrolling, ALoopThatNeverEndsFailsAtTheCap) {
  const graph::Graph g = load("loop_forever.onnx");
  Tensor c(DType::Bool, {});
  c.bytes()[0] = std::byte{1};
  const std::vector<runtime::PlanInput> inputs = {{{DType::Bool, {}}, &c},
                                                  {{DType::Float32, {13, 5}}, nullptr}};
  try {
    runtime::plan_nodes(g, ops::builtin_registry(), kCaps, inputs, {});
    ADD_FAILURE() << "planned an endless loop";
  } catch (const Error& e) {
    const std::string cap = std::to_string(runtime::kMaxUnrolledNodes);
    EXPECT_HAS(e.what(), "node 'endless' (Loop, opset 16): unrolling iteration " + cap +
                             " would take this plan past " + cap + " unrolled nodes");
  }
}

TEST(LoopUnrolling, AnUnsupportedNodeInsideTheBodyIsReportedWithItsPath) {
  const graph::Graph g = onnx::import_model_file(kLoop / "loop_unsupported_body.onnx");
  const std::string report = onnx::format_unsupported(onnx::find_unsupported(g, ops::builtin_registry()));
  EXPECT_HAS(report, "Loop 'loop' / body / node 'mystery'");
  EXPECT_HAS(report, "NoSuchOp");
}

}  // namespace
}  // namespace wgi
