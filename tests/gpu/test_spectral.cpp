// DFT, STFT and the window generators on the GPU against float64 definitions written here (a direct complex
// sum in double; the windows' cosine sums): real and complex inputs, forward and inverse, onesided, an axis
// that is not the last signal dim with batch > 1, dft_length that pads and that truncates, STFT with and
// without a window; and Det against a float64 LU. Plus the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::NodeInputs;

// y[outer, f, k, inner] = scale sum_n x[outer, f * step + n, inner] w[n] e^(-+2 pi i k n / length), the
// input viewed as [outer, steps, inner, components].
std::vector<double> transform_reference(const Tensor& x, int64_t outer, int64_t steps, int64_t inner,
                                        int64_t components, int64_t length, int64_t bins, int64_t frames,
                                        int64_t step, bool inverse, const std::vector<double>& window) {
  auto v = x.data<float>();
  std::vector<double> y;
  const double sign = inverse ? 1 : -1;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t k = 0; k < bins; ++k) {
        for (int64_t i = 0; i < inner; ++i) {
          double re = 0, im = 0;
          for (int64_t n = 0; n < length && f * step + n < steps; ++n) {
            const size_t at = static_cast<size_t>(((o * steps + f * step + n) * inner + i) * components);
            const double w = window.empty() ? 1.0 : window[static_cast<size_t>(n)];
            const double a = v[at] * w, b = components == 2 ? v[at + 1] * w : 0.0;
            const double angle = sign * 2 * std::numbers::pi * static_cast<double>(k * n % length) /
                                 static_cast<double>(length);
            re += a * std::cos(angle) - b * std::sin(angle);
            im += a * std::sin(angle) + b * std::cos(angle);
          }
          const double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
          y.push_back(re * scale);
          y.push_back(im * scale);
        }
      }
    }
  }
  return y;
}

// A sum of `terms` products of values in [-1, 1] with unit twiddles, in f32: rounding grows like
// sqrt(terms); the twiddles' own f32 error (~1e-7) adds the same order.
test::Tolerance transform_tolerance(int64_t terms) {
  const double bound = 4e-7 * std::sqrt(static_cast<double>(terms)) * 4;
  return [bound](double r) { return bound * (1 + std::abs(r)); };
}

TEST(SpectralDFT, MatchesFloat64Definition) {
  struct Case {
    Shape shape;
    int64_t axis;  // as given (negative from the back)
    std::optional<int64_t> dft_length;
    bool inverse, onesided;
    int opset;
  };
  for (const Case& c :
       {Case{{3, 10, 1}, 1, std::nullopt, false, false, 17},
        Case{{2, 7, 5, 2}, 1, std::nullopt, false, false, 17},
        Case{{2, 7, 5, 2}, 2, std::nullopt, true, false, 17}, Case{{2, 6, 3, 1}, 1, 9, false, true, 17},
        Case{{2, 13, 1}, 1, 8, false, false, 17}, Case{{2, 4, 6, 2}, -2, 11, true, false, 20},
        Case{{3, 5, 4, 1}, 1, std::nullopt, false, true, 20},
        Case{{2, 9, 2}, 1, std::nullopt, true, true, 17}}) {
    SCOPED_TRACE(shape_to_string(c.shape) + " axis " + std::to_string(c.axis) + " opset " +
                 std::to_string(c.opset) + (c.inverse ? " inverse" : "") + (c.onesided ? " onesided" : ""));
    const Tensor x = test::random_tensor(c.shape, 61 + static_cast<uint64_t>(c.shape[1]));
    const int64_t rank = static_cast<int64_t>(c.shape.size());
    const size_t a = static_cast<size_t>(c.axis < 0 ? c.axis + rank : c.axis);
    const int64_t length = c.dft_length.value_or(c.shape[a]);
    const int64_t bins = c.onesided ? length / 2 + 1 : length;
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d) outer *= c.shape[d];
    for (size_t d = a + 1; d + 1 < c.shape.size(); ++d) inner *= c.shape[d];
    ops::NodeInfo node = test::make_node("DFT", c.opset);
    node.attributes.set("inverse", int64_t{c.inverse});
    node.attributes.set("onesided", int64_t{c.onesided});
    NodeInputs inputs{NodeInput{x}};
    inputs.push_back(c.dft_length ? std::optional<NodeInput>(NodeInput{test::ints({*c.dft_length}), true})
                                  : std::nullopt);
    if (c.opset >= 20) {
      inputs.push_back(NodeInput{test::ints({c.axis}), true});
    } else {
      node.attributes.set("axis", c.axis);
    }
    Shape out_shape = c.shape;
    out_shape[a] = bins;
    out_shape.back() = 2;
    const auto ref =
        transform_reference(x, outer, c.shape[a], inner, c.shape.back(), length, bins, 1, 0, c.inverse, {});
    const auto out = runtime::run_node(test::device(), node, inputs);
    EXPECT_TRUE(test::all_close(out[0], out_shape, ref, transform_tolerance(length)));
  }
}

