// The pooling family against float64 references: MaxPool / AveragePool over 1, 2 and 3 spatial axes with
// strides, dilations, explicit and automatic padding, ceil_mode, count_include_pad, MaxPool's Indices output
// (both storage orders) and integer types; the global pools; Resize in every opset form (10, 11, 13, 18, 19),
// each mode (nearest with its four rounding modes, linear, cubic), each coordinate transformation, scales or
// sizes, axes and keep_aspect_ratio_policy, tf_crop_and_resize extrapolation; Upsample 7 and 9; and the
// errors a user can cause.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/node_runner.h"
#include "support/reference_pooling.h"
#include "support/run_node.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;
using test::run_error;

const test::NodeMaker node{"pool_under_test"};

test::Tolerance tight() {
  return [](double ref) { return 1e-6 * (1 + std::abs(ref)); };
}

Tensor floats(const std::vector<float>& v) {
  return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
}
Tensor int64s(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// ---------------------------------------------------------------------------------------------------------
// MaxPool / AveragePool

struct PoolCase {
  Shape shape;
  test::PoolReferenceParams p;
  std::string auto_pad;  // when set, p.pads holds the padding it implies (worked out by hand)
};

std::vector<PoolCase> pool_cases() {
  return {
      {{2, 3, 9, 10}, {{3, 3}, {2, 2}, {}, {1, 1, 1, 1}, false, false}, ""},
      {{2, 3, 9, 10}, {{3, 3}, {2, 2}, {}, {1, 1, 1, 1}, false, true}, ""},
      {{1, 2, 9, 10}, {{3, 2}, {1, 1}, {2, 1}, {0, 0, 0, 0}, false, false}, ""},       // dilations
      {{1, 2, 8, 8}, {{3, 3}, {2, 2}, {}, {0, 0, 0, 0}, true, false}, ""},             // ceil_mode
      {{1, 2, 8, 8}, {{3, 3}, {2, 2}, {}, {1, 1, 1, 1}, true, true}, ""},              // ceil + include
      {{1, 1, 5, 5}, {{2, 2}, {2, 2}, {}, {1, 0, 0, 1}, true, true}, ""},              // asymmetric pads
      {{1, 3, 7, 9}, {{2, 3}, {1, 2}, {}, {0, 1, 1, 1}, false, false}, "SAME_UPPER"},  // out 7x5
      {{1, 3, 7, 9}, {{2, 3}, {1, 2}, {}, {1, 1, 0, 1}, false, true}, "SAME_LOWER"},   // out 7x5
      {{1, 3, 7, 9}, {{2, 3}, {2, 2}, {}, {0, 0, 0, 0}, false, false}, "VALID"},
      {{2, 3, 17}, {{4}, {3}, {}, {2, 1}, false, false}, ""},                              // 1-D
      {{1, 2, 5, 6, 7}, {{2, 3, 2}, {1, 2, 2}, {}, {0, 1, 0, 1, 1, 0}, false, true}, ""},  // 3-D
      {{2, 4, 33, 31}, {{3, 3}, {2, 2}, {}, {1, 1, 1, 1}, false, false}, ""},              // larger
  };
}

ops::NodeInfo pool_node(const std::string& op, int opset, const PoolCase& c) {
  ops::NodeInfo n = node(op, opset);
  n.attributes.set("kernel_shape", c.p.kernel);
  if (!c.p.strides.empty()) n.attributes.set("strides", c.p.strides);
  if (!c.p.dilations.empty()) n.attributes.set("dilations", c.p.dilations);
  if (c.auto_pad.empty()) {
    n.attributes.set("pads", c.p.pads);
  } else {
    n.attributes.set("auto_pad", c.auto_pad);
  }
  if (c.p.ceil_mode) n.attributes.set("ceil_mode", int64_t{1});
  if (c.p.count_include_pad) n.attributes.set("count_include_pad", int64_t{1});
  return n;
}

TEST(PoolWindow, MaxAndAverageMatchFloat64Reference) {
  uint64_t seed = 1;
  for (const PoolCase& c : pool_cases()) {
    const Tensor x = test::random_tensor(c.shape, ++seed, -3, 3);
    const std::string what = shape_to_string(c.shape) + " kernel " + shape_to_string(c.p.kernel) + " pads " +
                             shape_to_string(c.p.pads) + " " + c.auto_pad + (c.p.ceil_mode ? " ceil" : "") +
                             (c.p.count_include_pad ? " include_pad" : "");
    for (bool is_max : {true, false}) {
      // MaxPool has no count_include_pad; AveragePool has dilations from opset 19 only.
      if (is_max && c.p.count_include_pad) continue;
      const int opset = is_max ? 12 : 19;
      const auto out = runtime::run_node(
          test::device(), pool_node(is_max ? "MaxPool" : "AveragePool", opset, c), Inputs{NodeInput{x}});
      const auto ref = test::pool_reference(x, is_max, c.p);
      EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values,
                                  is_max ? test::Tolerance([](double) { return 0.0; }) : tight()))
          << (is_max ? "MaxPool " : "AveragePool ") << what;
    }
  }
}

