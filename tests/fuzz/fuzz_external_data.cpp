// libFuzzer target for the external-data resolver: a TensorProto whose data lives in a file next to the
// model (location, offset, length, element type and dims from the fuzzer) -> tensor_from_proto. The model's
// folder holds two files of known bytes, a subfolder, a symlink leading out of the folder, a symlink loop and
// a folder named like a file; outside it lies a file of bytes 0xEE. A wgi::Error is the expected answer;
// reading any byte from outside the folder, any other exception, a crash or a sanitizer report is a bug.
// Build and run with scripts/fuzz.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "onnx/tensor_proto.h"

namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, int first_byte, int count) {
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < count; ++i) out.put(static_cast<char>((first_byte + i) & 0x7f));
  if (!out) std::abort();
}

// root/model (the model's folder) and root/outside (what must stay unreachable).
class Folders {
 public:
  Folders() {
    std::string pattern = (fs::temp_directory_path() / "wgi_fuzz_external_XXXXXX").string();
    if (!mkdtemp(pattern.data())) std::abort();
    root_ = pattern;
    model_ = root_ / "model";
    fs::create_directories(model_ / "sub");
    fs::create_directories(model_ / "dir.bin");
    fs::create_directories(root_ / "outside");
    write_file(model_ / "weights.bin", 0, 64);
    write_file(model_ / "sub" / "inner.bin", 64, 48);
    std::ofstream secret(root_ / "outside" / "secret.bin", std::ios::binary);
    for (int i = 0; i < 256; ++i) secret.put(static_cast<char>(0xEE));
    secret.close();
    fs::create_directory_symlink("../outside", model_ / "out");
    fs::create_symlink("loop", model_ / "loop");
  }
  ~Folders() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  Folders(const Folders&) = delete;
  Folders& operator=(const Folders&) = delete;
  const fs::path& model() const { return model_; }

 private:
  fs::path root_, model_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Folders folders;
  FuzzedDataProvider fuzz(data, size);
  wgi::onnx::proto::TensorProto t;
  t.name = "w";
  t.data_type = fuzz.ConsumeIntegralInRange<int32_t>(0, 17);
  t.data_location = wgi::onnx::proto::DataLocation::External;
  const size_t rank = fuzz.ConsumeIntegralInRange<size_t>(0, 4);
  for (size_t i = 0; i < rank; ++i) t.dims.push_back(fuzz.ConsumeIntegralInRange<int64_t>(-2, 70));
  const size_t entries = fuzz.ConsumeIntegralInRange<size_t>(0, 4);
  for (size_t i = 0; i < entries; ++i) {
    static const char* const keys[] = {"location", "offset", "length", "checksum"};
    wgi::onnx::proto::StringStringEntryProto e;
    e.key = keys[fuzz.ConsumeIntegralInRange<size_t>(0, 3)];
    e.value = fuzz.ConsumeRandomLengthString(64);
    t.external_data.push_back(e);
  }
  wgi::onnx::detail::ConstantBudget budget(1 << 20);
  try {
    const wgi::Tensor out = wgi::onnx::detail::tensor_from_proto(t, "fuzzed tensor", folders.model(), budget);
    for (std::byte b : out.bytes()) {
      if (b == std::byte{0xEE}) std::abort();  // read from outside the model's folder
    }
  } catch (const wgi::Error&) {
    // The expected answer to a bad location, offset, length or size.
  }
  return 0;
}
