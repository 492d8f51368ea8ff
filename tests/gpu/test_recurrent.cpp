// LSTM, GRU and RNN on the GPU (src/ops/recurrent.cpp) against the float64 reference written from the ONNX
// definitions (tests/support/reference_recurrent.h): seeded inputs, unaligned hidden and input sizes, batch >
// 1, every direction, layouts 0 and 1, mixed sequence lengths, initial states, peepholes, clip, input_forget,
// linear_before_reset 0 and 1, non-default activations, R as an initializer (transposed on the host) and as a
// runtime input (transposed by a copy kernel), a long sequence with its accumulated error reported, float16,
// absent outputs, and the errors a model can cause.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include "core/npy.h"
#include "onnxruntime_reference.h"
#include "ops/float16.h"
#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/reference_recurrent.h"
#include "support/tensor_check.h"
#include "support/test_device.h"
#include "wgi/session.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::NodeInputs;
using test::RecurrentSpec;

struct Problem {
  RecurrentSpec spec;
  int64_t seq = 1, batch = 1, input = 1;
  bool with_bias = true, with_lens = false, with_initial = false, with_peepholes = false;
  bool r_constant = true;
  std::vector<std::string> activation_names;  // the node's attribute (the reference gets spec.activations)
  std::vector<float> activation_alpha, activation_beta;
};

struct Built {
  ops::NodeInfo node;
  NodeInputs inputs;
  test::RecurrentInputs ref_inputs;
};

Built build(const Problem& pb, uint64_t seed) {
  const RecurrentSpec& s = pb.spec;
  const int64_t gates = s.op == "LSTM" ? 4 : s.op == "GRU" ? 3 : 1;
  const int64_t nd = s.direction == "bidirectional" ? 2 : 1, H = s.hidden;
  const Shape x_shape = s.layout == 0 ? Shape{pb.seq, pb.batch, pb.input} : Shape{pb.batch, pb.seq, pb.input};
  const Shape state_shape = s.layout == 0 ? Shape{nd, pb.batch, H} : Shape{pb.batch, nd, H};
  Built out;
  out.node = test::make_node(s.op, 14, s.op == "LSTM" ? 3 : 2);
  out.node.attributes.set("hidden_size", H);
  out.node.attributes.set("direction", s.direction);
  out.node.attributes.set("layout", s.layout);
  if (s.op == "LSTM") out.node.attributes.set("input_forget", s.input_forget);
  if (s.op == "GRU") out.node.attributes.set("linear_before_reset", s.linear_before_reset);
  if (s.clip) out.node.attributes.set("clip", *s.clip);
  if (!pb.activation_names.empty()) out.node.attributes.set("activations", pb.activation_names);
  if (!pb.activation_alpha.empty()) out.node.attributes.set("activation_alpha", pb.activation_alpha);
  if (!pb.activation_beta.empty()) out.node.attributes.set("activation_beta", pb.activation_beta);
  test::RecurrentInputs& ri = out.ref_inputs;
  // Weights of about 1 / sqrt(fan-in), as trained layers have: the gates stay off saturation.
  const float wscale = 1.5f / std::sqrt(static_cast<float>(pb.input)),
              rscale = 1.5f / std::sqrt(static_cast<float>(H));
  ri.x = test::random_tensor(x_shape, seed);
  ri.w = test::random_tensor({nd, gates * H, pb.input}, seed + 1, -wscale, wscale);
  ri.r = test::random_tensor({nd, gates * H, H}, seed + 2, -rscale, rscale);
  out.inputs = {NodeInput{ri.x}, NodeInput{ri.w, true}, NodeInput{ri.r, pb.r_constant}};
  auto add = [&](size_t index, const Tensor& t, bool constant) {
    out.inputs.resize(std::max(out.inputs.size(), index + 1));
    out.inputs[index] = NodeInput{t, constant};
  };
  if (pb.with_bias) {
    ri.b = test::random_tensor({nd, 2 * gates * H}, seed + 3, -0.5f, 0.5f);
    add(3, *ri.b, true);
  }
  if (pb.with_lens) {
    std::vector<int32_t> lens;
    for (int64_t b = 0; b < pb.batch; ++b)
      // Row 0 the whole sequence, row 2 empty (Y all zero, Y_h / Y_c zero), the others in between.
      lens.push_back(b == 0   ? static_cast<int32_t>(pb.seq)
                     : b == 2 ? 0
                              : static_cast<int32_t>(1 + (b * 7 + seed) % static_cast<uint64_t>(pb.seq)));
    ri.sequence_lens = Tensor::from_vector<int32_t>({pb.batch}, lens);
    add(4, *ri.sequence_lens, false);
  }
  if (pb.with_initial) {
    ri.initial_h = test::random_tensor(state_shape, seed + 4);
    add(5, *ri.initial_h, false);
    if (s.op == "LSTM") {
      ri.initial_c = test::random_tensor(state_shape, seed + 5);
      add(6, *ri.initial_c, false);
    }
  }
  if (pb.with_peepholes) {
    ri.p = test::random_tensor({nd, 3 * H}, seed + 6, -0.5f, 0.5f);
    add(7, *ri.p, true);
  }
  return out;
}