TEST(PoolWindow, MaxPoolIndicesInBothStorageOrders) {
  const PoolCase c{{2, 3, 7, 6}, {{3, 2}, {2, 2}, {}, {1, 0, 1, 1}, false, false}, ""};
  const Tensor x = test::random_tensor(c.shape, 77, -3, 3);
  const auto ref = test::pool_reference(x, true, c.p);
  for (int64_t order : {0, 1}) {
    ops::NodeInfo n = pool_node("MaxPool", 12, c);
    n.attributes.set("storage_order", order);
    n.output_names = {"y", "indices"};
    const auto out = runtime::run_node(test::device(), n, Inputs{NodeInput{x}});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, [](double) { return 0.0; }));
    ASSERT_EQ(out[1].dtype(), DType::Int64);
    ASSERT_EQ(out[1].shape(), ref.shape);
    const int64_t h = c.shape[2], w = c.shape[3], plane = h * w;
    for (size_t i = 0; i < ref.indices.size(); ++i) {
      int64_t want = ref.indices[i];
      if (order == 1) {  // column major within each (n, c) plane
        const int64_t within = want % plane;
        want = want - within + (within % w) * h + within / w;
      }
      ASSERT_EQ(out[1].data<int64_t>()[i], want) << "element " << i << " storage_order " << order;
    }
  }
}

TEST(PoolWindow, MaxPoolOnInt8AndUInt8IsExact) {
  const PoolCase c{{1, 2, 6, 7}, {{3, 3}, {2, 2}, {}, {1, 1, 1, 1}, false, false}, ""};
  Tensor u8(DType::UInt8, c.shape), i8(DType::Int8, c.shape);
  for (int64_t i = 0; i < u8.element_count(); ++i) {
    u8.data<uint8_t>()[static_cast<size_t>(i)] = static_cast<uint8_t>((i * 97) % 256);
    i8.data<int8_t>()[static_cast<size_t>(i)] = static_cast<int8_t>((i * 97) % 256 - 128);
  }
  for (const Tensor* x : {&u8, &i8}) {
    const auto out = runtime::run_node(test::device(), pool_node("MaxPool", 12, c), Inputs{NodeInput{*x}});
    const auto ref = test::pool_reference(*x, true, c.p);
    ASSERT_EQ(out[0].dtype(), x->dtype());
    ASSERT_EQ(out[0].shape(), ref.shape);
    for (size_t i = 0; i < ref.values.size(); ++i) {
      const double got = x->dtype() == DType::UInt8 ? out[0].data<uint8_t>()[i] : out[0].data<int8_t>()[i];
      ASSERT_EQ(got, ref.values[i]) << dtype_name(x->dtype()) << " element " << i;
    }
  }
}

TEST(PoolWindow, OlderOpsetsUseTheDefaults) {
  // MaxPool 1 / AveragePool 7: no dilations, no ceil_mode; the same windows.
  const PoolCase c{{1, 2, 6, 6}, {{2, 2}, {2, 2}, {}, {0, 0, 0, 0}, false, false}, ""};
  const Tensor x = test::random_tensor(c.shape, 5);
  for (const auto& [op, opset] :
       {std::pair{"MaxPool", 1}, std::pair{"MaxPool", 8}, std::pair{"AveragePool", 7}}) {
    const auto out = runtime::run_node(test::device(), pool_node(op, opset, c), Inputs{NodeInput{x}});
    const auto ref = test::pool_reference(x, std::string(op) == "MaxPool", c.p);
    EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, tight())) << op << " " << opset;
  }
}

