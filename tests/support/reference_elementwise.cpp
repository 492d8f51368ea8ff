#include "support/reference_elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <random>

namespace wgi::test {

Shape broadcast_shape(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      if (s[i] != 1) o = s[i];
    }
  }
  return out;
}

size_t broadcast_source(const Shape& out, const Shape& in, size_t out_index) {
  // Unravel the output index, then ravel it in the input with broadcast dims pinned to 0.
  size_t rest = out_index, offset = 0, stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    const size_t coord = rest % static_cast<size_t>(out[d]);
    rest /= static_cast<size_t>(out[d]);
    const size_t pad = out.size() - in.size();
    if (d < pad) continue;
    const size_t extent = static_cast<size_t>(in[d - pad]);
    if (extent != 1) offset += coord * stride;
    stride *= extent;
  }
  return offset;
}

namespace {

template <class V, class Read>
std::vector<V> broadcast_apply(const std::vector<const Tensor*>& inputs, Read read,
                               const std::function<V(const std::vector<V>&)>& f) {
  std::vector<Shape> shapes;
  for (const Tensor* t : inputs) shapes.push_back(t->shape());
  const Shape out = broadcast_shape(shapes);
  std::vector<V> result;
  std::vector<V> args(inputs.size());
  for (size_t i = 0; i < static_cast<size_t>(element_count(out)); ++i) {
    for (size_t k = 0; k < inputs.size(); ++k)
      args[k] = read(*inputs[k], broadcast_source(out, shapes[k], i));
    result.push_back(f(args));
  }
  return result;
}

}  // namespace

std::vector<double> broadcast_reference(const std::vector<const Tensor*>& inputs,
                                        const std::function<double(const std::vector<double>&)>& f) {
  return broadcast_apply<double>(inputs, element_as_double, f);
}

std::vector<int64_t> broadcast_reference_int(const std::vector<const Tensor*>& inputs,
                                             const std::function<int64_t(const std::vector<int64_t>&)>& f) {
  return broadcast_apply<int64_t>(inputs, element_as_int, f);
}

Tensor random_int_tensor(DType dtype, const Shape& shape, uint64_t seed, int64_t lo, int64_t hi) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> values(static_cast<size_t>(element_count(shape)));
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  for (int64_t& v : values) v = lo + static_cast<int64_t>(rng() % span);
  return int_tensor(dtype, shape, values);
}

double gelu(double x) {
  return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}

double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

double fused_activation_reference(const std::string& kind, double v, double lo, double hi) {
  if (kind == "Gelu") return gelu(v);
  if (kind == "GeluTanh") return gelu_tanh(v);
  return std::clamp(v, lo, hi);
}

}  // namespace wgi::test