// Per element: the float32 rounding of each step's dot products (I + H terms) and of the activations, carried
// through the recurrence (whose gates contract it: |d tanh|, |d sigmoid| <= 1) and growing about linearly in
// the steps at worst. Measured errors are reported and stay far below.
test::Tolerance recurrent_tolerance(const Problem& pb) {
  const double per_step = 4e-7 * std::sqrt(static_cast<double>(pb.input + pb.spec.hidden));
  const double steps = static_cast<double>(pb.seq);
  return [=](double ref) { return (1e-6 + per_step * steps) * (1.0 + std::abs(ref)); };
}

double max_abs_error(const Tensor& got, const std::vector<double>& want) {
  double e = 0;
  for (size_t i = 0; i < want.size(); ++i) e = std::max(e, std::abs(got.data<float>()[i] - want[i]));
  return e;
}

void check(const Problem& pb, uint64_t seed, const char* label) {
  SCOPED_TRACE(label);
  Built b = build(pb, seed);
  const test::RecurrentReference ref = test::recurrent_reference(pb.spec, b.ref_inputs);
  auto out = runtime::run_node(test::device(), b.node, b.inputs);
  const int64_t nd = pb.spec.direction == "bidirectional" ? 2 : 1, H = pb.spec.hidden;
  const Shape y_shape = pb.spec.layout == 0 ? Shape{pb.seq, nd, pb.batch, H} : Shape{pb.batch, pb.seq, nd, H};
  const Shape state_shape = pb.spec.layout == 0 ? Shape{nd, pb.batch, H} : Shape{pb.batch, nd, H};
  const test::Tolerance tol = recurrent_tolerance(pb);
  EXPECT_TRUE(test::all_close(out.at(0), y_shape, ref.y, tol)) << "Y";
  EXPECT_TRUE(test::all_close(out.at(1), state_shape, ref.y_h, tol)) << "Y_h";
  if (pb.spec.op == "LSTM") {
    EXPECT_TRUE(test::all_close(out.at(2), state_shape, ref.y_c, tol)) << "Y_c";
  }
  std::cout << "[ recurrent ] " << label << ": " << pb.seq << " steps, max |error| Y "
            << max_abs_error(out[0], ref.y) << ", Y_h " << max_abs_error(out[1], ref.y_h) << "\n";
}

Problem problem(const std::string& op, const std::string& direction, int64_t hidden, int64_t layout,
                int64_t seq, int64_t batch, int64_t input) {
  Problem pb;
  pb.spec.op = op;
  pb.spec.direction = direction;
  pb.spec.hidden = hidden;
  pb.spec.layout = layout;
  pb.seq = seq;
  pb.batch = batch;
  pb.input = input;
  return pb;
}

TEST(RecurrentLstm, MatchesFloat64Reference) {
  Problem a = problem("LSTM", "forward", 13, 0, 6, 3, 7);
  a.with_lens = a.with_initial = a.with_peepholes = true;
  check(a, 11, "forward, lengths, initial state, peepholes");

  Problem b = problem("LSTM", "bidirectional", 9, 1, 5, 2, 6);
  b.with_lens = b.with_initial = b.with_peepholes = true;
  b.r_constant = false;
  check(b, 21, "bidirectional, layout 1, runtime R");

  Problem c = problem("LSTM", "reverse", 35, 0, 4, 5, 3);
  c.spec.clip = 0.7f;
  c.spec.input_forget = 1;
  c.with_bias = false;
  c.activation_names = {"HardSigmoid", "ScaledTanh", "Softsign"};
  c.activation_alpha = {0.3f, 0.9f};
  c.activation_beta = {0.45f, 1.2f};
  c.spec.activations = c.activation_names;
  c.spec.alphas = {0.3, 0.9, 0.0};
  c.spec.betas = {0.45, 1.2, 0.0};
  check(c, 31, "reverse, clip, input_forget, HardSigmoid / ScaledTanh / Softsign");
}

