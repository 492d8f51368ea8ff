// Outputs of data-dependent size (ops/data_dependent.h, docs/dynamic_shapes.md): their real shapes
// once the extent is read back, and a downloaded upper-bound tensor cut to its real shape.
#pragma once

#include <cstdint>

#include "ops/data_dependent.h"
#include "wgi/tensor.h"

namespace wgi::runtime {

// The plan's output descriptions (`planned`, at their upper bounds) with the data-dependent ones at `extent`
// along their axis. Throws wgi::Error naming the node if the extent exceeds the upper bound (a kernel bug).
std::vector<ops::TensorDesc> real_output_descs(const ops::NodeInfo& node,
                                               const std::vector<ops::TensorDesc>& planned,
                                               const std::vector<ops::DataDependentOutput>& data_dependent,
                                               uint32_t extent);

// The leading elements of `upper` (downloaded at its upper-bound shape, written packed by the kernels) as a
// tensor of `real` shape.
Tensor leading_elements(const Tensor& upper, const Shape& real);

}  // namespace wgi::runtime
