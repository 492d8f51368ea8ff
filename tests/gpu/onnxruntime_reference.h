// onnxruntime (CPU) on a model file, the independent reference of the model tests: through
// tests/ort/run_model.js (node), or through the command in WGI_ORT_COMMAND that takes the same arguments
// (e.g. "python3 tests/ort/run_model.py" where Python's onnxruntime is installed but node is not). For the
// GPU test binary only (WGI_ORT_SCRIPT is its compile definition).
#pragma once

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/npy.h"
#include "wgi/error.h"
#include "wgi/tensor.h"

namespace wgi::test {

// The named outputs of `model` run on `inputs` by onnxruntime's CPU provider.
inline std::map<std::string, Tensor> run_onnxruntime(const std::filesystem::path& model,
                                                     const std::map<std::string, Tensor>& inputs,
                                                     const std::vector<std::string>& outputs) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("wgi_ort_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const char* runner = std::getenv("WGI_ORT_COMMAND");
  std::string command =
      runner && *runner ? std::string(runner) : "node '" + std::string(WGI_ORT_SCRIPT) + "'";
  command += " '" + model.string() + "' '" + (dir / "out").string() + "'";
  size_t index = 0;
  for (const auto& [name, tensor] : inputs) {
    const fs::path file = dir / ("input" + std::to_string(index++) + ".npy");
    npy::save(file, tensor);
    command += " '" + name + "=" + file.string() + "'";
  }
  if (std::system(command.c_str()) != 0) throw Error("onnxruntime reference failed: " + command);
  std::map<std::string, Tensor> results;
  for (const std::string& name : outputs) {
    std::string file = name;
    for (char& c : file) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
    }
    results[name] = npy::load(dir / "out" / (file + ".npy"));
  }
  fs::remove_all(dir);
  return results;
}

}  // namespace wgi::test
