// `wgi run MODEL ... --output-dir DIR`: run a model once and write its outputs as .npy files.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.h"
#include "core/npy.h"
#include "model_inputs.h"
#include "progress.h"

namespace wgi::cli {

std::string output_file_name(const std::string& output_name) {
  std::string s = output_name;
  for (char& c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  }
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  return s + ".npy";
}

void add_model_options(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("model", o.model, "The .onnx file")->required();
  cmd.add_option("--input", o.inputs.files, "NAME=FILE.npy (repeatable)");
  cmd.add_option("--random-inputs", o.inputs.random_seed,
                 "Fill inputs not given with --input from this seed (floats uniform in [-1, 1), integers 0)");
  cmd.add_option("--dim", o.inputs.dims, "NAME=VALUE for a symbolic input dim (repeatable)");
  cmd.add_option("--backend", o.backend,
                 "vulkan, swiftshader or gles (default: WGI_BACKEND, else automatic)");
  cmd.add_option("--adapter", o.adapter, "Substring the adapter name must contain (default: WGI_ADAPTER)");
  cmd.add_flag(
      "--shader-robustness", o.shader_robustness,
      "Keep Dawn's index clamps and workgroup-memory zeroing in every shader (slower; default: off unless "
      "WGI_SHADER_ROBUSTNESS=1)");
}

void add_tuning_cache_options(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("--tuning-cache", o.tuning_cache,
                 "GEMM tuning cache to use (default: WGI_TUNING_CACHE, else ~/.cache/wgi/tuning.json)");
  cmd.add_flag("--no-tuning-cache", o.no_tuning_cache, "Ignore any tuning cache: the planner's rules only");
}

void report_tuning_cache(const Session& session) {
  const std::string note = session.tuning_note();
  if (!note.empty()) std::cerr << "wgi: " << note << "\n";
}

SessionOptions session_options(const ModelOptions& o, ProgressBar& progress) {
  SessionOptions s;
  s.backend = o.backend;
  s.adapter = o.adapter;
  s.shader_robustness = o.shader_robustness;
  s.use_tuning_cache = !o.no_tuning_cache;
  s.tuning_cache = o.tuning_cache;
  s.dims = parse_dims(o.inputs.dims);
  s.progress = [&progress](size_t done, size_t total, const std::string& what) {
    progress.update(done, total, what);
  };
  return s;
}

void add_run_command(CLI::App& app, int& exit_code) {
  struct Options : ModelOptions {
    std::string output_dir;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("run", "Run a model once and write every output to DIR/<output name>.npy");
  add_model_options(*cmd, *opts);
  add_tuning_cache_options(*cmd, *opts);
  cmd->add_option("--output-dir", opts->output_dir, "Where to write the outputs")->required();
  cmd->callback([opts, &exit_code] {
    ProgressBar progress;
    auto t0 = std::chrono::steady_clock::now();
    Session session = Session::from_file(opts->model, session_options(*opts, progress));
    report_tuning_cache(session);
    auto inputs = make_inputs(session.inputs(), opts->inputs);
    auto t1 = std::chrono::steady_clock::now();
    auto outputs = session.run(inputs);
    auto t2 = std::chrono::steady_clock::now();
    progress.finish();
    std::filesystem::create_directories(opts->output_dir);
    for (const TensorInfo& info : session.outputs()) {
      const Tensor& t = outputs.at(info.name);
      auto path = std::filesystem::path(opts->output_dir) / output_file_name(info.name);
      npy::save(path, t);
      std::cout << info.name << ": " << summarize(t) << " -> " << path.string() << "\n";
    }
    auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    std::cout << "adapter: " << session.adapter_description() << "\nload " << ms(t0, t1) << " ms, run "
              << ms(t1, t2) << " ms (first run: includes planning " << session.stats().last_plan_ms
              << " ms)\n";
    exit_code = 0;
  });
}

}  // namespace wgi::cli
