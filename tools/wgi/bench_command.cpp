// `wgi bench MODEL`: load time, first-run time, median / p90 run time, memory; per-node GPU times with
// --profile, and a Chrome / Perfetto trace with --trace. --device-inputs times runs whose inputs are already
// on the device and whose outputs stay there; --decode N times a greedy generation loop of a decoder step
// model (docs/decoding.md).
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

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

// GPU milliseconds and node count per key (op type, kernel), the largest first.
using TimeSums = std::vector<std::pair<std::string, std::pair<double, int>>>;
TimeSums sum_by(const std::vector<NodeTiming>& profile, std::string NodeTiming::*key) {
  std::map<std::string, std::pair<double, int>> sums;
  for (const auto& n : profile) {
    sums[n.*key].first += n.gpu_ms;
    ++sums[n.*key].second;
  }
  TimeSums rows(sums.begin(), sums.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  return rows;
}

void print_profile(const std::vector<NodeTiming>& profile) {
  double total = 0;
  for (const auto& n : profile) total += n.gpu_ms;
  const TimeSums rows = sum_by(profile, &NodeTiming::op_type);
  std::cout << "GPU time by op type (sum " << std::fixed << std::setprecision(3) << total << " ms):\n";
  size_t name_width = 20;  // wider for long internal op names (DepthwiseConvChannelsLast)
  for (const auto& row : rows) name_width = std::max(name_width, row.first.size() + 1);
  for (const auto& [op, v] : rows) {
    std::cout << "  " << std::setw(static_cast<int>(name_width)) << std::left << op << std::right
              << std::setw(10) << v.first << " ms  " << std::setw(5) << std::setprecision(1)
              << (total > 0 ? 100 * v.first / total : 0) << "%  x" << v.second << "\n"
              << std::setprecision(3);
  }
  // By the nodes' kernels too: one op type can run on several kernels (Attention: tiled, matrix, the three
  // launches), whose shares the op-type sums hide.
  const TimeSums kernels = sum_by(profile, &NodeTiming::kernel);
  std::cout << "GPU time by kernel (the 12 largest):\n";
  for (size_t i = 0; i < std::min<size_t>(12, kernels.size()); ++i) {
    std::cout << "  " << std::setw(10) << kernels[i].second.first << " ms  x" << kernels[i].second.second
              << "  " << kernels[i].first << "\n";
  }
  std::vector<NodeTiming> top = profile;
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.gpu_ms > b.gpu_ms; });
  std::cout << "slowest nodes:\n";
  for (size_t i = 0; i < std::min<size_t>(10, top.size()); ++i) {
    std::cout << "  " << std::setw(10) << top[i].gpu_ms << " ms  " << top[i].op_type << " '" << top[i].node
              << "' (" << top[i].kernel << ")\n";
  }
}

double milliseconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())))];
}

// The decoder's past_* inputs and their present_* outputs, the input_ids input and the logits output.
struct DecoderIo {
  std::vector<std::pair<std::string, std::string>> past_present;
  DType ids_dtype = DType::Int64;
};

constexpr const char* kNotADecoder =
    "--decode needs a decoder step model: an integer input 'input_ids' [batch, new_tokens], an output "
    "'logits' [batch, new_tokens, vocab] and inputs past_* with matching outputs present_*";

DecoderIo find_decoder_io(const Session& session) {
  DecoderIo io;
  bool has_ids = false, has_logits = false;
  for (const TensorInfo& in : session.inputs()) {
    if (in.name == "input_ids") {
      has_ids = true;
      io.ids_dtype = in.dtype;
    }
    if (in.name.rfind("past_", 0) != 0) continue;
    const std::string present = "present_" + in.name.substr(5);
    for (const TensorInfo& out : session.outputs()) {
      if (out.name == present) io.past_present.emplace_back(in.name, present);
    }
  }
  for (const TensorInfo& out : session.outputs()) has_logits |= out.name == "logits";
  if (!has_ids || !has_logits || io.past_present.empty() ||
      (io.ids_dtype != DType::Int64 && io.ids_dtype != DType::Int32)) {
    throw Error(kNotADecoder);
  }
  return io;
}

