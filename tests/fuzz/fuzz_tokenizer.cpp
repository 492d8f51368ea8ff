// libFuzzer target for the BPE tokenizer (src/pipelines/tokenizer.*). The first byte picks what the rest is:
//   0: a tokenizer.json (Tokenizer::from_json; if it loads, it encodes and decodes a short text),
//   1: text for Florence-2's tokenizer (tests/data/pipelines/florence2_tiny): encode, then decode the ids,
//   2: ids (4 bytes each) for that tokenizer to decode.
// A wgi::Error is an expected answer (a malformed file, text the vocabulary cannot spell); any other
// exception, a crash, a sanitizer report or an allocation past -malloc_limit_mb is a bug. Build and run with
// scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipelines/tokenizer.h"
#include "wgi/error.h"

namespace {

const wgi::pipelines::Tokenizer& florence() {
  static const wgi::pipelines::Tokenizer t =
      wgi::pipelines::Tokenizer::from_folder(std::string(WGI_TEST_DATA_DIR) + "/pipelines/florence2_tiny");
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  florence();  // once, outside the timed runs
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0: {
        const wgi::pipelines::Tokenizer t = wgi::pipelines::Tokenizer::from_json(rest);
        t.decode(t.encode("ab a."));
        break;
      }
      case 1:
        florence().decode(florence().encode(rest));
        break;
      default: {
        std::vector<int32_t> ids((size - 1) / 4);
        if (!ids.empty()) std::memcpy(ids.data(), data + 1, ids.size() * 4);
        florence().decode(ids);
        break;
      }
    }
  } catch (const wgi::Error&) {
  }
  return 0;
}
