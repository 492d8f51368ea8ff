#include "ops/op.h"

#include "wgi/printable.h"

namespace wgi::ops {

// Names come from the model: printable() keeps escape sequences, NULs and megabyte names out of messages.
std::string NodeInfo::describe() const {
  std::string s =
      "node '" + (name.empty() ? std::string("<unnamed>") : printable(name)) + "' (" + printable(op_type);
  if (!domain.empty() && domain != "ai.onnx") s += ", domain " + printable(domain);
  s += ", opset " + std::to_string(opset) + ")";
  return s;
}

std::string PlanContext::input_name(size_t i) const {
  std::string s = "input " + std::to_string(i);
  if (i < node.input_names.size() && !node.input_names[i].empty()) {
    s += " ('" + printable(node.input_names[i]) + "')";
  }
  return s;
}

const TensorDesc& PlanContext::input(size_t i) const {
  if (!has_input(i)) fail(input_name(i) + " is required but was not given");
  return *inputs[i];
}

void PlanContext::fail(const std::string& message) const {
  throw Error(node.describe() + ": " + message);
}

void require_addressable(const PlanContext& ctx, const std::string& what, const Shape& shape,
                         int64_t max_elements) {
  const int64_t n = element_count(shape);
  if (n > max_elements) {
    ctx.fail(what + " " + shape_to_string(shape) + " has " + std::to_string(n) + " elements; wgi's " +
             ctx.node.op_type + " kernels take at most " + std::to_string(max_elements));
  }
  const uint64_t bytes = static_cast<uint64_t>(n) * 4;
  if (bytes > ctx.caps.limits.max_storage_buffer_binding_size) {
    ctx.fail(what + " " + shape_to_string(shape) + " needs " + std::to_string(bytes) +
             " bytes, more than the device's maxStorageBufferBindingSize of " +
             std::to_string(ctx.caps.limits.max_storage_buffer_binding_size));
  }
}

}  // namespace wgi::ops