TEST(SpectralSTFT, MatchesFloat64Definition) {
  const Tensor signal = test::random_tensor({2, 37, 1}, 71);
  const Tensor window = test::random_tensor({12}, 72, 0.0f, 1.0f);
  std::vector<double> w(window.data<float>().begin(), window.data<float>().end());
  for (bool with_window : {true, false}) {
    SCOPED_TRACE(with_window ? "window" : "frame_length only");
    NodeInputs inputs{NodeInput{signal}, NodeInput{test::ints({5}), true}};
    inputs.push_back(with_window ? std::optional<NodeInput>(NodeInput{window}) : std::nullopt);
    inputs.push_back(NodeInput{test::ints({12}), true});
    const int64_t frames = (37 - 12) / 5 + 1, bins = 7;
    const auto ref = transform_reference(signal, 2, 37, 1, 1, 12, bins, frames, 5, false,
                                         with_window ? w : std::vector<double>{});
    const auto out = runtime::run_node(test::device(), test::make_node("STFT", 17), inputs);
    EXPECT_TRUE(test::all_close(out[0], {2, frames, bins, 2}, ref, transform_tolerance(12)));
  }
  const std::string no_length = test::node_error(
      test::make_node("STFT", 17), NodeInputs{NodeInput{signal}, NodeInput{test::ints({5}), true}});
  EXPECT_NE(no_length.find("needs a window or a frame_length"), std::string::npos) << no_length;
}

TEST(SpectralWindows, MatchFloat64Definitions) {
  struct Window {
    const char* op;
    double a0, a1, a2;
  };
  for (const Window& w : {Window{"HannWindow", 0.5, 0.5, 0}, Window{"HammingWindow", 25.0 / 46, 21.0 / 46, 0},
                          Window{"BlackmanWindow", 0.42, 0.5, 0.08}}) {
    for (int64_t periodic : {0, 1}) {
      for (int64_t size : {1, 10, 67}) {
        SCOPED_TRACE(std::string(w.op) + " size " + std::to_string(size) +
                     (periodic ? " periodic" : " symmetric"));
        ops::NodeInfo node = test::make_node(w.op, 17);
        node.attributes.set("periodic", periodic);
        const double n = static_cast<double>(periodic ? size : size - 1);
        std::vector<double> ref;
        for (int64_t i = 0; i < size; ++i) {
          const double t = 2 * std::numbers::pi * static_cast<double>(i) / n;
          ref.push_back(n == 0 ? 1.0 : w.a0 - w.a1 * std::cos(t) + w.a2 * std::cos(2 * t));
        }
        const auto out =
            runtime::run_node(test::device(), node, NodeInputs{NodeInput{test::ints({size}), true}});
        // f32 cosines of exactly reduced angles: a few ulp of 1.
        EXPECT_TRUE(test::all_close(out[0], {size}, ref, [](double) { return 1e-6; }));
      }
    }
  }
  ops::NodeInfo typed = test::make_node("HannWindow", 17);
  typed.attributes.set("output_datatype", int64_t{7});
  const std::string type = test::node_error(typed, NodeInputs{NodeInput{test::ints({4}), true}});
  EXPECT_NE(type.find("'output_datatype' is 7"), std::string::npos) << type;
  const std::string runtime_size =
      test::node_error(test::make_node("HannWindow", 17), NodeInputs{NodeInput{test::ints({4})}});
  EXPECT_NE(runtime_size.find("known when the model is planned"), std::string::npos) << runtime_size;
}

