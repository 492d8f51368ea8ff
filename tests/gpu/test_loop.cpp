// Loop and Scan unrolled when planning (docs/control_flow.md), through the public Session API:
//   - loop/ (tests/models/loop_models.py): carried values and scan outputs, an early exit from the body's
//     condition folded on the host, zero iterations, If inside Loop, Loop inside If, Loop inside Loop, Scan
//     with axes and directions, Scan at opset 8, each against a float64 reference computed here; a body
//     condition computed on the GPU (run iteration by iteration, its scan output stacked) against onnxruntime
//     (the cap and `wgi check`'s paths are in tests/unit/test_loop_unrolling.cpp);
//   - gpt2_tiny_opset17 (tests/models/gpt2_tiny.py, a torch 1.13 export): logits and greedy next tokens
//     against onnxruntime-node's CPU provider on the same file. (The script's Loop-containing export,
//     scripted_loop_opset17, is checked against float64 torch by tests/gpu/test_models.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/npy.h"
#include "onnxruntime_reference.h"
#include "support/expect_text.h"
#include "support/model_reference.h"
#include "support/tensor_check.h"
#include "support/tensor_values.h"
#include "wgi/session.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(WGI_TEST_DATA_DIR) / "models";
const fs::path kLoop = kModels / "loop";

const std::vector<double> kW = {0.5, -1.25, 0.75, 1.5, -0.5};  // loop_models.py's w

Tensor int64_scalar(int64_t v) {
  return Tensor::from_vector<int64_t>({}, {v});
}

Tensor bool_scalar(bool v) {
  Tensor t(DType::Bool, {});
  t.bytes()[0] = std::byte{v ? uint8_t{1} : uint8_t{0}};
  return t;
}

std::vector<double> values_of(const Tensor& t) {
  return std::vector<double>(t.data<float>().begin(), t.data<float>().end());
}

// A few float32 operations per iteration, each rounded once, compounding over at most ~10 iterations of
// values that stay within ~100.
const test::Tolerance kIterated = [](double r) { return 2e-5 * (1 + std::abs(r)); };

// loop_models.py's loop_body: t = y * w + x, y = t + i, scan output relu(t), then continue while i < 6 (when
// the Loop has a condition input).
struct LoopReference {
  std::vector<double> y;
  std::vector<double> scans;  // the iterations' relu(t), stacked
  int64_t iterations = 0;
};
LoopReference loop_body_reference(std::vector<double> y, const std::vector<double>& x, int64_t trip_count,
                                  std::optional<bool> condition) {
  LoopReference r;
  bool keep_going = condition.value_or(true);
  for (int64_t i = 0; keep_going && i < trip_count; ++i) {
    for (size_t k = 0; k < y.size(); ++k) {
      const double t = y[k] * kW[k % 5] + x[k];
      y[k] = t + static_cast<double>(i);
      r.scans.push_back(std::max(0.0, t));
    }
    ++r.iterations;
    if (condition) keep_going = i < 6;
  }
  r.y = std::move(y);
  return r;
}

TEST(Loop, CarriedValuesAndScanOutputsMatchFloat64) {
  Session session = Session::from_file(kLoop / "loop_scan.onnx");
  const Tensor x = test::random_tensor({13, 5}, 81), y0 = test::random_tensor({13, 5}, 82);
  // (M, cond): 3 iterations; 7 (the body's condition stops at i = 6 before M = 10); none (M = 0, and cond
  // false).
  for (const auto& [m, c] :
       std::vector<std::pair<int64_t, bool>>{{3, true}, {10, true}, {0, true}, {4, false}}) {
    auto out = session.run({{"M", int64_scalar(m)}, {"c", bool_scalar(c)}, {"y0", y0}, {"x", x}});
    const LoopReference want = loop_body_reference(values_of(y0), values_of(x), m, c);
    EXPECT_EQ(want.iterations, m == 10 ? 7 : c ? m : 0);
    EXPECT_TRUE(test::all_close(out.at("y"), {13, 5}, want.y, kIterated)) << "M " << m << ", cond " << c;
    EXPECT_TRUE(test::all_close(out.at("ys"), {want.iterations, 13, 5}, want.scans, kIterated))
        << "M " << m << ", cond " << c;
  }
}