TEST(PoolWindow, Errors) {
  const Tensor x = test::random_tensor({1, 2, 5, 5}, 1);
  ops::NodeInfo n = node("MaxPool", 12);
  EXPECT_NE(run_error(n, Inputs{NodeInput{x}}).find("kernel_shape"), std::string::npos);
  n.attributes.set("kernel_shape", std::vector<int64_t>{2, 2});
  EXPECT_NE(run_error(n, Inputs{NodeInput{test::random_tensor({1, 1, 2, 2, 2, 2}, 2)}}).find("3-D"),
            std::string::npos);
  n.attributes.set("auto_pad", std::string("SAME_UPPER"));
  n.attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  EXPECT_NE(run_error(n, Inputs{NodeInput{x}}).find("only one"), std::string::npos);
  ops::NodeInfo big = node("MaxPool", 12);
  big.attributes.set("kernel_shape", std::vector<int64_t>{7, 7});
  EXPECT_NE(run_error(big, Inputs{NodeInput{x}}).find("smaller than the dilated kernel"), std::string::npos);
  ops::NodeInfo avg = node("AveragePool", 11);
  avg.attributes.set("kernel_shape", std::vector<int64_t>{2, 2});
  const std::string e = run_error(avg, Inputs{NodeInput{Tensor(DType::UInt8, {1, 1, 4, 4})}});
  EXPECT_NE(e.find("uint8"), std::string::npos) << e;
  EXPECT_NE(e.find("'pool_under_test'"), std::string::npos) << e;
}

