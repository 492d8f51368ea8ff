#include "support/reference_linear.h"

#include <algorithm>
#include <cmath>

namespace wgi::test {

Reference matmul_reference(const Tensor& a, const Tensor& b) {
  Shape as = a.shape(), bs = b.shape();
  bool drop_m = as.size() == 1, drop_n = bs.size() == 1;
  if (drop_m) as.insert(as.begin(), 1);
  if (drop_n) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  size_t rank = std::max(ab.size(), bb.size());
  auto at = [rank](const Shape& s, size_t i) {
    return i < rank - s.size() ? int64_t{1} : s[i - (rank - s.size())];
  };
  Shape ob;
  for (size_t i = 0; i < rank; ++i) ob.push_back(std::max(at(ab, i), at(bb, i)));
  int64_t batches = element_count(ob);
  Reference r;
  r.shape = ob;
  if (!drop_m) r.shape.push_back(M);
  if (!drop_n) r.shape.push_back(N);
  r.values.assign(static_cast<size_t>(batches * M * N), 0.0);
  auto av = a.data<float>();
  auto bv = b.data<float>();
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Decompose the output batch index and map it onto each operand (broadcast dims index 0).
    int64_t rest = bi, a_index = 0, b_index = 0, a_mul = 1, b_mul = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t idx = rest % ob[d];
      rest /= ob[d];
      if (at(ab, d) != 1) a_index += idx * a_mul;
      if (at(bb, d) != 1) b_index += idx * b_mul;
      a_mul *= at(ab, d);
      b_mul *= at(bb, d);
    }
    const float* pa = av.data() + a_index * M * K;
    const float* pb = bv.data() + b_index * K * N;
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += static_cast<double>(pa[m * K + k]) * pb[k * N + n];
        r.values[static_cast<size_t>((bi * M + m) * N + n)] = s;
      }
    }
  }
  return r;
}

Reference gemm_reference(const Tensor& a, const Tensor& b, const Tensor* c, bool trans_a, bool trans_b,
                         double alpha, double beta, double lo, double hi) {
  const int64_t M = trans_a ? a.shape()[1] : a.shape()[0];
  const int64_t K = trans_a ? a.shape()[0] : a.shape()[1];
  const int64_t N = trans_b ? b.shape()[0] : b.shape()[1];
  auto av = a.data<float>();
  auto bv = b.data<float>();
  Reference r{{M, N}, std::vector<double>(static_cast<size_t>(M * N))};
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) {
        double x = trans_a ? av[k * M + m] : av[m * K + k];
        double y = trans_b ? bv[n * K + k] : bv[k * N + n];
        s += x * y;
      }
      double v = alpha * s;
      if (c) {
        const Shape& cs = c->shape();
        int64_t rows = cs.size() == 2 ? cs[0] : 1, cols = cs.empty() ? 1 : cs.back();
        v += beta * c->data<float>()[(rows == 1 ? 0 : m) * cols + (cols == 1 ? 0 : n)];
      }
      r.values[static_cast<size_t>(m * N + n)] = std::clamp(v, lo, hi);
    }
  }
  return r;
}

}  // namespace wgi::test
