// Reads-back inside control flow (docs/dynamic_shapes.md, "Inside If branches and Loop bodies"): the models
// of tests/models/staged_control_flow.py through a Session, against CPU references computed here (plain
// loops) and onnxruntime's CPU provider on the same file. Seeded random inputs; sizes past the 64 elements
// that would be given to the planner by value, so every condition, count and K is computed on the GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include "onnxruntime_reference.h"
#include "support/expect_text.h"
#include "support/reference_data_movement.h"
#include "support/tensor_check.h"
#include "support/test_device.h"
#include "wgi/session.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(WGI_TEST_DATA_DIR) / "models" / "dynamic_shapes";

Tensor float_scalar(float v) {
  return Tensor::from_vector<float>({}, {v});
}

// then_branch: the positive elements doubled (row-major order, NonZero's); else_branch: the k largest of -x,
// k the count of negatives (descending; the values are distinct).
std::vector<float> if_branch_reference(const Tensor& x) {
  double sum = 0;
  for (float v : x.data<float>()) sum += v;
  std::vector<float> out;
  if (sum > 0) {
    for (float v : x.data<float>()) {
      if (v > 0) out.push_back(2 * v);  // exact
    }
  } else {
    for (float v : x.data<float>()) {
      if (v < 0) out.push_back(-v);
    }
    std::sort(out.begin(), out.end(), std::greater<float>());
  }
  return out;
}

TEST(StagedControlFlow, DataDependentNodesInsideIfBranchesMatchOnnxruntime) {
  const fs::path model = kModels / "if_branch_data_dependent.onnx";
  Session session = Session::from_file(model);
  size_t plans_after_first = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (bool positive : {true, false}) {
      SCOPED_TRACE(positive ? "then_branch (NonZero)" : "else_branch (TopK with a GPU K)");
      // [3, 41]: batch > 1, unaligned; the sum's sign picks the branch.
      const Tensor x = positive ? test::random_tensor({3, 41}, 901, -0.6f, 1.0f)
                                : test::random_tensor({3, 41}, 903, -1.0f, 0.6f);
      const std::vector<float> want = if_branch_reference(x);
      ASSERT_GT(want.size(), 20u) << "a test that selects little";
      auto out = session.run({{"x", x}});
      const Tensor expected = Tensor::from_vector<float>({static_cast<int64_t>(want.size())}, want);
      EXPECT_TRUE(test::identical(out.at("out"), expected)) << "doubling and negation are exact";
      double total = 0;
      for (float v : want) total += v;
      // A float32 sum of ~60 values below 2 in [0, 120]: rounding below 1e-4 relative (either order).
      const test::Tolerance sum_rounding = [](double t) { return 1e-4 * (1 + t); };
      EXPECT_TRUE(test::all_close(out.at("total"), {}, {total}, sum_rounding));
      if (pass > 0) continue;  // the second pass checks the cached plans
      auto ort = test::run_onnxruntime(model, {{"x", x}}, {"out", "total"});
      EXPECT_TRUE(test::identical(out.at("out"), ort.at("out")));
      EXPECT_TRUE(test::all_close(out.at("total"), {}, {ort.at("total").data<float>()[0]}, sum_rounding));
    }
    if (pass == 0) plans_after_first = session.stats().plans.made;
  }
  EXPECT_EQ(session.stats().plans.made, plans_after_first) << "the same counts must reuse the stage plans";
}

TEST(StagedControlFlow, LoopWithAConditionComputedOnTheGpuMatchesOnnxruntime) {
  const fs::path model = kModels / "loop_gpu_condition_carried.onnx";
  Session session = Session::from_file(model);
  for (uint64_t seed : {911, 913}) {
    // [7, 13]: 91 elements, y grows by x (in [0.1, 1)) each iteration until its sum reaches the limit.
    const Tensor y0 = test::random_tensor({7, 13}, seed, -0.5f, 0.5f);
    const Tensor x = test::random_tensor({7, 13}, seed + 1, 0.1f, 1.0f);
    std::vector<float> y(y0.data<float>().begin(), y0.data<float>().end());
    const float limit = seed == 911 ? 200.0f : 330.0f;
    int64_t steps = 0;
    for (; steps < 50;) {
      double sum = 0;
      for (size_t k = 0; k < y.size(); ++k) {
        y[k] += x.data<float>()[k];  // float32, as the GPU adds: exact same rounding
        sum += y[k];
      }
      ++steps;
      // Partial sums far from the limit: no float32 summation order could decide otherwise.
      ASSERT_GT(std::abs(sum - limit), 0.5);
      if (!(sum < limit)) break;
    }
    ASSERT_GT(steps, 3);
    ASSERT_LT(steps, 50);
    auto out = session.run({{"y0", y0}, {"x", x}, {"limit", float_scalar(limit)}});
    EXPECT_TRUE(test::identical(out.at("y"), Tensor::from_vector<float>({7, 13}, y)));
    EXPECT_TRUE(test::identical(out.at("steps"), Tensor::from_vector<int64_t>({}, {steps})));
    if (seed != 911) continue;  // onnxruntime once (a node process per run)
    auto ort =
        test::run_onnxruntime(model, {{"y0", y0}, {"x", x}, {"limit", float_scalar(limit)}}, {"y", "steps"});
    EXPECT_TRUE(test::identical(out.at("y"), ort.at("y")));
    EXPECT_TRUE(test::identical(out.at("steps"), ort.at("steps")));
  }
}

