// Every op family's registration function. One file per family under src/ops/; each adds its ops here.
#pragma once

#include <array>

namespace wgi::ops {

class OpRegistry;

void register_unary_ops(OpRegistry& registry);   // elementwise_unary.cpp: Relu, Sigmoid, ...
void register_linear_ops(OpRegistry& registry);  // linear.cpp: MatMul, Gemm
void register_conv_ops(OpRegistry& registry);    // conv.cpp: Conv, ConvTranspose

inline constexpr std::array kOpFamilies = {&register_unary_ops, &register_linear_ops, &register_conv_ops};

}  // namespace wgi::ops
