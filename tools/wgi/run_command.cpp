// `wgi run MODEL ... --output-dir DIR`: run a model once and write its outputs as .npy files.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include "commands.h"
#include "core/npy.h"
#include "graph/passes.h"
#include "model_inputs.h"
#include "progress.h"
#include "wgi/printable.h"

namespace wgi::cli {

std::string output_file_name(const std::string& output_name) {
  std::string s = output_name;
  for (char& c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  }
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  return s + ".npy";
}

std::vector<std::string> output_file_names(const std::vector<TensorInfo>& outputs) {
  std::vector<std::string> names;
  std::set<std::string> taken;
  for (const TensorInfo& info : outputs) {
    const std::string base = output_file_name(info.name);
    std::string name = base;
    const std::string stem = base.substr(0, base.size() - 4);
    for (int k = 2; !taken.insert(name).second; ++k) name = stem + "_" + std::to_string(k) + ".npy";
    names.push_back(name);
  }
  return names;
}

void prepare_output_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string what = "--output-dir '" + printable(dir) + "'";
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw Error(what + " exists and is not a directory");
  fs::create_directories(dir, ec);
  if (ec) throw Error(what + ": cannot create it: " + ec.message());
  if (!fs::is_directory(dir, ec)) throw Error(what + " is not a directory");
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    throw Error(what + ": cannot write into it: " + std::strerror(errno));
  }
}

void require_writable_file(const std::filesystem::path& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string label = what + " '" + printable(path.string()) + "'";
  if (fs::exists(path, ec)) {
    if (fs::is_directory(path, ec)) throw Error(label + " is a directory");
    if (access(path.c_str(), W_OK) != 0) throw Error(label + " cannot be written: " + std::strerror(errno));
    return;
  }
  // A missing file is created with its missing folders: its nearest existing ancestor must be a writable
  // folder.
  fs::path parent = fs::absolute(path, ec).parent_path();
  while (!parent.empty() && !fs::exists(parent, ec) && parent != parent.root_path())
    parent = parent.parent_path();
  if (!fs::is_directory(parent, ec))
    throw Error(label + " cannot be created: '" + printable(parent.string()) + "' is not a directory");
  if (access(parent.c_str(), W_OK | X_OK) != 0) {
    throw Error(label + " cannot be created in '" + printable(parent.string()) +
                "': " + std::strerror(errno));
  }
}

CLI::Validator at_least(int64_t min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        try {
          size_t used = 0;
          const long long v = std::stoll(text, &used);
          if (used == text.size() && v >= min) return {};
        } catch (const std::exception&) {
        }
        return "must be an integer of at least " + std::to_string(min) + ", not '" + text + "'";
      },
      "INT>=" + std::to_string(min));
}

void add_model_options(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("model", o.model, "The .onnx file")->required();
  cmd.add_option("--input", o.inputs.files, "NAME=FILE.npy (repeatable)");
  cmd.add_option("--random-inputs", o.inputs.random_seed,
                 "Fill inputs not given with --input from this seed (floats uniform in [-1, 1), integers 0)");
  cmd.add_option("--dim", o.inputs.dims, "NAME=VALUE for a symbolic input dim (repeatable)");
  add_device_options(cmd, o.backend, o.adapter);
  cmd.add_flag(
      "--shader-robustness", o.shader_robustness,
      "Keep Dawn's index clamps and workgroup-memory zeroing in every shader (slower; default: off unless "
      "WGI_SHADER_ROBUSTNESS=1)");
  cmd.add_option(
         "--precision", o.precision,
         "f32 (default) or f16: constant-weight GEMMs and convs, and attention, on subgroup matrices (f16 "
         "operands, f32 accumulation); needs an adapter with shader-f16 and "
         "chromium-experimental-subgroup-matrix, which "
         "the native build's Dawn never exposes: node web/cli.mjs on dawn.node has them on NVIDIA")
      ->check(CLI::IsMember({"f32", "f16"}));
  cmd.add_option("--disable-passes", o.disabled_passes,
                 "Graph passes not to run, comma-separated (docs/adding_a_pass.md lists them; also "
                 "WGI_DISABLE_PASSES): to find which fusion changes a result");
}

void add_device_options(CLI::App& cmd, std::string& backend, std::string& adapter) {
  cmd.add_option("--backend", backend, "vulkan, swiftshader or gles (default: WGI_BACKEND, else automatic)");
  cmd.add_option("--adapter", adapter, "Substring the adapter name must contain (default: WGI_ADAPTER)");
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
  s.precision = o.precision;
  s.use_tuning_cache = !o.no_tuning_cache;
  s.tuning_cache = o.tuning_cache;
  s.dims = parse_dims(o.inputs.dims);
  for (const std::string& pass : graph::DisabledPasses::parse(o.disabled_passes, "--disable-passes").names)
    s.disabled_passes.push_back(pass);
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
    prepare_output_dir(opts->output_dir);
    ProgressBar progress;
    auto t0 = std::chrono::steady_clock::now();
    Session session = Session::from_file(opts->model, session_options(*opts, progress));
    report_tuning_cache(session);
    const std::vector<std::string> file_names = output_file_names(session.outputs());
    auto inputs = make_inputs(session.inputs(), opts->inputs, session.max_buffer_size());
    auto t1 = std::chrono::steady_clock::now();
    progress.start_ticking("running");
    auto outputs = session.run(inputs);
    progress.stop_ticking();
    auto t2 = std::chrono::steady_clock::now();
    progress.finish();
    for (size_t o = 0; o < session.outputs().size(); ++o) {
      const TensorInfo& info = session.outputs()[o];
      const Tensor& t = outputs.at(info.name);
      auto path = std::filesystem::path(opts->output_dir) / file_names[o];
      npy::save(path, t);
      std::cout << printable(info.name) << ": " << summarize(t) << " -> " << printable(path.string()) << "\n";
    }
    auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    std::cout << "adapter: " << session.adapter_description() << "\nload " << ms(t0, t1) << " ms, run "
              << ms(t1, t2) << " ms (first run: includes planning " << session.stats().last_plan.ms
              << " ms)\n";
    exit_code = 0;
  });
}

}  // namespace wgi::cli
