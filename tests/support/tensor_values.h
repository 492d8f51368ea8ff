// A host tensor's elements read or written whatever their dtype (float16 from its definition, independent of
// the engine's own converters): what the CPU references and tests use instead of a switch on the dtype each.
#pragma once

#include <cstdint>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

// Element i of a tensor of any dtype (float16 decoded, bool as 0 / 1).
double element_as_double(const Tensor& t, size_t i);
int64_t element_as_int(const Tensor& t, size_t i);
// Every element read as float64 / as int64 (integer, bool) tensors.
std::vector<double> double_values(const Tensor& t);
std::vector<int64_t> int_values(const Tensor& t);

// IEEE binary16 from its definition: decode, and round-to-nearest-even encode of a float.
double half_bits_to_double(uint16_t bits);
uint16_t double_to_half_bits(double value);

// A tensor of `dtype` holding `values` (converted with static_cast; bool as != 0).
Tensor int_tensor(DType dtype, const Shape& shape, const std::vector<int64_t>& values);

}  // namespace wgi::test
