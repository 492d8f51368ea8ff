// LSTM / GRU / RNN planning without a GPU (src/ops/recurrent.cpp): the sequence is dispatches in the plan
// (one step launch per time step, two for GRU with linear_before_reset 0, each with its step in the uniform
// and one program for all), the input projection is a GEMM launch ahead of them, a constant R is transposed
// on the host, and a compatibility device's smaller workgroups still plan.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ops/registry.h"
#include "support/planner_devices.h"

namespace wgi {
namespace {

struct Shapes {
  int64_t seq, batch, input, hidden, gates, directions;
};

ops::OpPlan plan(const std::string& op, const Shapes& s, const gpu::Capabilities& caps, bool constant_r,
                 int64_t linear_before_reset = 0) {
  ops::NodeInfo node{"rnn_under_test", op, "", 14, {}, {}, {"y", "y_h"}};
  node.attributes.set("hidden_size", s.hidden);
  if (s.directions == 2) node.attributes.set("direction", std::string("bidirectional"));
  if (op == "GRU") node.attributes.set("linear_before_reset", linear_before_reset);
  const Shape r_shape = {s.directions, s.gates * s.hidden, s.hidden};
  const Tensor r(DType::Float32, r_shape);
  ops::PlanContext ctx{node,
                       {ops::TensorDesc{DType::Float32, {s.seq, s.batch, s.input}},
                        ops::TensorDesc{DType::Float32, {s.directions, s.gates * s.hidden, s.input}},
                        ops::TensorDesc{DType::Float32, r_shape}},
                       {nullptr, nullptr, constant_r ? &r : nullptr},
                       caps};
  const ops::OpRegistry::Entry* entry = ops::builtin_registry().find("", op, 14);
  EXPECT_NE(entry, nullptr);
  return entry->handler.plan(ctx);
}

size_t step_launches(const ops::OpPlan& p, const std::string& prefix) {
  size_t n = 0;
  for (const auto& l : p.launches) n += l.program.label.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

TEST(RecurrentPlan, OneStepLaunchPerTimeStep) {
  const gpu::Capabilities caps = test::model_device(49152, 1024);
  const ops::OpPlan lstm = plan("LSTM", {37, 16, 24, 40, 4, 2}, caps, true);
  EXPECT_EQ(step_launches(lstm, "recurrent_lstm"), 37u);
  // Both directions in each step's grid: (hidden blocks, batch blocks, directions).
  const ops::KernelLaunch* first = nullptr;
  uint32_t expected_step = 0;
  for (const auto& l : lstm.launches) {
    if (l.program.label.rfind("recurrent_", 0) == 0) {
      if (!first) first = &l;
      EXPECT_EQ(l.program.wgsl.str(), first->program.wgsl.str());  // one pipeline for every step
      EXPECT_EQ(l.groups.z, 2u);
      // The step index, uniform word 4, counts 0..36 in launch order.
      uint32_t step = 0;
      std::memcpy(&step, l.uniform.data() + 16, 4);
      EXPECT_EQ(step, expected_step++);
    }
  }
  ASSERT_NE(first, nullptr);
  // A constant R: transposed into a plan constant (no copy launch), the GEMM, a fill, 37 steps, Y_h's copy.
  EXPECT_EQ(lstm.constants.size(), 1u);
  EXPECT_EQ(lstm.constants[0].shape(), (Shape{2, 40, 160}));
  EXPECT_EQ(step_launches(lstm, "gemm"), 1u) << lstm.launches.front().program.label;

  EXPECT_EQ(step_launches(plan("GRU", {9, 3, 5, 7, 3, 1}, caps, false, 0), "recurrent_gru"), 18u);
  EXPECT_EQ(step_launches(plan("GRU", {9, 3, 5, 7, 3, 1}, caps, false, 1), "recurrent_gru"), 9u);
  EXPECT_EQ(step_launches(plan("RNN", {9, 3, 5, 7, 1, 2}, caps, false), "recurrent_rnn"), 9u);
}

TEST(RecurrentPlan, FitsACompatibilityDevice) {
  // 128 invocations and 16 KiB of workgroup memory: 32 units x 4 k-slices.
  const ops::OpPlan p = plan("LSTM", {4, 16, 8, 512, 4, 1}, test::model_device(16384, 128), true);
  bool found = false;
  for (const auto& l : p.launches) {
    if (l.program.label.rfind("recurrent_lstm", 0) == 0) {
      EXPECT_NE(l.program.label.find("_k4_"), std::string::npos) << l.program.label;
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace wgi
