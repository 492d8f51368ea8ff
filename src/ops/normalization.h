// What normalization.cpp gives other op families: a LayerNormalization launch over rows given by reference,
// for the products that take a LayerNormalization in (graph::fuse_layer_norm_into_products; linear.cpp) where
// their kernel does not normalise A itself.
#pragma once

#include <cstdint>

#include "ops/op.h"

namespace wgi::ops {

// Y = (X - mean) / sqrt(var + epsilon) * scale + bias over each of `rows` rows of `length` floats, scale and
// bias one value per element of a row (bias read only with has_bias).
struct LayerNormLaunch {
  int64_t rows = 0, length = 0;
  bool has_bias = false;
  float epsilon = 1e-5f;
  TensorRef input, scale, bias, output;
};
void append_layer_norm(const PlanContext& ctx, const LayerNormLaunch& ln, OpPlan& plan);

}  // namespace wgi::ops
