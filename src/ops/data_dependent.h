// What an op declares for the runtime's stages (docs/dynamic_shapes.md), beside its handler: outputs whose
// size depends on the data, and inputs its planner needs by value. An op family declares it in its register
// function (declare_data_dependence); the runtime looks it up by the node's domain and op type.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "ops/op.h"

namespace wgi::ops {

// An output whose size along `axis` is known only once the kernels ran.
struct DataDependentOutput {
  uint32_t output = 0;
  uint32_t axis = 0;
};

struct DataDependence {
  // Outputs of data-dependent size (NonZero, Compress, Unique, NonMaxSuppression), for a node and the output
  // descriptions its plan gave: the plan gives them at their upper bound along the axis, the kernels write
  // each packed as a tensor of its real shape (its first elements) and the real size along the axis, one
  // value for all of them, to the plan's extra output `extent_output` (extent_desc(), bound with
  // TensorRef::output(extent_output); the node has no value for it). Unset: none.
  std::function<std::vector<DataDependentOutput>(const NodeInfo&, std::span<const TensorDesc>)> outputs;
  size_t extent_output = 0;
  // Inputs the planner needs by value (TopK's K, If's condition): one the GPU computes is read back and the
  // nodes from this one on are planned with it.
  std::vector<size_t> value_inputs;
};

// The extent output's description: one int32 (as a u32 the kernels write).
inline TensorDesc extent_desc() {
  return {DType::Int32, {1}};
}

// Declares the op's declaration (a second one for the same op is ignored); `domain` "" for ai.onnx.
void declare_data_dependence(std::string_view domain, std::string_view op_type, DataDependence declaration);
// The declaration for the node's op, or null.
const DataDependence* data_dependence(const NodeInfo& node);

}  // namespace wgi::ops
