// A CPU reference for GatherND (src/ops/gather_nd.cpp) from the ONNX definition, copying element bytes
// (exact for every dtype): output[batch..., t..., s...] = data[batch..., indices[batch..., t...], s...].
#pragma once

#include <cstdint>

#include "wgi/tensor.h"

namespace wgi::test {

Tensor gather_nd_reference(const Tensor& data, const Tensor& indices, int64_t batch_dims);

}  // namespace wgi::test
