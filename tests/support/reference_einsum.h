// A float64 CPU reference for Einsum (src/ops/einsum.cpp), by definition: every combination of the
// equation's letters visited, products of the operands' elements summed into the output element the output
// letters name. Explicit equations with letters and "..." (broadcast like numpy), or implicit ones (no "->":
// the ellipsis dims, then the letters used once, in ASCII order).
#pragma once

#include <string>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

struct EinsumReference {
  Shape shape;
  std::vector<double> values;
  int64_t terms = 0;  // products summed per output element (for the tolerance)
};

EinsumReference einsum_reference(const std::string& equation, const std::vector<Tensor>& inputs);

}  // namespace wgi::test