TEST(Loop, IfInsideTheBodyTakesItsBranchPerIteration) {
  Session session = Session::from_file(kLoop / "if_in_loop.onnx");
  const Tensor y0 = test::random_tensor({13, 5}, 83);
  for (int64_t m : {4, 5}) {
    std::vector<double> y = values_of(y0);
    for (int64_t i = 0; i < m; ++i) {
      for (size_t k = 0; k < y.size(); ++k) y[k] = i % 2 == 0 ? y[k] + kW[k % 5] : y[k] * kW[k % 5];
    }
    auto out = session.run({{"M", int64_scalar(m)}, {"y0", y0}});
    EXPECT_TRUE(test::all_close(out.at("y"), {13, 5}, y, kIterated)) << "M " << m;
    // One launch per iteration (the taken branch's Add or Mul): the If and the folded parity have none.
    EXPECT_EQ(session.stats().plans.dispatches, static_cast<size_t>(m)) << "M " << m;
  }
}

TEST(Loop, LoopInsideIf) {
  Session session = Session::from_file(kLoop / "loop_in_if.onnx");
  const Tensor x = test::random_tensor({13, 5}, 84), y0 = test::random_tensor({13, 5}, 85);
  for (bool c : {true, false}) {
    // Without a cond input the body's condition output is ignored: all 9 iterations run.
    std::vector<double> want = loop_body_reference(values_of(y0), values_of(x), 9, std::nullopt).y;
    if (!c) {
      want = values_of(y0);
      for (size_t k = 0; k < want.size(); ++k) want[k] -= kW[k % 5];
    }
    auto out = session.run({{"c", bool_scalar(c)}, {"M", int64_scalar(9)}, {"y0", y0}, {"x", x}});
    EXPECT_TRUE(test::all_close(out.at("y"), {13, 5}, want, kIterated)) << "c " << c;
  }
}

TEST(Loop, LoopInsideLoop) {
  Session session = Session::from_file(kLoop / "nested_loop.onnx");
  const Tensor x = test::random_tensor({13, 5}, 86, -0.5f, 0.5f), y0 = test::random_tensor({13, 5}, 87);
  std::vector<double> y = values_of(y0);
  const std::vector<double> xs = values_of(x);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j <= i; ++j) {
      for (size_t k = 0; k < y.size(); ++k) y[k] = y[k] * kW[k % 5] + xs[k];
    }
  }
  auto out = session.run({{"M", int64_scalar(3)}, {"y0", y0}, {"x", x}});
  EXPECT_TRUE(test::all_close(out.at("y"), {13, 5}, y, kIterated));
}

// A body condition computed on the GPU (sum(y_out) < 100): the Loop runs iteration by iteration in stages
// (docs/dynamic_shapes.md), its scan output stacked from the iterations' values; against onnxruntime.
TEST(Loop, ABodyConditionComputedOnTheGpuRunsWithItsScanOutput) {
  const fs::path model = kLoop / "loop_gpu_condition.onnx";
  Session session = Session::from_file(model);
  const std::map<std::string, Tensor> inputs = {{"M", int64_scalar(5)},
                                                {"c", bool_scalar(true)},
                                                {"y0", test::random_tensor({13, 5}, 88)},
                                                {"x", test::random_tensor({13, 5}, 89)}};
  auto out = session.run(inputs);
  auto ort = test::run_onnxruntime(model, inputs, {"y", "ys"});
  ASSERT_EQ(out.at("ys").shape(), ort.at("ys").shape());
  EXPECT_GE(out.at("ys").shape()[0], 2) << "a loop that ends at once";
  for (const char* name : {"y", "ys"}) {
    EXPECT_TRUE(
        test::all_close(out.at(name), ort.at(name).shape(), test::double_values(ort.at(name)), kIterated))
        << name;
  }
}

TEST(Scan, AxesAndDirectionsMatchFloat64) {
  Session session = Session::from_file(kLoop / "scan_axes.onnx");
  const Tensor s0 = test::random_tensor({13, 14}, 92), a = test::random_tensor({13, 5}, 93),
               b = test::random_tensor({5, 14}, 94);
  std::vector<double> s = values_of(s0), shifted(13 * 14 * 5), a_all(5 * 13);
  const std::vector<double> av = values_of(a), bv = values_of(b);
  for (int t = 0; t < 5; ++t) {
    const int at = 4 - t;  // a is scanned in reverse along axis 1, b forward along axis 0
    for (int r = 0; r < 13; ++r) {
      for (int c = 0; c < 14; ++c) {
        double& v = s[static_cast<size_t>(r * 14 + c)];
        v = v * 0.5 + av[static_cast<size_t>(r * 5 + at)] * bv[static_cast<size_t>(t * 14 + c)];
        // Stacked along the last axis in reverse order: iteration t at index 4 - t.
        shifted[static_cast<size_t>((r * 14 + c) * 5 + (4 - t))] = v + 1.0;
      }
      a_all[static_cast<size_t>(t * 13 + r)] = std::max(0.0, av[static_cast<size_t>(r * 5 + at)]);
    }
  }
  auto out = session.run({{"s0", s0}, {"a", a}, {"b", b}});
  EXPECT_TRUE(test::all_close(out.at("s"), {13, 14}, s, kIterated));
  EXPECT_TRUE(test::all_close(out.at("shifted_all"), {13, 14, 5}, shifted, kIterated));
  EXPECT_TRUE(test::all_close(out.at("a_all"), {5, 13}, a_all, [](double) { return 0.0; }));  // exact
}

