// GridSample on the GPU against the float64 reference (support/reference_sampling.h, the ONNX reference's
// definition): every mode x padding x align_corners on 4-D with batch > 1 and unaligned sizes, grids that
// reach past the borders (and far past, for repeated reflection), 3-D and 5-D inputs of opset 20, and the
// errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/float16.h"
#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/reference_sampling.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::NodeInputs;

// The kernel denormalizes in f32 (|position| <= ~20 here: ~2e-6 absolute), then sums <= 64 weighted taps of
// values in [-1, 1]; cubic weights reach ~1.1 in magnitude. 2e-5 covers linear and nearest with room; cubic's
// 16-64 taps get 5e-5.
test::Tolerance tolerance_for(const std::string& mode) {
  const double abs = mode == "cubic" ? 5e-5 : 2e-5;
  return [abs](double r) { return abs + 1e-5 * std::abs(r); };
}

void expect_matches(const Shape& x_shape, const Shape& grid_shape, int opset, const std::string& mode,
                    const std::string& padding, int64_t align_corners, float reach, uint64_t seed) {
  SCOPED_TRACE(shape_to_string(x_shape) + " grid " + shape_to_string(grid_shape) + " opset " +
               std::to_string(opset) + " " + mode + " " + padding + " align_corners " +
               std::to_string(align_corners));
  const Tensor x = test::random_tensor(x_shape, seed);
  const Tensor grid = test::random_tensor(grid_shape, seed + 1, -reach, reach);
  ops::NodeInfo node = test::make_node("GridSample", opset);
  const std::string onnx_mode = opset < 20 && mode != "nearest" ? "bi" + mode : mode;
  node.attributes.set("mode", onnx_mode);
  node.attributes.set("padding_mode", padding);
  node.attributes.set("align_corners", align_corners);
  Shape out_shape = {x_shape[0], x_shape[1]};
  out_shape.insert(out_shape.end(), grid_shape.begin() + 1, grid_shape.end() - 1);
  const auto ref = test::grid_sample_reference(x, grid, mode, padding, align_corners != 0);
  const auto out = runtime::run_node(test::device(), node, NodeInputs{NodeInput{x}, NodeInput{grid}});
  EXPECT_TRUE(test::all_close(out[0], out_shape, ref, tolerance_for(mode)));
}

TEST(GridSample, EveryMode4DMatchesFloat64Reference) {
  uint64_t seed = 100;
  for (const char* mode : {"linear", "nearest", "cubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      for (int64_t align : {0, 1}) {
        expect_matches({2, 3, 5, 7}, {2, 4, 6, 2}, 16, mode, padding, align, 1.3f, seed++);
      }
    }
  }
}

TEST(GridSample, FarOutsideReflectsRepeatedly) {
  for (const char* mode : {"linear", "nearest", "cubic"}) {
    for (int64_t align : {0, 1})
      expect_matches({1, 2, 4, 3}, {1, 5, 3, 2}, 16, mode, "reflection", align, 4.5f, 7);
  }
}

TEST(GridSample, Opset20VolumetricAndOneDimensional) {
  uint64_t seed = 300;
  for (const char* mode : {"linear", "nearest", "cubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      expect_matches({2, 2, 3, 4, 5}, {2, 2, 3, 2, 3}, 20, mode, padding, static_cast<int64_t>(seed % 2),
                     1.2f, seed);
      ++seed;
      expect_matches({2, 3, 9}, {2, 5, 1}, 20, mode, padding, static_cast<int64_t>(seed % 2), 1.2f, seed);
      ++seed;
    }
  }
  // Opset 20's default mode is linear.
  const Tensor x = test::random_tensor({1, 2, 3, 4}, 5);
  const Tensor grid = test::random_tensor({1, 2, 2, 2}, 6);
  const auto out = runtime::run_node(test::device(), test::make_node("GridSample", 20),
                                     NodeInputs{NodeInput{x}, NodeInput{grid}});
  EXPECT_TRUE(test::all_close(out[0], {1, 2, 2, 2},
                              test::grid_sample_reference(x, grid, "linear", "zeros", false),
                              tolerance_for("linear")));
}

// float16 models run through the registry's float32 wrapper (ops/float16.h): the output is float16 again.
TEST(GridSample, Float16InputsThroughTheFloat32Kernel) {
  const Tensor x = ops::narrow_to_float16(test::random_tensor({2, 3, 4, 5}, 11));
  const Tensor grid = ops::narrow_to_float16(test::random_tensor({2, 3, 2, 2}, 12, -1.2f, 1.2f));
  ops::NodeInfo node = test::make_node("GridSample", 16);
  node.attributes.set("mode", std::string("bicubic"));
  const auto out = runtime::run_node(test::device(), node, NodeInputs{NodeInput{x}, NodeInput{grid}});
  ASSERT_EQ(out[0].dtype(), DType::Float16);
  const auto ref =
      test::grid_sample_reference(ops::widen_float16(x), ops::widen_float16(grid), "cubic", "zeros", false);
  // One float16 rounding of the result (2^-11 relative) on top of the float32 kernel's error.
  EXPECT_TRUE(test::all_close(ops::widen_float16(out[0]), {2, 3, 3, 2}, ref,
                              [](double r) { return 1e-4 + std::ldexp(std::abs(r), -11); }));
}

TEST(GridSample, ErrorsNameTheProblem) {
  const Tensor x = test::random_tensor({1, 2, 3, 4}, 1);
  const Tensor grid = test::random_tensor({1, 2, 2, 2}, 2);
  auto error = [&](ops::NodeInfo node, const Tensor& a, const Tensor& b) {
    return test::node_error(node, NodeInputs{NodeInput{a}, NodeInput{b}});
  };
  ops::NodeInfo renamed = test::make_node("GridSample", 16);
  renamed.attributes.set("mode", std::string("linear"));  // opset 20's name
  EXPECT_NE(error(renamed, x, grid).find("'bilinear', 'nearest' or 'bicubic'"), std::string::npos);
  ops::NodeInfo padding = test::make_node("GridSample", 16);
  padding.attributes.set("padding_mode", std::string("wrap"));
  EXPECT_NE(error(padding, x, grid).find("'padding_mode' is 'wrap'"), std::string::npos);
  const std::string bad_grid =
      error(test::make_node("GridSample", 16), x, test::random_tensor({1, 2, 2, 3}, 3));
  EXPECT_NE(bad_grid.find("must be [N, out spatial..., 2]"), std::string::npos) << bad_grid;
  const std::string volume = error(test::make_node("GridSample", 16), test::random_tensor({1, 1, 2, 2, 2}, 4),
                                   test::random_tensor({1, 1, 1, 1, 3}, 5));
  EXPECT_NE(volume.find("rank 4 [N, C, H, W]"), std::string::npos) << volume;
}

}  // namespace
}  // namespace wgi
