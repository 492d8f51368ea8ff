// NaN and +-inf through the max / min family, softmax, reductions, pooling and the activations wgi fuses into
// conv and GEMM epilogues (docs/robustness_audit.md, "NaN"), on the test adapter, against onnxruntime's CPU
// provider on the same model files (tests/data/robustness/, written by tests/models/robustness_models.py).
// - Elementwise ops, softmax and the fused epilogues: onnxruntime propagates NaN, and wgi must give its
//   answer: the same NaN and infinity positions, finite values within float32 rounding.
// - ReduceMax / ReduceMin, ArgMax / ArgMin, MaxPool, GlobalMaxPool: onnxruntime's answer depends on where
//   the NaN is (its CPU kernels compare against a running best, so a NaN counts only as the first element,
//   and its MaxPool differs between windows). wgi promises NaN propagation (argmax / argmin: the first
//   NaN's index, as numpy and PyTorch), checked against a reference here; onnxruntime must agree on every
//   window without NaN and, for single-axis reductions, on every row that starts with one.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "onnxruntime_reference.h"
#include "wgi/session.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kNan = fs::path(WGI_TEST_DATA_DIR) / "robustness";
const Shape kShape = {2, 3, 5, 7};
constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

int64_t flat(int64_t n, int64_t c, int64_t h, int64_t w) {
  return ((n * kShape[1] + c) * kShape[2] + h) * kShape[3] + w;
}

// Seeded values in [-2, 2) with NaN first, in the middle and last in rows, next to infinities, and a row
// with both infinities (softmax: inf - inf).
Tensor special_input() {
  std::mt19937 rng(18);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(static_cast<size_t>(element_count(kShape)));
  for (float& x : v) x = u(rng);
  v[flat(0, 0, 0, 0)] = kNaN;
  v[flat(0, 1, 2, 3)] = kNaN;
  v[flat(0, 1, 2, 5)] = kInf;
  v[flat(1, 2, 4, 6)] = kNaN;
  v[flat(1, 2, 4, 0)] = -kInf;
  v[flat(1, 0, 1, 2)] = kInf;
  v[flat(1, 0, 1, 4)] = -kInf;
  v[flat(0, 2, 3, 1)] = -kInf;
  return Tensor::from_vector<float>(kShape, v);
}

std::map<std::string, Tensor> inputs_of(const std::string& model) {
  std::map<std::string, Tensor> in = {{"x", special_input()}};
  if (model == "max" || model == "min")
    in["b"] = Tensor::from_vector<float>({7}, {0.3f, kNaN, -kInf, kInf, -0.2f, 1.5f, -1.0f});
  return in;
}

std::map<std::string, Tensor> run_wgi(const std::string& model, const std::map<std::string, Tensor>& in,
                                      size_t* gpu_nodes = nullptr) {
  Session s = Session::from_file(kNan / (model + ".onnx"));
  std::map<std::string, Tensor> out = s.run(in);
  if (gpu_nodes) *gpu_nodes = s.stats().last_plan.gpu_nodes;
  return out;
}

std::string where(size_t i, float got, float want) {
  return "element " + std::to_string(i) + ": wgi " + std::to_string(got) + ", expected " +
         std::to_string(want);
}

// NaN where `want` is NaN, the same infinity, else within float32 rounding of a short sum (up to 27 products
// in the convs: 1e-5 relative to 1 + |want|).
void expect_same_specials(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  auto g = got.data<float>();
  auto w = want.data<float>();
  size_t nans = 0, infs = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) {
      ++nans;
      EXPECT_TRUE(std::isnan(g[i])) << where(i, g[i], w[i]);
    } else if (std::isinf(w[i])) {
      ++infs;
      EXPECT_EQ(g[i], w[i]) << where(i, g[i], w[i]);
    } else {
      EXPECT_LE(std::abs(g[i] - w[i]), 1e-5 * (1 + std::abs(w[i]))) << where(i, g[i], w[i]);
    }
  }
  EXPECT_GT(nans, 0u) << "the case has no NaN output to compare";
}

class NanPropagation : public ::testing::TestWithParam<std::string> {};

