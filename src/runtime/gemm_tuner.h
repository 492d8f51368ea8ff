// Measuring GEMM configurations on the device (docs/tuning.md): for one exact problem, every candidate
// configuration the device can run is planned as a node of its own (the problem's sizes and layouts, the
// candidate forced through the GEMM attributes), timed in isolation, and checked against the output of the
// planner's default configuration on the same seeded random inputs. The fastest candidate that agrees wins.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "ops/gemm_tuning.h"

namespace wgi::runtime {

// The planner's rules for `problem` on `caps` (what runs without a tuning table).
ops::GemmChoice default_gemm_choice(const ops::GemmProblemKey& problem, const gpu::Capabilities& caps);

// The configurations tried for `problem`, all of which the device can run (validated as forced choices):
// the default first; the seeds' tiled and vec4 kernels; GEMV with 4 to 256 lanes per column when M <= 8 (not
// more lanes than K has vec4s to share); fast128 (when M or N exceeds 64), fast64 (M, N >= 16) and the 128x64
// rectangle (M > 64) in every workgroup-memory configuration (K slab 8/16/32, 1 or 2 buffers, as each tile
// allows); and where the call site splits K and the product has few output tiles (< 512), splits of 2 to 64
// chunks at least 128 deep, for at most 2048 workgroups, on the tiled kernel, on the two preferred
// configurations of each square fast tile and on the rectangle's first. A few dozen at most (196x768x3072 on
// the H200's limits: about 50).
std::vector<ops::GemmChoice> gemm_candidates(const ops::GemmProblemKey& problem,
                                             const gpu::Capabilities& caps);

struct GemmTuneOptions {
  int runs = 10;            // timed runs per candidate (their median counts)
  int warmup = 2;           // untimed runs first (the pipelines are compiled before either)
  double tolerance = 1e-4;  // relative L2 distance from the default's output a candidate may have
  // A candidate must be this much faster than the default to replace it (noise should not flip a choice).
  double min_gain = 0.02;
  uint64_t seed = 1;  // of the random inputs
  // (candidates done, candidates) as the sweep goes.
  std::function<void(size_t, size_t)> progress;
  // Told of each candidate whose output disagreed with the default's; empty: "wgi: KERNEL BUG ..." on stderr.
  std::function<void(const std::string&)> report_mismatch;
};

struct GemmCandidateTiming {
  ops::GemmChoice choice;
  double ms = 0;        // median; 0 if it failed
  double error = 0;     // relative L2 distance from the default's output
  std::string failure;  // why it did not run, or that it disagreed with the default; empty if fine
};

struct GemmTuneResult {
  ops::GemmProblemKey problem;
  ops::GemmChoice default_choice;
  double default_ms = 0;
  ops::GemmChoice best;  // the default unless a candidate beat it by options.min_gain
  double best_ms = 0;
  std::vector<GemmCandidateTiming> candidates;  // in gemm_candidates order, the default first
  std::vector<std::string> mismatches;          // candidates whose output disagreed: kernel bugs
  std::string timer;                            // "timestamps" or "wall clock"
  int runs = 0;
};

// Tunes one problem on `device`. Candidates that fail to plan or run are recorded and skipped; one whose
// output disagrees with the default's is never chosen and is reported (options.report_mismatch, by default
// on stderr) as the kernel bug it is.
// Throws wgi::Error if the default configuration itself cannot run.
GemmTuneResult tune_gemm(gpu::Device& device, const ops::GemmProblemKey& problem,
                         const GemmTuneOptions& options = {});

}  // namespace wgi::runtime
