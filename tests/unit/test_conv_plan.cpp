// Conv / ConvTranspose planning without a GPU: kernel routing, the prepacked weight layout, the uniform
// block, one program text for every shape, grid folding, and every validation error naming its parameter;
// and the choose step on its own (choose_conv_algorithm, ops/conv/conv.h), a pure function of the request
// and the device.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ops/conv/conv.h"
#include "ops/fused_activation.h"
#include "ops/registry.h"

namespace wgi {
namespace {

using Ints = std::vector<int64_t>;

gpu::Capabilities caps() {
  gpu::Capabilities c;
  c.limits.max_buffer_size = 1ull << 31;
  c.limits.max_storage_buffer_binding_size = 1ull << 30;
  c.limits.max_uniform_buffer_binding_size = 65536;
  c.limits.max_storage_buffers_per_shader_stage = 8;
  c.limits.max_compute_invocations_per_workgroup = 256;
  c.limits.max_compute_workgroup_size_x = 256;
  c.limits.max_compute_workgroup_size_y = 256;
  c.limits.max_compute_workgroup_size_z = 64;
  c.limits.max_compute_workgroups_per_dimension = 65535;
  return c;
}

ops::NodeInfo node(const char* op, const ops::Attributes& attributes = {}) {
  ops::NodeInfo n{"conv_under_test", op, "", 17, attributes, {}, {}};
  return n;
}

// Plans from descriptions, as the importer would: only constant inputs (the weight unless `constant_weight`
// is false, and the bias) carry values, so huge shapes cost nothing here.
struct PlanInputs {
  std::vector<std::optional<ops::TensorDesc>> descs;
  std::vector<Tensor> constants;  // one per input; an empty Tensor() where the input is not constant
};

PlanInputs inputs(const Shape& x, const Shape& w, std::optional<Shape> b = std::nullopt,
                  bool constant_weight = true) {
  PlanInputs in;
  in.descs = {ops::TensorDesc{DType::Float32, x}, ops::TensorDesc{DType::Float32, w}};
  in.constants = {Tensor(), constant_weight ? Tensor(DType::Float32, w) : Tensor()};
  if (b) {
    in.descs.push_back(ops::TensorDesc{DType::Float32, *b});
    in.constants.push_back(Tensor(DType::Float32, *b));
  }
  return in;
}

ops::OpPlan plan(const ops::NodeInfo& n, const PlanInputs& in) {
  static const gpu::Capabilities capabilities = caps();
  ops::PlanContext ctx{n, in.descs, {}, capabilities};
  for (size_t i = 0; i < in.descs.size(); ++i) {
    const bool constant = i < in.constants.size() && in.constants[i].byte_size() > 0;
    ctx.constant_inputs.push_back(constant ? &in.constants[i] : nullptr);
  }
  const ops::OpRegistry::Entry* entry = ops::builtin_registry().find(n.domain, n.op_type, n.opset);
  if (!entry) throw Error("no handler for " + n.op_type);
  return entry->handler.plan(ctx);
}

std::string plan_error(const ops::NodeInfo& n, const PlanInputs& in) {
  try {
    plan(n, in);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

uint32_t uniform_u32(const ops::KernelLaunch& launch, size_t field) {
  uint32_t v;
  std::memcpy(&v, launch.uniform.data() + 4 * field, 4);
  return v;
}

ops::Attributes attrs(std::initializer_list<std::pair<std::string, ops::AttributeValue>> values) {
  ops::Attributes a;
  for (const auto& [k, v] : values) a.set(k, v);
  return a;
}

TEST(ConvPlan, RoutesByChannelsPerGroupAndWeightConstness) {
  EXPECT_EQ(plan(node("Conv"), inputs({1, 8, 5, 5}, {4, 8, 3, 3})).launches[0].program.label, "conv2d_vec4");
  EXPECT_EQ(plan(node("Conv"), inputs({1, 3, 5, 5}, {4, 3, 3, 3})).launches[0].program.label, "conv2d");
  EXPECT_EQ(
      plan(node("Conv"), inputs({1, 8, 5, 5}, {4, 8, 3, 3}, std::nullopt, false)).launches[0].program.label,
      "conv2d");
  // Depthwise takes the register-window kernel on every device (it has no barrier).
  EXPECT_EQ(plan(node("Conv", attrs({{"group", int64_t{8}}})), inputs({1, 8, 5, 5}, {8, 1, 3, 3}))
                .launches[0]
                .program.label,
            "conv_depthwise_rows4_k3x3_s1x1");
  EXPECT_EQ(plan(node("ConvTranspose"), inputs({1, 8, 5, 5}, {8, 4, 3, 3})).launches[0].program.label,
            "conv_transpose2d");
  ops::NodeInfo relu = node("Conv");
  relu.attributes.set(ops::kFusedActivationAttribute, std::string("Relu"));
  EXPECT_EQ(plan(relu, inputs({1, 8, 5, 5}, {4, 8, 3, 3})).launches[0].program.label, "conv2d_vec4_relu");
}

// The implicit GEMM's tile and K split on a device with the H200's limits, as measured there
// (docs/performance.md, 2026-11-30 fourth round): DaViT-base's downsampling convs at 768^2 and the shapes the
// earlier rules were measured on, which must keep their plans.
TEST(ConvPlan, ImplicitGemmTileAndSplitForDaViTAndResNetShapes) {
  gpu::Capabilities big = caps();
  big.limits.max_compute_workgroup_storage_size = 32768;
  struct Case {
    Shape x, w;
    int64_t stride;
    const char* label_prefix;
    bool split;
  };
  for (const Case& c : {
           Case{{1, 128, 192, 192}, {256, 128, 3, 3}, 2, "conv_igemm128x64", false},  // 288 tiles of 128x64
           Case{{1, 256, 96, 96}, {512, 256, 3, 3}, 2, "conv_igemm64", true},         // 288 tiles, K 2304
           Case{{1, 512, 48, 48}, {1024, 512, 3, 3}, 2, "conv_igemm64", true},        // 144 tiles, K 4608
           Case{{8, 128, 56, 56}, {256, 128, 3, 3}, 2, "conv_igemm64", false},        // 392 tiles, K 1152
           Case{{8, 256, 56, 56}, {256, 256, 3, 3}, 1, "conv_igemm128x64", false},    // 784 tiles
           Case{{1, 512, 7, 7}, {512, 512, 3, 3}, 1, "conv_igemm64", true},           // ResNet-50 layer4
           // ResNet-50's stage-2 3x3 at batch 8: 196 tiles over K 1152, two chunks of 576
           Case{{8, 128, 28, 28}, {128, 128, 3, 3}, 1, "conv_igemm64", true},
       }) {
    ops::NodeInfo n =
        node("Conv", attrs({{"strides", Ints{c.stride, c.stride}}, {"pads", Ints{1, 1, 1, 1}}}));
    const PlanInputs in = inputs(c.x, c.w, Shape{c.w[0]});
    ops::PlanContext ctx{n, in.descs, {}, big};
    for (size_t i = 0; i < in.descs.size(); ++i)
      ctx.constant_inputs.push_back(i == 0 ? nullptr : &in.constants[i]);
    const ops::OpPlan p = ops::builtin_registry().find("", "Conv", 17)->handler.plan(ctx);
    const std::string what = shape_to_string(c.x) + " * " + shape_to_string(c.w);
    ASSERT_FALSE(p.launches.empty()) << what;
    const std::string& label = p.launches[0].program.label;
    EXPECT_EQ(label.rfind(c.label_prefix, 0), 0u) << what << ": " << label;
    EXPECT_EQ(label.find("128x64") != std::string::npos, std::string(c.label_prefix) == "conv_igemm128x64")
        << what << ": " << label;
    EXPECT_EQ(p.launches.size(), c.split ? 2u : 1u) << what << ": " << label;
  }
}

// A 1x1 conv's per-image product splits K like MatMul's: ResNet-50's stage-4 reduction at batch 8 (512 x 49
// x 2048 per image: 8 tiles of 64 each) in chunks, the reduction applying bias and Relu; a 1x1 conv
// with enough tiles stays one launch.
TEST(ConvPlan, PointwiseProductSplitsKOnFewTiles) {
  gpu::Capabilities big = caps();
  big.limits.max_compute_workgroup_storage_size = 32768;
  for (const auto& [x, w, split] : {std::tuple{Shape{8, 2048, 7, 7}, Shape{512, 2048, 1, 1}, true},
                                    std::tuple{Shape{8, 256, 56, 56}, Shape{64, 256, 1, 1}, false}}) {
    ops::NodeInfo n = node("Conv");
    n.attributes.set(ops::kFusedActivationAttribute, std::string("Relu"));
    const PlanInputs in = inputs(x, w, Shape{w[0]});
    ops::PlanContext ctx{n, in.descs, {}, big};
    for (size_t i = 0; i < in.descs.size(); ++i)
      ctx.constant_inputs.push_back(i == 0 ? nullptr : &in.constants[i]);
    const ops::OpPlan p = ops::builtin_registry().find("", "Conv", 17)->handler.plan(ctx);
    const std::string what = shape_to_string(x) + " * " + shape_to_string(w);
    ASSERT_EQ(p.launches.size(), split ? 2u : 1u) << what;
    const std::string& label = p.launches[0].program.label;
    EXPECT_EQ(label.rfind("conv1x1_gemm_fast", 0), 0u) << what << ": " << label;
    if (split) {
      EXPECT_EQ(label.substr(label.size() - 7), "_splitk") << what << ": " << label;
      EXPECT_EQ(p.launches[1].program.label, "gemm_split_reduce") << what;
    }
  }
}

TEST(ConvPlan, PrepacksTheWeightAsOhwiForTheVec4Kernel) {
  const int64_t oc_n = 3, ic_n = 8, kh_n = 2, kw_n = 3;
  std::vector<float> w(static_cast<size_t>(oc_n * ic_n * kh_n * kw_n));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);
  PlanInputs in = inputs({1, ic_n, 4, 4}, {oc_n, ic_n, kh_n, kw_n});
  in.constants[1] = Tensor::from_vector<float>({oc_n, ic_n, kh_n, kw_n}, w);
  ops::OpPlan p = plan(node("Conv"), in);
  ASSERT_EQ(p.constants.size(), 1u);
  ASSERT_EQ(p.constants[0].shape(), (Shape{oc_n, kh_n, kw_n, ic_n}));
  EXPECT_EQ(p.launches[0].bindings[1].kind, ops::TensorRef::Kind::Constant);
  auto packed = p.constants[0].data<float>();
  for (int64_t oc = 0; oc < oc_n; ++oc)
    for (int64_t ic = 0; ic < ic_n; ++ic)
      for (int64_t kh = 0; kh < kh_n; ++kh)
        for (int64_t kw = 0; kw < kw_n; ++kw) {
          const float onnx = w[static_cast<size_t>(((oc * ic_n + ic) * kh_n + kh) * kw_n + kw)];
          EXPECT_EQ(packed[static_cast<size_t>(((oc * kh_n + kh) * kw_n + kw) * ic_n + ic)], onnx);
        }
}

TEST(ConvPlan, AbsentBiasBindsTheZeroBufferAndClearsTheFlag) {
  ops::OpPlan without = plan(node("Conv"), inputs({1, 3, 5, 5}, {4, 3, 3, 3}));
  EXPECT_EQ(without.launches[0].bindings[2].kind, ops::TensorRef::Kind::Zero);
  EXPECT_EQ(uniform_u32(without.launches[0], 19), 0u);
  ops::OpPlan with = plan(node("Conv"), inputs({1, 3, 5, 5}, {4, 3, 3, 3}, Shape{4}));
  EXPECT_EQ(with.launches[0].bindings[2].kind, ops::TensorRef::Kind::Input);
  EXPECT_EQ(with.launches[0].bindings[2].index, 2u);
  EXPECT_EQ(uniform_u32(with.launches[0], 19), 1u);
}

TEST(ConvPlan, OneProgramServesEveryShape) {
  ops::OpPlan a = plan(node("Conv", attrs({{"pads", Ints{1, 1, 1, 1}}})), inputs({1, 8, 9, 9}, {4, 8, 3, 3}));
  ops::OpPlan b = plan(node("Conv", attrs({{"strides", Ints{2, 2}}})), inputs({2, 16, 20, 7}, {8, 16, 5, 1}));
  EXPECT_EQ(a.launches[0].program.wgsl.str(), b.launches[0].program.wgsl.str());
  EXPECT_EQ(a.launches[0].program.constants, b.launches[0].program.constants);
  EXPECT_NE(a.launches[0].uniform, b.launches[0].uniform);
}

TEST(ConvPlan, UniformCarriesResolvedGeometry) {
  // SAME_LOWER, height: in 7, k 4, s 2 -> out 4, total pad 3, 2 at the top.
  ops::OpPlan p =
      plan(node("Conv", attrs({{"auto_pad", std::string("SAME_LOWER")}, {"strides", Ints{2, 3}}})),
           inputs({2, 4, 7, 8}, {6, 4, 4, 3}));
  ASSERT_EQ(p.outputs[0].shape, (Shape{2, 6, 4, 3}));
  const ops::KernelLaunch& l = p.launches[0];
  const uint32_t expected[] = {2, 4, 7, 8, 6, 4, 3, 1, 4, 3, 2, 3, 2, 1, 1, 1, 4, 6, 2 * 6 * 4 * 3, 0};
  for (size_t i = 0; i < std::size(expected); ++i) EXPECT_EQ(uniform_u32(l, i), expected[i]) << "field " << i;
}

TEST(ConvPlan, OneDimensionalConvRunsWithUnitHeight) {
  ops::OpPlan p =
      plan(node("Conv", attrs({{"strides", Ints{2}}, {"pads", Ints{1, 2}}})), inputs({1, 4, 11}, {2, 4, 3}));
  ASSERT_EQ(p.outputs[0].shape, (Shape{1, 2, 6}));
  const ops::KernelLaunch& l = p.launches[0];
  EXPECT_EQ(uniform_u32(l, 2), 1u);   // in_h
  EXPECT_EQ(uniform_u32(l, 3), 11u);  // in_w
  EXPECT_EQ(uniform_u32(l, 8), 1u);   // kernel_h
  EXPECT_EQ(uniform_u32(l, 11), 2u);  // stride_w
  EXPECT_EQ(uniform_u32(l, 13), 1u);  // pad_left
}

TEST(ConvPlan, ConvTransposeOutputShapes) {
  auto shape = [](const ops::Attributes& a, const Shape& x, const Shape& w) {
    return plan(node("ConvTranspose", a), inputs(x, w)).outputs[0].shape;
  };
  EXPECT_EQ(shape({}, {1, 4, 5, 5}, {4, 3, 3, 3}), (Shape{1, 3, 7, 7}));
  EXPECT_EQ(
      shape(attrs({{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"output_padding", Ints{1, 1}}}),
            {1, 4, 5, 6}, {4, 2, 3, 3}),
      (Shape{1, 2, 10, 12}));
  EXPECT_EQ(shape(attrs({{"strides", Ints{2, 2}}, {"group", int64_t{2}}}), {1, 6, 5, 5}, {6, 2, 3, 3}),
            (Shape{1, 4, 11, 11}));
  EXPECT_EQ(shape(attrs({{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}), {1, 1, 3, 3},
                  {1, 2, 3, 3}),
            (Shape{1, 2, 6, 6}));
  EXPECT_EQ(
      shape(attrs({{"strides", Ints{3, 2}}, {"output_shape", Ints{10, 8}}}), {1, 1, 3, 3}, {1, 2, 3, 3}),
      (Shape{1, 2, 10, 8}));
  EXPECT_EQ(shape(attrs({{"strides", Ints{2}}, {"dilations", Ints{2}}}), {1, 2, 7}, {2, 5, 3}),
            (Shape{1, 5, 17}));
}

TEST(ConvPlan, LargeOutputsFoldTheGrid) {
  ops::NodeInfo direct = node("Conv");
  direct.attributes.set("wgi.kernel", std::string("direct"));  // a 1x1 conv would otherwise be a GEMM
  ops::OpPlan p = plan(direct, inputs({1, 1, 1030, 1030}, {4, 1, 1, 1}));
  const gpu::WorkgroupCount g = p.launches[0].groups;
  EXPECT_GT(g.y, 1u);
  EXPECT_LE(g.x, 65535u);
  EXPECT_GE(g.total() * 64, 4u * 1030 * 1030);
}

TEST(ConvPlan, EmptyBatchPlansNoLaunch) {
  ops::OpPlan p = plan(node("Conv"), inputs({0, 4, 5, 5}, {2, 4, 3, 3}));
  EXPECT_EQ(p.outputs[0].shape, (Shape{0, 2, 3, 3}));
  EXPECT_TRUE(p.launches.empty());
}

// Each validation names the parameter (and the node).
struct ErrorCase {
  const char* name;
  const char* op;
  ops::Attributes attributes;
  Shape x, w;
  std::optional<Shape> b;
  std::vector<std::string> expected;  // substrings of the message
};

class ConvPlanErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ConvPlanErrorTest, NamesTheParameter) {
  const ErrorCase& c = GetParam();
  std::string msg = plan_error(node(c.op, c.attributes), inputs(c.x, c.w, c.b));
  EXPECT_NE(msg.find("'conv_under_test'"), std::string::npos) << msg;
  for (const std::string& s : c.expected)
    EXPECT_NE(msg.find(s), std::string::npos) << "'" << s << "' in: " << msg;
}

const ErrorCase kErrorCases[] = {
    {"GroupNotDividingInputChannels",
     "Conv",
     attrs({{"group", int64_t{4}}}),
     {1, 6, 5, 5},
     {4, 2, 3, 3},
     {},
     {"group 4", "input channels 6"}},
    {"GroupNotDividingOutputChannels",
     "Conv",
     attrs({{"group", int64_t{2}}}),
     {1, 4, 5, 5},
     {3, 2, 3, 3},
     {},
     {"group 2", "output channels 3"}},
    {"GroupZero", "Conv", attrs({{"group", int64_t{0}}}), {1, 4, 5, 5}, {3, 2, 3, 3}, {}, {"group is 0"}},
    {"WeightDim1NotChannelsPerGroup",
     "Conv",
     attrs({{"group", int64_t{2}}}),
     {1, 8, 5, 5},
     {4, 8, 3, 3},
     {},
     {"dim 1", "[4, 8, 3, 3]", "8 / 2 = 4"}},
    {"TransposeWeightDim0NotInputChannels",
     "ConvTranspose",
     {},
     {1, 8, 5, 5},
     {4, 2, 3, 3},
     {},
     {"dim 0", "[4, 2, 3, 3]", "8 input channels"}},
    {"TransposeGroupNotDividingInputChannels",
     "ConvTranspose",
     attrs({{"group", int64_t{3}}}),
     {1, 8, 5, 5},
     {8, 2, 3, 3},
     {},
     {"group 3", "input channels 8"}},
    {"BiasLength", "Conv", {}, {1, 4, 5, 5}, {6, 4, 3, 3}, Shape{4}, {"(B)", "[4]", "expected [6]"}},
    {"TransposeBiasLength",
     "ConvTranspose",
     attrs({{"group", int64_t{2}}}),
     {1, 4, 5, 5},
     {4, 3, 3, 3},
     Shape{3},
     {"(B)", "[3]", "expected [6]"}},
    {"OutputNotPositive", "Conv", {}, {1, 1, 2, 5}, {1, 1, 3, 3}, {}, {"output height", "input height 2"}},
    {"OutputNotPositive1D",
     "Conv",
     attrs({{"dilations", Ints{3}}}),
     {1, 1, 5},
     {1, 1, 3},
     {},
     {"output length", "extent 7"}},
    {"TransposeOutputNotPositive",
     "ConvTranspose",
     attrs({{"pads", Ints{2, 0, 2, 0}}}),
     {1, 1, 1, 4},
     {1, 1, 3, 3},
     {},
     {"output height", "must be positive"}},
    {"StridesLength",
     "Conv",
     attrs({{"strides", Ints{1, 1, 1}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"strides has 3 values", "needs 2"}},
    {"PadsLength",
     "Conv",
     attrs({{"pads", Ints{1, 1}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"pads has 2 values", "needs 4"}},
    {"DilationsLength",
     "ConvTranspose",
     attrs({{"dilations", Ints{2}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"dilations has 1 values", "needs 2"}},
    {"KernelShapeLength",
     "Conv",
     attrs({{"kernel_shape", Ints{3, 3}}}),
     {1, 4, 5},
     {4, 4, 3},
     {},
     {"kernel_shape has 2 values", "needs 1"}},
    {"KernelShapeMismatch",
     "Conv",
     attrs({{"kernel_shape", Ints{3, 5}}}),
     {1, 4, 9, 9},
     {4, 4, 3, 3},
     {},
     {"kernel_shape [3, 5]", "[3, 3]"}},
    {"OutputPaddingLength",
     "ConvTranspose",
     attrs({{"output_padding", Ints{1}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"output_padding has 1 values", "needs 2"}},
    {"OutputShapeLength",
     "ConvTranspose",
     attrs({{"output_shape", Ints{1, 2, 3}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"output_shape [1, 2, 3]", "needs 2"}},
    {"StrideZero",
     "Conv",
     attrs({{"strides", Ints{1, 0}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"strides [1, 0]", "below 1"}},
    {"NegativePads",
     "Conv",
     attrs({{"pads", Ints{0, -1, 0, 0}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"pads [0, -1, 0, 0]", "below 0"}},
    {"StrideAboveI32",
     "Conv",
     attrs({{"strides", Ints{1, int64_t{1} << 31}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"strides [1, 2147483648]", "above 2147483647"}},
    {"KernelDimZero", "Conv", {}, {1, 4, 5, 5}, {4, 4, 0, 3}, {}, {"(W)", "[4, 4, 0, 3]", "kernel dims"}},
    {"OutputShapeNotPositive",
     "ConvTranspose",
     attrs({{"output_shape", Ints{0, 5}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"output_shape [0, 5]", "positive"}},
    {"OutputPaddingNotBelowStrideOrDilation",
     "ConvTranspose",
     attrs({{"strides", Ints{2, 2}}, {"output_padding", Ints{1, 2}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"output_padding [1, 2]", "stride [2, 2]", "dilation [1, 1]"}},
    {"OutputPaddingOnConv",
     "Conv",
     attrs({{"output_padding", Ints{1, 1}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"output_padding [1, 1]", "ConvTranspose attribute"}},
    {"OutputShapeOnConv",
     "Conv",
     attrs({{"output_shape", Ints{5, 5}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"output_shape [5, 5]", "ConvTranspose attribute"}},
    {"UnknownAutoPad",
     "Conv",
     attrs({{"auto_pad", std::string("SAME")}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"auto_pad is 'SAME'"}},
    {"PadsWithAutoPad",
     "Conv",
     attrs({{"auto_pad", std::string("SAME_UPPER")}, {"pads", Ints{1, 1, 1, 1}}}),
     {1, 4, 5, 5},
     {4, 4, 3, 3},
     {},
     {"pads [1, 1, 1, 1]", "auto_pad SAME_UPPER"}},
    {"Rank5", "Conv", {}, {1, 4, 3, 5, 5}, {4, 4, 1, 3, 3}, {}, {"rank 5", "rank 3", "rank 4"}},
    {"Rank2", "ConvTranspose", {}, {4, 5}, {4, 3}, {}, {"rank 2", "1-D and 2-D"}},
    {"WeightRankMismatch", "Conv", {}, {1, 4, 5, 5}, {4, 4, 3}, {}, {"(W)", "[4, 4, 3]", "rank"}},
    {"InputTooLargeForU32",
     "Conv",
     {},
     {2, 65536, 256, 128},
     {1, 65536, 1, 1},
     {},
     {"(X)", "[2, 65536, 256, 128]", "u32"}},
    {"OutputTooLargeForU32",
     "ConvTranspose",
     attrs({{"strides", Ints{64, 64}}}),
     {1, 1, 1024, 1024},
     {1, 4, 64, 64},
     {},
     {"output Y", "u32"}},
};

INSTANTIATE_TEST_SUITE_P(Validation, ConvPlanErrorTest, ::testing::ValuesIn(kErrorCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(ConvPlan, RejectsNonFloatTypesNamingTheInput) {
  PlanInputs x_int = inputs({1, 4, 5, 5}, {4, 4, 3, 3});
  x_int.descs[0]->dtype = DType::Int32;
  std::string msg = plan_error(node("Conv"), x_int);
  EXPECT_NE(msg.find("input 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32 only"), std::string::npos) << msg;

  PlanInputs b_int = inputs({1, 4, 5, 5}, {4, 4, 3, 3}, Shape{4});
  b_int.descs[2]->dtype = DType::Int64;
  b_int.constants[2] = Tensor();
  msg = plan_error(node("Conv"), b_int);
  EXPECT_NE(msg.find("input 2 (B)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int64"), std::string::npos) << msg;
}

// ---- The choose step on its own ----

// A square 2-D conv of `size` pixels a side.
ops::ConvGeometry square(int64_t batch, int64_t in_channels, int64_t out_channels, int64_t groups,
                         int64_t size, int64_t kernel, int64_t stride = 1, int64_t pad = 0) {
  ops::ConvGeometry g;
  g.batch = batch;
  g.in_channels = in_channels;
  g.out_channels = out_channels;
  g.groups = groups;
  for (ops::ConvAxis* a : {&g.height, &g.width}) {
    a->input = size;
    a->kernel = kernel;
    a->stride = stride;
    a->pad_begin = pad;
    a->output = (size + 2 * pad - kernel) / stride + 1;
  }
  return g;
}

// A request whose GEMM tuning attributes are already read (none set).
ops::ConvRequest request(const ops::ConvGeometry& g, bool weight_known = true) {
  ops::ConvRequest r;
  r.geometry = g;
  r.weight_known = weight_known;
  r.weight_name = "input 1 ('w')";
  r.gemm_knobs = ops::ConvGemmKnobs{};
  return r;
}

// Barriers cheap, and workgroup memory for the implicit GEMM's tiles (caps() has none).
gpu::Capabilities fast_device() {
  gpu::Capabilities c = caps();
  c.limits.max_compute_workgroup_storage_size = 32768;
  return c;
}

gpu::Capabilities costly_barrier_device() {
  gpu::Capabilities c = fast_device();
  c.costly_barriers = true;
  return c;
}

ops::ConvChoice choose(const ops::ConvRequest& r, const gpu::Capabilities& c) {
  return ops::choose_conv_algorithm(r, c);
}

TEST(ConvChoose, PointwiseTakesTheGemmUnlessBarriersAreCostly) {
  const ops::ConvGeometry g = square(2, 8, 16, 1, 9, 1);
  EXPECT_EQ(choose(request(g), fast_device()).algorithm, ops::ConvAlgorithm::PointwiseGemm);
  // On SwiftShader the direct vec4 kernel wins, unless a GEMM kernel is forced or vec4 cannot run.
  EXPECT_EQ(choose(request(g), costly_barrier_device()).algorithm, ops::ConvAlgorithm::DirectVec4);
  ops::ConvRequest gemm_forced = request(g);
  gemm_forced.gemm_kernel_forced = true;
  EXPECT_EQ(choose(gemm_forced, costly_barrier_device()).algorithm, ops::ConvAlgorithm::PointwiseGemm);
  EXPECT_EQ(choose(request(g, false), costly_barrier_device()).algorithm, ops::ConvAlgorithm::PointwiseGemm);
  EXPECT_EQ(choose(request(square(2, 3, 16, 1, 9, 1)), costly_barrier_device()).algorithm,
            ops::ConvAlgorithm::PointwiseGemm);
  // Strided or padded 1x1 convs are not a plain product.
  EXPECT_EQ(choose(request(square(2, 8, 4, 1, 9, 1, 2)), fast_device()).algorithm,
            ops::ConvAlgorithm::DirectVec4);
  ops::ConvRequest direct = request(g);
  direct.forced_kernel = "direct";
  EXPECT_EQ(choose(direct, fast_device()).algorithm, ops::ConvAlgorithm::DirectVec4);
}

TEST(ConvChoose, DepthwiseTakesTheRegisterWindowThenTheWorkgroupWindowThenDirect) {
  const ops::ConvChoice rows = choose(request(square(2, 8, 8, 8, 16, 3, 1, 1)), costly_barrier_device());
  ASSERT_EQ(rows.algorithm, ops::ConvAlgorithm::DepthwiseRows);
  EXPECT_EQ(rows.depthwise_rows.rows, 4u);
  EXPECT_TRUE(rows.depthwise_rows.vec4);  // widths 16 and 16
  EXPECT_EQ(rows.depthwise_rows.workgroup, 256u);
  // Fewer rows per invocation where the output has fewer; scalar loads for a width not a multiple of 4.
  const ops::ConvChoice short_rows = choose(request(square(1, 8, 16, 8, 3, 3)), fast_device());
  ASSERT_EQ(short_rows.algorithm, ops::ConvAlgorithm::DepthwiseRows);
  EXPECT_EQ(short_rows.depthwise_rows.rows, 1u);
  EXPECT_FALSE(short_rows.depthwise_rows.vec4);
  ops::ConvRequest forced_rows = request(square(1, 8, 8, 8, 12, 3));
  forced_rows.forced_rows = 8;
  EXPECT_EQ(choose(forced_rows, fast_device()).depthwise_rows.rows, 8u);

  // A 9x9 kernel is beyond the register window: the workgroup window where barriers are cheap.
  const ops::ConvGeometry wide = square(2, 6, 6, 6, 30, 9);
  const ops::ConvChoice window = choose(request(wide), fast_device());
  ASSERT_EQ(window.algorithm, ops::ConvAlgorithm::Depthwise);
  EXPECT_EQ(window.depthwise.threads_x, 8u);  // 8 threads of 4 columns cover the 22 output columns
  EXPECT_EQ(window.depthwise.threads_y, 32u);
  EXPECT_EQ(choose(request(wide), costly_barrier_device()).algorithm, ops::ConvAlgorithm::Direct);
  ops::ConvRequest forced = request(wide);
  forced.forced_kernel = "depthwise";
  EXPECT_EQ(choose(forced, costly_barrier_device()).algorithm, ops::ConvAlgorithm::Depthwise);
  // No workgroup memory for one output row's window: the direct kernel.
  gpu::Capabilities small = fast_device();
  small.limits.max_compute_workgroup_storage_size = 128;
  EXPECT_EQ(choose(request(wide), small).algorithm, ops::ConvAlgorithm::Direct);
}

TEST(ConvChoose, ImplicitGemmAsksForTheGemmAttributesBeforeChoosingItsTile) {
  const ops::ConvGeometry g = square(1, 64, 128, 1, 28, 3, 1, 1);
  ops::ConvRequest unread = request(g);
  unread.gemm_knobs.reset();
  const ops::ConvChoice ask = choose(unread, fast_device());
  EXPECT_TRUE(ask.needs_gemm_knobs);
  EXPECT_TRUE(ask.error.empty()) << ask.error;

  const ops::ConvChoice c = choose(request(g), fast_device());
  ASSERT_EQ(c.algorithm, ops::ConvAlgorithm::ImplicitGemm);
  EXPECT_FALSE(c.needs_gemm_knobs);
  EXPECT_EQ(c.implicit_gemm.tile_m, 64u);  // 13 tiles of 128x64: too few for the larger tiles
  EXPECT_EQ(c.implicit_gemm.tile_n, 64u);
  EXPECT_EQ(c.implicit_gemm.tile_k, 16u);
  EXPECT_EQ(c.implicit_gemm.stages, 1u);

  ops::ConvRequest forced = request(g);
  forced.forced_kernel = "implicit_gemm128x64";
  forced.gemm_knobs = ops::ConvGemmKnobs{16, 2, 3};
  const ops::ConvChoice f = choose(forced, fast_device());
  ASSERT_EQ(f.algorithm, ops::ConvAlgorithm::ImplicitGemm);
  EXPECT_EQ(f.implicit_gemm.tile_m, 128u);
  EXPECT_EQ(f.implicit_gemm.tile_n, 64u);
  EXPECT_EQ(f.implicit_gemm.tile_k, 16u);
  EXPECT_EQ(f.implicit_gemm.stages, 2u);
  EXPECT_EQ(f.implicit_gemm.splits, 3u);

  // The direct kernels where the implicit GEMM does not pay (those never ask for the attributes) or cannot
  // run (no workgroup memory for any tile).
  for (const auto& [geometry, device] :
       {std::pair{g, costly_barrier_device()}, std::pair{square(1, 64, 8, 1, 28, 3), fast_device()}}) {
    ops::ConvRequest r = request(geometry);
    r.gemm_knobs.reset();
    const ops::ConvChoice direct = choose(r, device);
    EXPECT_EQ(direct.algorithm, ops::ConvAlgorithm::DirectVec4);
    EXPECT_FALSE(direct.needs_gemm_knobs);
  }
  EXPECT_EQ(choose(request(g), caps()).algorithm, ops::ConvAlgorithm::DirectVec4);
  EXPECT_EQ(choose(request(g, false), fast_device()).algorithm, ops::ConvAlgorithm::Direct);
}

TEST(ConvChoose, ConvTransposeRunsTheTransposedKernelOnly) {
  ops::ConvRequest r = request(square(1, 8, 4, 1, 5, 3));
  r.transposed = true;
  EXPECT_EQ(choose(r, fast_device()).algorithm, ops::ConvAlgorithm::Transposed);
  r.forced_kernel = "direct";
  EXPECT_EQ(choose(r, fast_device()).algorithm, ops::ConvAlgorithm::Transposed);
  r.forced_kernel = "implicit_gemm";
  EXPECT_NE(choose(r, fast_device()).error.find("does not run ConvTranspose"), std::string::npos);
}

TEST(ConvChoose, RefusesHintsThisConvCannotTakeSayingWhy) {
  struct Case {
    ops::ConvGeometry g;
    const char* kernel;
    int64_t rows;
    bool weight_known;
    const char* expected;
  };
  const ops::ConvGeometry regular = square(1, 8, 32, 1, 10, 3);
  const ops::ConvGeometry depthwise = square(1, 8, 8, 8, 10, 3);
  for (const Case& c : {
           Case{regular, "bogus", 0, true, "unknown wgi.kernel 'bogus'"},
           Case{regular, "gemm", 0, true, "needs a 1x1 convolution"},
           Case{regular, "depthwise_rows", 0, true, "needs group == input channels"},
           Case{depthwise, "", 3, true, "must be 1, 2, 4 or 8, got 3"},
           Case{regular, "", 4, true, "applies to the depthwise_rows kernel only"},
           Case{depthwise, "depthwise", 2, true, "applies to the depthwise_rows kernel only"},
           Case{square(1, 8, 8, 8, 20, 3, 3), "depthwise_rows", 0, true, "depthwise_rows cannot run here"},
           Case{regular, "implicit_gemm64", 0, false, "input 1 ('w') is computed at run time"},
       }) {
    ops::ConvRequest r = request(c.g, c.weight_known);
    r.forced_kernel = c.kernel;
    r.forced_rows = c.rows;
    const ops::ConvChoice choice = choose(r, fast_device());
    EXPECT_NE(choice.error.find(c.expected), std::string::npos) << c.kernel << ": " << choice.error;
  }
  // A forced implicit GEMM on a device without the workgroup memory for its tile.
  ops::ConvRequest r = request(regular);
  r.forced_kernel = "implicit_gemm128";
  const ops::ConvChoice choice = choose(r, caps());
  EXPECT_NE(choice.error.find("wgi.kernel = implicit_gemm128 cannot run here"), std::string::npos)
      << choice.error;
  EXPECT_NE(choice.error.find("workgroup memory"), std::string::npos) << choice.error;
}

TEST(ConvPlan, RegisteredForEveryOpset) {
  for (const char* op : {"Conv", "ConvTranspose"}) {
    for (int opset : {1, 11, 22, 30}) {
      EXPECT_NE(ops::builtin_registry().find("", op, opset), nullptr) << op << " opset " << opset;
    }
  }
}

}  // namespace
}  // namespace wgi
