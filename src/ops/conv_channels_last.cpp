// wgi's internal DepthwiseConvChannelsLast (domain "wgi"; conv_channels_last.h has the op's definition and
// the pattern it replaces). One kernel, conv/depthwise_channels_last.wgsl: channels contiguous, each
// invocation computes one vec4 of channels (one channel when C % 4 != 0) for up to 4 consecutive output
// pixels of one output row, reading each input column of a kernel row once for all of them; the weight is
// prepacked to [KH * KW, C] (a tap's channels are one load) with the bias as one more row, and bias, fused
// activation and residual are applied in the epilogue. Zero padding at the borders; any kernel up to 7x7, any
// stride and padding, dilation 1.
#include "ops/conv_channels_last.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kernels/wgsl_library.h"
#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/fused_activation.h"
#include "ops/internal_ops.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"
#include "ops/reshape.h"

namespace wgi::ops {

namespace {

constexpr uint32_t kWorkgroupSize = 64;
constexpr int64_t kPixelsPerInvocation = 4;  // consecutive output pixels along W

std::string str(int64_t v) {
  return std::to_string(v);
}

uint32_t u32(int64_t v) {
  return static_cast<uint32_t>(v);
}

using Input = ChannelsLastConvInput;

// Fails unless the per-axis ints attribute `name` holds `count` values, each in [min_value, max_value].
void check_ints(const PlanContext& ctx, const std::string& name, const std::vector<int64_t>& v, size_t count,
                int64_t min_value, int64_t max_value) {
  if (v.size() != count)
    ctx.fail(name + " " + shape_to_string(v) + " has " + str(static_cast<int64_t>(v.size())) +
             " values; expected " + str(static_cast<int64_t>(count)));
  for (int64_t x : v) {
    if (x < min_value || x > max_value)
      ctx.fail(name + " " + shape_to_string(v) + " has a value outside [" + str(min_value) + ", " +
               str(max_value) + "]");
  }
}

// The node's sizes and constants, resolved and checked.
struct ChannelsLastConv {
  int64_t batch = 0, tokens = 0, channels = 0;
  const Tensor* weight = nullptr;  // [C, 1, KH, KW]
  const Tensor* bias = nullptr;    // [C], or null
  int64_t kh = 0, kw = 0;
  ChannelsLastConvAttributes attributes;  // pads and strides checked
  int64_t height = 0, width = 0;          // the input plane
  int64_t out_h = 0, out_w = 0;
  bool has_residual = false;
};

// X's shape, the weight and bias (constants, checked against X's channels), the pads and strides.
ChannelsLastConv parse_channels_last_conv(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(Input::kX);
  if (x.dtype != DType::Float32)
    ctx.fail(ctx.input_name(Input::kX) + " (X) has type " + std::string(dtype_name(x.dtype)) +
             "; expected float32");
  if (x.shape.size() != 3)
    ctx.fail(ctx.input_name(Input::kX) + " (X) is " + shape_to_string(x.shape) +
             "; expected [B, N, C] (rank 3)");
  const int64_t batch = x.shape[0], tokens = x.shape[1], channels = x.shape[2];
  ChannelsLastConv conv;
  conv.batch = batch;
  conv.tokens = tokens;
  conv.channels = channels;

  // The weight [C, 1, KH, KW], prepacked below.
  const Tensor* weight = ctx.constant(Input::kW);
  if (!weight)
    ctx.fail(ctx.input_name(Input::kW) +
             " (W) is computed at run time; the weight must be a constant (it is prepacked)");
  if (weight->dtype() != DType::Float32 || weight->rank() != 4 || weight->shape()[0] != channels ||
      weight->shape()[1] != 1) {
    ctx.fail(ctx.input_name(Input::kW) + " (W) is " + std::string(dtype_name(weight->dtype())) + " " +
             shape_to_string(weight->shape()) + "; expected float32 [" + str(channels) +
             ", 1, KH, KW] for X " + shape_to_string(x.shape));
  }
  const int64_t kh = weight->shape()[2], kw = weight->shape()[3];
  if (kh < 1 || kw < 1 || kh > kDepthwiseConvChannelsLastMaxKernel ||
      kw > kDepthwiseConvChannelsLastMaxKernel)
    ctx.fail("the kernel " + str(kh) + "x" + str(kw) + " is outside 1x1 to 7x7");
  ChannelsLastConvAttributes attributes = read_channels_last_conv_attributes(ctx.node);
  if (!attributes.kernel_shape.empty() && attributes.kernel_shape != std::vector<int64_t>{kh, kw}) {
    ctx.fail("kernel_shape " + shape_to_string(attributes.kernel_shape) + " disagrees with W " +
             shape_to_string(weight->shape()));
  }
  const Tensor* bias = nullptr;
  if (ctx.has_input(Input::kBias)) {
    bias = ctx.constant(Input::kBias);
    if (!bias)
      ctx.fail(ctx.input_name(Input::kBias) + " (bias) is computed at run time; it must be a constant");
    if (bias->dtype() != DType::Float32 || bias->element_count() != channels || bias->rank() != 1)
      ctx.fail(ctx.input_name(Input::kBias) + " (bias) is " + std::string(dtype_name(bias->dtype())) + " " +
               shape_to_string(bias->shape()) + "; expected float32 [" + str(channels) + "]");
  }
  const int64_t max_i32 = std::numeric_limits<int32_t>::max();
  conv.weight = weight;
  conv.bias = bias;
  conv.kh = kh;
  conv.kw = kw;
  check_ints(ctx, kChannelsLastPadsAttribute, attributes.pads, 4, 0, max_i32);
  check_ints(ctx, kChannelsLastStridesAttribute, attributes.strides, 2, 1, max_i32);
  conv.attributes = std::move(attributes);
  return conv;
}

// H and W (from the first Reshape's target when it is given, else from the attributes), the output plane, the
// second Reshape's target and the residual, checked; returns the output's shape.
Shape resolve_channels_last_plane(const PlanContext& ctx, ChannelsLastConv& conv) {
  const int64_t batch = conv.batch, tokens = conv.tokens, channels = conv.channels;
  const int64_t kh = conv.kh, kw = conv.kw;
  const std::vector<int64_t>& pads = conv.attributes.pads;
  const std::vector<int64_t>& strides = conv.attributes.strides;
  const TensorDesc& x = ctx.input(Input::kX);
  const int64_t max_i32 = std::numeric_limits<int32_t>::max();
  int64_t height = conv.attributes.height.value_or(-1);
  int64_t width = conv.attributes.width.value_or(-1);
  if (ctx.has_input(Input::kImageTarget)) {
    const std::vector<int64_t> target =
        data_movement::known_ints(ctx, Input::kImageTarget, "the [B, C, H, W] reshape target");
    const std::optional<Shape> s = reshape_result({batch, channels, tokens}, target);
    if (!s || s->size() != 4 || (*s)[0] != batch || (*s)[1] != channels) {
      ctx.fail(ctx.input_name(Input::kImageTarget) + " (the reshape target " + shape_to_string(target) +
               ") does not take [B, C, N] " + shape_to_string({batch, channels, tokens}) + " to [" +
               str(batch) + ", " + str(channels) + ", H, W]");
    }
    if ((height >= 0 && height != (*s)[2]) || (width >= 0 && width != (*s)[3]))
      ctx.fail("height " + str(height) + " and width " + str(width) + " disagree with the reshape target " +
               shape_to_string(*s));
    height = (*s)[2];
    width = (*s)[3];
  }
  if (height < 0 || width < 0)
    ctx.fail("needs the height and width attributes or the reshape target (input 4)");
  if (height * width != tokens) {
    ctx.fail("height " + str(height) + " x width " + str(width) + " is not X's token count " + str(tokens) +
             " (X is " + shape_to_string(x.shape) + ")");
  }
  if (height + pads[0] + pads[2] > max_i32 || width + pads[1] + pads[3] > max_i32)
    ctx.fail("the padded height and width must fit i32");
  const int64_t out_h_span = height + pads[0] + pads[2] - kh;
  const int64_t out_w_span = width + pads[1] + pads[3] - kw;
  if (out_h_span < 0 || out_w_span < 0) {
    ctx.fail("the padded input " + str(height + pads[0] + pads[2]) + "x" + str(width + pads[1] + pads[3]) +
             " is smaller than the kernel " + str(kh) + "x" + str(kw));
  }
  const int64_t out_h = out_h_span / strides[0] + 1, out_w = out_w_span / strides[1] + 1;
  const Shape out_shape = {batch, out_h * out_w, channels};
  if (ctx.has_input(Input::kTokensTarget)) {
    const std::vector<int64_t> target =
        data_movement::known_ints(ctx, Input::kTokensTarget, "the [B, C, N] reshape target");
    const Shape conv_out = {batch, channels, out_h, out_w};
    const std::optional<Shape> s = reshape_result(conv_out, target);
    if (!s || *s != Shape{batch, channels, out_h * out_w}) {
      ctx.fail(ctx.input_name(Input::kTokensTarget) + " (the reshape target " + shape_to_string(target) +
               ") does not take the conv's " + shape_to_string(conv_out) + " to " +
               shape_to_string({batch, channels, out_h * out_w}));
    }
  }
  const bool has_residual = ctx.has_input(Input::kResidual);
  if (has_residual) {
    const TensorDesc& r = ctx.input(Input::kResidual);
    if (r.dtype != DType::Float32 || r.shape != out_shape) {
      ctx.fail(ctx.input_name(Input::kResidual) + " (the residual) is " + std::string(dtype_name(r.dtype)) +
               " " + shape_to_string(r.shape) + "; expected float32 " + shape_to_string(out_shape));
    }
  }
  conv.height = height;
  conv.width = width;
  conv.out_h = out_h;
  conv.out_w = out_w;
  conv.has_residual = has_residual;
  return out_shape;
}

// [KH * KW + 1, C]: tap (i, j) at row i * KW + j, the bias (or zeros) in the last row.
Tensor pack_channels_last_weight(const ChannelsLastConv& conv) {
  const int64_t channels = conv.channels;
  const Tensor* bias = conv.bias;
  const int64_t taps = conv.kh * conv.kw;
  std::vector<float> packed(static_cast<size_t>((taps + 1) * channels), 0.0f);
  auto w = conv.weight->data<float>();
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t t = 0; t < taps; ++t) packed[static_cast<size_t>(t * channels + c)] = w[c * taps + t];
    if (bias) packed[static_cast<size_t>(taps * channels + c)] = bias->data<float>()[c];
  }
  return Tensor::from_vector<float>({taps + 1, channels}, packed);
}

