#include "support/reference_recurrent.h"

#include <cmath>
#include <stdexcept>

#include "support/tensor_values.h"

namespace wgi::test {

namespace {

double activate(const std::string& name, double alpha, double beta, double x) {
  if (name == "Relu") return x > 0 ? x : 0;
  if (name == "Tanh") return std::tanh(x);
  if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "Affine") return alpha * x + beta;
  if (name == "LeakyRelu") return x < 0 ? alpha * x : x;
  if (name == "ThresholdedRelu") return x > alpha ? x : 0;
  if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
  if (name == "HardSigmoid") return std::fmin(1.0, std::fmax(0.0, alpha * x + beta));
  if (name == "Elu") return x < 0 ? alpha * std::expm1(x) : x;
  if (name == "Softsign") return x / (1.0 + std::fabs(x));
  if (name == "Softplus") return std::log1p(std::exp(x));
  throw std::invalid_argument("reference: unknown activation " + name);
}

}  // namespace

RecurrentReference recurrent_reference(const RecurrentSpec& spec, const RecurrentInputs& in) {
  const int64_t gates = spec.op == "LSTM" ? 4 : spec.op == "GRU" ? 3 : 1;
  const size_t slots = spec.op == "LSTM" ? 3 : spec.op == "GRU" ? 2 : 1;
  const int64_t nd = spec.direction == "bidirectional" ? 2 : 1;
  const Shape& xs = in.x.shape();
  const int64_t T = spec.layout == 0 ? xs[0] : xs[1], B = spec.layout == 0 ? xs[1] : xs[0], I = xs[2];
  const int64_t H = spec.hidden, GH = gates * H;
  const std::vector<double> x = double_values(in.x), w = double_values(in.w), r = double_values(in.r);
  const std::vector<double> bias = in.b ? double_values(*in.b) : std::vector<double>(nd * 2 * GH, 0.0);
  const std::vector<double> p = in.p ? double_values(*in.p) : std::vector<double>(nd * 3 * H, 0.0);

  std::vector<std::string> names = spec.activations;
  if (names.empty()) {
    const std::vector<std::string> defaults = spec.op == "LSTM"
                                                  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                              : spec.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                 : std::vector<std::string>{"Tanh"};
    for (int64_t d = 0; d < nd; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  std::vector<double> alphas = spec.alphas, betas = spec.betas;
  alphas.resize(names.size(), 0.0);
  betas.resize(names.size(), 0.0);
  auto f = [&](int64_t d, size_t slot, double v) {
    const size_t i = static_cast<size_t>(d) * slots + slot;
    return activate(names[i], alphas[i], betas[i], v);
  };
  auto clipped = [&](double v) {
    if (!spec.clip) return v;
    const double c = *spec.clip;
    return v < -c ? -c : v > c ? c : v;
  };

  auto x_at = [&](int64_t t, int64_t b, int64_t k) {
    return spec.layout == 0 ? x[(t * B + b) * I + k] : x[(b * T + t) * I + k];
  };
  auto state_index = [&](int64_t d, int64_t b, int64_t u) {
    return spec.layout == 0 ? (d * B + b) * H + u : (b * nd + d) * H + u;
  };
  auto y_index = [&](int64_t t, int64_t d, int64_t b, int64_t u) {
    return spec.layout == 0 ? ((t * nd + d) * B + b) * H + u : ((b * T + t) * nd + d) * H + u;
  };

  RecurrentReference out;
  out.y.assign(static_cast<size_t>(T * nd * B * H), 0.0);
  out.y_h.assign(static_cast<size_t>(nd * B * H), 0.0);
  out.y_c.assign(static_cast<size_t>(nd * B * H), 0.0);
  for (int64_t d = 0; d < nd; ++d) {
    const bool reverse = spec.direction == "reverse" || d == 1;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = in.sequence_lens ? in.sequence_lens->data<int32_t>()[b] : T;
      std::vector<double> h(H, 0.0), c(H, 0.0);
      for (int64_t u = 0; u < H; ++u) {
        if (in.initial_h) h[u] = in.initial_h->data<float>()[state_index(d, b, u)];
        if (in.initial_c) c[u] = in.initial_c->data<float>()[state_index(d, b, u)];
      }
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        // xw[j] = X_t . W_j + Wb_j, rh[j] = H . R_j + Rb_j for each gate row j.
        std::vector<double> xw(GH), rh(GH);
        for (int64_t j = 0; j < GH; ++j) {
          double a = bias[d * 2 * GH + j], e = bias[d * 2 * GH + GH + j];
          for (int64_t k = 0; k < I; ++k) a += x_at(t, b, k) * w[(d * GH + j) * I + k];
          for (int64_t k = 0; k < H; ++k) e += h[k] * r[(d * GH + j) * H + k];
          xw[j] = a;
          rh[j] = e;
        }
        std::vector<double> hn(H), cn(H);
        if (spec.op == "LSTM") {
          for (int64_t u = 0; u < H; ++u) {
            const double* pp = &p[d * 3 * H];
            const double i = f(d, 0, clipped(xw[u] + rh[u] + pp[u] * c[u]));
            double fg = f(d, 0, clipped(xw[2 * H + u] + rh[2 * H + u] + pp[2 * H + u] * c[u]));
            if (spec.input_forget) fg = 1.0 - i;
            const double g = f(d, 1, clipped(xw[3 * H + u] + rh[3 * H + u]));
            cn[u] = fg * c[u] + i * g;
            const double o = f(d, 0, clipped(xw[H + u] + rh[H + u] + pp[H + u] * cn[u]));
            hn[u] = o * f(d, 2, cn[u]);
          }
        } else if (spec.op == "GRU") {
          std::vector<double> z(H), rg(H);
          for (int64_t u = 0; u < H; ++u) {
            z[u] = f(d, 0, clipped(xw[u] + rh[u]));
            rg[u] = f(d, 0, clipped(xw[H + u] + rh[H + u]));
          }
          for (int64_t u = 0; u < H; ++u) {
            double pre;
            const int64_t j = 2 * H + u;
            if (spec.linear_before_reset) {
              pre = xw[j] + rg[u] * rh[j];
            } else {
              double e = bias[d * 2 * GH + GH + j];
              for (int64_t k = 0; k < H; ++k) e += rg[k] * h[k] * r[(d * GH + j) * H + k];
              pre = xw[j] + e;
            }
            const double hh = f(d, 1, clipped(pre));
            hn[u] = (1.0 - z[u]) * hh + z[u] * h[u];
          }
        } else {
          for (int64_t u = 0; u < H; ++u) hn[u] = f(d, 0, clipped(xw[u] + rh[u]));
        }
        h = hn;
        if (spec.op == "LSTM") c = cn;
        for (int64_t u = 0; u < H; ++u) out.y[y_index(t, d, b, u)] = h[u];
      }
      // A row of length 0 ends with a zero state (onnxruntime's choice for LSTM, GRU and RNN; ONNX does not
      // say).
      for (int64_t u = 0; u < H; ++u) {
        out.y_h[state_index(d, b, u)] = len == 0 ? 0.0 : h[u];
        out.y_c[state_index(d, b, u)] = len == 0 ? 0.0 : c[u];
      }
    }
  }
  return out;
}

}  // namespace wgi::test
