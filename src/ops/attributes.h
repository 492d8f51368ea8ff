// Node attributes as ops see them, independent of the ONNX protobuf classes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::ops {

using AttributeValue = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                                    std::vector<std::string>, Tensor>;

class Attributes {
 public:
  void set(const std::string& name, AttributeValue value) { values_[name] = std::move(value); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  const std::map<std::string, AttributeValue>& all() const { return values_; }

  // Typed getters: the default when absent; wgi::Error naming the attribute when present with another type.
  int64_t get_int(const std::string& name, int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& name, const std::vector<int64_t>& fallback) const;
  std::vector<float> get_floats(const std::string& name, const std::vector<float>& fallback) const;
  const Tensor* get_tensor(const std::string& name) const;

 private:
  template <class T>
  const T* get_typed(const std::string& name, const char* type_name) const;
  std::map<std::string, AttributeValue> values_;
};

// The DType of a TensorProto.DataType code in a dtype-valued attribute (Cast's 'to', EyeLike's 'dtype', ...):
// float32, float16, int64, int32, int8, uint8, bool; nullopt for the types wgi does not store.
std::optional<DType> dtype_from_tensor_proto(int64_t code);

}  // namespace wgi::ops