TEST(StagedControlFlow, CarriedValuesRotatedOverIterationsMatchOnnxruntime) {
  // (a, b, c) -> (b, c, a + b + c): the sum computed in iteration k is read in iterations k + 1, k + 2 and
  // k + 3, so the stage buffers it lies in must not be written again before then.
  const fs::path model = kModels / "loop_gpu_condition_rotating.onnx";
  Session session = Session::from_file(model);
  const Tensor a0 = test::random_tensor({7, 13}, 941, 0.1f, 1.0f),
               b0 = test::random_tensor({7, 13}, 942, 0.1f, 1.0f),
               c0 = test::random_tensor({7, 13}, 943, 0.1f, 1.0f);
  std::vector<float> a(a0.data<float>().begin(), a0.data<float>().end()),
      b(b0.data<float>().begin(), b0.data<float>().end()),
      c(c0.data<float>().begin(), c0.data<float>().end());
  const float limit = 1e5f;
  int64_t steps = 0;
  for (bool below = true; below && steps < 40; ++steps) {
    std::vector<float> s(a.size());
    double sum = 0;
    for (size_t k = 0; k < s.size(); ++k) {
      s[k] = (a[k] + b[k]) + c[k];  // float32, in the model's order
      sum += s[k];
    }
    ASSERT_GT(std::abs(sum - limit), 1e-3 * limit);  // no summation order could decide otherwise
    below = sum < limit;
    a = b, b = c, c = s;
  }
  ASSERT_GT(steps, 6);
  ASSERT_LT(steps, 40);
  auto out = session.run({{"a0", a0}, {"b0", b0}, {"c0", c0}, {"limit", float_scalar(limit)}});
  // Additions in the model's order in float32 on both sides: exact.
  EXPECT_TRUE(test::identical(out.at("a"), Tensor::from_vector<float>({7, 13}, a)));
  EXPECT_TRUE(test::identical(out.at("b"), Tensor::from_vector<float>({7, 13}, b)));
  EXPECT_TRUE(test::identical(out.at("c"), Tensor::from_vector<float>({7, 13}, c)));
  auto ort = test::run_onnxruntime(
      model, {{"a0", a0}, {"b0", b0}, {"c0", c0}, {"limit", float_scalar(limit)}}, {"a", "b", "c"});
  for (const char* name : {"a", "b", "c"}) EXPECT_TRUE(test::identical(out.at(name), ort.at(name))) << name;
}

TEST(StagedControlFlow, NonZeroInsideALoopWithAGpuTripCountMatchesOnnxruntime) {
  const fs::path model = kModels / "loop_body_nonzero.onnx";
  Session session = Session::from_file(model);
  // [5, 17]: the trip count is how many of x's 85 elements exceed 0.5; x in [-0.01, 0.06) keeps it small.
  Tensor x = test::random_tensor({5, 17}, 921, -0.01f, 0.06f);
  for (int64_t k : {3, 11, 40, 77}) x.data<float>()[static_cast<size_t>(k)] = 0.75f;  // 4 trips
  const Tensor y0 = test::random_tensor({5, 17}, 923, 1.7f, 2.0f);
  std::vector<float> y(y0.data<float>().begin(), y0.data<float>().end());
  int64_t count = 0;
  for (int trip = 0; trip < 4; ++trip) {
    count = 0;
    for (size_t k = 0; k < y.size(); ++k) {
      y[k] += x.data<float>()[k];
      count += y[k] > 2.0f ? 1 : 0;
    }
  }
  ASSERT_GT(count, 10);
  ASSERT_LT(count, 85);
  auto out = session.run({{"y0", y0}, {"x", x}});
  EXPECT_TRUE(test::identical(out.at("y"), Tensor::from_vector<float>({5, 17}, y)));
  EXPECT_TRUE(test::identical(out.at("count"), Tensor::from_vector<int64_t>({}, {count})));
  auto ort = test::run_onnxruntime(model, {{"y0", y0}, {"x", x}}, {"y", "count"});
  EXPECT_TRUE(test::identical(out.at("y"), ort.at("y")));
  EXPECT_TRUE(test::identical(out.at("count"), ort.at("count")));
}

TEST(StagedControlFlow, ALoopWhoseGpuConditionStaysTrueEndsAtTheCap) {
  Session session = Session::from_file(kModels / "loop_gpu_condition_endless.onnx");
  try {
    session.run({{"y0", test::random_tensor({7, 13}, 931)}, {"x", test::random_tensor({7, 13}, 932)}});
    ADD_FAILURE() << "an endless Loop ran to its end";
  } catch (const Error& e) {
    EXPECT_HAS(e.what(),
               "node 'endless_on_gpu' (Loop, opset 17): iteration 21 would take this run past 65536 "
               "body nodes run iteration by iteration");
  }
}

}  // namespace
}  // namespace wgi
