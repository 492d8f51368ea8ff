// What normalization.cpp gives other op families: a LayerNormalization launch over rows given by reference,
// and the inputs of a LayerNormalization taken into a product (graph::fuse_layer_norm_into_products;
// linear.cpp, matmul_nbits.cpp), for the products whose kernel does not normalise A itself and for those that
// do.
#pragma once

#include <cstdint>

#include "ops/kernel_interface.h"
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

// A LayerNormalization taken into the product that reads its output (wgi.layer_norm_epsilon on MatMul and the
// quantized matmuls): its scale and bias are the product's inputs `scale_input` and `bias_input` (the bias
// optional), float32 constants of K values each; an error naming the input otherwise.
struct FusedLayerNorm {
  float epsilon = 1e-5f;
  size_t scale_input = 0, bias_input = 0;
  bool has_bias = false;
};
FusedLayerNorm read_fused_layer_norm(const PlanContext& ctx, int64_t k, float epsilon, size_t scale_input,
                                     size_t bias_input);
// Its K scales, then its K biases (zeros without one): one constant for a GEMV that normalises A itself.
Tensor fused_layer_norm_params(const PlanContext& ctx, const FusedLayerNorm& ln, int64_t k);
// What linear/layer_norm_a.wgsl reads where a GEMV normalises A itself: the bindings ln_params (`params`, as
// fused_layer_norm_params makes it) and normalized (the rows it writes), and the uniform members ln_epsilon
// and ln_inv_k appended to `members`; then their values for a row length of `k`.
void bind_layer_norm_a(TensorRef params, TensorRef normalized, KernelInterface& iface,
                       std::vector<UniformMember>& members);
void set_layer_norm_a_values(float epsilon, int64_t k, UniformValues& values);
// Its launch of its own, `rows` rows of K from `input` into `output`, where the product's kernel does not
// normalise A itself.
void append_fused_layer_norm(const PlanContext& ctx, const FusedLayerNorm& ln, int64_t rows, int64_t k,
                             TensorRef input, TensorRef output, OpPlan& plan);

}  // namespace wgi::ops
