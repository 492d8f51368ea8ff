// `wgi tune MODEL`: measure the GEMM configurations of every distinct GEMM problem of the model's plan for
// the given dims on this adapter, and keep the fastest in the tuning cache (docs/tuning.md), which `wgi run`,
// `wgi bench` and every Session then use. Problems the cache already has are skipped unless --force.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "runtime/tuning_cache.h"

namespace wgi::cli {

namespace {

std::string fixed(double v, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << v;
  return out.str();
}

// "fc1", "fc1, fc2", "fc1, fc2 +3 more": the nodes of a problem in a column of bounded width.
std::string node_list(const std::vector<std::string>& nodes) {
  std::string out;
  size_t shown = 0;
  for (const std::string& n : nodes) {
    if (shown > 0 && out.size() + n.size() > 28) break;
    out += (shown ? ", " : "") + n;
    ++shown;
  }
  if (shown < nodes.size()) out += " +" + std::to_string(nodes.size() - shown) + " more";
  return out;
}

void print_report(const TuneReport& report, int runs) {
  std::vector<std::vector<std::string>> rows = {
      {"GEMM (MxNxK)", "nodes", "default", "ms", "tuned", "ms", "speedup", ""}};
  for (const TunedProblem& p : report.problems) {
    const bool timed = p.default_ms > 0 && p.tuned_ms > 0;
    rows.push_back({p.problem, node_list(p.nodes), p.default_config.empty() ? "?" : p.default_config,
                    p.default_ms > 0 ? fixed(p.default_ms, 4) : "-", p.tuned_config,
                    p.tuned_ms > 0 ? fixed(p.tuned_ms, 4) : "-",
                    timed ? fixed(p.default_ms / p.tuned_ms, 2) + "x" : "-",
                    p.measured ? std::to_string(p.candidates) + " candidates" : "cached"});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const bool number = c == 3 || c == 5 || c == 6;
      std::string cell = row[c];
      const std::string pad(width[c] - cell.size(), ' ');
      line += (c ? "  " : "") + (number ? pad + cell : cell + (c + 1 < row.size() ? pad : ""));
    }
    line.erase(line.find_last_not_of(' ') + 1);
    std::cout << line << "\n";
  }
  size_t measured = 0;
  std::string timer;
  for (const TunedProblem& p : report.problems) {
    if (!p.measured) continue;
    ++measured;
    timer = p.timer;
  }
  std::cout << report.problems.size() << " GEMM problems: " << measured << " measured";
  if (measured) std::cout << " (" << timer << ", median of " << runs << " runs)";
  std::cout << ", " << report.problems.size() - measured << " from the cache\n";
}

}  // namespace

void add_tune_command(CLI::App& app, int& exit_code) {
  struct Options : ModelOptions {
    int runs = 10;
    bool force = false;
    std::string deprecated_cache;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "tune", "Measure GEMM configurations for a model's shapes on this adapter and cache the fastest");
  add_model_options(*cmd, *opts);
  cmd->add_option("--tuning-cache", opts->tuning_cache,
                  "Tuning cache to update (default: WGI_TUNING_CACHE, else ~/.cache/wgi/tuning.json)");
  // The name `run` and `bench` use is --tuning-cache; --cache stays for scripts written before.
  cmd->add_option("--cache", opts->deprecated_cache, "Deprecated: the same as --tuning-cache");
  cmd->add_option("--runs", opts->runs, "Timed runs per configuration, median taken (default 10)")
      ->check(at_least(1));
  cmd->add_flag("--force", opts->force, "Measure problems the cache already has, too");
  cmd->callback([opts, &exit_code] {
    if (!opts->deprecated_cache.empty()) {
      if (!opts->tuning_cache.empty()) throw Error("give --tuning-cache or its old name --cache, not both");
      std::cerr << "wgi: warning: --cache is deprecated; use --tuning-cache\n";
      opts->tuning_cache = opts->deprecated_cache;
    }
    // Only the shapes matter: random inputs unless files are given.
    if (opts->inputs.files.empty() && !opts->inputs.random_seed) opts->inputs.random_seed = 0;
    ProgressBar progress;
    SessionOptions so = session_options(*opts, progress);
    if (so.tuning_cache.empty() && runtime::default_tuning_cache_path().empty()) {
      throw Error(
          "no tuning cache location: give --tuning-cache PATH, or set WGI_TUNING_CACHE or HOME (an empty "
          "WGI_TUNING_CACHE turns the cache off)");
    }
    // Before measuring, which takes minutes: an unwritable cache would lose every measurement.
    require_writable_file(so.tuning_cache.empty() ? runtime::default_tuning_cache_path() : so.tuning_cache,
                          "tuning cache");
    Session session = Session::from_file(opts->model, so);
    report_tuning_cache(session);
    const auto inputs = make_inputs(session.inputs(), opts->inputs, session.max_buffer_size());
    std::cout << "model:   " << opts->model << "\n";
    TuneOptions to;
    to.runs = opts->runs;
    to.force = opts->force;
    const TuneReport report = session.tune(inputs, to);
    progress.finish();
    std::cout << "adapter: " << report.adapter << "\n"
              << "cache:   " << report.cache_path << (report.saved ? " (written)" : " (unchanged)") << "\n";
    print_report(report, opts->runs);
    // Each was reported on stderr as it was found (runtime::tune_gemm); the exit code says it again.
    size_t mismatches = 0;
    for (const TunedProblem& p : report.problems) mismatches += p.mismatches.size();
    if (mismatches) {
      std::cerr << "wgi: " << mismatches
                << " configuration(s) computed a different product than the default: kernel bugs, not used\n";
    }
    exit_code = mismatches ? 1 : 0;
  });
}

}  // namespace wgi::cli
