// TensorProto -> wgi::Tensor: element types, the encodings of the data (raw_data, typed fields, external
// files) and the size checks that keep a hostile file from making wgi allocate or read more than allowed.
// Internal to src/onnx/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "onnx/onnx_proto.h"
#include "wgi/tensor.h"

namespace wgi::onnx::detail {

// The bytes of constants the model may still make wgi hold (ImportOptions::max_model_bytes, shared by all
// constants of one import).
class ConstantBudget {
 public:
  explicit ConstantBudget(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  // Accounts `bytes` for `what`; throws wgi::Error naming it when the total would exceed the limit.
  void take(uint64_t bytes, const std::string& what);

 private:
  uint64_t max_bytes_;
  uint64_t used_ = 0;
};

// The wgi type of an ONNX TensorProto.DataType, or nullopt for types wgi does not support.
std::optional<DType> dtype_from_onnx(int64_t data_type);
// "FLOAT", "DOUBLE", ..., "type 42" for values ONNX does not define.
std::string onnx_dtype_name(int64_t data_type);
// "float32, float16, int64, int32, int8, uint8, bool": for messages.
std::string supported_dtypes();
// Why wgi refuses an element type dtype_from_onnx does not take, to follow "has element type X": the list of
// supported types, or for DOUBLE that WebGPU has no 64-bit float and the model must be converted to float32
// (docs/float64.md says why wgi refuses rather than narrows).
std::string unsupported_dtype_reason(int64_t data_type);

// Converts a tensor. `what` names it in messages ("initializer 'w'", "attribute 'value' of node 'c'
// (Constant)"). External data files are looked up under base_dir (empty: refused).
Tensor tensor_from_proto(const proto::TensorProto& proto, const std::string& what,
                         const std::filesystem::path& base_dir, ConstantBudget& budget);

// Shape text for messages, cut after a few dims so that a hostile file cannot make messages huge.
std::string short_dims(std::span<const int64_t> dims);

}  // namespace wgi::onnx::detail