// The argmax token of the last position of logits [batch, tokens, vocab], as input_ids [batch, 1].
Tensor next_tokens(const Tensor& logits, DType dtype) {
  if (logits.rank() != 3 || logits.dtype() != DType::Float32)
    throw Error("--decode: logits must be float32 [batch, tokens, vocab]; got " +
                shape_to_string(logits.shape()));
  const int64_t batch = logits.shape()[0], tokens = logits.shape()[1], vocab = logits.shape()[2];
  auto v = logits.data<float>();
  Tensor ids(dtype, {batch, 1});
  for (int64_t b = 0; b < batch; ++b) {
    const float* row = v.data() + (b * tokens + tokens - 1) * vocab;
    const int64_t best = std::max_element(row, row + vocab) - row;
    if (dtype == DType::Int64) {
      ids.data<int64_t>()[static_cast<size_t>(b)] = best;
    } else {
      ids.data<int32_t>()[static_cast<size_t>(b)] = static_cast<int32_t>(best);
    }
  }
  return ids;
}

struct DecodeStep {
  int64_t past_len = 0;
  double ms = 0;
  double plan_ms = 0;        // 0: the step reused a cached plan
  double node_plans_ms = 0;  // of plan_ms: the node planners (run before a plan is made or respecialized)
  double ahead_ms = 0;       // node plans made ahead, during the previous step's GPU work (not in plan_ms)
  size_t reused = 0, gpu_nodes = 0;
  size_t unchanged = 0, replanned = 0;  // nodes taken from their latest planning / planned or folded again
  char plan = '-';  // 'P': planned in full, 'R': a cached plan respecialized, '-': a cached plan as it was
};

// Plans made and respecialized over the loop, for the summary line.
struct DecodePlans {
  size_t made = 0, respecialized = 0;
  size_t planned_ahead = 0, ahead_hits = 0, ahead_whole = 0;
};

// The output that token candidates (SessionOptions::token_candidates, top_k 1) add: the greedy next ids.
constexpr const char* kNextIds = "logits.top_k_indices";

// `steps` greedy steps from `inputs` (the first step's past as given), each feeding the argmax token and the
// presents back. With on_device, every input but input_ids is uploaded once and the presents stay on the
// device; otherwise every input is uploaded and every output downloaded in each step. With ids_as_data the
// token ids are planned as data (RunOptions::inputs_as_data), else by value (a new token plans its nodes).
// With gpu_tokens (a session made with token candidates) the next ids come from the GPU and go back as a
// DeviceTensor: with on_device a step downloads nothing, and the loop reads each token after submitting the
// next step (as a loop that checks for EOS would), so a step's time is the time between two tokens known on
// the host. Otherwise the logits are downloaded and the argmax taken on the host.
// `values` ends with the last step's inputs (the caller reports the memory they hold).
std::vector<DecodeStep> decode(Session& session, const std::map<std::string, Tensor>& inputs, int steps,
                               bool on_device, bool growing_dims, bool ids_as_data, bool gpu_tokens,
                               std::map<std::string, Value>& values, DecodePlans& plans) {
  const DecoderIo io = find_decoder_io(session);
  if (gpu_tokens && io.ids_dtype != DType::Int64) {
    throw Error("--decode: the model's input_ids is " + std::string(dtype_name(io.ids_dtype)) +
                "; tokens chosen on the GPU are int64 (use --host-argmax)");
  }
  for (const auto& [name, tensor] : inputs)
    values[name] = on_device && name != "input_ids" ? Value(session.upload(tensor)) : Value(tensor);
  RunOptions options;
  if (ids_as_data) options.inputs_as_data.push_back("input_ids");
  if (on_device) {
    for (const auto& pair : io.past_present) options.device_outputs.push_back(pair.second);
  }
  if (gpu_tokens) {
    // The logits are not read: only the presents and the next ids come back.
    options.device_outputs.push_back(kNextIds);
    options.outputs.push_back(kNextIds);
    for (const auto& pair : io.past_present) options.outputs.push_back(pair.second);
  }
  // The past grows by a token per step: the first plan leaves room for the last step's (one plan per loop).
  for (const TensorInfo& in : session.inputs()) {
    if (!growing_dims || in.name != io.past_present.front().first || in.dim_names.size() < 3) continue;
    if (!in.dim_names[2].empty())
      options.growing_dims[in.dim_names[2]] = inputs.at(in.name).shape().at(2) + steps;
  }
  session.synchronize();
  std::vector<DecodeStep> out;
  auto last_known = std::chrono::steady_clock::now();  // when the latest token was known on the host
  // A token on the device not read yet (gpu_tokens with on_device): its step's record is completed when read.
  std::optional<DeviceTensor> unread;
  const auto read_token = [&] {
    (void)unread->download();
    const auto now = std::chrono::steady_clock::now();
    out.back().ms = milliseconds(last_known, now);
    last_known = now;
    unread.reset();
  };
  for (int step = 0; step < steps; ++step) {
    DecodeStep record;
    record.past_len = values.at(io.past_present.front().first).shape().at(2);
    const size_t plans_before = session.stats().plans.made;
    const size_t respecialized_before = session.stats().plans.respecialized;
    std::map<std::string, Value> result = session.run(values, options);
    if (gpu_tokens) {
      values["input_ids"] = result.at(kNextIds);
    } else {
      values["input_ids"] = next_tokens(result.at("logits").host(), io.ids_dtype);
    }
    for (const auto& pair : io.past_present) values[pair.first] = std::move(result.at(pair.second));
    const SessionStats& st = session.stats();
    if (st.plans.made != plans_before || st.plans.respecialized != respecialized_before) {
      record.plan = st.plans.made != plans_before ? 'P' : 'R';
      plans.made += st.plans.made - plans_before;
      plans.respecialized += st.plans.respecialized - respecialized_before;
      record.plan_ms = st.last_plan.ms;
      record.node_plans_ms = st.last_plan.kernel_plans_ms;
      record.reused = st.last_plan.reused_nodes;
      record.gpu_nodes = st.last_plan.gpu_nodes;
      record.unchanged = st.last_plan.unchanged_nodes;
      record.replanned = st.last_plan.replanned_nodes;
      record.ahead_ms = st.last_plan.planned_ahead_ms;
    }
    if (unread) read_token();  // the previous step's, now that this one is submitted
    out.push_back(record);
    if (gpu_tokens && on_device) {
      unread = values.at("input_ids").device();
      unread->start_download();  // queued behind this step: reading it will not wait for the next one
    } else {
      if (gpu_tokens) (void)values.at("input_ids").device().download();
      const auto now = std::chrono::steady_clock::now();
      out.back().ms = milliseconds(last_known, now);
      last_known = now;
    }
  }
  if (unread) read_token();
  plans.planned_ahead = session.stats().plans.planned_ahead;
  plans.ahead_hits = session.stats().plans.ahead_hits;
  plans.ahead_whole = session.stats().plans.ahead_whole;
  return out;
}

