#include "runtime/data_dependent.h"

namespace wgi::runtime {

std::vector<ops::TensorDesc> real_output_descs(const ops::NodeInfo& node,
                                               const std::vector<ops::TensorDesc>& planned,
                                               const std::vector<ops::DataDependentOutput>& data_dependent,
                                               uint32_t extent) {
  std::vector<ops::TensorDesc> descs = planned;
  for (const ops::DataDependentOutput& d : data_dependent) {
    Shape& shape = descs.at(d.output).shape;
    if (static_cast<int64_t>(extent) > shape.at(d.axis)) {
      throw Error(node.describe() + ": internal: output " + std::to_string(d.output) + " has " +
                  std::to_string(extent) + " elements along axis " + std::to_string(d.axis) +
                  ", more than the upper bound " + std::to_string(shape[d.axis]) + " it was planned with");
    }
    shape[d.axis] = extent;
  }
  return descs;
}

Tensor leading_elements(const Tensor& upper, const Shape& real) {
  const size_t bytes = static_cast<size_t>(element_count(real)) * dtype_size(upper.dtype());
  if (bytes > upper.byte_size()) throw Error("internal: a data-dependent output is larger than its bound");
  return Tensor(upper.dtype(), real, upper.bytes().first(bytes));
}

}  // namespace wgi::runtime
