// Conv and ConvTranspose against float64 references: every kernel (implicit GEMM with each tile and workgroup
// memory configuration, depthwise, direct vec4 with a prepacked weight, direct scalar, the scalar fallback
// for a runtime weight, transposed, 1x1 as GEMM), forced and chosen, kernels 1x1 to 7x7, strides, asymmetric
// padding, dilations, groups and depthwise with channel multipliers, bias or none, batch > 1, auto_pad, 1-D,
// output_padding and output_shape, fused activations, the fallbacks of smaller devices (planned with reduced
// limits, run on this one), forced kernels that cannot run, the routing of the benchmark shapes, and a grid
// past 65535 workgroups. Plan-only checks (errors, uniforms) are in tests/unit/test_conv_plan.cpp. CPU
// adapters are slow: every case here is a few MFLOP at most.
#include <gtest/gtest.h>

#include <cfloat>
#include <optional>
#include <string>
#include <vector>

#include "gpu/large_gpu_capabilities.h"
#include "ops/float16.h"
#include "ops/fused_activation.h"
#include "ops/registry.h"
#include "runtime/node_runner.h"
#include "support/reference_conv.h"
#include "support/reference_elementwise.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using Inputs = std::vector<std::optional<NodeInput>>;
using Ints = std::vector<int64_t>;

struct ConvCase {
  std::string name;
  std::string op = "Conv";
  Shape x;
  Shape w;
  // ONNX attributes; empty (or 0 for group) leaves the attribute out.
  Ints strides = {};
  Ints pads = {};
  Ints dilations = {};
  int64_t group = 0;
  std::string auto_pad = {};
  Ints output_padding = {};
  Ints output_shape = {};
  bool kernel_shape_attribute = false;
  bool bias = true;
  bool constant_weight = true;
  std::string activation = {};  // "", "Relu", "Clip" (clamped to [-0.25, 0.5]), "Gelu" or "GeluTanh"
  // What auto_pad or output_shape must resolve to, as [top, left, bottom, right] (1-D: top = bottom = 0),
  // worked out by hand from the ONNX formulas; unset: the pads attribute.
  std::optional<std::array<int64_t, 4>> resolved_pads = std::nullopt;
  std::string kernel = "conv2d_vec4";  // the kernel the planner must choose (label without suffix)
  std::string forced_kernel = {};      // the wgi.kernel attribute ("gemm", "direct", "implicit_gemm", ...)
  int64_t tile_k = 0;                  // wgi.gemm_tile_k / wgi.gemm_stages, if set
  int64_t stages = 0;
  int64_t depthwise_rows = 0;  // wgi.depthwise_rows, if set
  int64_t split_k = 0;         // wgi.gemm_split_k (the implicit GEMM's K chunks), if set
  // The implicit GEMM split into K chunks (forced or the planner's): its launch, then the reduction's.
  bool expect_split = false;
  // Plan as if the device allowed only this many invocations per workgroup / bytes of workgroup memory (0:
  // its own limits): the fallbacks of smaller devices, run on this one.
  uint32_t invocations = 0;
  uint32_t storage = 0;
};

void PrintTo(const ConvCase& c, std::ostream* os) {
  *os << c.name;
}

uint64_t seed_of(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: stable across standard libraries, unlike std::hash
  for (char ch : name) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

// An ONNX per-axis list as the reference's 2-D (height, width) form.
std::array<int64_t, 2> to_2d(const Ints& v, size_t spatial, int64_t fallback) {
  if (v.empty()) return {fallback, fallback};
  return spatial == 1 ? std::array<int64_t, 2>{fallback, v[0]} : std::array<int64_t, 2>{v[0], v[1]};
}

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, MatchesFloat64Reference) {
  const ConvCase& c = GetParam();
  const bool transposed = c.op == "ConvTranspose";
  const size_t spatial = c.x.size() - 2;
  const int64_t group = c.group ? c.group : 1;
  const int64_t out_channels = transposed ? c.w[1] * group : c.w[0];
  const uint64_t seed = seed_of(c.name);
  Tensor x = test::random_tensor(c.x, seed);
  Tensor w = test::random_tensor(c.w, seed + 1);
  Tensor b = test::random_tensor({out_channels}, seed + 2);

  ops::NodeInfo node{"conv_" + c.name, c.op, "", 17, {}, {}, {}};
  if (!c.strides.empty()) node.attributes.set("strides", c.strides);
  if (!c.pads.empty()) node.attributes.set("pads", c.pads);
  if (!c.dilations.empty()) node.attributes.set("dilations", c.dilations);
  if (c.group) node.attributes.set("group", c.group);
  if (!c.auto_pad.empty()) node.attributes.set("auto_pad", c.auto_pad);
  if (!c.output_padding.empty()) node.attributes.set("output_padding", c.output_padding);
  if (!c.output_shape.empty()) node.attributes.set("output_shape", c.output_shape);
  if (c.kernel_shape_attribute) node.attributes.set("kernel_shape", Ints(c.w.begin() + 2, c.w.end()));
  if (!c.forced_kernel.empty()) node.attributes.set("wgi.kernel", c.forced_kernel);
  if (c.tile_k) node.attributes.set("wgi.gemm_tile_k", c.tile_k);
  if (c.stages) node.attributes.set("wgi.gemm_stages", c.stages);
  if (c.depthwise_rows) node.attributes.set("wgi.depthwise_rows", c.depthwise_rows);
  if (c.split_k) node.attributes.set("wgi.gemm_split_k", c.split_k);
  runtime::NodeRunOptions options;
  options.capabilities = test::device().capabilities();
  // The kernels a GPU gets, also on SwiftShader (whose own routing is tested below).
  options.capabilities->costly_barriers = false;
  if (c.invocations) {
    options.capabilities->limits.max_compute_invocations_per_workgroup = c.invocations;
    options.capabilities->limits.max_compute_workgroup_size_x =
        std::min(options.capabilities->limits.max_compute_workgroup_size_x, c.invocations);
    options.capabilities->limits.max_compute_workgroup_size_y =
        std::min(options.capabilities->limits.max_compute_workgroup_size_y, c.invocations);
  }
  if (c.storage) options.capabilities->limits.max_compute_workgroup_storage_size = c.storage;
  test::ConvReferenceParams p;
  if (!c.activation.empty()) {
    node.attributes.set(ops::kFusedActivationAttribute, c.activation);
    if (c.activation == "Relu") {
      p.lo = 0;
    } else if (c.activation == "Clip") {
      node.attributes.set(ops::kFusedActivationMinAttribute, -0.25f);
      node.attributes.set(ops::kFusedActivationMaxAttribute, 0.5f);
      p.lo = -0.25;
      p.hi = 0.5;
    }
  }
  Inputs inputs = {NodeInput{x}, NodeInput{w, c.constant_weight}};
  if (c.bias) inputs.push_back(NodeInput{b, true});

  ops::OpPlan plan = runtime::plan_node(*options.capabilities, node, inputs);
  ASSERT_EQ(plan.launches.size(), c.expect_split ? 2u : 1u);
  if (c.expect_split) {
    EXPECT_EQ(plan.launches[1].program.label, "gemm_split_reduce");
  }
  // A split's first launch stores raw sums: the reduction applies bias and activation.
  const std::string suffix =
      c.expect_split ? "_splitk" : ops::FusedActivation::from_node(node).label_suffix();
  const std::string& label = plan.launches[0].program.label;
  if (c.kernel.rfind("conv_", 0) == 0) {
    // The new kernels' labels carry their configuration (tile, K slab, threads) before the suffix.
    EXPECT_EQ(label.rfind(c.kernel, 0), 0u) << label;
    EXPECT_TRUE(label.size() >= suffix.size() &&
                label.compare(label.size() - suffix.size(), suffix.size(), suffix) == 0)
        << label;
  } else {
    EXPECT_EQ(label, c.kernel + suffix);
  }

  std::vector<Tensor> out = runtime::run_node(test::device(), node, inputs, options);
  ASSERT_EQ(out.size(), 1u);

  p.groups = group;
  p.strides = to_2d(c.strides, spatial, 1);
  p.dilations = to_2d(c.dilations, spatial, 1);
  p.output_padding = to_2d(c.output_padding, spatial, 0);
  if (c.resolved_pads) {
    p.pads = *c.resolved_pads;
  } else if (!c.pads.empty()) {
    p.pads = spatial == 1 ? std::array<int64_t, 4>{0, c.pads[0], 0, c.pads[1]}
                          : std::array<int64_t, 4>{c.pads[0], c.pads[1], c.pads[2], c.pads[3]};
  }
  test::ConvReference ref = transposed ? test::conv_transpose_reference(x, w, c.bias ? &b : nullptr, p)
                                       : test::conv_reference(x, w, c.bias ? &b : nullptr, p);
  for (double& v : ref.values) v = test::fused_activation_reference(c.activation, v, p.lo, p.hi);
  int64_t terms = (transposed ? c.w[0] : c.w[1] * group) / group;
  for (size_t i = 2; i < c.w.size(); ++i) terms *= c.w[i];
  EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(terms)));
}

