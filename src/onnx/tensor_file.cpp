#include "onnx/tensor_file.h"

#include <fstream>
#include <sstream>

#include "onnx/importer.h"
#include "onnx/tensor_proto.h"

namespace wgi::onnx {

NamedTensor load_tensor_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path.string() + "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string data = bytes.str();
  ::onnx::TensorProto proto;
  if (!proto.ParseFromString(data)) throw Error("'" + path.string() + "' is not a serialized TensorProto");
  detail::ConstantBudget budget(ImportOptions{}.max_model_bytes);
  return {proto.name(), detail::tensor_from_proto(proto, "tensor file '" + path.string() + "'",
                                                  path.parent_path(), budget)};
}

}  // namespace wgi::onnx