// The ONNX reference's MelWeightMatrix: triangles between mel_bins + 2 edges spaced evenly on the mel scale.
std::vector<double> mel_reference(int64_t mel_bins, int64_t dft_length, int64_t sample_rate, double lower,
                                  double upper) {
  const int64_t rows = dft_length / 2 + 1;
  const double low_mel = 2595 * std::log10(1 + lower / 700), high_mel = 2595 * std::log10(1 + upper / 700);
  std::vector<int64_t> edge;
  for (int64_t k = 0; k < mel_bins + 2; ++k) {
    const double mel =
        static_cast<double>(k) * (high_mel - low_mel) / static_cast<double>(mel_bins + 2) + low_mel;
    const double hz = 700 * (std::pow(10.0, mel / 2595) - 1);
    edge.push_back(static_cast<int64_t>(
        std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate))));
  }
  std::vector<double> y(static_cast<size_t>(rows * mel_bins), 0.0);
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t lo = edge[static_cast<size_t>(i)], c = edge[static_cast<size_t>(i + 1)],
                  hi = edge[static_cast<size_t>(i + 2)];
    auto at = [&](int64_t j) -> double& { return y[static_cast<size_t>(j * mel_bins + i)]; };
    if (c == lo) {
      at(c) = 1;
    } else {
      for (int64_t j = lo; j <= c; ++j) at(j) = static_cast<double>(j - lo) / static_cast<double>(c - lo);
    }
    for (int64_t j = c; j < hi; ++j) at(j) = static_cast<double>(hi - j) / static_cast<double>(hi - c);
  }
  return y;
}

TEST(SpectralMelWeightMatrix, MatchesOnnxReferenceDefinition) {
  struct Case {
    int64_t mel_bins, dft_length, sample_rate;
    float lower, upper;
  };
  for (const Case& c : {Case{8, 16, 8192, 0.0f, 4096.0f}, Case{13, 64, 16000, 30.0f, 7000.0f},
                        Case{5, 33, 100, 1.0f, 40.0f}}) {
    SCOPED_TRACE(std::to_string(c.mel_bins) + " mel bins, dft_length " + std::to_string(c.dft_length));
    NodeInputs inputs{NodeInput{test::ints({c.mel_bins}), true}, NodeInput{test::ints({c.dft_length}), true},
                      NodeInput{test::ints({c.sample_rate}), true},
                      NodeInput{Tensor::from_vector<float>({}, {c.lower}), true},
                      NodeInput{Tensor::from_vector<float>({}, {c.upper}), true}};
    const auto out = runtime::run_node(test::device(), test::make_node("MelWeightMatrix", 17), inputs);
    // One f32 division per element.
    EXPECT_TRUE(test::all_close(out[0], {c.dft_length / 2 + 1, c.mel_bins},
                                mel_reference(c.mel_bins, c.dft_length, c.sample_rate, c.lower, c.upper),
                                [](double r) { return 1e-7 + 1e-6 * std::abs(r); }));
  }
  NodeInputs past{NodeInput{test::ints({8}), true}, NodeInput{test::ints({16}), true},
                  NodeInput{test::ints({8192}), true},
                  NodeInput{Tensor::from_vector<float>({}, {0.0f}), true},
                  NodeInput{Tensor::from_vector<float>({}, {9000.0f}), true}};
  const std::string message = test::node_error(test::make_node("MelWeightMatrix", 17), past);
  EXPECT_NE(message.find("maps past the last"), std::string::npos) << message;
}