TEST(PoolGlobal, AverageAndMaxOverAllSpatialAxes) {
  uint64_t seed = 40;
  for (const Shape& shape : {Shape{2, 3, 7, 7}, Shape{1, 16, 30, 30}, Shape{2, 5, 9}, Shape{1, 3, 2, 3, 4}}) {
    const Tensor x = test::random_tensor(shape, ++seed, -2, 2);
    for (bool is_max : {false, true}) {
      const auto out = runtime::run_node(
          test::device(), node(is_max ? "GlobalMaxPool" : "GlobalAveragePool", 1), Inputs{NodeInput{x}});
      test::PoolReferenceParams p;
      p.kernel.assign(shape.begin() + 2, shape.end());
      const auto ref = test::pool_reference(x, is_max, p);
      int64_t n = 1;
      for (size_t i = 2; i < shape.size(); ++i) n *= shape[i];
      EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values,
                                  [n](double r) { return 1e-5 * std::sqrt(double(n)) * (1 + std::abs(r)); }))
          << (is_max ? "GlobalMaxPool " : "GlobalAveragePool ") << shape_to_string(shape);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Resize / Upsample

struct ResizeRun {
  ops::NodeInfo n;
  Inputs inputs;
};

// Resize 13+ with scales (or sizes when `sizes` is non-empty).
ResizeRun resize13(const Tensor& x, const std::string& mode, const std::string& coord,
                   const std::vector<float>& scales, const std::vector<int64_t>& sizes = {}, int opset = 13) {
  ResizeRun r{node("Resize", opset), {NodeInput{x}, std::nullopt}};
  r.n.attributes.set("mode", mode);
  r.n.attributes.set("coordinate_transformation_mode", coord);
  if (sizes.empty()) {
    r.inputs.push_back(NodeInput{floats(scales), true});
  } else {
    r.inputs.push_back(std::nullopt);
    r.inputs.push_back(NodeInput{int64s(sizes), true});
  }
  return r;
}

test::ResizeReferenceParams reference_params(const Tensor& x, const std::string& mode,
                                             const std::string& coord, const std::vector<float>& scales,
                                             const std::vector<int64_t>& sizes) {
  test::ResizeReferenceParams p;
  p.mode = mode;
  p.coordinate_transformation_mode = coord;
  for (size_t i = 0; i < x.shape().size(); ++i) {
    const auto in = static_cast<double>(x.shape()[i]);
    if (sizes.empty()) {
      p.scales.push_back(scales[i]);
      p.output.push_back(static_cast<int64_t>(std::floor(in * double(scales[i]))));
    } else {
      p.scales.push_back(static_cast<double>(sizes[i]) / in);
      p.output.push_back(sizes[i]);
    }
  }
  return p;
}

TEST(PoolResize, NearestRoundingAndCoordinateModes) {
  const Tensor x = test::random_tensor({2, 3, 5, 7}, 61);
  uint64_t case_index = 0;
  for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    for (const char* coord :
         {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"}) {
      for (const auto& [scales, sizes] :
           {std::pair{std::vector<float>{1, 1, 2.0f, 1.5f}, std::vector<int64_t>{}},
            std::pair{std::vector<float>{1, 1, 0.6f, 0.45f}, std::vector<int64_t>{}},
            std::pair{std::vector<float>{}, std::vector<int64_t>{2, 3, 9, 4}},
            std::pair{std::vector<float>{}, std::vector<int64_t>{1, 2, 5, 13}}}) {
        ++case_index;
        ResizeRun r = resize13(x, "nearest", coord, scales, sizes);
        r.n.attributes.set("nearest_mode", std::string(nearest));
        const auto out = runtime::run_node(test::device(), r.n, r.inputs);
        auto p = reference_params(x, "nearest", coord, scales, sizes);
        p.nearest_mode = nearest;
        // Sizes on N and C: nearest resizes every axis.
        const auto ref = test::resize_reference(x, p);
        EXPECT_TRUE(test::all_close(out[0], p.output, ref, [](double) { return 0.0; }))
            << nearest << " " << coord << " scales " << testing::PrintToString(scales) << " sizes "
            << shape_to_string(sizes);
      }
    }
  }
}

TEST(PoolResize, LinearAndCubicMatchOnnxReference) {
  const Tensor x = test::random_tensor({2, 2, 6, 7}, 62);
  for (const char* mode : {"linear", "cubic"}) {
    for (const char* coord : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"}) {
      for (const auto& [scales, sizes] :
           {std::pair{std::vector<float>{1, 1, 2.0f, 2.0f}, std::vector<int64_t>{}},
            std::pair{std::vector<float>{1, 1, 0.5f, 1.7f}, std::vector<int64_t>{}},
            std::pair{std::vector<float>{1, 1, 0.8f, 0.6f}, std::vector<int64_t>{}},
            std::pair{std::vector<float>{}, std::vector<int64_t>{2, 2, 1, 11}},
            std::pair{std::vector<float>{}, std::vector<int64_t>{2, 2, 13, 3}}}) {
        ResizeRun r = resize13(x, mode, coord, scales, sizes);
        const auto out = runtime::run_node(test::device(), r.n, r.inputs);
        const auto p = reference_params(x, mode, coord, scales, sizes);
        EXPECT_TRUE(test::all_close(out[0], p.output, test::resize_reference(x, p), tight()))
            << mode << " " << coord << " scales " << testing::PrintToString(scales) << " sizes "
            << shape_to_string(sizes);
      }
    }
  }
  // Cubic with A = -0.5 and exclude_outside.
  for (const std::vector<float>& scales :
       {std::vector<float>{1, 1, 2.0f, 2.0f}, std::vector<float>{1, 1, 0.8f, 0.8f}}) {
    ResizeRun r = resize13(x, "cubic", "half_pixel", scales);
    r.n.attributes.set("cubic_coeff_a", -0.5f);
    r.n.attributes.set("exclude_outside", int64_t{1});
    const auto out = runtime::run_node(test::device(), r.n, r.inputs);
    auto p = reference_params(x, "cubic", "half_pixel", scales, {});
    p.cubic_coeff_a = -0.5;
    p.exclude_outside = true;
    EXPECT_TRUE(test::all_close(out[0], p.output, test::resize_reference(x, p), tight()))
        << testing::PrintToString(scales);
  }
}

TEST(PoolResize, TfCropAndResizeExtrapolates) {
  const Tensor x = test::random_tensor({1, 2, 6, 6}, 63);
  for (const char* mode : {"linear", "nearest"}) {
    ResizeRun r{node("Resize", 13),
                {NodeInput{x}, NodeInput{floats({0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f}), true}, std::nullopt,
                 NodeInput{int64s({1, 2, 4, 5}), true}}};
    r.n.attributes.set("mode", std::string(mode));
    r.n.attributes.set("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
    r.n.attributes.set("extrapolation_value", 10.0f);
    const auto out = runtime::run_node(test::device(), r.n, r.inputs);
    auto p = reference_params(x, mode, "tf_crop_and_resize", {}, {1, 2, 4, 5});
    p.roi = {0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7};
    for (double& v : p.roi) v = static_cast<float>(v);
    p.extrapolation_value = 10;
    EXPECT_TRUE(test::all_close(out[0], p.output, test::resize_reference(x, p), tight())) << mode;
  }
}

TEST(PoolResize, OpsetFormsUpsampleAndResize10) {
  const Tensor x = test::random_tensor({1, 2, 3, 4}, 64);
  // Upsample 7 (scales attribute), Upsample 9 and Resize 10 (scales input): asymmetric, nearest rounds down.
  for (const char* mode : {"nearest", "linear"}) {
    auto p = reference_params(x, mode, "asymmetric", {1, 1, 2, 2.5f}, {});
    p.nearest_mode = "floor";
    const auto ref = test::resize_reference(x, p);
    ops::NodeInfo u7 = node("Upsample", 7);
    u7.attributes.set("mode", std::string(mode));
    u7.attributes.set("scales", std::vector<float>{1, 1, 2, 2.5f});
    EXPECT_TRUE(test::all_close(runtime::run_node(test::device(), u7, Inputs{NodeInput{x}})[0], p.output, ref,
                                tight()))
        << "Upsample 7 " << mode;
    for (const auto& [op, opset] : {std::pair{"Upsample", 9}, std::pair{"Resize", 10}}) {
      ops::NodeInfo n = node(op, opset);
      n.attributes.set("mode", std::string(mode));
      const auto out = runtime::run_node(test::device(), n,
                                         Inputs{NodeInput{x}, NodeInput{floats({1, 1, 2, 2.5f}), true}});
      EXPECT_TRUE(test::all_close(out[0], p.output, ref, tight())) << op << " " << opset << " " << mode;
    }
  }
  // Resize 11: roi present (ignored), scales empty, sizes given.
  {
    ResizeRun r{node("Resize", 11),
                {NodeInput{x}, NodeInput{floats({}), true}, NodeInput{floats({}), true},
                 NodeInput{int64s({1, 2, 5, 3}), true}}};
    r.n.attributes.set("mode", std::string("linear"));
    const auto out = runtime::run_node(test::device(), r.n, r.inputs);
    const auto p = reference_params(x, "linear", "half_pixel", {}, {1, 2, 5, 3});
    EXPECT_TRUE(test::all_close(out[0], p.output, test::resize_reference(x, p), tight()));
  }
}

TEST(PoolResize, AxesAndKeepAspectRatioOpset18) {
  const Tensor x = test::random_tensor({2, 3, 4, 6}, 65);
  // axes [3, 2] with sizes [9, 5]: the same as sizes [2, 3, 5, 9].
  {
    ResizeRun r{node("Resize", 18),
                {NodeInput{x}, std::nullopt, std::nullopt, NodeInput{int64s({9, 5}), true}}};
    r.n.attributes.set("mode", std::string("linear"));
    r.n.attributes.set("axes", std::vector<int64_t>{3, -2});
    const auto out = runtime::run_node(test::device(), r.n, r.inputs);
    const auto p = reference_params(x, "linear", "half_pixel", {}, {2, 3, 5, 9});
    EXPECT_TRUE(test::all_close(out[0], p.output, test::resize_reference(x, p), tight()));
  }
  // keep_aspect_ratio_policy: one scale for H and W, the output rounded half up.
  for (const auto& [policy, scale] :
       {std::pair{"not_larger", 7.0 / 6.0}, std::pair{"not_smaller", 8.0 / 4.0}}) {
    ResizeRun r{node("Resize", 18),
                {NodeInput{x}, std::nullopt, std::nullopt, NodeInput{int64s({8, 7}), true}}};
    r.n.attributes.set("mode", std::string("nearest"));
    r.n.attributes.set("axes", std::vector<int64_t>{2, 3});
    r.n.attributes.set("keep_aspect_ratio_policy", std::string(policy));
    const auto out = runtime::run_node(test::device(), r.n, r.inputs);
    test::ResizeReferenceParams p;
    p.mode = "nearest";
    p.scales = {1, 1, scale, scale};
    p.output = {2, 3, static_cast<int64_t>(std::floor(4 * scale + 0.5)),
                static_cast<int64_t>(std::floor(6 * scale + 0.5))};
    EXPECT_TRUE(test::all_close(out[0], p.output, test::resize_reference(x, p), tight())) << policy;
  }
  // Opset 19's half_pixel_symmetric equals half_pixel when the scaled size is whole.
  {
    ResizeRun r = resize13(x, "linear", "half_pixel_symmetric", {1, 1, 2, 0.5f}, {}, 19);
    const auto out = runtime::run_node(test::device(), r.n, r.inputs);
    const auto p = reference_params(x, "linear", "half_pixel", {1, 1, 2, 0.5f}, {});
    EXPECT_TRUE(test::all_close(out[0], p.output, test::resize_reference(x, p), tight()));
  }
}

TEST(PoolResize, NearestMovesAnyElementType) {
  Tensor x(DType::Int64, {1, 1, 2, 3});
  for (int64_t i = 0; i < 6; ++i) x.data<int64_t>()[static_cast<size_t>(i)] = i * 1000 - 2500;
  ResizeRun r = resize13(x, "nearest", "asymmetric", {1, 1, 2, 2});
  const auto out = runtime::run_node(test::device(), r.n, r.inputs);
  ASSERT_EQ(out[0].dtype(), DType::Int64);
  ASSERT_EQ(out[0].shape(), (Shape{1, 1, 4, 6}));
  for (int64_t i = 0; i < 24; ++i) {
    const int64_t h = i / 6 / 2, w = i % 6 / 2;
    EXPECT_EQ(out[0].data<int64_t>()[static_cast<size_t>(i)], (h * 3 + w) * 1000 - 2500) << i;
  }
  Tensor u8(DType::UInt8, {1, 1, 1, 3});
  u8.data<uint8_t>()[0] = 7;
  u8.data<uint8_t>()[1] = 200;
  u8.data<uint8_t>()[2] = 255;
  ResizeRun ru = resize13(u8, "nearest", "asymmetric", {1, 1, 1, 2});
  const auto ou = runtime::run_node(test::device(), ru.n, ru.inputs);
  EXPECT_EQ(std::vector<uint8_t>(ou[0].data<uint8_t>().begin(), ou[0].data<uint8_t>().end()),
            (std::vector<uint8_t>{7, 7, 200, 200, 255, 255}));
}

TEST(PoolResize, LargerUpsampleWithFoldedGrid) {
  runtime::NodeRunOptions options;
  options.capabilities = test::device().capabilities();
  options.capabilities->limits.max_compute_workgroups_per_dimension = 16;
  const Tensor x = test::random_tensor({1, 3, 20, 24}, 66);
  ResizeRun r = resize13(x, "linear", "half_pixel", {1, 1, 2, 2});
  const auto out = runtime::run_node(test::device(), r.n, r.inputs, options);
  const auto p = reference_params(x, "linear", "half_pixel", {1, 1, 2, 2}, {});
  EXPECT_TRUE(test::all_close(out[0], p.output, test::resize_reference(x, p), tight()));
}

TEST(PoolResize, Errors) {
  const Tensor x = test::random_tensor({1, 2, 3, 4}, 1);
  {
    ResizeRun r = resize13(x, "nearest", "half_pixel", {1, 1, 2, 2});
    r.inputs[2]->constant = false;
    const std::string e = run_error(r.n, r.inputs);
    EXPECT_NE(e.find("scales"), std::string::npos) << e;
    EXPECT_NE(e.find("planned"), std::string::npos) << e;
  }
  {
    ResizeRun r = resize13(x, "linear", "half_pixel", {1, 2, 2, 2});
    EXPECT_NE(run_error(r.n, r.inputs).find("more than two axes"), std::string::npos);
  }
  {
    ResizeRun r = resize13(x, "linear", "half_pixel", {1, 1, 0.5f, 0.5f}, {}, 18);
    r.n.attributes.set("antialias", int64_t{1});
    EXPECT_NE(run_error(r.n, r.inputs).find("antialias"), std::string::npos);
  }
  {
    ResizeRun r = resize13(Tensor(DType::Int64, {1, 1, 2, 2}), "linear", "half_pixel", {1, 1, 2, 2});
    EXPECT_NE(run_error(r.n, r.inputs).find("int64"), std::string::npos);
  }
  {
    ResizeRun r = resize13(x, "nearest", "half_pixel", {1, 2, 2});
    EXPECT_NE(run_error(r.n, r.inputs).find("3 values"), std::string::npos);
  }
  {
    ResizeRun r{node("Resize", 13),
                {NodeInput{x}, std::nullopt, NodeInput{floats({1, 1, 2, 2}), true},
                 NodeInput{int64s({1, 2, 6, 8}), true}}};
    EXPECT_NE(run_error(r.n, r.inputs).find("exactly one"), std::string::npos);
  }
  {
    ResizeRun r = resize13(x, "bicubic", "half_pixel", {1, 1, 2, 2});
    EXPECT_NE(run_error(r.n, r.inputs).find("mode is 'bicubic'"), std::string::npos);
  }
}

}  // namespace
}  // namespace wgi
