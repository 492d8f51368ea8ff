#include "onnx/tensor_file.h"

#include <fstream>
#include <limits>
#include <vector>

#include "onnx/importer.h"
#include "onnx/onnx_proto.h"
#include "onnx/tensor_proto.h"

namespace wgi::onnx {

namespace fs = std::filesystem;

NamedTensor load_tensor_file(const fs::path& path) {
  const uint64_t limit = ImportOptions{}.max_model_bytes;
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  if (ec) throw Error("cannot open '" + path.string() + "': " + ec.message());
  if (size > limit || size > std::numeric_limits<size_t>::max()) {
    throw Error("'" + path.string() + "' is " + std::to_string(size) + " bytes, more than the limit of " +
                std::to_string(limit) + " bytes (ImportOptions::max_model_bytes)");
  }
  std::vector<std::byte> bytes(static_cast<size_t>(size));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path.string() + "'");
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (!in || static_cast<uint64_t>(in.gcount()) != size)
    throw Error("reading '" + path.string() + "' failed");
  proto::DecodeOptions decode;
  decode.max_decoded_bytes = limit;
  const std::string invalid = "'" + path.string() + "' is not a serialized TensorProto";
  decode.invalid = invalid;
  decode.limit_name = "ImportOptions::max_model_bytes";
  // raw_data views `bytes`, which outlive the conversion below.
  proto::TensorProto tensor = proto::decode_tensor(bytes, decode);
  detail::ConstantBudget budget(limit);
  return {tensor.name, detail::tensor_from_proto(tensor, "tensor file '" + path.string() + "'",
                                                 path.parent_path(), budget)};
}

}  // namespace wgi::onnx
