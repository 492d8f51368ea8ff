// LRN on the GPU against the float64 definition (support/reference_lrn.h): odd and even window sizes, windows
// wider than the channels, attribute defaults, 1-D to 3-D spatial shapes with batch > 1, and the errors.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/reference_lrn.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::NodeInputs;

TEST(LocalResponseNorm, MatchesFloat64Definition) {
  struct Case {
    Shape shape;
    int64_t size;
    float alpha, beta, bias;
    bool defaults;
  };
  for (const Case& c :
       {Case{{2, 7, 5, 6}, 3, 1e-4f, 0.75f, 1.0f, true}, Case{{3, 16, 9}, 5, 0.02f, 0.5f, 2.0f, false},
        Case{{2, 6, 3, 4, 5}, 4, 0.5f, 0.9f, 1.5f, false}, Case{{2, 3, 11}, 9, 1.0f, 1.0f, 0.5f, false},
        Case{{1, 1, 7}, 1, 3.0f, 0.75f, 1.0f, false}}) {
    SCOPED_TRACE(shape_to_string(c.shape) + " size " + std::to_string(c.size));
    // Values up to 4 so that alpha * square_sum is not negligible next to the bias.
    const Tensor x = test::random_tensor(c.shape, 13 + static_cast<uint64_t>(c.size), -4.0f, 4.0f);
    ops::NodeInfo node = test::make_node("LRN", 13);
    node.attributes.set("size", c.size);
    if (!c.defaults) {
      node.attributes.set("alpha", c.alpha);
      node.attributes.set("beta", c.beta);
      node.attributes.set("bias", c.bias);
    }
    const auto ref = test::lrn_reference(x, c.size, c.alpha, c.beta, c.bias);
    const auto out = runtime::run_node(test::device(), node, NodeInputs{NodeInput{x}});
    // A float32 sum of at most 9 squares, then exp2(-beta * log2(base)): exp2 / log2 are accurate to a few
    // ulp over these magnitudes; 2e-6 relative covers both.
    EXPECT_TRUE(test::all_close(out[0], c.shape, ref, [](double r) { return 1e-30 + 2e-6 * std::abs(r); }));
  }
}

TEST(LocalResponseNorm, ErrorsNameTheProblem) {
  const Tensor x = test::random_tensor({1, 3, 4}, 1);
  const std::string no_size = test::node_error(test::make_node("LRN", 13), NodeInputs{NodeInput{x}});
  EXPECT_NE(no_size.find("'size' is required"), std::string::npos) << no_size;
  ops::NodeInfo bad_bias = test::make_node("LRN", 13);
  bad_bias.attributes.set("size", int64_t{3});
  bad_bias.attributes.set("bias", 0.0f);
  const std::string bias = test::node_error(bad_bias, NodeInputs{NodeInput{x}});
  EXPECT_NE(bias.find("bias > 0"), std::string::npos) << bias;
}

}  // namespace
}  // namespace wgi