// The kernel's launch; the packed weight is plan constant 0.
KernelLaunch channels_last_launch(const PlanContext& ctx, const ChannelsLastConv& conv,
                                  const FusedActivation& activation) {
  const int64_t batch = conv.batch, channels = conv.channels, kh = conv.kh, kw = conv.kw;
  const int64_t height = conv.height, width = conv.width, out_h = conv.out_h, out_w = conv.out_w;
  const std::vector<int64_t>& pads = conv.attributes.pads;
  const std::vector<int64_t>& strides = conv.attributes.strides;
  const bool has_residual = conv.has_residual;
  const bool vec4 = channels % 4 == 0;
  const int64_t lanes = vec4 ? channels / 4 : channels;  // units of the kernel's element type per pixel
  const int64_t pixels = std::min(kPixelsPerInvocation, out_w);
  const int64_t groups_w = (out_w + pixels - 1) / pixels;
  const int64_t invocations = batch * out_h * groups_w * lanes;
  if (invocations > int64_t{std::numeric_limits<uint32_t>::max()}) ctx.fail("too many invocations for u32");

  kernels::Defines defines;
  activation.add_defines(defines);
  defines["VEC4"] = vec4 ? "1" : "0";
  defines["WG"] = std::to_string(kWorkgroupSize);
  defines["KH"] = std::to_string(kh);
  defines["KW"] = std::to_string(kw);
  defines["SH"] = std::to_string(strides[0]);
  defines["SW"] = std::to_string(strides[1]);
  defines["PIXELS"] = std::to_string(pixels);

  KernelLaunch launch;
  launch.program.label = "conv_depthwise_channels_last" + std::string(vec4 ? "_v4" : "") + "_k" + str(kh) +
                         "x" + str(kw) + "_s" + str(strides[0]) + "x" + str(strides[1]) + "_p" + str(pixels) +
                         (has_residual ? "_residual" : "") + activation.label_suffix();
  KernelInterface iface;
  iface.read("input", "Unit", TensorRef::input(Input::kX))
      .read("weight", "Unit", TensorRef::constant(0))
      // The device's zero buffer when the node has no residual: reads are gated on params.has_residual.
      .read("residual", "Unit", has_residual ? TensorRef::input(Input::kResidual) : TensorRef::zero())
      .read_write("output", "Unit", TensorRef::output(0))
      .uniforms({{"height", UniformType::U32},
                 {"width", UniformType::U32},
                 {"lanes", UniformType::U32},  // channel units per pixel: C / 4 (VEC4) or C
                 {"out_h", UniformType::U32},
                 {"out_w", UniformType::U32},
                 {"groups_w", UniformType::U32},     // ceil(out_w / PIXELS)
                 {"invocations", UniformType::U32},  // batch * out_h * groups_w * lanes
                 {"has_residual", UniformType::U32},
                 {"pad_top", UniformType::I32},
                 {"pad_left", UniformType::I32},
                 {"lo", UniformType::F32},  // fused activation clamp bounds
                 {"hi", UniformType::F32}});
  launch.program.wgsl = iface.load_wgsl("conv/depthwise_channels_last.wgsl", defines);
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("height", u32(height))
                       .u32("width", u32(width))
                       .u32("lanes", u32(lanes))
                       .u32("out_h", u32(out_h))
                       .u32("out_w", u32(out_w))
                       .u32("groups_w", u32(groups_w))
                       .u32("invocations", u32(invocations))
                       .u32("has_residual", has_residual ? 1 : 0)
                       .i32("pad_top", static_cast<int32_t>(pads[0]))
                       .i32("pad_left", static_cast<int32_t>(pads[1]))
                       .f32("lo", activation.min)
                       .f32("hi", activation.max)
                       .bytes();
  launch.groups =
      gpu::fold_workgroups((static_cast<uint64_t>(invocations) + kWorkgroupSize - 1) / kWorkgroupSize,
                           ctx.caps.limits.max_compute_workgroups_per_dimension);
  return launch;
}

OpPlan plan_depthwise_conv_channels_last(const PlanContext& ctx) {
  ChannelsLastConv conv = parse_channels_last_conv(ctx);
  const Shape out_shape = resolve_channels_last_plane(ctx, conv);
  const FusedActivation activation = FusedActivation::from_node(ctx.node);

  OpPlan plan;
  plan.outputs.push_back({DType::Float32, out_shape});
  if (element_count(out_shape) == 0) return plan;
  require_addressable(ctx, ctx.input_name(Input::kX) + " (X)", ctx.input(Input::kX).shape);
  require_addressable(ctx, "the output", out_shape);
  plan.constants.push_back(pack_channels_last_weight(conv));
  plan.launches.push_back(channels_last_launch(ctx, conv, activation));
  return plan;
}

}  // namespace

void register_conv_channels_last_ops(OpRegistry& registry) {
  registry.add(kDepthwiseConvChannelsLastDomain, kDepthwiseConvChannelsLastOp, 1, kLatestOpset,
               {plan_depthwise_conv_channels_last, nullptr});
}

}  // namespace wgi::ops
