// RoiAlign on the GPU against the float64 reference (support/reference_sampling.h, the ONNX reference's
// definition): avg and max, half_pixel and output_half_pixel (opset 16) and opset 10's behaviour, adaptive
// and fixed sampling ratios, rois partly outside the image, several images; and the errors, at plan time
// and (batch index) at run time.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/reference_sampling.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::NodeInputs;

// Boxes (x1, y1, x2, y2) in [-4, 28) with x2 >= x1 - 1 (some malformed, some outside the 12 x 10 image at
// spatial_scale 0.5).
Tensor random_rois(int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> corner(-4.0f, 28.0f), size(-1.0f, 14.0f);
  std::vector<float> v;
  for (int64_t r = 0; r < count; ++r) {
    const float left = corner(rng), top = corner(rng);
    v.insert(v.end(), {left, top, left + size(rng), top + size(rng)});
  }
  return Tensor::from_vector<float>({count, 4}, v);
}

TEST(RoiAlign, MatchesFloat64Reference) {
  const Tensor x = test::random_tensor({2, 3, 10, 12}, 21);
  const Tensor rois = random_rois(5, 22);
  const Tensor batch = test::ints({0, 1, 1, 0, 1});
  uint64_t round = 0;
  for (int opset : {10, 16}) {
    for (const char* transform : {"half_pixel", "output_half_pixel"}) {
      if (opset == 10 && std::string(transform) == "half_pixel") continue;  // opset 10 is output_half_pixel
      for (const char* mode : {"avg", "max"}) {
        for (int64_t ratio : {0, 2}) {
          for (bool known : {false, true}) {
            SCOPED_TRACE(std::string("opset ") + std::to_string(opset) + " " + transform + " " + mode +
                         " sampling_ratio " + std::to_string(ratio) + (known ? " indices known" : ""));
            ops::NodeInfo node = test::make_node("RoiAlign", opset);
            if (opset >= 16) node.attributes.set("coordinate_transformation_mode", std::string(transform));
            node.attributes.set("mode", std::string(mode));
            node.attributes.set("output_height", int64_t{3});
            node.attributes.set("output_width", int64_t{4 + static_cast<int64_t>(round++ % 2)});
            node.attributes.set("sampling_ratio", ratio);
            node.attributes.set("spatial_scale", 0.5f);
            const int64_t out_w = node.attributes.get_int("output_width", 0);
            const auto ref = test::roi_align_reference(
                x, rois, batch, mode, std::string(transform) == "half_pixel", 3, out_w, ratio, 0.5);
            const auto out = runtime::run_node(
                test::device(), node, NodeInputs{NodeInput{x}, NodeInput{rois}, NodeInput{batch, known}});
            // Each sample is a 4-tap bilinear blend of values in [-1, 1], positions computed in f32 (~1e-6
            // absolute at these coordinates); avg sums <= 64 samples before dividing.
            EXPECT_TRUE(test::all_close(out[0], {5, 3, 3, out_w}, ref,
                                        [](double r) { return 1e-5 + 1e-5 * std::abs(r); }));
          }
        }
      }
    }
  }
}

TEST(RoiAlign, ErrorsNameTheProblem) {
  const Tensor x = test::random_tensor({2, 1, 4, 4}, 1);
  const Tensor rois = random_rois(2, 2);
  const Tensor bad_batch = test::ints({0, 2});
  const std::string known = test::node_error(
      test::make_node("RoiAlign", 16), NodeInputs{NodeInput{x}, NodeInput{rois}, NodeInput{bad_batch, true}});
  EXPECT_NE(known.find("has 2 at element 1, outside [0, 1]"), std::string::npos) << known;
  runtime::PreparedNode prepared(test::device(), test::make_node("RoiAlign", 16),
                                 NodeInputs{NodeInput{x}, NodeInput{rois}, NodeInput{bad_batch}});
  try {
    prepared.run();
    ADD_FAILURE() << "no error for a batch index out of range at run time";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(RoiAlign, opset 16): input 2 holds index 2 at element 1"),
              std::string::npos)
        << e.what();
  }
  ops::NodeInfo mode = test::make_node("RoiAlign", 16);
  mode.attributes.set("mode", std::string("sum"));
  const std::string bad_mode =
      test::node_error(mode, NodeInputs{NodeInput{x}, NodeInput{rois}, NodeInput{test::ints({0, 1})}});
  EXPECT_NE(bad_mode.find("'mode' is 'sum'"), std::string::npos) << bad_mode;
  const std::string shape = test::node_error(
      test::make_node("RoiAlign", 16),
      NodeInputs{NodeInput{x}, NodeInput{test::random_tensor({2, 5}, 3)}, NodeInput{test::ints({0, 1})}});
  EXPECT_NE(shape.find("must be [num_rois, 4]"), std::string::npos) << shape;
}

}  // namespace
}  // namespace wgi