TEST(Scan, Opset8ScansEachBatchElement) {
  Session session = Session::from_file(kLoop / "scan8_batch.onnx");
  const Tensor s0 = test::random_tensor({3, 23}, 95), x = test::random_tensor({3, 4, 23}, 96);
  std::vector<double> s = values_of(s0), diffs(3 * 4 * 23);
  const std::vector<double> xv = values_of(x);
  for (int b = 0; b < 3; ++b) {
    for (int t = 0; t < 4; ++t) {
      const int xt = 3 - t;  // directions [1]: x reversed; the scan output in iteration order
      for (int k = 0; k < 23; ++k) {
        const double v = -1.2 + 2.3 * k / 22.0;  // loop_models.py's np.linspace(-1.2, 1.1, 23)
        double& state = s[static_cast<size_t>(b * 23 + k)];
        const double xk = xv[static_cast<size_t>((b * 4 + xt) * 23 + k)];
        state = state * static_cast<double>(static_cast<float>(v)) + xk;
        diffs[static_cast<size_t>((b * 4 + t) * 23 + k)] = state - xk;
      }
    }
  }
  auto out = session.run({{"s0", s0}, {"x", x}});
  EXPECT_TRUE(test::all_close(out.at("s"), {3, 23}, s, kIterated));
  EXPECT_TRUE(test::all_close(out.at("diffs"), {3, 4, 23}, diffs, kIterated));
}

// 3 greedy steps on wgi from a prompt of 7 tokens (batch 2; a new plan per length), then one onnxruntime CPU
// run on the final 10 tokens: the model is causal, so ORT's logits at position t are those of the prefix
// ending at t, and each token wgi chose must be ORT's argmax at the position before it. The final logits
// within 1e-4 * (1 + |logit|) of ORT's (both float32, different summation orders over widths of 32 and
// 128, through 2 blocks and softmax).
TEST(Gpt2Tiny, LogitsAndGreedyTokensMatchOnnxRuntime) {
  constexpr int64_t kVocab = 67, kPrompt = 7, kSteps = 3;
  const fs::path model = kModels / "gpt2_tiny_opset17" / "model.onnx";
  Session session = Session::from_file(model);
  Tensor ids = npy::load(kModels / "gpt2_tiny_opset17" / "input_input_ids.npy");
  ASSERT_EQ(ids.shape(), (Shape{2, kPrompt}));
  const int64_t batch = 2;
  auto argmax_at = [](const Tensor& logits, int64_t b, int64_t t) {
    const int64_t length = logits.shape()[1];
    const float* row = logits.data<float>().data() + (b * length + t) * kVocab;
    return static_cast<int64_t>(std::max_element(row, row + kVocab) - row);
  };
  for (int64_t step = 0; step < kSteps; ++step) {
    const int64_t length = ids.shape()[1];
    const Tensor logits = session.run({{"input_ids", ids}}).at("logits");
    ASSERT_EQ(logits.shape(), (Shape{batch, length, kVocab}));
    std::vector<int64_t> grown;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < length; ++t)
        grown.push_back(ids.data<int64_t>()[static_cast<size_t>(b * length + t)]);
      grown.push_back(argmax_at(logits, b, length - 1));
    }
    ids = Tensor::from_vector<int64_t>({batch, length + 1}, grown);
  }
  const int64_t length = kPrompt + kSteps;
  const Tensor got = session.run({{"input_ids", ids}}).at("logits");
  const Tensor want = test::run_onnxruntime(model, {{"input_ids", ids}}, {"logits"}).at("logits");
  ASSERT_EQ(want.shape(), (Shape{batch, length, kVocab}));
  EXPECT_TRUE(
      test::all_close(got, want.shape(), values_of(want), [](double r) { return 1e-4 * (1 + std::abs(r)); }));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = kPrompt; t < length; ++t) {
      EXPECT_EQ(ids.data<int64_t>()[static_cast<size_t>(b * length + t)], argmax_at(want, b, t - 1))
          << "row " << b << ", greedy token at position " << t;
    }
  }
}

}  // namespace
}  // namespace wgi
