// GEMM tuning on the device: a session runs the configurations of its cache (and ignores entries the device
// cannot run) with results equal to the float64 reference; a session with `tune` measures its problems at
// first planning and saves them; Session::tune reports and replans; tune_gemm times every candidate, checks
// each against the default's output and never picks one that disagrees. Small shapes: both CPU adapters.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/npy.h"
#include "ops/gemm_tuning.h"
#include "runtime/gemm_tuner.h"
#include "runtime/tuning_cache.h"
#include "support/model_reference.h"
#include "support/tensor_check.h"
#include "support/test_device.h"
#include "wgi/session.h"

namespace wgi {
namespace {

using ops::GemmBLayout;
using ops::GemmChoice;
using ops::GemmKernel;
using ops::GemmProblemKey;

const std::filesystem::path kModel = std::filesystem::path(WGI_TEST_DATA_DIR) / "models" / "gemm_chain";

// gemm_chain: fc1 = Gemm(x [5, 20], w1 [24, 20]^T), fc2 = MatMul(·, w2 [24, 16]), fc3 = Gemm(·, w3 [16, 8]);
// every weight a constant, so every B is prepacked.
GemmProblemKey weight_problem(uint32_t m, uint32_t n, uint32_t k) {
  GemmProblemKey p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.b = GemmBLayout::Packed;
  return p;
}
const GemmProblemKey kFc1 = weight_problem(5, 24, 20);
const GemmProblemKey kFc2 = weight_problem(5, 16, 24);
const GemmProblemKey kFc3 = weight_problem(5, 8, 16);

std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("wgi_gpu_tuning_" + name + "_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::map<std::string, Tensor> model_inputs() {
  return {{"x", npy::load(kModel / "input_x.npy")}};
}

::testing::AssertionResult matches_reference(const std::map<std::string, Tensor>& outputs) {
  const test::Float64Array expected = test::load_float64_npy(kModel / "expected_y.npy");
  return test::all_close(outputs.at("y"), expected.shape, expected.values, test::fp32_tolerance(24));
}

bool is_candidate(const GemmProblemKey& p, const GemmChoice& c) {
  const auto all = runtime::gemm_candidates(p, test::device().capabilities());
  return std::find(all.begin(), all.end(), c) != all.end();
}

TEST(Tuning, SessionRunsItsCachesConfigurationsAndIgnoresImpossibleOnes) {
  const auto dir = scratch_dir("session");
  const auto path = dir / "tuning.json";
  const runtime::AdapterKey adapter = runtime::adapter_key(test::device());
  const std::string kernels = ops::gemm_kernels_fingerprint();
  runtime::TuningCache cache = runtime::TuningCache::load(path);
  auto add = [&](const GemmProblemKey& p, const GemmChoice& c, const runtime::AdapterKey& a) {
    runtime::TuningEntry e;
    e.adapter = a;
    e.kernels = kernels;
    e.problem = p;
    e.choice = c;
    cache.set(e);
  };
  // Neither is what the rules pick for these 5-row products (GEMV with 8 lanes for both, or the seeds' vec4
  // kernel where barriers are costly).
  add(kFc1, {GemmKernel::Tiled, 0, 0, 2, 0}, adapter);
  add(kFc2, {GemmKernel::Gemv, 0, 0, 1, 4}, adapter);
  // 66 KiB of workgroup memory: no CPU adapter holds it, so the rules run fc3.
  add(kFc3, {GemmKernel::Fast128, 32, 2, 1, 0}, adapter);
  // Another adapter's entry for fc3 is not this session's business.
  runtime::AdapterKey other = adapter;
  other.driver += " (another version)";
  add(kFc3, {GemmKernel::Tiled, 0, 0, 1, 0}, other);
  cache.save();

  SessionOptions options;
  options.tuning_cache = path;
  options.profiling = true;
  Session tuned = Session::from_file(kModel / "model.onnx", options);
  EXPECT_NE(tuned.tuning_note().find("3 entries for this adapter (4 in the file)"), std::string::npos)
      << tuned.tuning_note();
  auto out = tuned.run(model_inputs());
  EXPECT_TRUE(matches_reference(out));
  EXPECT_EQ(tuned.stats().last_plan.gemms, 3u);
  EXPECT_EQ(tuned.stats().last_plan.tuned_gemms, 2u);
  // fc1's split adds the reduction: 4 dispatches instead of 3.
  EXPECT_EQ(tuned.stats().plans.dispatches, 4u);
  if (!tuned.last_profile().empty()) {  // timestamp queries: the kernels by node
    std::map<std::string, std::string> kernel;
    for (const NodeTiming& t : tuned.last_profile()) kernel[t.node] = t.kernel;
    EXPECT_EQ(kernel["fc1"].rfind("gemm_tiled_bnk", 0), 0u) << kernel["fc1"];  // then fc1's fused Relu
    EXPECT_NE(kernel["fc1"].find("_splitk+gemm_split_reduce"), std::string::npos) << kernel["fc1"];
    EXPECT_EQ(kernel["fc2"], "gemv_r8_l4");
    EXPECT_EQ(kernel["fc3"].find("gemm_fast128"), std::string::npos) << kernel["fc3"];
  }

  // Without the cache: the rules, one dispatch per GEMM, the same results.
  options.use_tuning_cache = false;
  Session rules = Session::from_file(kModel / "model.onnx", options);
  EXPECT_EQ(rules.tuning_note(), "");
  EXPECT_TRUE(matches_reference(rules.run(model_inputs())));
  EXPECT_EQ(rules.stats().last_plan.tuned_gemms, 0u);
  EXPECT_EQ(rules.stats().plans.dispatches, 3u);
  std::filesystem::remove_all(dir);
}

TEST(Tuning, SessionTunesAtFirstPlanningAndSavesTheCache) {
  const auto dir = scratch_dir("tune");
  const auto path = dir / "cache" / "tuning.json";
  SessionOptions options;
  options.tuning_cache = path;
  options.tune = true;
  options.tune_runs = 2;
  size_t tuning_progress = 0;
  options.progress = [&tuning_progress](size_t, size_t, const std::string& what) {
    tuning_progress += what == "tuning" ? 1 : 0;
  };
  {
    Session s = Session::from_file(kModel / "model.onnx", options);
    EXPECT_TRUE(matches_reference(s.run(model_inputs())));
    EXPECT_EQ(s.stats().last_plan.tuned_gemms, 3u);
    EXPECT_GT(tuning_progress, 0u);
  }
  const runtime::TuningCache saved = runtime::TuningCache::load(path);
  ASSERT_TRUE(saved.loaded()) << saved.problem();
  const runtime::AdapterKey adapter = runtime::adapter_key(test::device());
  ASSERT_EQ(saved.count_for(adapter, ops::gemm_kernels_fingerprint()), 3u);
  for (const GemmProblemKey& p : {kFc1, kFc2, kFc3}) {
    const runtime::TuningEntry* e = saved.find(adapter, ops::gemm_kernels_fingerprint(), p);
    ASSERT_NE(e, nullptr) << ops::to_string(p);
    EXPECT_TRUE(is_candidate(p, e->choice)) << ops::to_string(e->choice);
    EXPECT_EQ(e->record.default_choice, runtime::default_gemm_choice(p, test::device().capabilities()));
    EXPECT_GT(e->record.tuned_ms, 0);
    EXPECT_LE(e->record.tuned_ms, e->record.default_ms);
    EXPECT_GE(e->record.candidates, 2u);
    EXPECT_EQ(e->record.runs, 2u);
  }

  // A later session reads the entries (and, having them, measures nothing).
  tuning_progress = 0;
  Session again = Session::from_file(kModel / "model.onnx", options);
  EXPECT_NE(again.tuning_note().find("3 entries for this adapter"), std::string::npos) << again.tuning_note();
  EXPECT_TRUE(matches_reference(again.run(model_inputs())));
  EXPECT_EQ(again.stats().last_plan.tuned_gemms, 3u);
  EXPECT_EQ(tuning_progress, 0u);
  std::filesystem::remove_all(dir);
}

TEST(Tuning, SessionTuneReportsMeasuresOnceAndReplans) {
  const auto dir = scratch_dir("report");
  SessionOptions options;
  options.tuning_cache = dir / "tuning.json";
  Session s = Session::from_file(kModel / "model.onnx", options);
  EXPECT_TRUE(matches_reference(s.run(model_inputs())));
  EXPECT_EQ(s.stats().last_plan.tuned_gemms, 0u);

  const TuneReport report = s.tune(model_inputs(), {false, 2});
  EXPECT_TRUE(report.saved);
  EXPECT_EQ(report.cache_path, (dir / "tuning.json").string());
  ASSERT_EQ(report.problems.size(), 3u);
  EXPECT_EQ(report.problems[0].problem, "5x24x20 B=weight");
  EXPECT_EQ(report.problems[0].nodes, std::vector<std::string>{"fc1"});
  EXPECT_EQ(report.problems[2].nodes, std::vector<std::string>{"fc3"});
  for (const TunedProblem& p : report.problems) {
    EXPECT_TRUE(p.measured) << p.problem;
    EXPECT_FALSE(p.default_config.empty());
    EXPECT_GT(p.default_ms, 0);
    EXPECT_GT(p.tuned_ms, 0);
    EXPECT_TRUE(p.mismatches.empty()) << p.mismatches.front();
  }
  // Plans made before are dropped: the next run plans again, on the tuned configurations.
  EXPECT_TRUE(matches_reference(s.run(model_inputs())));
  EXPECT_EQ(s.stats().plans.made, 2u);
  EXPECT_EQ(s.stats().last_plan.tuned_gemms, 3u);

  const TuneReport again = s.tune(model_inputs(), {false, 2});
  EXPECT_FALSE(again.saved);
  ASSERT_EQ(again.problems.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(again.problems[i].measured);
    EXPECT_EQ(again.problems[i].tuned_config, report.problems[i].tuned_config);
    EXPECT_EQ(again.problems[i].default_ms, report.problems[i].default_ms);
  }
  // Nothing changed, so the plan stays.
  s.run(model_inputs());
  EXPECT_EQ(s.stats().plans.made, 2u);
  EXPECT_TRUE(s.tune(model_inputs(), {true, 1}).problems.at(0).measured);
  std::filesystem::remove_all(dir);
}

// Every candidate of small problems over the layouts and call sites the GEMM family has runs and agrees with
// the default's output; the winner is one of them.
TEST(Tuning, EveryCandidateRunsAndAgreesWithTheDefault) {
  GemmProblemKey split = weight_problem(24, 40, 256);  // fast64 configurations and 2-chunk splits
  // A [K, M] per batch entry, a shared runtime B [K, N]: the seeds' tiled kernel, whole and split (fewer than
  // 16 rows: no fast tiles, whose compilation makes SwiftShader slow; the first problem has those).
  GemmProblemKey transposed;
  transposed.m = 12;
  transposed.n = 36;
  transposed.k = 300;
  transposed.batch = 3;
  transposed.a_km = true;
  transposed.a_batched = true;
  transposed.b = GemmBLayout::KN;
  GemmProblemKey rows;  // GEMV lane counts on a runtime [N, K] B, from a call site that cannot split
  rows.m = 3;
  rows.n = 40;
  rows.k = 64;
  rows.b = GemmBLayout::NK;
  rows.splittable = false;
  std::vector<GemmProblemKey> problems = {split, transposed, rows};
  // SwiftShader compiles each fast-kernel pipeline in 1-3 s (2 cores), which made this test take 20 s there;
  // the fast kernels are checked under every forced configuration in test_linear.cpp on both adapters, and
  // the tuner's forcing is the same code on GL ES.
  if (test::device().capabilities().costly_barriers) problems.erase(problems.begin());
  for (const GemmProblemKey& p : problems) {
    runtime::GemmTuneOptions options;
    options.runs = 2;
    options.warmup = 1;
    std::vector<std::string> mismatches;
    options.report_mismatch = [&mismatches](const std::string& m) { mismatches.push_back(m); };
    const runtime::GemmTuneResult r = runtime::tune_gemm(test::device(), p, options);
    const auto candidates = runtime::gemm_candidates(p, test::device().capabilities());
    ASSERT_EQ(r.candidates.size(), candidates.size()) << ops::to_string(p);
    EXPECT_GE(candidates.size(), 2u) << ops::to_string(p);
    for (size_t i = 0; i < candidates.size(); ++i) {
      const runtime::GemmCandidateTiming& t = r.candidates[i];
      EXPECT_EQ(t.choice, candidates[i]);
      EXPECT_TRUE(t.failure.empty()) << ops::to_string(p) << " " << ops::to_string(t.choice) << ": "
                                     << t.failure;
      EXPECT_LE(t.error, 1e-5) << ops::to_string(p) << " " << ops::to_string(t.choice);
      EXPECT_GT(t.ms, 0) << ops::to_string(p) << " " << ops::to_string(t.choice);
    }
    EXPECT_TRUE(mismatches.empty()) << mismatches.front();
    EXPECT_TRUE(std::find(candidates.begin(), candidates.end(), r.best) != candidates.end());
    EXPECT_LE(r.best_ms, r.default_ms);
    EXPECT_EQ(r.default_choice, candidates.front());
    if (!test::device().features().timestamp_query) {
      EXPECT_EQ(r.timer, "wall clock");
    }
  }
}

// A candidate whose output disagrees is reported and never chosen (simulated with a tolerance nothing meets).
TEST(Tuning, DisagreeingCandidatesAreReportedAndNeverChosen) {
  runtime::GemmTuneOptions options;
  options.runs = 1;
  options.warmup = 0;
  options.tolerance = -1;
  std::vector<std::string> reported;
  options.report_mismatch = [&reported](const std::string& m) { reported.push_back(m); };
  const runtime::GemmTuneResult r = runtime::tune_gemm(test::device(), kFc1, options);
  ASSERT_GE(r.candidates.size(), 2u);
  EXPECT_EQ(r.best, r.default_choice);
  EXPECT_EQ(reported.size(), r.candidates.size() - 1);
  EXPECT_EQ(r.mismatches, reported);
  EXPECT_NE(reported.front().find("output differs from the default's"), std::string::npos)
      << reported.front();
}

}  // namespace
}  // namespace wgi
