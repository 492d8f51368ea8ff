// onnxruntime (CPU) as the independent reference of model tests: runs tests/ort/run_model.js (node,
// onnxruntime-node in third_party/ort), or the command in WGI_ORT_COMMAND that takes the same arguments (e.g.
// "python3 tests/ort/run_model.py" where Python's onnxruntime is installed but node is not). Header-only: it
// needs WGI_ORT_SCRIPT, which only the GPU test binary defines.
#pragma once

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "core/npy.h"
#include "wgi/error.h"
#include "wgi/tensor.h"

namespace wgi::test {

// Every output of `model` for these inputs, by output name. Throws wgi::Error if the runner fails.
inline std::map<std::string, Tensor> run_onnxruntime(const std::filesystem::path& model,
                                                     const std::map<std::string, Tensor>& inputs) {
  namespace fs = std::filesystem;
  static int calls = 0;
  const fs::path dir =
      fs::temp_directory_path() / ("wgi_ort_" + std::to_string(::getpid()) + "_" + std::to_string(calls++));
  fs::create_directories(dir);
  const char* runner = std::getenv("WGI_ORT_COMMAND");
  std::string command =
      runner && *runner ? std::string(runner) : "node '" + std::string(WGI_ORT_SCRIPT) + "'";
  command += " '" + model.string() + "' '" + (dir / "out").string() + "'";
  size_t i = 0;
  for (const auto& [name, tensor] : inputs) {
    const fs::path file = dir / ("input_" + std::to_string(i++) + ".npy");
    npy::save(file, tensor);
    command += " '" + name + "=" + file.string() + "'";
  }
  if (std::system(command.c_str()) != 0) throw Error("onnxruntime reference failed: " + command);
  std::map<std::string, Tensor> outputs;
  for (const fs::directory_entry& e : fs::directory_iterator(dir / "out"))
    outputs[e.path().stem().string()] = npy::load(e.path());  // names of [A-Za-z0-9._-] only, as run_model.js
  fs::remove_all(dir);
  return outputs;
}

}  // namespace wgi::test