TEST_P(NanPropagation, MatchesOnnxRuntime) {
  const std::string model = GetParam();
  const auto in = inputs_of(model);
  size_t gpu_nodes = 0;
  const auto got = run_wgi(model, in, &gpu_nodes);
  const auto want = test::run_onnxruntime(kNan / (model + ".onnx"), in, {"y"});
  expect_same_specials(got.at("y"), want.at("y"));
  // The fused cases run as one GPU node: the activation is the conv's or the GEMM's epilogue.
  if (model.starts_with("conv_") || model.starts_with("matmul_")) {
    EXPECT_EQ(gpu_nodes, 1u) << model;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, NanPropagation,
                         ::testing::Values("relu", "leaky_relu", "hard_sigmoid", "clip", "max", "min",
                                           "softmax", "log_softmax", "conv_relu", "conv_clip",
                                           "matmul_relu"));

// For each output, the input elements it selects from, in the order onnxruntime scans them.
using Windows = std::vector<std::vector<int64_t>>;

Windows rows_along(int64_t axis) {  // one reduced axis, keepdims = 0
  Windows out;
  std::vector<int64_t> strides = {kShape[1] * kShape[2] * kShape[3], kShape[2] * kShape[3], kShape[3], 1};
  for (int64_t i = 0; i < element_count(kShape); ++i) {
    if (i / strides[static_cast<size_t>(axis)] % kShape[static_cast<size_t>(axis)] != 0) continue;
    std::vector<int64_t> row;
    for (int64_t k = 0; k < kShape[static_cast<size_t>(axis)]; ++k)
      row.push_back(i + k * strides[static_cast<size_t>(axis)]);
    out.push_back(row);
  }
  return out;
}

Windows planes(bool channels_too) {  // ReduceMin over axes 1, 2 (per n, w); GlobalMaxPool (per n, c)
  Windows out;
  if (channels_too) {
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t w = 0; w < 7; ++w) {
        std::vector<int64_t> win;
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t h = 0; h < 5; ++h) win.push_back(flat(n, c, h, w));
        out.push_back(win);
      }
  } else {
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 3; ++c) {
        std::vector<int64_t> win;
        for (int64_t h = 0; h < 5; ++h)
          for (int64_t w = 0; w < 7; ++w) win.push_back(flat(n, c, h, w));
        out.push_back(win);
      }
  }
  return out;
}

Windows pool_windows() {  // kernel 3x3, stride 2, pads 1: output 3x4
  Windows out;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t oh = 0; oh < 3; ++oh)
        for (int64_t ow = 0; ow < 4; ++ow) {
          std::vector<int64_t> win;
          for (int64_t h = 2 * oh - 1; h <= 2 * oh + 1; ++h)
            for (int64_t w = 2 * ow - 1; w <= 2 * ow + 1; ++w)
              if (h >= 0 && h < 5 && w >= 0 && w < 7) win.push_back(flat(n, c, h, w));
          out.push_back(win);
        }
  return out;
}

struct RuleCase {
  std::string model;
  std::function<Windows()> windows;
  bool is_max = true;
  bool arg = false;
  bool first_nan_agrees = false;  // onnxruntime gives NaN (index 0) when the row starts with NaN
};

class NanRule : public ::testing::TestWithParam<RuleCase> {};

TEST_P(NanRule, PropagatesAndAgreesWithOnnxRuntimeWhereItIsDefined) {
  const RuleCase& c = GetParam();
  const auto in = inputs_of(c.model);
  const auto x = in.at("x").data<float>();
  const Tensor got = run_wgi(c.model, in).at("y");
  const Tensor ort = test::run_onnxruntime(kNan / (c.model + ".onnx"), in, {"y"}).at("y");
  const Windows windows = c.windows();
  ASSERT_EQ(static_cast<size_t>(got.element_count()), windows.size());
  size_t with_nan = 0, checked_against_ort = 0;
  for (size_t o = 0; o < windows.size(); ++o) {
    const std::vector<int64_t>& win = windows[o];
    // The rule: the first NaN, else the first best.
    size_t best = 0;
    bool nan = false;
    for (size_t k = 0; k < win.size(); ++k) {
      const float v = x[static_cast<size_t>(win[k])];
      if (std::isnan(v)) {
        best = k;
        nan = true;
        break;
      }
      if (c.is_max ? v > x[static_cast<size_t>(win[best])] : v < x[static_cast<size_t>(win[best])]) best = k;
    }
    with_nan += nan;
    const bool ort_defined = !nan || (c.first_nan_agrees && std::isnan(x[static_cast<size_t>(win[0])]));
    checked_against_ort += ort_defined;
    if (c.arg) {
      EXPECT_EQ(got.data<int64_t>()[o], static_cast<int64_t>(best)) << "output " << o;
      if (ort_defined) {
        EXPECT_EQ(ort.data<int64_t>()[o], static_cast<int64_t>(best)) << "onnxruntime, output " << o;
      }
    } else {
      const float want = x[static_cast<size_t>(win[best])];
      const float g = got.data<float>()[o], r = ort.data<float>()[o];
      if (nan) {
        EXPECT_TRUE(std::isnan(g)) << "output " << o << ": " << g;
      } else {
        EXPECT_EQ(g, want) << "output " << o;
      }
      if (ort_defined) {
        EXPECT_TRUE(std::isnan(want) ? std::isnan(r) : r == want) << "onnxruntime, output " << o << ": " << r;
      }
    }
  }
  EXPECT_GT(with_nan, 0u) << "no window holds a NaN";
  EXPECT_GT(checked_against_ort, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Ops, NanRule,
    ::testing::Values(RuleCase{"reduce_max", [] { return rows_along(3); }, true, false, true},
                      RuleCase{"reduce_min", [] { return planes(true); }, false, false, false},
                      RuleCase{"arg_max", [] { return rows_along(3); }, true, true, true},
                      RuleCase{"arg_min", [] { return rows_along(2); }, false, true, true},
                      RuleCase{"max_pool", pool_windows, true, false, false},
                      RuleCase{"global_max_pool", [] { return planes(false); }, true, false, false}),
    [](const ::testing::TestParamInfo<RuleCase>& param_info) { return param_info.param.model; });

}  // namespace
}  // namespace wgi
