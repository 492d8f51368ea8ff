// libFuzzer target for wgi's JSON reader (src/core/json.cpp: tokenizer.json, config.json, the tuning cache):
// any bytes -> json::parse. A wgi::Error is the expected answer to bad text; any other exception, a crash, a
// sanitizer report, a stack overflow (nesting is capped at 64) or an allocation past -malloc_limit_mb is a
// bug. Every string the reader returns must come back unchanged through json::quote and the reader. Build
// and run with scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/json.h"
#include "wgi/error.h"

namespace {

void check_strings(const wgi::json::Value& v) {
  if (v.is(wgi::json::Value::Type::String)) {
    if (wgi::json::parse(wgi::json::quote(v.string)).string != v.string) std::abort();
  }
  for (const wgi::json::Value& e : v.array) check_strings(e);
  for (const wgi::json::Member& m : v.object) {
    if (wgi::json::parse(wgi::json::quote(m.key)).string != m.key) std::abort();
    check_strings(m.value);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  wgi::json::Value v;
  try {
    v = wgi::json::parse(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const wgi::Error&) {
    return 0;  // the expected answer to malformed text
  }
  check_strings(v);
  return 0;
}
