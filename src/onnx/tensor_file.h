// Reading a serialized TensorProto file (the input_N.pb / output_N.pb files of ONNX's test data).
#pragma once

#include <filesystem>
#include <string>

#include "wgi/tensor.h"

namespace wgi::onnx {

struct NamedTensor {
  std::string name;  // may be empty
  Tensor tensor;
};

// Throws wgi::Error naming the file when it is not a TensorProto or holds a type wgi does not support.
NamedTensor load_tensor_file(const std::filesystem::path& path);

}  // namespace wgi::onnx
