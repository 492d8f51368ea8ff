#include "ops/attributes.h"

namespace wgi::ops {

template <class T>
const T* Attributes::get_typed(const std::string& name, const char* type_name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return nullptr;
  if (const T* v = std::get_if<T>(&it->second)) return v;
  throw Error("attribute '" + name + "' is not of type " + type_name);
}

int64_t Attributes::get_int(const std::string& name, int64_t fallback) const {
  const int64_t* v = get_typed<int64_t>(name, "int");
  return v ? *v : fallback;
}

float Attributes::get_float(const std::string& name, float fallback) const {
  auto it = values_.find(name);
  if (it != values_.end()) {
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<float>(*i);
  }
  const float* v = get_typed<float>(name, "float");
  return v ? *v : fallback;
}

std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  const std::string* v = get_typed<std::string>(name, "string");
  return v ? *v : fallback;
}

std::vector<int64_t> Attributes::get_ints(const std::string& name,
                                          const std::vector<int64_t>& fallback) const {
  const auto* v = get_typed<std::vector<int64_t>>(name, "ints");
  return v ? *v : fallback;
}

std::vector<float> Attributes::get_floats(const std::string& name, const std::vector<float>& fallback) const {
  const auto* v = get_typed<std::vector<float>>(name, "floats");
  return v ? *v : fallback;
}

const Tensor* Attributes::get_tensor(const std::string& name) const {
  return get_typed<Tensor>(name, "tensor");
}

std::optional<DType> dtype_from_tensor_proto(int64_t code) {
  switch (code) {
    case 1:
      return DType::Float32;
    case 2:
      return DType::UInt8;
    case 3:
      return DType::Int8;
    case 6:
      return DType::Int32;
    case 7:
      return DType::Int64;
    case 9:
      return DType::Bool;
    case 10:
      return DType::Float16;
    default:
      return std::nullopt;
  }
}

}  // namespace wgi::ops
