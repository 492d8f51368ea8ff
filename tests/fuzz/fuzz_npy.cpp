// libFuzzer target for the .npy reader (`wgi run --input`): any bytes -> npy::parse. A wgi::Error is the
// expected answer to a bad file; any other exception, a crash, a sanitizer report or an allocation past
// -malloc_limit_mb is a bug. An array that parses must hold exactly the bytes after its header, and write
// back to a file that parses to the same array. Build and run with scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  wgi::Tensor t;
  size_t data_offset = 0;
  try {
    data_offset = wgi::npy::parse_header(bytes, "fuzz").data_offset;
    t = wgi::npy::parse(bytes, "fuzz");
  } catch (const wgi::Error&) {
    return 0;  // the expected answer to a malformed file
  }
  if (data_offset + t.byte_size() != size) std::abort();
  if (t.byte_size() && std::memcmp(t.bytes().data(), data + data_offset, t.byte_size()) != 0) std::abort();
  const wgi::Tensor back = wgi::npy::parse(wgi::npy::serialize(t), "round trip");
  if (back.dtype() != t.dtype() || back.shape() != t.shape() || back.byte_size() != t.byte_size())
    std::abort();
  if (t.byte_size() && std::memcmp(back.bytes().data(), t.bytes().data(), t.byte_size()) != 0) std::abort();
  return 0;
}