std::vector<ConvCase> conv_cases() {
  return {
      // Kernel sizes, strides, padding; input channels per group % 4 == 0 takes the vec4 kernel.
      // 1x1, stride 1, no padding: a GEMM per image; forced onto the direct kernel too.
      {.name = "k1x1",
       .x = {1, 8, 7, 9},
       .w = {16, 8, 1, 1},
       .kernel = "conv1x1_gemm_fast64_k16s2_bkn_bscalar"},
      {.name = "k1x1_batch3_no_bias_odd_channels",
       .x = {3, 5, 6, 7},
       .w = {9, 5, 1, 1},
       .bias = false,
       .kernel = "conv1x1_gemm_tiled_bkn"},
      {.name = "k1x1_direct", .x = {1, 8, 7, 9}, .w = {16, 8, 1, 1}, .forced_kernel = "direct"},
      {.name = "k3x3_pad1", .x = {1, 8, 10, 11}, .w = {8, 8, 3, 3}, .pads = {1, 1, 1, 1}},
      {.name = "k3x3_rgb_stride2",
       .x = {1, 3, 12, 12},
       .w = {8, 3, 3, 3},
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .kernel = "conv2d"},
      {.name = "k5x5_stride2_pad2",
       .x = {1, 4, 13, 13},
       .w = {6, 4, 5, 5},
       .strides = {2, 2},
       .pads = {2, 2, 2, 2}},
      {.name = "k7x7_rgb_stem",
       .x = {1, 3, 20, 19},
       .w = {8, 3, 7, 7},
       .strides = {2, 2},
       .pads = {3, 3, 3, 3},
       .kernel = "conv2d"},
      {.name = "k7x7_vec4_no_pad", .x = {1, 4, 10, 9}, .w = {3, 4, 7, 7}},
      {.name = "stride2x1", .x = {1, 4, 9, 10}, .w = {4, 4, 3, 3}, .strides = {2, 1}, .pads = {1, 1, 1, 1}},
      {.name = "stride2x1_scalar",
       .x = {1, 5, 9, 10},
       .w = {3, 5, 3, 3},
       .strides = {2, 1},
       .kernel = "conv2d"},
      {.name = "asymmetric_pads_3x2_kernel",
       .x = {1, 5, 8, 9},
       .w = {3, 5, 3, 2},
       .pads = {0, 1, 2, 0},
       .kernel = "conv2d"},
      {.name = "asymmetric_pads_vec4",
       .x = {1, 8, 7, 6},
       .w = {4, 8, 3, 3},
       .strides = {2, 2},
       .pads = {2, 0, 1, 3}},
      {.name = "dilation2",
       .x = {1, 8, 12, 12},
       .w = {4, 8, 3, 3},
       .pads = {2, 2, 2, 2},
       .dilations = {2, 2}},
      {.name = "dilation2x1_stride2",
       .x = {1, 2, 11, 11},
       .w = {3, 2, 3, 3},
       .strides = {2, 2},
       .dilations = {2, 1},
       .kernel = "conv2d"},
      {.name = "kernel_shape_attribute",
       .x = {1, 4, 6, 6},
       .w = {2, 4, 3, 3},
       .kernel_shape_attribute = true},
      // Groups.
      {.name = "groups2_vec4", .x = {1, 8, 9, 9}, .w = {6, 4, 3, 3}, .pads = {1, 1, 1, 1}, .group = 2},
      {.name = "groups2_scalar", .x = {1, 6, 9, 9}, .w = {4, 3, 3, 3}, .group = 2, .kernel = "conv2d"},
      {.name = "groups4_vec4_stride2", .x = {1, 16, 8, 8}, .w = {8, 4, 3, 3}, .strides = {2, 2}, .group = 4},
      {.name = "depthwise3x3",
       .x = {1, 8, 10, 10},
       .w = {8, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 8,
       .kernel = "conv_depthwise_rows"},
      {.name = "depthwise_multiplier2_stride2",
       .x = {1, 4, 9, 8},
       .w = {8, 1, 3, 3},
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .kernel = "conv_depthwise_rows"},
      {.name = "depthwise7x7_no_bias",
       .x = {1, 4, 9, 9},
       .w = {4, 1, 7, 7},
       .pads = {3, 3, 3, 3},
       .group = 4,
       .bias = false,
       .kernel = "conv_depthwise_rows"},
      // Bias, batch, and the scalar fallback for a weight that is not a constant.
      {.name = "no_bias_vec4", .x = {1, 4, 6, 7}, .w = {5, 4, 3, 3}, .bias = false},
      {.name = "no_bias_scalar", .x = {1, 2, 6, 7}, .w = {5, 2, 3, 3}, .bias = false, .kernel = "conv2d"},
      {.name = "batch3_vec4", .x = {3, 4, 7, 7}, .w = {4, 4, 3, 3}, .pads = {1, 1, 1, 1}},
      {.name = "batch3_groups_scalar",
       .x = {3, 6, 6, 5},
       .w = {6, 2, 3, 3},
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .group = 3,
       .kernel = "conv2d"},
      {.name = "runtime_weight_scalar",
       .x = {1, 8, 8, 8},
       .w = {8, 8, 3, 3},
       .pads = {1, 1, 1, 1},
       .constant_weight = false,
       .kernel = "conv2d"},
      {.name = "runtime_weight_batch3_groups2",
       .x = {3, 8, 5, 5},
       .w = {4, 4, 3, 3},
       .group = 2,
       .constant_weight = false,
       .kernel = "conv2d"},
      // auto_pad. Height: in 7, k 4, s 2 -> out 4, total pad 3; width: in 8, k 3, s 2 -> out 4, total pad 1.
      {.name = "same_upper",
       .x = {1, 4, 7, 8},
       .w = {4, 4, 4, 3},
       .strides = {2, 2},
       .auto_pad = "SAME_UPPER",
       .resolved_pads = std::array<int64_t, 4>{1, 0, 2, 1}},
      {.name = "same_lower",
       .x = {1, 4, 7, 8},
       .w = {4, 4, 4, 3},
       .strides = {2, 2},
       .auto_pad = "SAME_LOWER",
       .resolved_pads = std::array<int64_t, 4>{2, 1, 1, 0}},
      {.name = "same_upper_dilated_scalar",
       .x = {1, 3, 6, 6},
       .w = {2, 3, 3, 3},
       .dilations = {2, 2},
       .auto_pad = "SAME_UPPER",
       .resolved_pads = std::array<int64_t, 4>{2, 2, 2, 2},
       .kernel = "conv2d"},
      {.name = "valid",
       .x = {1, 4, 9, 8},
       .w = {4, 4, 3, 3},
       .strides = {2, 2},
       .auto_pad = "VALID",
       .resolved_pads = std::array<int64_t, 4>{0, 0, 0, 0}},
      // 1-D: [N, C, L] through the 2-D kernels with unit height.
      {.name = "conv1d_vec4", .x = {2, 4, 20}, .w = {6, 4, 5}, .strides = {2}, .pads = {2, 1}},
      {.name = "conv1d_dilated_scalar",
       .x = {1, 3, 17},
       .w = {4, 3, 3},
       .pads = {1, 1},
       .dilations = {2},
       .kernel = "conv2d"},
      // in 10, k 4, s 1 -> total pad 3.
      {.name = "conv1d_same_upper",
       .x = {1, 4, 10},
       .w = {4, 4, 4},
       .auto_pad = "SAME_UPPER",
       .resolved_pads = std::array<int64_t, 4>{0, 1, 0, 2}},
      // Fused activations.
      {.name = "relu_vec4", .x = {1, 8, 6, 6}, .w = {4, 8, 3, 3}, .pads = {1, 1, 1, 1}, .activation = "Relu"},
      {.name = "clip_scalar",
       .x = {1, 3, 6, 6},
       .w = {4, 3, 3, 3},
       .pads = {1, 1, 1, 1},
       .activation = "Clip",
       .kernel = "conv2d"},
      {.name = "clip_vec4_no_bias",
       .x = {1, 4, 5, 5},
       .w = {4, 4, 1, 1},
       .bias = false,
       .activation = "Clip",
       .forced_kernel = "direct"},
      {.name = "clip_gemm",
       .x = {2, 4, 5, 5},
       .w = {6, 4, 1, 1},
       .activation = "Clip",
       .kernel = "conv1x1_gemm_tiled_bkn"},
  };
}

// The implicit-GEMM kernel forced (and chosen) on aligned and unaligned shapes. Tiles are 64 or 128 output
// channels x pixels and K slabs 16 deep, so channel counts of 5-130, pixel counts that cross images and
// tiles, and K not a multiple of the slab exercise every edge. Each case is under 5 MFLOP.
std::vector<ConvCase> implicit_gemm_cases() {
  const std::string ig = "implicit_gemm";
  return {
      {.name = "auto_3x3_16ch",
       .x = {1, 16, 10, 10},
       .w = {16, 16, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm64_k16s1"},
      {.name = "aligned_3x3",
       .x = {1, 16, 8, 8},
       .w = {16, 16, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm64",
       .forced_kernel = ig},
      {.name = "unaligned_3x3",
       .x = {1, 5, 7, 9},
       .w = {7, 5, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm64",
       .forced_kernel = ig},
      {.name = "tile128_two_row_tiles_two_images",
       .x = {2, 20, 9, 9},
       .w = {130, 20, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm128",
       .forced_kernel = "implicit_gemm128"},
      // The rectangles: 128 channels x 64 pixels (8x4 per thread) and 64 x 128 (4x8), over more than one tile
      // each way, unaligned, two images.
      {.name = "tile128x64_two_row_tiles_two_images",
       .x = {2, 20, 9, 9},
       .w = {130, 20, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm128x64",
       .forced_kernel = "implicit_gemm128x64"},
      {.name = "tile64x128_unaligned_batch2_relu",
       .x = {2, 9, 13, 11},
       .w = {70, 9, 3, 3},
       .strides = {2, 1},
       .pads = {1, 0, 1, 2},
       .activation = "Relu",
       .kernel = "conv_igemm64x128",
       .forced_kernel = "implicit_gemm64x128"},
      {.name = "tile128x64_k8_two_buffers",
       .x = {1, 8, 12, 12},
       .w = {20, 8, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm128x64_k8s2",
       .forced_kernel = "implicit_gemm128x64",
       .tile_k = 8,
       .stages = 2},
      {.name = "tile64_many_tiles",
       .x = {1, 12, 15, 13},
       .w = {70, 12, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm64",
       .forced_kernel = "implicit_gemm64"},
      {.name = "stride2",
       .x = {1, 6, 11, 13},
       .w = {9, 6, 3, 3},
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm64",
       .forced_kernel = ig},
      {.name = "stride2x1_asymmetric_pads",
       .x = {1, 3, 9, 10},
       .w = {5, 3, 3, 3},
       .strides = {2, 1},
       .pads = {1, 0, 1, 2},
       .kernel = "conv_igemm64",
       .forced_kernel = ig},
      {.name = "asymmetric_pads_3x2_kernel",
       .x = {1, 5, 8, 9},
       .w = {18, 5, 3, 2},
       .pads = {0, 1, 2, 0},
       .kernel = "conv_igemm64",
       .forced_kernel = ig},
      {.name = "dilation2",
       .x = {1, 4, 12, 11},
       .w = {6, 4, 3, 3},
       .pads = {2, 2, 2, 2},
       .dilations = {2, 2},
       .kernel = "conv_igemm64",
       .forced_kernel = ig},
      {.name = "dilation2x1_stride2",
       .x = {1, 2, 11, 11},
       .w = {17, 2, 3, 3},
       .strides = {2, 2},
       .dilations = {2, 1},
       .kernel = "conv_igemm64"},
      {.name = "k1x1_batch2",
       .x = {2, 5, 6, 7},
       .w = {9, 5, 1, 1},
       .kernel = "conv_igemm64",
       .forced_kernel = ig},
      {.name = "k1x1_stride2_pad1",
       .x = {1, 8, 7, 8},
       .w = {16, 8, 1, 1},
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm64"},
      {.name = "k5x5_stride2",
       .x = {1, 3, 13, 12},
       .w = {6, 3, 5, 5},
       .strides = {2, 2},
       .pads = {2, 2, 2, 2},
       .kernel = "conv_igemm64",
       .forced_kernel = ig},
      {.name = "k7x7_stem",
       .x = {1, 3, 20, 19},
       .w = {16, 3, 7, 7},
       .strides = {2, 2},
       .pads = {3, 3, 3, 3},
       .kernel = "conv_igemm64_k16s1"},
      {.name = "batch3_no_bias",
       .x = {3, 6, 7, 5},
       .w = {10, 6, 3, 3},
       .pads = {1, 1, 1, 1},
       .bias = false,
       .kernel = "conv_igemm64",
       .forced_kernel = ig},
      {.name = "groups2_unaligned",
       .x = {1, 8, 6, 6},
       .w = {6, 4, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 2,
       .kernel = "conv_igemm64",
       .forced_kernel = ig},
      {.name = "groups3_batch2_auto",
       .x = {2, 6, 5, 7},
       .w = {48, 2, 3, 3},
       .strides = {2, 1},
       .group = 3,
       .kernel = "conv_igemm64"},
      {.name = "depthwise_shape",
       .x = {1, 4, 7, 7},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .kernel = "conv_igemm64",
       .forced_kernel = ig},
      {.name = "conv1d",
       .x = {2, 4, 20},
       .w = {6, 4, 5},
       .strides = {2},
       .pads = {2, 1},
       .kernel = "conv_igemm64",
       .forced_kernel = ig},
      {.name = "relu",
       .x = {1, 8, 6, 6},
       .w = {20, 8, 3, 3},
       .pads = {1, 1, 1, 1},
       .activation = "Relu",
       .kernel = "conv_igemm64"},
      {.name = "clip_tile128",
       .x = {1, 4, 5, 5},
       .w = {9, 4, 3, 3},
       .activation = "Clip",
       .kernel = "conv_igemm128",
       .forced_kernel = "implicit_gemm128"},
      {.name = "gelu",
       .x = {1, 8, 6, 6},
       .w = {20, 8, 3, 3},
       .pads = {1, 1, 1, 1},
       .activation = "Gelu",
       .kernel = "conv_igemm64"},
      // Split K: few tiles over a long K (ResNet's last stages) split on their own; forced splits with more
      // chunks than slabs (empty chunks write zeros), unaligned sizes, batch 2, groups, fused activations.
      {.name = "split_auto_few_tiles_long_k",
       .x = {1, 64, 5, 5},
       .w = {40, 64, 3, 3},
       .pads = {1, 1, 1, 1},
       .activation = "Relu",
       .kernel = "conv_igemm64_k16s1",
       .expect_split = true},
      {.name = "split_forced_more_chunks_than_slabs_batch2",
       .x = {2, 5, 7, 9},
       .w = {18, 5, 3, 3},
       .pads = {1, 0, 1, 2},
       .activation = "Gelu",
       .kernel = "conv_igemm64",
       .forced_kernel = ig,
       .split_k = 5,
       .expect_split = true},
      {.name = "split_forced_groups_tile128_no_bias",
       .x = {1, 8, 6, 6},
       .w = {36, 4, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 2,
       .bias = false,
       .activation = "Clip",
       .kernel = "conv_igemm128",
       .forced_kernel = "implicit_gemm128",
       .split_k = 3,
       .expect_split = true},
      // The GEMM's tuning knobs (K slab, buffers) on the implicit GEMM: every configuration of each tile.
      {.name = "tile128_k8_s2",
       .x = {1, 6, 7, 7},
       .w = {20, 6, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm128_k8s2",
       .forced_kernel = "implicit_gemm128",
       .tile_k = 8,
       .stages = 2},
      {.name = "tile128_k16_s2",
       .x = {1, 6, 7, 7},
       .w = {20, 6, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm128_k16s2",
       .forced_kernel = "implicit_gemm128",
       .tile_k = 16,
       .stages = 2},
      {.name = "tile64_k32_s2",
       .x = {1, 6, 7, 7},
       .w = {20, 6, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm64_k32s2",
       .forced_kernel = "implicit_gemm64",
       .tile_k = 32,
       .stages = 2},
      {.name = "tile64_k16_s2",
       .x = {1, 6, 7, 7},
       .w = {20, 6, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm64_k16s2",
       .forced_kernel = "implicit_gemm64",
       .stages = 2},
      // Fallbacks: a compat device at 128 invocations keeps the direct kernels, and so does a runtime weight.
      {.name = "fallback_128_invocations",
       .x = {1, 16, 6, 6},
       .w = {16, 16, 3, 3},
       .pads = {1, 1, 1, 1},
       .invocations = 128},
      {.name = "fallback_runtime_weight",
       .x = {1, 16, 6, 6},
       .w = {16, 16, 3, 3},
       .pads = {1, 1, 1, 1},
       .constant_weight = false,
       .kernel = "conv2d"},
      {.name = "fallback_small_storage",
       .x = {1, 16, 6, 6},
       .w = {16, 16, 3, 3},
       .pads = {1, 1, 1, 1},
       .storage = 4096},
  };
}

// The depthwise kernel forced (and chosen) across kernel sizes, strides, dilations, pads, channel
// multipliers, planes narrower and wider than one tile, and smaller devices.
std::vector<ConvCase> depthwise_cases() {
  const std::string dw = "depthwise";
  const std::string k = "conv_depthwise";
  return {
      {.name = "k3x3_aligned",
       .x = {1, 8, 16, 16},
       .w = {8, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 8,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "k3x3_unaligned_batch2",
       .x = {2, 3, 7, 9},
       .w = {3, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 3,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "stride2",
       .x = {1, 4, 13, 11},
       .w = {4, 1, 3, 3},
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "stride2x1_asymmetric_pads",
       .x = {1, 3, 9, 10},
       .w = {3, 1, 3, 3},
       .strides = {2, 1},
       .pads = {0, 1, 2, 0},
       .group = 3,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "dilation2",
       .x = {1, 4, 12, 12},
       .w = {4, 1, 3, 3},
       .pads = {2, 2, 2, 2},
       .dilations = {2, 2},
       .group = 4,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "k5x5",
       .x = {1, 4, 11, 11},
       .w = {4, 1, 5, 5},
       .pads = {2, 2, 2, 2},
       .group = 4,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "k7x7_stride2_no_bias",
       .x = {1, 4, 17, 15},
       .w = {4, 1, 7, 7},
       .strides = {2, 2},
       .pads = {3, 3, 3, 3},
       .group = 4,
       .bias = false,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "k1x1", .x = {1, 4, 5, 6}, .w = {4, 1, 1, 1}, .group = 4, .kernel = k, .forced_kernel = dw},
      {.name = "k3x2_no_pad",
       .x = {1, 2, 6, 7},
       .w = {2, 1, 3, 2},
       .group = 2,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "multiplier3_batch3",
       .x = {3, 2, 6, 7},
       .w = {6, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 2,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "wide_plane_three_column_tiles",
       .x = {1, 2, 5, 150},
       .w = {2, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 2,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "tall_plane_many_row_tiles",
       .x = {1, 2, 70, 5},
       .w = {2, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 2,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "runtime_weight",
       .x = {1, 4, 8, 8},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .constant_weight = false,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "conv1d",
       .x = {1, 4, 30},
       .w = {4, 1, 5},
       .pads = {2, 2},
       .group = 4,
       .kernel = k,
       .forced_kernel = dw},
      {.name = "relu",
       .x = {1, 4, 6, 6},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .activation = "Relu",
       .kernel = k,
       .forced_kernel = dw},
      {.name = "clip",
       .x = {1, 4, 6, 6},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .activation = "Clip",
       .kernel = k,
       .forced_kernel = dw},
      // Smaller devices: fewer threads per workgroup, and a window that needs fewer rows to fit.
      {.name = "64_invocations",
       .x = {1, 4, 20, 30},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .kernel = "conv_depthwise_t8x8",
       .forced_kernel = dw,
       .invocations = 64},
      {.name = "small_storage_fewer_rows_and_columns",
       .x = {1, 2, 20, 40},
       .w = {2, 1, 5, 5},
       .pads = {4, 4, 4, 4},
       .dilations = {2, 2},
       .group = 2,
       .kernel = "conv_depthwise_t8x1",
       .forced_kernel = dw,
       .storage = 2048},
      // Beyond the register-window kernel (dilation 5) and the window kernel's workgroup memory.
      {.name = "window_too_large_falls_back_to_direct",
       .x = {1, 2, 32, 40},
       .w = {2, 1, 7, 7},
       .pads = {15, 15, 15, 15},
       .dilations = {5, 5},
       .group = 2,
       .kernel = "conv2d",
       .storage = 1024},
  };
}

// The register-window depthwise kernel (the default for strides up to 2 and kernels up to 7x7) forced across
// its reach: the vec4 path (input and output widths multiples of 4) and the scalar one, every row count, left
// pads that round up to 4 and 8, strides 1 and 2 on either axis, dilations, channel multipliers, batch > 1,
// a runtime weight, 1-D, activations, rows past the plane's end, and a device with 64 invocations.
std::vector<ConvCase> depthwise_rows_cases() {
  const std::string dr = "depthwise_rows";
  return {
      {.name = "k3x3_vec4",
       .x = {1, 8, 16, 16},
       .w = {8, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 8,
       .kernel = "conv_depthwise_rows4_v4_k3x3_s1x1",
       .forced_kernel = dr},
      {.name = "k3x3_scalar_unaligned_batch2",
       .x = {2, 3, 7, 9},
       .w = {3, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 3,
       .kernel = "conv_depthwise_rows4_k3x3",
       .forced_kernel = dr},
      {.name = "rows1_vec4",
       .x = {1, 4, 9, 12},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .kernel = "conv_depthwise_rows1_v4",
       .forced_kernel = dr,
       .depthwise_rows = 1},
      {.name = "rows2_scalar",
       .x = {1, 4, 9, 10},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .kernel = "conv_depthwise_rows2_k",
       .forced_kernel = dr,
       .depthwise_rows = 2},
      {.name = "rows8_rows_past_the_end",
       .x = {1, 4, 13, 8},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .kernel = "conv_depthwise_rows8_v4",
       .forced_kernel = dr,
       .depthwise_rows = 8},
      {.name = "stride2_vec4",
       .x = {1, 4, 16, 16},
       .w = {4, 1, 3, 3},
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .kernel = "conv_depthwise_rows4_v4_k3x3_s2x2",
       .forced_kernel = dr},
      {.name = "stride2_scalar_odd",
       .x = {1, 4, 13, 11},
       .w = {4, 1, 3, 3},
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .kernel = "conv_depthwise_rows4_k3x3_s2x2",
       .forced_kernel = dr},
      {.name = "stride2x1_asymmetric_pads",
       .x = {1, 3, 9, 10},
       .w = {3, 1, 3, 3},
       .strides = {2, 1},
       .pads = {0, 1, 2, 0},
       .group = 3,
       .kernel = "conv_depthwise_rows4_k3x3_s2x1",
       .forced_kernel = dr},
      {.name = "stride1x2_vec4",
       .x = {1, 3, 9, 16},
       .w = {3, 1, 3, 3},
       .strides = {1, 2},
       .pads = {1, 1, 1, 1},
       .group = 3,
       .kernel = "conv_depthwise_rows4_v4_k3x3_s1x2",
       .forced_kernel = dr},
      {.name = "no_left_pad_vec4",
       .x = {1, 2, 8, 12},
       .w = {2, 1, 3, 3},
       .pads = {0, 0, 2, 2},
       .group = 2,
       .kernel = "conv_depthwise_rows4_v4",
       .forced_kernel = dr},
      {.name = "left_pad5_rounds_to_8_vec4",
       .x = {1, 2, 8, 8},
       .w = {2, 1, 7, 7},
       .pads = {5, 5, 1, 1},
       .group = 2,
       .kernel = "conv_depthwise_rows4_v4_k7x7",
       .forced_kernel = dr},
      {.name = "dilation2_vec4",
       .x = {1, 4, 12, 12},
       .w = {4, 1, 3, 3},
       .pads = {2, 2, 2, 2},
       .dilations = {2, 2},
       .group = 4,
       .kernel = "conv_depthwise_rows4_v4",
       .forced_kernel = dr},
      {.name = "dilation4_k5x5_scalar",
       .x = {1, 2, 21, 19},
       .w = {2, 1, 5, 5},
       .pads = {8, 8, 8, 8},
       .dilations = {4, 4},
       .group = 2,
       .kernel = "conv_depthwise_rows4_k5x5",
       .forced_kernel = dr},
      {.name = "k5x5_stride2_vec4",
       .x = {1, 4, 24, 24},
       .w = {4, 1, 5, 5},
       .strides = {2, 2},
       .pads = {2, 2, 2, 2},
       .group = 4,
       .kernel = "conv_depthwise_rows4_v4_k5x5_s2x2",
       .forced_kernel = dr},
      {.name = "k7x7_stride2_no_bias",
       .x = {1, 4, 17, 15},
       .w = {4, 1, 7, 7},
       .strides = {2, 2},
       .pads = {3, 3, 3, 3},
       .group = 4,
       .bias = false,
       .kernel = "conv_depthwise_rows4_k7x7_s2x2",
       .forced_kernel = dr},
      {.name = "k1x1",
       .x = {1, 4, 5, 6},
       .w = {4, 1, 1, 1},
       .group = 4,
       .kernel = "conv_depthwise_rows4_k1x1",
       .forced_kernel = dr},
      {.name = "k3x2_no_pad",
       .x = {1, 2, 6, 7},
       .w = {2, 1, 3, 2},
       .group = 2,
       .kernel = "conv_depthwise_rows4_k3x2",
       .forced_kernel = dr},
      {.name = "multiplier3_batch3_vec4",
       .x = {3, 2, 6, 8},
       .w = {6, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 2,
       .kernel = "conv_depthwise_rows4_v4",
       .forced_kernel = dr},
      {.name = "wide_plane",
       .x = {1, 2, 5, 150},
       .w = {2, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 2,
       .kernel = "conv_depthwise_rows4_k3x3",
       .forced_kernel = dr},
      {.name = "runtime_weight",
       .x = {1, 4, 8, 8},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .constant_weight = false,
       .kernel = "conv_depthwise_rows4_v4",
       .forced_kernel = dr},
      {.name = "conv1d",
       .x = {1, 4, 30},
       .w = {4, 1, 5},
       .pads = {2, 2},
       .group = 4,
       .kernel = "conv_depthwise_rows1_k1x5",
       .forced_kernel = dr},
      {.name = "relu_vec4",
       .x = {1, 4, 6, 8},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .activation = "Relu",
       .kernel = "conv_depthwise_rows4_v4",
       .forced_kernel = dr},
      {.name = "clip_scalar",
       .x = {1, 4, 6, 6},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .activation = "Clip",
       .kernel = "conv_depthwise_rows4_k3x3",
       .forced_kernel = dr},
      {.name = "gelu_tanh_vec4",
       .x = {1, 4, 6, 8},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .activation = "GeluTanh",
       .kernel = "conv_depthwise_rows4_v4",
       .forced_kernel = dr},
      {.name = "64_invocations",
       .x = {1, 4, 20, 32},
       .w = {4, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .kernel = "conv_depthwise_rows4_v4",
       .forced_kernel = dr,
       .invocations = 64},
      // Chosen without forcing: stride 2 and a 7x7 kernel are within reach.
      {.name = "chosen_k7x7_stride2",
       .x = {1, 3, 15, 16},
       .w = {3, 1, 7, 7},
       .strides = {2, 2},
       .pads = {3, 3, 3, 3},
       .group = 3,
       .kernel = "conv_depthwise_rows4_v4_k7x7_s2x2"},
  };
}

std::vector<ConvCase> conv_transpose_cases() {
  const std::string t = "ConvTranspose";
  const std::string k = "conv_transpose2d";
  return {
      {.name = "basic", .op = t, .x = {1, 4, 5, 5}, .w = {4, 3, 3, 3}, .kernel = k},
      {.name = "stride2_pads1_output_padding1",
       .op = t,
       .x = {1, 4, 5, 6},
       .w = {4, 2, 3, 3},
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .output_padding = {1, 1},
       .kernel = k},
      {.name = "groups2_stride2",
       .op = t,
       .x = {1, 6, 5, 5},
       .w = {6, 2, 3, 3},
       .strides = {2, 2},
       .group = 2,
       .kernel = k},
      {.name = "dilation2_asymmetric_pads",
       .op = t,
       .x = {1, 3, 5, 5},
       .w = {3, 2, 3, 3},
       .strides = {2, 2},
       .pads = {1, 2, 0, 1},
       .dilations = {2, 2},
       .kernel = k},
      {.name = "dilation2_output_padding_below_dilation",
       .op = t,
       .x = {1, 2, 4, 4},
       .w = {2, 2, 3, 3},
       .dilations = {2, 2},
       .output_padding = {1, 1},
       .kernel = k},
      {.name = "depthwise_upsample4x4",
       .op = t,
       .x = {1, 4, 6, 6},
       .w = {4, 1, 4, 4},
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .group = 4,
       .kernel = k},
      {.name = "stride2x1_output_padding_batch2",
       .op = t,
       .x = {2, 3, 4, 5},
       .w = {3, 4, 3, 2},
       .strides = {2, 1},
       .output_padding = {1, 0},
       .kernel = k},
      {.name = "no_bias_runtime_weight",
       .op = t,
       .x = {1, 4, 4, 4},
       .w = {4, 2, 2, 2},
       .strides = {2, 2},
       .bias = false,
       .constant_weight = false,
       .kernel = k},
      {.name = "k5x5_stride3",
       .op = t,
       .x = {1, 2, 3, 4},
       .w = {2, 3, 5, 5},
       .strides = {3, 3},
       .pads = {2, 2, 2, 2},
       .kernel = k},
      // auto_pad: in 3, k 3, s 2 -> output 6 of a full 7, total pad 1 (SAME_UPPER pads at the end).
      {.name = "same_upper",
       .op = t,
       .x = {1, 2, 3, 3},
       .w = {2, 2, 3, 3},
       .strides = {2, 2},
       .auto_pad = "SAME_UPPER",
       .resolved_pads = std::array<int64_t, 4>{0, 0, 1, 1},
       .kernel = k},
      {.name = "same_lower",
       .op = t,
       .x = {1, 2, 3, 3},
       .w = {2, 2, 3, 3},
       .strides = {2, 2},
       .auto_pad = "SAME_LOWER",
       .resolved_pads = std::array<int64_t, 4>{1, 1, 0, 0},
       .kernel = k},
      {.name = "valid",
       .op = t,
       .x = {1, 2, 4, 4},
       .w = {2, 2, 2, 2},
       .strides = {2, 2},
       .auto_pad = "VALID",
       .resolved_pads = std::array<int64_t, 4>{0, 0, 0, 0},
       .kernel = k},
      // output_shape past the full output (ONNX's test_convtranspose_output_shape): extra rows at the end.
      {.name = "output_shape_larger",
       .op = t,
       .x = {1, 1, 3, 3},
       .w = {1, 2, 3, 3},
       .strides = {3, 2},
       .output_shape = {10, 8},
       .resolved_pads = std::array<int64_t, 4>{0, 0, -1, -1},
       .kernel = k},
      // Full 9x9; output_shape 8x7 -> total pad 1 (height) and 2 (width), the odd one at the beginning.
      {.name = "output_shape_smaller",
       .op = t,
       .x = {1, 2, 4, 4},
       .w = {2, 3, 3, 3},
       .strides = {2, 2},
       .pads = {5, 5, 5, 5},
       .output_shape = {1, 3, 8, 7},
       .resolved_pads = std::array<int64_t, 4>{1, 1, 0, 1},
       .kernel = k},
      {.name = "conv_transpose1d",
       .op = t,
       .x = {2, 4, 7},
       .w = {4, 2, 4},
       .strides = {2},
       .pads = {1, 1},
       .kernel = k},
      {.name = "relu",
       .op = t,
       .x = {1, 4, 4, 4},
       .w = {4, 2, 3, 3},
       .strides = {2, 2},
       .activation = "Relu",
       .kernel = k},
      {.name = "clip_groups2",
       .op = t,
       .x = {1, 4, 4, 4},
       .w = {4, 1, 3, 3},
       .strides = {2, 2},
       .group = 2,
       .activation = "Clip",
       .kernel = k},
  };
}

// ---- Heavy: model-sized convs (scripts/test --heavy, or on the GPU) ----
// ResNet / DaViT-like layers, each new kernel forced, against the float64 reference: tiles full in both
// dimensions, many K slabs, many workgroups.
std::vector<ConvCase> heavy_cases() {
  // The implicit GEMM's tiles unsplit (split_k 1: these shapes would split on their own), then a DaViT-like
  // downsampling conv and ResNet-50's layer4 3x3 conv, which split into 3 and 18 chunks.
  return {
      {.name = "igemm128_3x3_128ch_28x28_batch2",
       .x = {2, 128, 28, 28},
       .w = {128, 128, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm128",
       .forced_kernel = "implicit_gemm128",
       .split_k = 1},
      {.name = "igemm128x64_3x3_128ch_28x28_batch2",
       .x = {2, 128, 28, 28},
       .w = {128, 128, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm128x64",
       .forced_kernel = "implicit_gemm128x64",
       .split_k = 1},
      {.name = "igemm64x128_3x3_64ch_28x28_batch2",
       .x = {2, 64, 28, 28},
       .w = {64, 64, 3, 3},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm64x128",
       .forced_kernel = "implicit_gemm64x128",
       .split_k = 1},
      {.name = "igemm64_3x3_s2_64to128_batch2",
       .x = {2, 64, 56, 56},
       .w = {128, 64, 3, 3},
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .activation = "Relu",
       .kernel = "conv_igemm64",
       .forced_kernel = "implicit_gemm64",
       .split_k = 1},
      {.name = "igemm_stem_7x7_s2",
       .x = {1, 3, 112, 112},
       .w = {64, 3, 7, 7},
       .strides = {2, 2},
       .pads = {3, 3, 3, 3},
       .kernel = "conv_igemm64",
       .forced_kernel = "implicit_gemm"},
      // DaViT's downsampling convs' rule (144 tiles of 64 over K = 2304: 3 chunks), partial last column tile.
      {.name = "igemm_split_davit_like_3x3_s2_256to512",
       .x = {1, 256, 66, 66},
       .w = {512, 256, 3, 3},
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .kernel = "conv_igemm64_k16s1",
       .expect_split = true},
      {.name = "igemm_split_resnet_layer4_3x3_512ch_7x7",
       .x = {1, 512, 7, 7},
       .w = {512, 512, 3, 3},
       .pads = {1, 1, 1, 1},
       .activation = "Relu",
       .kernel = "conv_igemm64_k16s1",
       .expect_split = true},
      {.name = "depthwise_3x3_64ch_56x56_batch2",
       .x = {2, 64, 56, 56},
       .w = {64, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 64,
       .kernel = "conv_depthwise",
       .forced_kernel = "depthwise"},
      {.name = "depthwise_rows_3x3_64ch_56x56_batch2",
       .x = {2, 64, 56, 56},
       .w = {64, 1, 3, 3},
       .pads = {1, 1, 1, 1},
       .group = 64,
       .kernel = "conv_depthwise_rows4_v4",
       .forced_kernel = "depthwise_rows"},
      {.name = "depthwise_7x7_s2_32ch",
       .x = {1, 32, 57, 57},
       .w = {32, 1, 7, 7},
       .strides = {2, 2},
       .pads = {3, 3, 3, 3},
       .group = 32,
       .kernel = "conv_depthwise",
       .forced_kernel = "depthwise"},
  };
}

std::string case_name(const ::testing::TestParamInfo<ConvCase>& param_info) {
  return param_info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Conv, ConvTest, ::testing::ValuesIn(conv_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(ConvImplicitGemm, ConvTest, ::testing::ValuesIn(implicit_gemm_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(ConvHeavy, ConvTest, ::testing::ValuesIn(heavy_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(ConvDepthwise, ConvTest, ::testing::ValuesIn(depthwise_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(ConvDepthwiseRows, ConvTest, ::testing::ValuesIn(depthwise_rows_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(ConvTranspose, ConvTest, ::testing::ValuesIn(conv_transpose_cases()), case_name);

// 1x1 conv with 4 * 1030 * 1030 > 65535 * 64 outputs: the grid must fold into 2-D and every element be
// written (run_node poisons the output first).
TEST(ConvLargeGrid, FoldsPast65535Workgroups) {
  Tensor x = test::random_tensor({1, 1, 1030, 1030}, 71);
  Tensor w = test::random_tensor({4, 1, 1, 1}, 72);
  Tensor b = test::random_tensor({4}, 73);
  ops::NodeInfo node{"big_conv", "Conv", "", 17, {}, {}, {}};
  node.attributes.set("wgi.kernel", std::string("direct"));  // a 1x1 conv would otherwise be a GEMM
  Inputs inputs = {NodeInput{x}, NodeInput{w, true}, NodeInput{b, true}};
  ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), node, inputs);
  ASSERT_EQ(plan.launches.size(), 1u);
  const gpu::WorkgroupCount groups = plan.launches[0].groups;
  const uint32_t max_per_dim = test::device().limits().max_compute_workgroups_per_dimension;
  if (max_per_dim <= 65535) {
    EXPECT_GT(groups.y * groups.z, 1u) << "grid " << groups.x << "x" << groups.y;
  }
  std::vector<Tensor> out = runtime::run_node(test::device(), node, inputs);
  const test::ConvReference ref = test::conv_reference(x, w, &b, {});
  EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(1)));
}

TEST(ConvErrors, ReachTheCallerThroughRunNode) {
  ops::NodeInfo node{"bad_conv", "Conv", "", 17, {}, {}, {}};
  node.attributes.set("group", int64_t{3});
  Inputs inputs = {NodeInput{test::random_tensor({1, 4, 5, 5}, 1)},
                   NodeInput{test::random_tensor({3, 1, 3, 3}, 2)}};
  try {
    runtime::run_node(test::device(), node, inputs);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'bad_conv'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("group 3"), std::string::npos) << msg;
  }
}

// A forced kernel that cannot run the problem is an error saying why, never a fallback.
// The register-window depthwise kernel forced beyond its reach, and its row knob misused.
TEST(ConvForcedKernel, DepthwiseRowsOutsideItsReachIsAnError) {
  auto error_of = [](const std::string& kernel, int64_t stride, int64_t rows) {
    ops::NodeInfo node{"forced", "Conv", "", 17, {}, {}, {}};
    if (!kernel.empty()) node.attributes.set("wgi.kernel", kernel);
    node.attributes.set("group", int64_t{4});
    node.attributes.set("strides", Ints{stride, stride});
    if (rows) node.attributes.set("wgi.depthwise_rows", rows);
    Inputs inputs = {NodeInput{test::random_tensor({1, 4, 12, 12}, 1)},
                     NodeInput{test::random_tensor({4, 1, 3, 3}, 2), true}};
    try {
      runtime::plan_node(test::device().capabilities(), node, inputs);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("depthwise_rows", 3, 0).find("strides up to 2"), std::string::npos);
  EXPECT_NE(error_of("", 3, 4).find("strides up to 2"), std::string::npos);  // the knob forces the kernel
  EXPECT_NE(error_of("depthwise_rows", 1, 3).find("1, 2, 4 or 8"), std::string::npos);
  EXPECT_NE(error_of("depthwise", 1, 4).find("depthwise_rows kernel only"), std::string::npos);
  EXPECT_EQ(error_of("", 3, 0), "no error");  // auto: the window kernel or the direct one takes it
}

TEST(ConvForcedKernel, ImpossibleChoicesAreErrorsNamingWhy) {
  auto error_of = [](const std::string& kernel, const Shape& x, const Shape& w, int64_t group,
                     uint32_t invocations, bool constant_weight, const std::string& op = "Conv") {
    ops::NodeInfo node{"forced", op, "", 17, {}, {}, {}};
    node.attributes.set("wgi.kernel", kernel);
    if (group > 1) node.attributes.set("group", group);
    gpu::Capabilities caps = test::device().capabilities();
    if (invocations) {
      caps.limits.max_compute_invocations_per_workgroup = invocations;
      caps.limits.max_compute_workgroup_size_x = invocations;
    }
    Inputs inputs = {NodeInput{test::random_tensor(x, 1)},
                     NodeInput{test::random_tensor(w, 2), constant_weight}};
    try {
      runtime::plan_node(caps, node, inputs);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("implicit_gemm", {1, 8, 6, 6}, {16, 8, 3, 3}, 1, 128, true).find("256 invocations"),
            std::string::npos);
  EXPECT_NE(error_of("implicit_gemm64", {1, 8, 6, 6}, {16, 8, 3, 3}, 1, 0, false).find("constant weight"),
            std::string::npos);
  EXPECT_NE(error_of("depthwise", {1, 8, 6, 6}, {16, 8, 3, 3}, 1, 0, true).find("group == input channels"),
            std::string::npos);
  EXPECT_NE(
      error_of("depthwise_rows", {1, 8, 6, 6}, {16, 8, 3, 3}, 1, 0, true).find("group == input channels"),
      std::string::npos);
  EXPECT_NE(error_of("gemm", {1, 8, 6, 6}, {16, 8, 3, 3}, 1, 0, true).find("1x1"), std::string::npos);
  EXPECT_NE(error_of("winograd", {1, 8, 6, 6}, {16, 8, 3, 3}, 1, 0, true).find("implicit_gemm"),
            std::string::npos);
  EXPECT_NE(error_of("implicit_gemm", {1, 8, 6, 6}, {8, 4, 3, 3}, 1, 0, true, "ConvTranspose")
                .find("does not run ConvTranspose"),
            std::string::npos);
}

// The planner's choice for the benchmark shapes (bench/bench_ops.cpp, WGI_BENCH_SIZE=large) on the H200's
// limits, on a compat device at 128 invocations and where barriers are costly; planned from descriptions only
// (no GPU, no 25 MB inputs).
TEST(ConvRouting, BenchmarkShapesOnTheH200ACompatDeviceAndSwiftShader) {
  gpu::Capabilities h200 = gpu::default_capabilities();
  h200.limits.max_compute_invocations_per_workgroup = 1024;
  h200.limits.max_compute_workgroup_size_x = 1024;
  h200.limits.max_compute_workgroup_size_y = 1024;
  h200.limits.max_compute_workgroup_storage_size = 49152;
  h200.limits.max_storage_buffer_binding_size = (1ull << 32) - 1;
  h200.limits.max_buffer_size = 1ull << 36;
  gpu::Capabilities compat = h200;
  compat.limits.max_compute_invocations_per_workgroup = 128;
  compat.limits.max_compute_workgroup_size_x = 128;
  compat.limits.max_compute_workgroup_size_y = 128;
  compat.limits.max_compute_workgroup_storage_size = 16384;
  // A device with costly barriers (SwiftShader, with the H200's limits here) takes the direct kernels, except
  // for depthwise convs, whose register-window kernel has no barrier.
  gpu::Capabilities cpu = h200;
  cpu.costly_barriers = true;
  struct Shape7 {
    int64_t n, ic, oc, hw, k, s, g;
    const char* on_h200;
    const char* on_compat;
    const char* on_cpu;
  };
  const Shape7 shapes[] = {
      {8, 256, 256, 56, 3, 1, 1, "conv_igemm128x64_k8s1", "conv2d_vec4", "conv2d_vec4"},
      {8, 256, 64, 56, 1, 1, 1, "conv1x1_gemm_fast", "conv1x1_gemm_tiled", "conv2d_vec4"},
      {8, 128, 256, 56, 3, 2, 1, "conv_igemm64_k16s1", "conv2d_vec4", "conv2d_vec4"},
      {8, 256, 256, 56, 3, 1, 256, "conv_depthwise_rows4_v4_k3x3_s1x1", "conv_depthwise_rows4_v4_k3x3_s1x1",
       "conv_depthwise_rows4_v4_k3x3_s1x1"},
      {8, 3, 64, 224, 7, 2, 1, "conv_igemm64_k16s1", "conv2d", "conv2d"},
  };
  for (const Shape7& b : shapes) {
    for (const auto& [caps, expected] :
         {std::pair{&h200, b.on_h200}, std::pair{&compat, b.on_compat}, std::pair{&cpu, b.on_cpu}}) {
      ops::NodeInfo node{"bench", "Conv", "", 17, {}, {}, {}};
      const int64_t pad = b.k / 2;
      node.attributes.set("pads", Ints{pad, pad, pad, pad});
      node.attributes.set("strides", Ints{b.s, b.s});
      node.attributes.set("group", b.g);
      const Shape w_shape = {b.oc, b.ic / b.g, b.k, b.k};
      std::vector<std::optional<ops::TensorDesc>> descs = {
          ops::TensorDesc{DType::Float32, {b.n, b.ic, b.hw, b.hw}}, ops::TensorDesc{DType::Float32, w_shape},
          ops::TensorDesc{DType::Float32, {b.oc}}};
      const Tensor w(DType::Float32, w_shape), bias(DType::Float32, {b.oc});
      ops::PlanContext ctx{node, descs, {nullptr, &w, &bias}, *caps};
      const ops::OpPlan plan = ops::builtin_registry().find("", "Conv", 17)->handler.plan(ctx);
      ASSERT_EQ(plan.launches.size(), 1u);
      EXPECT_EQ(plan.launches[0].program.label.rfind(expected, 0), 0u)
          << "k" << b.k << " s" << b.s << " g" << b.g << " ic" << b.ic << ": "
          << plan.launches[0].program.label << " (expected " << expected << "...)";
    }
  }
}

// An H200's limits through dawn.node, computing in float16 (planned from descriptions only: no GPU).
gpu::Capabilities float16_compute_caps() {
  gpu::Capabilities f16 = gpu::large_gpu_f16_capabilities();
  f16.f16_compute = true;
  return f16;
}

// A session computing in float16 (gpu::Capabilities::f16_compute: the H200 through dawn.node; no CPU adapter
// here has it, so the kernel itself runs in tests/web/node_f16.mjs there) routes group-1 convs with a
// constant weight, at least a wave of 128x128 output tiles and K (channels x taps) of at least 512 to the
// subgroup-matrix product; smaller grids, shallower K (ResNet-50's stem and its 1x1 convs of 64 or 256
// channels), depthwise convs, computed weights and forced kernels keep their routes. Where the input channels
// are a multiple of 8 the product reads the input as float16 NHWC (`_nhwc`), which a launch before it writes;
// otherwise (12 channels) it gathers from the NCHW input itself.
TEST(ConvRouting, Float16ComputeTakesTheMatrixProductForGroupOneConvs) {
  const gpu::Capabilities f16 = float16_compute_caps();
  struct Case {
    int64_t n, ic, oc, hw, k, s, g;
    bool constant_weight;
    const char* forced;
    const char* expected;
  };
  const Case cases[] = {
      {8, 256, 256, 56, 3, 1, 1, true, "", "gemm_matrix_f16_conv_nhwc"},  // 196 x 2 tiles
      {8, 512, 64, 56, 1, 1, 1, true, "", "gemm_matrix_f16_conv_nhwc"},   // 1x1, 196 tiles, K 512
      {8, 256, 64, 56, 1, 1, 1, true, "", "conv1x1_gemm"},                // K 256
      {8, 3, 64, 224, 7, 2, 1, true, "", "conv_igemm"},                   // the stem: K 147
      {8, 12, 64, 224, 7, 2, 1, true, "", "gemm_matrix_f16_conv"},        // 12 channels (NCHW), K 588
      {2, 64, 24, 190, 3, 1, 1, true, "", "gemm_matrix_f16_conv_nhwc_relu"},
      {1, 256, 64, 56, 1, 1, 1, true, "", "conv1x1_gemm"},  // 25 tiles: less than a wave, no K split
      {8, 512, 512, 7, 3, 1, 1, true, "", "conv_igemm"},    // 4 x 4 tiles
      {8, 256, 256, 56, 3, 1, 256, true, "", "conv_depthwise_rows"},
      {8, 16, 32, 64, 3, 1, 1, false, "", "conv2d"},  // a computed weight
      {8, 16, 32, 64, 3, 1, 1, true, "direct", "conv2d"},
  };
  for (const Case& c : cases) {
    ops::NodeInfo node{"f16", "Conv", "", 17, {}, {}, {}};
    const int64_t pad = c.k / 2;
    node.attributes.set("pads", Ints{pad, pad, pad, pad});
    node.attributes.set("strides", Ints{c.s, c.s});
    node.attributes.set("group", c.g);
    if (*c.forced) node.attributes.set("wgi.kernel", std::string(c.forced));
    if (std::string(c.expected).find("relu") != std::string::npos)
      node.attributes.set("wgi.activation", "Relu");
    const Shape w_shape = {c.oc, c.ic / c.g, c.k, c.k};
    std::vector<std::optional<ops::TensorDesc>> descs = {
        ops::TensorDesc{DType::Float32, {c.n, c.ic, c.hw, c.hw}}, ops::TensorDesc{DType::Float32, w_shape},
        ops::TensorDesc{DType::Float32, {c.oc}}};
    const Tensor w(DType::Float32, w_shape), bias(DType::Float32, {c.oc});
    ops::PlanContext ctx{node, descs, {nullptr, c.constant_weight ? &w : nullptr, &bias}, f16};
    const ops::OpPlan plan = ops::builtin_registry().find("", "Conv", 17)->handler.plan(ctx);
    ASSERT_FALSE(plan.launches.empty());
    const bool nhwc = std::string(c.expected).find("_nhwc") != std::string::npos;
    if (nhwc) {
      ASSERT_EQ(plan.launches.size(), 2u) << c.expected;
      EXPECT_EQ(plan.launches[0].program.label, "conv_nchw_to_nhwc_f16");
    }
    const std::string& label = plan.launches[nhwc ? 1 : 0].program.label;
    EXPECT_EQ(label.rfind(c.expected, 0), 0u) << "k" << c.k << " g" << c.g << " ic" << c.ic << " oc" << c.oc
                                              << ": " << label << " (expected " << c.expected << "...)";
  }
}

// An fp16 file's conv (X and W float16) in a float16-compute session: X is cast to float32 as for every
// float16 op, the weight reaches the matrix product as the file holds it (its halves copied into the padded
// [Kp, Np] constant, never widened), and the product is the conv route's. K's order follows the product's A:
// (kh, kw, c) where it reads the input as NHWC (64 channels), the weight's own (c, kh, kw) otherwise (60).
TEST(ConvRouting, Float16FileConvTakesTheMatrixProductWithItsHalfWeight) {
  const gpu::Capabilities f16 = float16_compute_caps();
  for (const int64_t channels : {64, 60}) {
    SCOPED_TRACE(channels);
    const bool nhwc = channels % 8 == 0;
    ops::NodeInfo node{"fp16_conv", "Conv", "", 17, {}, {}, {}};
    node.attributes.set("pads", Ints{1, 1, 1, 1});
    const Shape w_shape = {40, channels, 3, 3};
    std::vector<std::optional<ops::TensorDesc>> descs = {
        ops::TensorDesc{DType::Float16, {2, channels, 96, 96}}, ops::TensorDesc{DType::Float16, w_shape}};
    Tensor w(DType::Float16, w_shape);
    auto* halves = reinterpret_cast<uint16_t*>(w.bytes().data());
    for (int64_t i = 0; i < w.element_count(); ++i) halves[i] = static_cast<uint16_t>(0x3000 + i % 1000);
    ops::PlanContext ctx{node, descs, {nullptr, &w}, f16};
    const ops::OpPlan plan = ops::builtin_registry().find("", "Conv", 17)->handler.plan(ctx);
    const std::string product_label = nhwc ? "gemm_matrix_f16_conv_nhwc" : "gemm_matrix_f16_conv";
    bool product = false, transform = false;
    for (const auto& launch : plan.launches) {
      product = product || launch.program.label == product_label;
      transform = transform || launch.program.label == "conv_nchw_to_nhwc_f16";
    }
    EXPECT_TRUE(product) << "no " << product_label << " launch among " << plan.launches.size();
    EXPECT_EQ(transform, nhwc);
    // B: [Kp, Np] halves (K = channels * 9 padded to the 64-deep slab, 40 output channels to the 128-wide
    // tile), row k holding W[n, c, kh, kw] for n < 40; no float32 copy of the weight.
    const int64_t k_total = channels * 9, kp = (k_total + 63) / 64 * 64;
    const Tensor* b = nullptr;
    for (const Tensor& c : plan.constants) {
      EXPECT_NE(c.dtype(), DType::Float32) << "a float32 constant: the weight widened?";
      if (c.dtype() == DType::Float16 && c.shape() == Shape{kp, 128}) b = &c;
    }
    ASSERT_NE(b, nullptr);
    const auto* packed = reinterpret_cast<const uint16_t*>(b->bytes().data());
    for (int64_t c : {int64_t{0}, int64_t{5}, channels - 1}) {
      for (int64_t tap : {0, 4, 8}) {
        const int64_t k = nhwc ? tap * channels + c : c * 9 + tap;
        for (int64_t n : {0, 13, 39})
          EXPECT_EQ(packed[k * 128 + n], halves[(n * channels + c) * 9 + tap])
              << c << ", " << tap << ", " << n;
      }
    }
    if (k_total < kp) {
      EXPECT_EQ(packed[k_total * 128], 0u);  // past K (60 channels: 540 of 576 rows)
    }
    EXPECT_EQ(packed[40], 0u);  // past N
  }
}

// A 1-D conv (weight [OC, C, KW]) in a float16-compute session: the same NHWC route, its weight permuted to
// [OC, KW, C] from its own three axes.
TEST(ConvRouting, Float16OneDimensionalConvTakesTheNhwcProduct) {
  const gpu::Capabilities f16 = float16_compute_caps();
  ops::NodeInfo node{"conv1d", "Conv", "", 17, {}, {}, {}};
  node.attributes.set("pads", Ints{4, 4});
  const int64_t channels = 64, taps = 9, out_channels = 256;
  const Shape w_shape = {out_channels, channels, taps};
  std::vector<std::optional<ops::TensorDesc>> descs = {ops::TensorDesc{DType::Float32, {8, channels, 4096}},
                                                       ops::TensorDesc{DType::Float32, w_shape}};
  Tensor w(DType::Float32, w_shape);
  for (int64_t i = 0; i < w.element_count(); ++i) w.data<float>()[i] = static_cast<float>(i % 1999) / 2048.0f;
  ops::PlanContext ctx{node, descs, {nullptr, &w}, f16};
  const ops::OpPlan plan = ops::builtin_registry().find("", "Conv", 17)->handler.plan(ctx);
  ASSERT_EQ(plan.launches.size(), 2u);
  EXPECT_EQ(plan.launches[0].program.label, "conv_nchw_to_nhwc_f16");
  EXPECT_EQ(plan.launches[1].program.label, "gemm_matrix_f16_conv_nhwc");
  const Tensor* b = nullptr;  // [Kp, Np] = [576, 256] halves, row k = tap * C + c
  for (const Tensor& c : plan.constants)
    if (c.dtype() == DType::Float16 && c.shape() == Shape{576, 256}) b = &c;
  ASSERT_NE(b, nullptr);
  const auto* packed = reinterpret_cast<const uint16_t*>(b->bytes().data());
  for (int64_t c : {0, 9, 63})
    for (int64_t t : {0, 5, 8})
      for (int64_t n : {0, 77, 255})
        EXPECT_EQ(packed[(t * channels + c) * 256 + n],
                  ops::float_to_half(w.data<float>()[(n * channels + c) * taps + t]))
            << c << ", " << t << ", " << n;
}

}  // namespace
}  // namespace wgi
