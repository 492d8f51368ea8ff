#include "ops/op.h"

namespace wgi::ops {

std::string NodeInfo::describe() const {
  std::string s = "node '" + (name.empty() ? std::string("<unnamed>") : name) + "' (" + op_type;
  if (!domain.empty() && domain != "ai.onnx") s += ", domain " + domain;
  s += ", opset " + std::to_string(opset) + ")";
  return s;
}

std::string PlanContext::input_name(size_t i) const {
  std::string s = "input " + std::to_string(i);
  if (i < node.input_names.size() && !node.input_names[i].empty()) s += " ('" + node.input_names[i] + "')";
  return s;
}

const TensorDesc& PlanContext::input(size_t i) const {
  if (!has_input(i)) fail(input_name(i) + " is required but was not given");
  return *inputs[i];
}

void PlanContext::fail(const std::string& message) const {
  throw Error(node.describe() + ": " + message);
}

}  // namespace wgi::ops