TEST(RecurrentGru, MatchesFloat64Reference) {
  for (int64_t lbr : {0, 1}) {
    Problem a = problem("GRU", "bidirectional", 11, 0, 5, 3, 4);
    a.spec.linear_before_reset = lbr;
    a.with_lens = a.with_initial = true;
    check(a, 41 + static_cast<uint64_t>(lbr),
          lbr ? "bidirectional, linear_before_reset 1" : "bidirectional, linear_before_reset 0");

    Problem b = problem("GRU", "reverse", 6, 1, 4, 2, 5);
    b.spec.linear_before_reset = lbr;
    b.r_constant = false;
    b.activation_names = {"Sigmoid", "Elu"};
    b.activation_alpha = {0.8f};
    b.spec.activations = b.activation_names;
    b.spec.alphas = {0.0, 0.8};
    check(b, 51 + static_cast<uint64_t>(lbr),
          lbr ? "reverse, layout 1, Elu, linear_before_reset 1"
              : "reverse, layout 1, Elu, linear_before_reset 0");
  }
}

TEST(RecurrentRnn, MatchesFloat64Reference) {
  Problem a = problem("RNN", "bidirectional", 10, 0, 5, 3, 6);
  a.with_lens = a.with_initial = true;
  a.activation_names = {"Tanh", "LeakyRelu"};
  a.activation_alpha = {0.2f};
  a.spec.activations = a.activation_names;
  a.spec.alphas = {0.0, 0.2};
  check(a, 61, "bidirectional, Tanh / LeakyRelu");

  Problem b = problem("RNN", "forward", 5, 1, 3, 2, 3);
  b.spec.clip = 0.5f;
  b.activation_names = {"Relu"};
  b.spec.activations = b.activation_names;
  check(b, 71, "layout 1, clip, Relu");
}

// The accumulated error of a long recurrence (docs/recurrent.md quotes it). Heavy: 400 step dispatches (200
// for the LSTM, 200 for the GRU) cost seconds on the CPU adapters (scripts/test --heavy runs it).
TEST(RecurrentLstm, LongSequenceAccumulatedErrorHeavy) {
  Problem a = problem("LSTM", "bidirectional", 8, 0, 200, 2, 5);
  a.with_lens = a.with_initial = true;
  check(a, 81, "LSTM, 200 steps");
  Problem g = problem("GRU", "forward", 8, 0, 200, 2, 5);
  check(g, 82, "GRU, 200 steps");
}

TEST(RecurrentLstm, AbsentOutputsAreNotWritten) {
  Problem pb = problem("LSTM", "forward", 7, 0, 3, 2, 4);
  Built b = build(pb, 91);
  b.node.output_names = {"", "y_h"};  // Y and Y_c absent, as in the ONNX node tests
  const test::RecurrentReference ref = test::recurrent_reference(pb.spec, b.ref_inputs);
  auto out = runtime::run_node(test::device(), b.node, b.inputs);
  EXPECT_TRUE(test::all_close(out.at(1), {1, 2, 7}, ref.y_h, recurrent_tolerance(pb)));
}

TEST(RecurrentLstm, Float16InputsRunThroughFloat32) {
  Problem pb = problem("LSTM", "bidirectional", 6, 0, 4, 2, 5);
  pb.with_initial = true;
  Built b = build(pb, 101);
  // The reference gets the float16-rounded values; the result is rounded to float16 once.
  for (auto& in : b.inputs) {
    if (in && in->value.dtype() == DType::Float32) in->value = ops::narrow_to_float16(in->value);
  }
  b.ref_inputs.x = ops::widen_float16(b.inputs[0]->value);
  b.ref_inputs.w = ops::widen_float16(b.inputs[1]->value);
  b.ref_inputs.r = ops::widen_float16(b.inputs[2]->value);
  b.ref_inputs.b = ops::widen_float16(b.inputs[3]->value);
  b.ref_inputs.initial_h = ops::widen_float16(b.inputs[5]->value);
  b.ref_inputs.initial_c = ops::widen_float16(b.inputs[6]->value);
  const test::RecurrentReference ref = test::recurrent_reference(pb.spec, b.ref_inputs);
  auto out = runtime::run_node(test::device(), b.node, b.inputs);
  ASSERT_EQ(out.at(0).dtype(), DType::Float16);
  // One float16 rounding of the output (2^-11 relative) over the float32 error.
  const test::Tolerance tol = [](double want) { return 1e-5 + std::abs(want) * 4.9e-4; };
  EXPECT_TRUE(test::all_close(ops::widen_float16(out[0]), {4, 2, 2, 6}, ref.y, tol));
  EXPECT_TRUE(test::all_close(ops::widen_float16(out[2]), {2, 2, 6}, ref.y_c, tol));
}

