// ONNX Reshape's output shape, for the Reshape op (data_movement.cpp) and for the fused ops and graph passes
// that read a Reshape's target instead of running it (conv_channels_last.cpp, attention.cpp,
// graph/passes.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "wgi/tensor.h"

namespace wgi::ops {

// The shape Reshape(input of shape `in`, `target`) has: a 0 copies the input's dim (unless `allowzero`), one
// -1 is inferred. nullopt where Reshape fails, with the reason in `why` when given.
std::optional<Shape> reshape_result(const Shape& in, std::span<const int64_t> target, bool allowzero = false,
                                    std::string* why = nullptr);

}  // namespace wgi::ops
