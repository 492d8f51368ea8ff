// `wgi bench MODEL`: load time, first-run time, median / p90 run time, memory; per-node GPU times with
// --profile, and a Chrome / Perfetto trace with --trace.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"

namespace wgi::cli {

namespace {

void write_trace(const std::string& path, const std::vector<NodeTiming>& profile) {
  // GPU work runs in order; lay the nodes out back to back on one track (microseconds, Trace Event Format).
  nlohmann::json events = nlohmann::json::array();
  double t = 0;
  for (const auto& n : profile) {
    events.push_back({{"name", n.node.empty() ? n.op_type : n.node},
                      {"cat", n.op_type},
                      {"ph", "X"},
                      {"ts", t * 1000.0},
                      {"dur", n.gpu_ms * 1000.0},
                      {"pid", 1},
                      {"tid", 1},
                      {"args", {{"op", n.op_type}, {"kernel", n.kernel}}}});
    t += n.gpu_ms;
  }
  std::ofstream out(path);
  if (!out) throw Error("cannot write trace '" + path + "'");
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

void print_profile(const std::vector<NodeTiming>& profile) {
  double total = 0;
  std::map<std::string, std::pair<double, int>> by_op;
  for (const auto& n : profile) {
    total += n.gpu_ms;
    by_op[n.op_type].first += n.gpu_ms;
    ++by_op[n.op_type].second;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> rows(by_op.begin(), by_op.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::cout << "GPU time by op type (sum " << std::fixed << std::setprecision(3) << total << " ms):\n";
  for (const auto& [op, v] : rows) {
    std::cout << "  " << std::setw(20) << std::left << op << std::right << std::setw(10) << v.first << " ms  "
              << std::setw(5) << std::setprecision(1) << (total > 0 ? 100 * v.first / total : 0) << "%  x"
              << v.second << "\n"
              << std::setprecision(3);
  }
  std::vector<NodeTiming> top = profile;
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.gpu_ms > b.gpu_ms; });
  std::cout << "slowest nodes:\n";
  for (size_t i = 0; i < std::min<size_t>(10, top.size()); ++i) {
    std::cout << "  " << std::setw(10) << top[i].gpu_ms << " ms  " << top[i].op_type << " '" << top[i].node
              << "' (" << top[i].kernel << ")\n";
  }
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  struct Options : ModelOptions {
    int runs = 20;
    int warmup = 3;
    bool profile = false;
    std::string trace;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("bench", "Time a model: load, first run, median and p90 run, memory");
  add_model_options(*cmd, *opts);
  cmd->add_option("--runs", opts->runs, "Timed runs (default 20)")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", opts->warmup, "Untimed runs after the first (default 3)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--profile", opts->profile,
                "Per-node GPU time from timestamp queries (when the adapter has them)");
  cmd->add_option("--trace", opts->trace, "Write the profiled run as a Chrome/Perfetto trace JSON file");
  cmd->callback([opts, &exit_code] {
    if (opts->inputs.files.empty() && !opts->inputs.random_seed) opts->inputs.random_seed = 0;
    ProgressBar progress;
    auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    auto t0 = std::chrono::steady_clock::now();
    SessionOptions so = session_options(*opts, progress);
    so.profiling = opts->profile || !opts->trace.empty();
    Session session = Session::from_file(opts->model, so);
    auto inputs = make_inputs(session.inputs(), opts->inputs);
    auto t1 = std::chrono::steady_clock::now();
    session.run(inputs);
    auto t2 = std::chrono::steady_clock::now();
    for (int i = 0; i < opts->warmup; ++i) {
      session.run(inputs);
      progress.update(static_cast<size_t>(i + 1), static_cast<size_t>(opts->warmup + opts->runs),
                      "benchmark");
    }
    std::vector<double> times;
    for (int i = 0; i < opts->runs; ++i) {
      auto a = std::chrono::steady_clock::now();
      session.run(inputs);
      times.push_back(ms(a, std::chrono::steady_clock::now()));
      progress.update(static_cast<size_t>(opts->warmup + i + 1),
                      static_cast<size_t>(opts->warmup + opts->runs), "benchmark");
    }
    progress.finish();
    std::sort(times.begin(), times.end());
    auto pct = [&](double p) {
      return times[std::min(times.size() - 1, static_cast<size_t>(p * times.size()))];
    };
    const SessionStats& st = session.stats();
    std::cout << std::fixed << std::setprecision(3) << "model:      " << opts->model << "\n"
              << "adapter:    " << session.adapter_description() << "\n"
              << "load:       " << ms(t0, t1) << " ms\n"
              << "first run:  " << ms(t1, t2) << " ms (planning " << st.last_plan_ms << " ms)\n"
              << "run:        median " << pct(0.5) << " ms, p90 " << pct(0.9) << " ms, min " << times.front()
              << " ms over " << times.size() << " runs (upload inputs + GPU + download outputs)\n"
              << "memory:     activations " << st.peak_activation_bytes / 1048576.0 << " MiB, weights "
              << st.weight_bytes / 1048576.0 << " MiB\n"
              << "graph:      " << st.nodes << " nodes, " << st.dispatches << " dispatches per run, "
              << st.pipelines << " pipelines\n";
    if (so.profiling) {
      if (session.last_profile().empty()) {
        std::cout << "profile:    " << session.profiling_note() << "\n";
      } else {
        print_profile(session.last_profile());
        if (!opts->trace.empty()) {
          write_trace(opts->trace, session.last_profile());
          std::cout << "trace:      " << opts->trace << "\n";
        }
      }
    }
    exit_code = 0;
  });
}

}  // namespace wgi::cli