TEST(SpectralDFT, ErrorsNameTheProblem) {
  const Tensor x = test::random_tensor({2, 4, 1}, 1);
  ops::NodeInfo both = test::make_node("DFT", 20);
  both.attributes.set("inverse", int64_t{1});
  both.attributes.set("onesided", int64_t{1});
  const std::string inverse = test::node_error(both, NodeInputs{NodeInput{x}});
  EXPECT_NE(inverse.find("not implemented"), std::string::npos) << inverse;
  ops::NodeInfo axis = test::make_node("DFT", 17);
  axis.attributes.set("axis", int64_t{2});
  const std::string bad_axis = test::node_error(axis, NodeInputs{NodeInput{x}});
  EXPECT_NE(bad_axis.find("outside the signal dims"), std::string::npos) << bad_axis;
  const std::string components =
      test::node_error(test::make_node("DFT", 17), NodeInputs{NodeInput{test::random_tensor({2, 4, 3}, 2)}});
  EXPECT_NE(components.find("1 or 2"), std::string::npos) << components;
}

// Determinant by LU with partial pivoting in float64.
double det_reference(std::vector<double> a, int64_t m) {
  double det = 1;
  for (int64_t c = 0; c < m; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < m; ++r) {
      if (std::abs(a[static_cast<size_t>(r * m + c)]) > std::abs(a[static_cast<size_t>(p * m + c)])) p = r;
    }
    if (a[static_cast<size_t>(p * m + c)] == 0) return 0;
    if (p != c) {
      for (int64_t j = 0; j < m; ++j)
        std::swap(a[static_cast<size_t>(c * m + j)], a[static_cast<size_t>(p * m + j)]);
      det = -det;
    }
    det *= a[static_cast<size_t>(c * m + c)];
    for (int64_t r = c + 1; r < m; ++r) {
      const double f = a[static_cast<size_t>(r * m + c)] / a[static_cast<size_t>(c * m + c)];
      for (int64_t j = c; j < m; ++j)
        a[static_cast<size_t>(r * m + j)] -= f * a[static_cast<size_t>(c * m + j)];
    }
  }
  return det;
}

TEST(LinalgDet, BatchedMatchesFloat64LU) {
  for (const Shape& shape : {Shape{3, 3}, Shape{2, 3, 5, 5}, Shape{7, 1, 1}, Shape{4, 8, 8}}) {
    SCOPED_TRACE(shape_to_string(shape));
    const int64_t m = shape.back();
    Tensor x = test::random_tensor(shape, 81 + static_cast<uint64_t>(m));
    const Shape out_shape(shape.begin(), shape.end() - 2);
    const int64_t batch = element_count(out_shape);
    std::vector<double> ref;
    auto v = x.data<float>();
    for (int64_t b = 0; b < batch; ++b) {
      ref.push_back(
          det_reference(std::vector<double>(v.begin() + b * m * m, v.begin() + (b + 1) * m * m), m));
    }
    const auto out = runtime::run_node(test::device(), test::make_node("Det", 11), NodeInputs{NodeInput{x}});
    // Elimination in f32: each of the m pivots carries O(m) roundings of values of order 1.
    const double bound = 1e-6 * static_cast<double>(m * m);
    EXPECT_TRUE(
        test::all_close(out[0], out_shape, ref, [bound](double r) { return bound * (1 + std::abs(r)); }));
  }
  // A singular matrix (two equal rows) has determinant 0 exactly once the pivot cancels.
  const Tensor singular = Tensor::from_vector<float>({3, 3}, {1, 2, 3, 1, 2, 3, 4, 5, 7});
  const auto zero =
      runtime::run_node(test::device(), test::make_node("Det", 11), NodeInputs{NodeInput{singular}});
  EXPECT_TRUE(test::all_close(zero[0], {}, {0.0}, [](double) { return 1e-6; }));
  const std::string not_square =
      test::node_error(test::make_node("Det", 11), NodeInputs{NodeInput{test::random_tensor({2, 3}, 1)}});
  EXPECT_NE(not_square.find("square matrices"), std::string::npos) << not_square;
}

}  // namespace
}  // namespace wgi
