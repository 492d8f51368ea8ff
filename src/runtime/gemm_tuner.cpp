#include "runtime/gemm_tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <random>

#include "core/integer_math.h"
#include "gpu/commands.h"
#include "gpu/profiler.h"
#include "ops/internal_ops.h"
#include "ops/registry.h"
#include "runtime/node_runner.h"

namespace wgi::runtime {

namespace {

using ops::GemmBLayout;
using ops::GemmChoice;
using ops::GemmKernel;
using ops::GemmProblemKey;

// The problem travels to the plan function as attributes of a node of this op, in a registry of its own.
constexpr const char* kDomain = "wgi.tuning";
constexpr const char* kOpType = "GemmProblem";

int64_t attr(const ops::NodeInfo& node, const char* name) {
  return node.attributes.get_int(std::string("problem.") + name, 0);
}

GemmProblemKey key_of(const ops::NodeInfo& node) {
  GemmProblemKey key;
  key.m = static_cast<uint32_t>(attr(node, "m"));
  key.n = static_cast<uint32_t>(attr(node, "n"));
  key.k = static_cast<uint32_t>(attr(node, "k"));
  key.batch = static_cast<uint32_t>(attr(node, "batch"));
  key.a_km = attr(node, "a_km") != 0;
  key.b = static_cast<GemmBLayout>(attr(node, "b"));
  key.a_batched = attr(node, "a_batched") != 0;
  key.b_batched = attr(node, "b_batched") != 0;
  key.splittable = attr(node, "splittable") != 0;
  return key;
}

// Plans the problem the way its ops would: a weight-like B prepacked in the layout the chosen kernel wants
// (linear.cpp), a split where the call site can run one.
ops::OpPlan plan_problem(const ops::PlanContext& ctx) {
  const GemmProblemKey key = key_of(ctx.node);
  ops::GemmLaunchSpec spec = ops::gemm_problem_spec(key);
  ops::OpPlan plan;
  plan.outputs.push_back({DType::Float32, {static_cast<int64_t>(spec.batch), key.m, key.n}});
  if (key.b == GemmBLayout::Packed) {
    const Tensor* b = ctx.constant(1);  // [matrices, N, K]
    if (!b) ctx.fail("the packed B must be a constant");
    const bool nk = ops::prepack_b_as_nk(ctx, spec);
    plan.constants.push_back(ops::prepack_b(*b, key.k, key.n, /*stored_nk=*/true, nk));
    spec.b_nk = nk;
  }
  if (key.splittable) {
    ops::append_gemm_launches(ctx, spec, plan);
  } else {
    plan.launches.push_back(ops::make_gemm_launch(ctx, spec));
  }
  return plan;
}

const ops::OpRegistry& problem_registry() {
  static const ops::OpRegistry registry = [] {
    ops::OpRegistry r;
    r.add(kDomain, kOpType, 1, ops::kLatestOpset, {plan_problem, nullptr});
    return r;
  }();
  return registry;
}

// The node for `problem`, with `choice` forced (nullptr: the planner's rules).
ops::NodeInfo problem_node(const GemmProblemKey& key, const GemmChoice* choice) {
  ops::NodeInfo node{"gemm " + ops::to_string(key), kOpType, kDomain, 1, {}, {}, {}};
  auto set = [&node](const char* name, int64_t v) { node.attributes.set(std::string("problem.") + name, v); };
  set("m", key.m);
  set("n", key.n);
  set("k", key.k);
  set("batch", key.batch);
  set("a_km", key.a_km);
  set("b", static_cast<int64_t>(key.b));
  set("a_batched", key.a_batched);
  set("b_batched", key.b_batched);
  set("splittable", key.splittable);
  if (choice) {
    ops::GemmTuningAttributes tuning;
    tuning.kernel = std::string(ops::gemm_kernel_name(choice->kernel));
    if (choice->tile_k) tuning.tile_k = choice->tile_k;
    if (choice->stages) tuning.stages = choice->stages;
    if (choice->gemv_lanes) tuning.gemv_lanes = choice->gemv_lanes;
    tuning.split_k = choice->split_k;
    ops::write_gemm_tuning_attributes(tuning, node.attributes);
  }
  return node;
}

Tensor random_tensor(Shape shape, std::mt19937_64& rng) {
  Tensor t(DType::Float32, std::move(shape));
  for (float& v : t.data<float>())
    v = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1p-53 * 2.0 - 1.0);
  return t;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

// Relative L2 distance of `got` from `want` (0 for two zero tensors).
double relative_l2(const Tensor& got, const Tensor& want) {
  auto g = got.data<float>();
  auto w = want.data<float>();
  if (g.size() != w.size()) return INFINITY;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double d = static_cast<double>(g[i]) - static_cast<double>(w[i]);
    diff += d * d;
    norm += static_cast<double>(w[i]) * static_cast<double>(w[i]);
  }
  if (!std::isfinite(diff)) return INFINITY;
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// Median milliseconds per run of `node`: GPU time from timestamps (the node's dispatches summed), or wall
// time of back-to-back runs in one submission.
double time_node(gpu::Device& device, const PreparedNode& node, bool timestamps, int runs, int warmup) {
  runs = std::max(1, runs);
  {
    gpu::CommandBatch batch(device);
    for (int i = 0; i < warmup; ++i) node.encode(batch);
    batch.submit();
    device.wait_idle();
  }
  std::vector<double> samples;
  if (timestamps) {
    const uint32_t per_run = static_cast<uint32_t>(node.dispatch_count());
    gpu::TimestampProfiler profiler(device, per_run * static_cast<uint32_t>(runs));
    gpu::CommandBatch batch(device);
    for (int r = 0; r < runs; ++r) node.encode_timed(batch, profiler, static_cast<uint32_t>(r) * per_run);
    batch.submit();
    const std::vector<double> ms = profiler.read(per_run * static_cast<uint32_t>(runs));
    for (int r = 0; r < runs; ++r) {
      double sum = 0;
      for (uint32_t d = 0; d < per_run; ++d) sum += ms[static_cast<size_t>(r) * per_run + d];
      samples.push_back(sum);
    }
    return median(samples);
  }
  auto batch_seconds = [&](int repeats) {
    const auto start = std::chrono::steady_clock::now();
    gpu::CommandBatch batch(device);
    for (int i = 0; i < repeats; ++i) node.encode(batch);
    batch.submit();
    device.wait_idle();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // Enough runs per submission for about 2 ms of work, so that submission and wait latency are amortised.
  int repeats = 1;
  for (double s = batch_seconds(1); s < 0.002 && repeats < 256;) {
    repeats = std::min(256, std::max(repeats * 2, static_cast<int>(repeats * 0.002 / std::max(s, 1e-7))));
    s = batch_seconds(repeats);
  }
  for (int r = 0; r < runs; ++r) samples.push_back(batch_seconds(repeats) * 1000.0 / repeats);
  return median(samples);
}

// Chunk counts worth trying for a `tile_m` x `tile_n` output tile (see gemm_candidates).
std::vector<uint32_t> split_candidates(const GemmProblemKey& p, uint32_t tile_m, uint32_t tile_n) {
  if (!p.splittable) return {};
  const uint64_t tiles =
      uint64_t{ceil_div(p.m, tile_m)} * ceil_div(p.n, tile_n) * std::max<uint32_t>(1, p.batch);
  if (tiles >= 512) return {};
  std::vector<uint32_t> out;
  for (uint32_t s : {2u, 3u, 4u, 6u, 8u, 16u, 32u, 64u}) {
    if (p.k / s >= 128 && tiles * s <= 2048) out.push_back(s);
  }
  return out;
}

}  // namespace

GemmChoice default_gemm_choice(const GemmProblemKey& problem, const gpu::Capabilities& caps) {
  return ops::gemm_choice_of(ops::plan_gemm_rules(ops::gemm_problem_spec(problem), caps, problem.splittable));
}

std::vector<GemmChoice> gemm_candidates(const GemmProblemKey& p, const gpu::Capabilities& caps) {
  const ops::GemmLaunchSpec spec = ops::gemm_problem_spec(p);
  std::vector<GemmChoice> out;
  auto add = [&](const GemmChoice& c) {
    if (std::find(out.begin(), out.end(), c) != out.end()) return false;
    std::string why;
    if (!ops::plan_gemm_choice(spec, c, caps, p.splittable, why)) return false;
    out.push_back(c);
    return true;
  };
  try {
    add(default_gemm_choice(p, caps));
  } catch (const Error&) {
    // The rules cannot plan it either; tune_gemm reports that.
  }
  add({GemmKernel::Tiled, 0, 0, 1, 0});
  add({GemmKernel::Vec4, 0, 0, 1, 0});
  if (p.m <= 8) {
    // More lanes than K has vec4s only add zeros.
    const uint32_t k_quads = ceil_div(p.k, 4);
    for (uint32_t lanes = 4; lanes <= 256; lanes *= 2) {
      if (lanes == 4 || lanes / 2 < k_quads) add({GemmKernel::Gemv, 0, 0, 1, lanes});
    }
  }
  // Below 16 rows or columns a fast tile is at least 75% idle: GEMV and the 32x32 tiles cover those.
  if (p.m >= 16 && p.n >= 16) {
    // The 128x64 rectangle: twice the 128 tile's workgroups where its last wave would be mostly empty.
    for (GemmKernel kernel : {GemmKernel::Fast128, GemmKernel::Fast64, GemmKernel::Fast128x64}) {
      const auto [tile_m, tile_n] = ops::fast_gemm_tile(kernel);
      if (tile_m == 128 && std::max(p.m, p.n) <= 64) continue;  // the 64 tile holds it with less waste
      if (tile_m != tile_n && p.m <= 64) continue;              // as many rows: the 64 tile again
      std::vector<GemmChoice> unsplit;
      for (const auto& [tile_k, stages] :
           std::vector<std::pair<uint32_t, uint32_t>>{{16, 1}, {16, 2}, {8, 1}, {8, 2}, {32, 1}, {32, 2}}) {
        const GemmChoice c{kernel, tile_k, stages, 1, 0};
        if (add(c) || std::find(out.begin(), out.end(), c) != out.end()) unsplit.push_back(c);
      }
      // Splits on the two configurations the planner prefers (16-deep slabs when they fit): crossing every
      // configuration with every split would multiply the count for little.
      // The rectangle's splits on its preferred configuration only.
      const size_t split_configs = tile_m == tile_n ? 2 : 1;
      for (size_t i = 0; i < std::min(split_configs, unsplit.size()); ++i) {
        for (uint32_t s : split_candidates(p, tile_m, tile_n)) {
          GemmChoice c = unsplit[i];
          c.split_k = s;
          add(c);
        }
      }
    }
  }
  for (uint32_t s : split_candidates(p, 32, 32)) add({GemmKernel::Tiled, 0, 0, s, 0});
  return out;
}

GemmTuneResult tune_gemm(gpu::Device& device, const GemmProblemKey& problem, const GemmTuneOptions& options) {
  GemmTuneResult result;
  result.problem = problem;
  result.runs = std::max(1, options.runs);
  const gpu::Capabilities& caps = device.capabilities();
  result.default_choice = default_gemm_choice(problem, caps);
  const std::vector<GemmChoice> candidates = gemm_candidates(problem, caps);

  // Seeded random operands in the problem's layouts; a weight-like B is given [matrices, N, K], as linear.cpp
  // gives it to the prepack.
  std::mt19937_64 rng(options.seed);
  const int64_t batch = std::max<uint32_t>(1, problem.batch);
  const int64_t a_matrices = problem.a_batched ? batch : 1, b_matrices = problem.b_batched ? batch : 1;
  const int64_t m = problem.m, n = problem.n, k = problem.k;
  std::vector<std::optional<NodeInput>> inputs;
  inputs.push_back(
      NodeInput{random_tensor(problem.a_km ? Shape{a_matrices, k, m} : Shape{a_matrices, m, k}, rng)});
  const bool b_nk = problem.b != GemmBLayout::KN;
  inputs.push_back(NodeInput{random_tensor(b_nk ? Shape{b_matrices, n, k} : Shape{b_matrices, k, n}, rng),
                             problem.b == GemmBLayout::Packed});

  bool timestamps = device.features().timestamp_query;
  const NodeRunOptions run_options{false, std::nullopt, nullptr};
  // The default: the reference output and the time to beat.
  const ops::NodeInfo default_node = problem_node(problem, nullptr);
  PreparedNode reference(device, default_node, inputs, run_options, problem_registry());
  const Tensor expected = reference.run().at(0);
  result.default_ms = time_node(device, reference, timestamps, result.runs, options.warmup);
  if (timestamps && !(result.default_ms > 0)) {
    // Some implementations answer timestamp queries with zeros: fall back to the wall clock.
    timestamps = false;
    result.default_ms = time_node(device, reference, timestamps, result.runs, options.warmup);
  }
  result.timer = timestamps ? "timestamps" : "wall clock";
  result.best = result.default_choice;
  result.best_ms = result.default_ms;

  GemmChoice fastest = result.default_choice;
  double fastest_ms = result.default_ms;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (options.progress) options.progress(i, candidates.size());
    GemmCandidateTiming timing;
    timing.choice = candidates[i];
    if (candidates[i] == result.default_choice) {
      timing.ms = result.default_ms;
      result.candidates.push_back(timing);
      continue;
    }
    try {
      PreparedNode node(device, problem_node(problem, &candidates[i]), inputs, run_options,
                        problem_registry());
      timing.error = relative_l2(node.run().at(0), expected);
      if (!(timing.error <= options.tolerance)) {
        timing.failure =
            "output differs from the default's (relative L2 " + std::to_string(timing.error) + ")";
        const std::string report = ops::to_string(candidates[i]) + " on " + ops::to_string(problem) + ": " +
                                   timing.failure + ", default " + ops::to_string(result.default_choice) +
                                   " on " + device.adapter_info().device;
        result.mismatches.push_back(report);
        if (options.report_mismatch) {
          options.report_mismatch(report);
        } else {
          std::cerr << "wgi: KERNEL BUG found while tuning, candidate not used: " << report << "\n";
        }
      } else {
        timing.ms = time_node(device, node, timestamps, result.runs, options.warmup);
        if (timing.ms < fastest_ms) {
          fastest = candidates[i];
          fastest_ms = timing.ms;
        }
      }
    } catch (const Error& e) {
      timing.failure = e.what();
    }
    result.candidates.push_back(std::move(timing));
  }
  if (options.progress) options.progress(candidates.size(), candidates.size());
  // The default again, now that the GPU has been busy for a while: timed first only, on a cold GPU, it read
  // several times slower than the same configuration timed later (docs/performance.md, "Measurements behind
  // the planner's rules"), which made any candidate look better than the rules. The faster of the two.
  const double default_again = time_node(device, reference, timestamps, result.runs, options.warmup);
  if (default_again < result.default_ms) {
    result.default_ms = default_again;
    for (GemmCandidateTiming& t : result.candidates) {
      if (t.choice == result.default_choice) t.ms = default_again;
    }
  }
  if (fastest == result.default_choice || default_again < fastest_ms) {
    fastest = result.default_choice;
    fastest_ms = result.default_ms;
  }
  result.best_ms = result.default_ms;
  if (fastest_ms < result.default_ms * (1.0 - options.min_gain)) {
    result.best = fastest;
    result.best_ms = fastest_ms;
  }
  return result;
}

}  // namespace wgi::runtime
