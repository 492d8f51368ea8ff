// CPU references for the elementwise family: numpy broadcasting over values of any dtype read as float64 or
// int64 (support/tensor_values.h, included for the tests that read values through this header).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "support/tensor_values.h"
#include "wgi/tensor.h"

namespace wgi::test {

// numpy's multidirectional broadcast of the shapes (assumed compatible).
Shape broadcast_shape(const std::vector<Shape>& shapes);
// The element of an input of shape `in` that output element `out_index` of shape `out` reads.
size_t broadcast_source(const Shape& out, const Shape& in, size_t out_index);

// f(values of the inputs at each output element), in float64 / int64, over the broadcast output shape.
std::vector<double> broadcast_reference(const std::vector<const Tensor*>& inputs,
                                        const std::function<double(const std::vector<double>&)>& f);
std::vector<int64_t> broadcast_reference_int(const std::vector<const Tensor*>& inputs,
                                             const std::function<int64_t(const std::vector<int64_t>&)>& f);

// Seeded integers in [lo, hi] as a tensor of `dtype`.
Tensor random_int_tensor(DType dtype, const Shape& shape, uint64_t seed, int64_t lo, int64_t hi);

// GELU in float64: the erf form and the tanh approximation (ONNX Gelu, approximate = "none" / "tanh").
double gelu(double x);
double gelu_tanh(double x);
// A GEMM or conv epilogue's fused activation ("", "Relu", "Clip", "Gelu", "GeluTanh";
// src/ops/fused_activation.h) on a float64 value; lo / hi are Relu's and Clip's bounds.
double fused_activation_reference(const std::string& kind, double v, double lo, double hi);

}  // namespace wgi::test
