// What Session::tune takes and reports (GEMM tuning, docs/tuning.md). Included by wgi/session.h.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace wgi {

// Options of Session::tune.
struct TuneOptions {
  bool force = false;  // measure problems the cache already has, too
  int runs = 10;       // timed runs per configuration (their median counts)
};

// One distinct GEMM problem of a model, as Session::tune found (and maybe measured) it.
struct TunedProblem {
  std::string problem;  // "196x3072x768 B=weight": M x N x K, then what differs from A [M,K], B [K,N]
  std::vector<std::string> nodes;  // the nodes whose plans contain it
  bool measured = false;           // false: the cache had it (TuneOptions::force measures anyway)
  std::string default_config;      // the planner's rules, e.g. "fast64 k16 s2"
  std::string tuned_config;        // the winner (the default when nothing beat it by 2%)
  double default_ms = 0;           // medians, from the cache when not measured (0 if it kept none)
  double tuned_ms = 0;
  size_t candidates = 0;                // configurations timed
  std::vector<std::string> mismatches;  // configurations whose output disagreed with the default's (bugs)
  std::string timer;                    // "timestamps" or "wall clock"
};

struct TuneReport {
  std::string adapter;     // the adapter the entries are for
  std::string cache_path;  // empty when the cache is off
  bool saved = false;      // the cache file was written
  std::vector<TunedProblem> problems;
};

}  // namespace wgi