// The session; with gpu_tokens (token candidates over 'logits') a model without such an output is not a
// decoder step model, and the error says so as find_decoder_io's does.
Session load_session(const std::string& model, const SessionOptions& options, bool gpu_tokens) {
  try {
    return Session::from_file(model, options);
  } catch (const Error& e) {
    if (!gpu_tokens || std::string(e.what()).rfind("token candidates:", 0) != 0) throw;
    throw Error(std::string(kNotADecoder) + " (" + e.what() + ")");
  }
}

void print_decode(const std::vector<DecodeStep>& steps, bool on_device, bool gpu_tokens,
                  const DecodePlans& plans) {
  std::cout
      << "decode:     " << steps.size() << " greedy steps, key/values "
      << (on_device ? "kept on the device (--device-inputs)" : "through the host (download + upload)")
      << ", tokens "
      << (!gpu_tokens ? "chosen on the host from the downloaded logits (--host-argmax)"
          : on_device ? "chosen on the GPU and fed back on it (each read one step later)"
                      : "chosen on the GPU")
      << "\n"
      << "  step  past_len        ms   planning ms  ahead ms  plan  node plans reused  nodes unchanged\n";
  std::vector<double> later, later_plan, later_node_plans, later_ahead;
  for (size_t i = 0; i < steps.size(); ++i) {
    const DecodeStep& s = steps[i];
    std::cout << std::setw(6) << i << std::setw(10) << s.past_len << std::setw(10) << s.ms << std::setw(14)
              << s.plan_ms << std::setw(10) << s.ahead_ms << std::setw(6) << s.plan;
    if (s.gpu_nodes) {
      std::cout << "  " << std::setw(17) << std::left
                << (std::to_string(s.reused) + "/" + std::to_string(s.gpu_nodes)) << std::right << s.unchanged
                << "/" << s.unchanged + s.replanned;
    }
    std::cout << "\n";
    if (i > 0) {
      later.push_back(s.ms);
      later_plan.push_back(s.plan_ms);
      later_node_plans.push_back(s.node_plans_ms);
      later_ahead.push_back(s.ahead_ms);
    }
  }
  std::cout << "first step: " << steps.front().ms << " ms (planning " << steps.front().plan_ms << " ms)\n";
  if (!later.empty()) {
    std::cout << "later:      median " << percentile(later, 0.5) << " ms, p90 " << percentile(later, 0.9)
              << " ms, min " << *std::min_element(later.begin(), later.end()) << " ms over " << later.size()
              << " steps (planning median " << percentile(later_plan, 0.5)
              << " ms, of which node plans (plan_nodes: shapes, folding, planners of changed nodes) "
              << percentile(later_node_plans, 0.5) << " ms)\n"
              << "ahead:      median " << percentile(later_ahead, 0.5)
              << " ms of node plans made during the previous step's GPU work (not in the planning times), "
              << plans.ahead_hits << " of " << plans.planned_ahead
              << " plannings ahead matched the next step's sizes, " << plans.ahead_whole
              << " its plan-time values too (no node planned on its critical path)\n";
  }
  std::cout << "plans:      " << plans.made << " made, " << plans.respecialized << " respecialized over "
            << steps.size() << " steps (plan P: planned in full, R: a cached plan respecialized)\n";
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  struct Options : ModelOptions {
    int runs = 20;
    int warmup = 3;
    double warmup_ms = 500;
    bool profile = false;
    std::string trace;
    bool device_inputs = false;
    int decode_steps = 0;
    size_t plan_cache = SessionOptions{}.max_cached_plans;
    bool no_respecialize = false;
    bool no_growing_dims = false;
    bool no_plan_ahead = false;
    bool ids_by_value = false;
    bool host_argmax = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("bench", "Time a model: load, first run, median and p90 run, memory");
  add_model_options(*cmd, *opts);
  add_tuning_cache_options(*cmd, *opts);
  cmd->add_option("--runs", opts->runs, "Timed runs (default 20)")->check(at_least(1));
  cmd->add_option("--warmup", opts->warmup, "Untimed runs after the first (default 3)")->check(at_least(0));
  cmd->add_option("--warmup-ms", opts->warmup_ms,
                  "Untimed runs go on until this much time has passed too (default 500: an idle GPU's clocks "
                  "take a few hundred ms of load to come back up)")
      ->check(CLI::Range(0.0, 60000.0));
  cmd->add_flag(
      "--profile", opts->profile,
      "GPU time from timestamp queries (when the adapter has them), summed by op type and by kernel, "
      "and the slowest nodes");
  cmd->add_option("--trace", opts->trace, "Write the profiled run as a Chrome/Perfetto trace JSON file");
  cmd->add_flag(
      "--device-inputs", opts->device_inputs,
      "Inputs uploaded once, outputs kept on the device (no host copies); with --decode: key/values");
  cmd->add_option(
         "--decode", opts->decode_steps,
         "N greedy steps of a decoder (input_ids, logits, past_* -> present_*), each token chosen on "
         "the GPU (--host-argmax: on the host); per-step times")
      ->check(at_least(1));
  cmd->add_option(
         "--plan-cache", opts->plan_cache,
         "Input-shape signatures whose plans are kept (default " + std::to_string(opts->plan_cache) + ")")
      ->check(at_least(1));
  cmd->add_flag(
      "--no-respecialize", opts->no_respecialize,
      "Plan every new input-shape signature in full instead of respecializing a cached plan with the "
      "same kernels (for measuring; docs/decoding.md)");
  cmd->add_flag("--no-growing-dims", opts->no_growing_dims,
                "With --decode: plan the first step for its own sizes only, not with room for the last "
                "step's past (RunOptions::growing_dims; for measuring)");
  cmd->add_flag(
      "--no-plan-ahead", opts->no_plan_ahead,
      "With --decode: make each step's node plans when it comes, not during the previous step's GPU "
      "work (SessionOptions::plan_ahead; for measuring)");
  cmd->add_flag("--ids-by-value", opts->ids_by_value,
                "With --decode: plan input_ids with by value, as other small inputs, instead of as data "
                "(RunOptions::inputs_as_data; each new token then plans its nodes; for measuring)");
  cmd->add_flag("--host-argmax", opts->host_argmax,
                "With --decode: download each step's logits and take the argmax on the host, instead of "
                "choosing the token on the GPU (SessionOptions::token_candidates) and feeding it back there "
                "(for comparing; docs/decoding.md)");
  cmd->callback([opts, &exit_code] {
    if (opts->inputs.files.empty() && !opts->inputs.random_seed) opts->inputs.random_seed = 0;
    ProgressBar progress;
    auto ms = milliseconds;
    auto t0 = std::chrono::steady_clock::now();
    SessionOptions so = session_options(*opts, progress);
    so.profiling = opts->profile || !opts->trace.empty();
    so.max_cached_plans = opts->plan_cache;
    so.respecialize_plans = !opts->no_respecialize;
    so.plan_ahead = !opts->no_plan_ahead;
    const bool gpu_tokens = opts->decode_steps > 0 && !opts->host_argmax;
    if (gpu_tokens) so.token_candidates = SessionOptions::TokenCandidates{};
    if (!opts->trace.empty()) require_writable_file(opts->trace, "--trace");
    Session session = load_session(opts->model, so, gpu_tokens);
    report_tuning_cache(session);
    if (!opts->trace.empty() && !session.has_timestamps()) {
      throw Error("--trace needs per-node GPU times, and " + session.profiling_note() +
                  "; no trace can be written (--profile alone reports this and still times the runs)");
    }
    auto inputs = make_inputs(session.inputs(), opts->inputs, session.max_buffer_size());
    auto t1 = std::chrono::steady_clock::now();
    std::cout << std::fixed << std::setprecision(3) << "model:      " << opts->model << "\n"
              << "adapter:    " << session.adapter_description() << "\n"
              << "load:       " << ms(t0, t1) << " ms (read " << session.stats().load.import_ms
              << " ms, optimise " << session.stats().load.optimize_ms << " ms, device "
              << session.stats().load.device_ms << " ms)\n";
    std::map<std::string, Value> values;  // --device-inputs: alive until the memory report
    if (opts->decode_steps > 0) {
      DecodePlans plans;
      const auto steps = decode(session, inputs, opts->decode_steps, opts->device_inputs,
                                !opts->no_growing_dims, !opts->ids_by_value, gpu_tokens, values, plans);
      progress.finish();
      print_decode(steps, opts->device_inputs, gpu_tokens, plans);
    } else {
      // With --device-inputs, every input is uploaded once and every output stays on the device; a run is
      // timed until the GPU is done (synchronize), its outputs then released back to the session's pool.
      RunOptions keep;
      keep.all_outputs_on_device = true;
      if (opts->device_inputs) {
        for (const auto& [name, tensor] : inputs) values[name] = session.upload(tensor);
        session.synchronize();
      }
      auto run_once = [&] {
        if (opts->device_inputs) {
          session.run(values, keep);
          session.synchronize();
        } else {
          session.run(inputs);
        }
      };
      auto t2 = std::chrono::steady_clock::now();
      run_once();
      auto t3 = std::chrono::steady_clock::now();
      const auto warm_until =
          std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(opts->warmup_ms);
      for (int i = 0; i < opts->warmup || std::chrono::steady_clock::now() < warm_until; ++i) {
        run_once();
        progress.update(static_cast<size_t>(std::min(i + 1, opts->warmup)),
                        static_cast<size_t>(opts->warmup + opts->runs), "benchmark");
      }
      std::vector<double> times;
      for (int i = 0; i < opts->runs; ++i) {
        auto a = std::chrono::steady_clock::now();
        run_once();
        times.push_back(ms(a, std::chrono::steady_clock::now()));
        progress.update(static_cast<size_t>(opts->warmup + i + 1),
                        static_cast<size_t>(opts->warmup + opts->runs), "benchmark");
      }
      progress.finish();
      const SessionStats& first = session.stats();
      std::cout << "first run:  " << ms(t2, t3) << " ms (planning " << first.last_plan.ms << " ms)\n"
                << "planning:   kernel plans " << first.last_plan.kernel_plans_ms << " ms, memory "
                << first.last_plan.memory_ms << " ms, pipelines " << first.last_plan.pipelines_ms
                << " ms, weight uploads " << first.last_plan.weight_uploads_ms << " ms, bind groups "
                << first.last_plan.bind_ms << " ms\n"
                << "run:        median " << percentile(times, 0.5) << " ms, p90 " << percentile(times, 0.9)
                << " ms, min " << *std::min_element(times.begin(), times.end()) << " ms over " << times.size()
                << " runs ("
                << (opts->device_inputs ? "inputs already on the device, outputs kept there: GPU + encoding"
                                        : "upload inputs + GPU + download outputs")
                << ")\n";
    }
    const SessionStats& st = session.stats();
    std::cout << "memory:     activations " << st.memory.peak_activation_bytes / 1048576.0 << " MiB, weights "
              << st.memory.weight_bytes / 1048576.0 << " MiB, device tensors "
              << st.memory.device_tensor_bytes / 1048576.0 << " MiB, " << st.plans.cached
              << " plans cached of " << st.plans.made << " made (" << st.plans.respecialized
              << " respecialized)\n"
              << "graph:      " << st.load.nodes << " nodes, " << st.plans.dispatches
              << " dispatches per run, " << st.device.pipelines << " pipelines\n";
    if (!session.tuning_note().empty()) {
      std::cout << "tuning:     " << st.last_plan.tuned_gemms << " of the last plan's " << st.last_plan.gemms
                << " GEMMs planned on a tuned configuration\n";
    }
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
