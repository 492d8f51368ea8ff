// Reading and writing NumPy .npy files (format versions 1-3, little-endian, C order): float32, float16,
// int64, int32, int8, uint8 and bool, as `wgi run` takes inputs and writes outputs.
#pragma once

#include <filesystem>
#include <string>

#include "wgi/tensor.h"

namespace wgi::npy {

// The header of a .npy file: its dtype descriptor (e.g. "<f4"), shape and where the data starts.
struct ArrayHeader {
  std::string descr;
  Shape shape;
  size_t data_offset = 0;
};
// Throws wgi::Error naming `what` for a malformed header or Fortran order (any dtype is accepted here).
ArrayHeader parse_header(const std::string& bytes, const std::string& what);
std::string read_file(const std::filesystem::path& path);

// Throws wgi::Error naming the file for unreadable files, unsupported dtypes, Fortran order or a short
// payload.
Tensor load(const std::filesystem::path& path);
Tensor parse(const std::string& bytes, const std::string& what);

void save(const std::filesystem::path& path, const Tensor& tensor);
std::string serialize(const Tensor& tensor);

}  // namespace wgi::npy