TEST(Recurrent, ErrorsNameTheProblem) {
  Problem pb = problem("LSTM", "forward", 4, 0, 2, 2, 3);
  Built b = build(pb, 111);
  ops::NodeInfo bad_activation = b.node;
  bad_activation.attributes.set("activations", std::vector<std::string>{"Sigmoid", "Gelu", "Tanh"});
  EXPECT_NE(test::node_error(bad_activation, b.inputs).find("activation 'Gelu' is not one of"),
            std::string::npos)
      << test::node_error(bad_activation, b.inputs);
  ops::NodeInfo bad_count = b.node;
  bad_count.attributes.set("activations", std::vector<std::string>{"Sigmoid"});
  EXPECT_NE(test::node_error(bad_count, b.inputs).find("takes 3"), std::string::npos);
  ops::NodeInfo bad_hidden = b.node;
  bad_hidden.attributes.set("hidden_size", int64_t{5});
  EXPECT_NE(test::node_error(bad_hidden, b.inputs).find("does not match hidden_size 5"), std::string::npos)
      << test::node_error(bad_hidden, b.inputs);
  // One launch per step: a sequence past the bound is refused when planned.
  Problem long_problem = problem("RNN", "forward", 2, 0, 65537, 1, 1);
  Built long_seq = build(long_problem, 112);
  EXPECT_NE(test::node_error(long_seq.node, long_seq.inputs).find("takes at most 65536"), std::string::npos)
      << test::node_error(long_seq.node, long_seq.inputs);
  NodeInputs long_lens = b.inputs;
  long_lens.resize(5);
  long_lens[4] = NodeInput{Tensor::from_vector<int32_t>({2}, {2, 3}), true};
  EXPECT_NE(test::node_error(b.node, long_lens).find("outside [0, 2]"), std::string::npos)
      << test::node_error(b.node, long_lens);
}

// PyTorch's export of nn.LSTM (2 layers, bidirectional, batch_first, initial states), nn.GRU
// (linear_before_reset 1) and nn.RNN (Relu) through a Linear head (tests/models/recurrent_torch.py), against
// onnxruntime's CPU provider on the same file and inputs.
TEST(RecurrentTorchExport, LstmGruRnnMatchOnnxruntime) {
  const std::filesystem::path dir = std::filesystem::path(WGI_TEST_DATA_DIR) / "recurrent";
  const std::filesystem::path model = dir / "lstm_gru_rnn_opset14.onnx";
  std::map<std::string, Tensor> inputs;
  for (const char* name : {"x", "h0", "c0"})
    inputs[name] = npy::load(dir / ("input_" + std::string(name) + ".npy"));
  Session session = Session::from_file(model);
  const std::map<std::string, Tensor> got = session.run(inputs);
  const std::vector<std::string> names = {"logits", "h", "c", "gru_h", "rnn_h"};
  const std::map<std::string, Tensor> want = test::run_onnxruntime(model, inputs, names);
  ASSERT_EQ(want.size(), names.size());
  for (const std::string& name : names) {
    std::vector<double> expected;
    for (float v : want.at(name).data<float>()) expected.push_back(v);
    // Both float32, sums in different orders through 9 steps of 4 stacked recurrences: observed below 1e-6.
    EXPECT_TRUE(test::all_close(got.at(name), want.at(name).shape(), expected, [](double r) {
      return 1e-5 * (1.0 + std::abs(r));
    })) << name;
    std::cout << "[ recurrent ] torch export vs onnxruntime, " << name << ": max |error| "
              << max_abs_error(got.at(name), expected) << "\n";
  }
}

}  // namespace
}  // namespace wgi
