// The subcommands of the `wgi` command-line tool.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "model_inputs.h"
#include "progress.h"
#include "wgi/session.h"

namespace wgi::cli {

// Each adds its subcommand to `app`; the callback runs it and sets the exit code.
void add_info_command(CLI::App& app, int& exit_code);
void add_check_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_tune_command(CLI::App& app, int& exit_code);
void add_florence2_command(CLI::App& app, int& exit_code);
void add_siglip_command(CLI::App& app, int& exit_code);

// Options shared by the commands that run a model.
struct ModelOptions {
  std::string model;
  InputSpec inputs;
  std::string backend;
  std::string adapter;
  std::string tuning_cache;  // empty: the default location (docs/tuning.md)
  bool no_tuning_cache = false;
  bool shader_robustness = false;
  std::string disabled_passes;    // "a,b": graph passes not to run
  std::string precision = "f32";  // SessionOptions::precision
};
void add_model_options(CLI::App& cmd, ModelOptions& options);
// --backend and --adapter: which GPU (run, bench, tune, info and the pipeline commands).
void add_device_options(CLI::App& cmd, std::string& backend, std::string& adapter);
// --tuning-cache PATH and --no-tuning-cache (run, bench).
void add_tuning_cache_options(CLI::App& cmd, ModelOptions& options);
SessionOptions session_options(const ModelOptions& options, ProgressBar& progress);
// Says on stderr which tuning cache the session read, if any, so that no time is read without knowing.
void report_tuning_cache(const Session& session);
// DIR-safe file name for an output: characters outside [A-Za-z0-9._-] become '_', plus ".npy".
std::string output_file_name(const std::string& output_name);
// output_file_name of each output, made distinct: a name that an earlier output already took gets "_2",
// "_3"... before ".npy" (outputs 'a/b' and 'a_b': a_b.npy and a_b_2.npy), so no output overwrites another.
std::vector<std::string> output_file_names(const std::vector<TensorInfo>& outputs);
// Creates DIR if needed; throws wgi::Error unless it is a directory this process can write into. Called
// before the model runs, so that a bad --output-dir costs nothing.
void prepare_output_dir(const std::string& dir);
// A CLI11 check that a count option is an integer of at least `min` ("--runs 0": "must be at least 1").
CLI::Validator at_least(int64_t min);
// Throws wgi::Error unless the file at `path` can be written (it exists and is writable, or its nearest
// existing parent folder is writable). For results that would otherwise be lost after the work is done.
void require_writable_file(const std::filesystem::path& path, const std::string& what);

}  // namespace wgi::cli
