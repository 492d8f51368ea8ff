// CPU references for the scatter family (src/ops/scatter.cpp), written from the ONNX definitions: output =
// data, then the updates applied one at a time in their row-major order (so a duplicate index without a
// reduction keeps the last update, which is what wgi documents). Arithmetic in the element type itself, in
// that order, so results are comparable exactly.
#pragma once

#include <cstdint>
#include <string>

#include "wgi/tensor.h"

namespace wgi::test {

// reduction: "none", "add", "mul", "max", "min". Negative indices count from the end.
Tensor scatter_elements_reference(const Tensor& data, const Tensor& indices, const Tensor& updates,
                                  int64_t axis, const std::string& reduction);
Tensor scatter_nd_reference(const Tensor& data, const Tensor& indices, const Tensor& updates,
                            const std::string& reduction);

}  // namespace wgi::test
