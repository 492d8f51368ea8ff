// libFuzzer target for the ONNX loader: any bytes -> import_model + find_unsupported. A wgi::Error is the
// expected answer to a bad file; any other exception, a crash, a sanitizer report, a leak, a hang or an
// allocation past -malloc_limit_mb is a bug. Build and run with scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>

#include "onnx/importer.h"

namespace {

// The model's folder for external data: a fresh temporary folder holding only weights.bin (64 bytes, the
// file the corpus's external_reference seed names), so that fuzzed offsets and lengths reach the reading code
// while no fuzzed location can reach a real file.
class ModelDir {
 public:
  ModelDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "wgi_fuzz_XXXXXX").string();
    if (!mkdtemp(pattern.data())) std::abort();
    path_ = pattern;
    std::ofstream weights(path_ / "weights.bin", std::ios::binary);
    for (int i = 0; i < 64; ++i) weights.put(static_cast<char>(i));
    if (!weights) std::abort();
  }
  ~ModelDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ModelDir(const ModelDir&) = delete;
  ModelDir& operator=(const ModelDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ModelDir dir;
  wgi::onnx::ImportOptions options;
  options.max_model_bytes = 64ull << 20;  // well below the fuzzer's -malloc_limit_mb
  try {
    wgi::graph::Graph g = wgi::onnx::import_model(std::as_bytes(std::span(data, size)), dir.path(), options);
    std::string text =
        wgi::onnx::format_unsupported(wgi::onnx::find_unsupported(g, wgi::ops::builtin_registry()));
    for (const wgi::graph::Value& v : g.values) text += v.shape.to_string();
  } catch (const wgi::Error&) {
    // The expected answer to a malformed model.
  }
  return 0;
}
