// Conv and ConvTranspose (ONNX, float32, NCHW, 1-D and 2-D): one planning function for both, which validates
// the node, works out padding and output shape with ONNX's formulas, and routes (rules at the end of
// plan_conv):
//   GEMM family (gemm_launch.h)  1x1, stride 1, no padding, group 1: a matrix product per image
//   conv/depthwise_rows.wgsl     group == in channels, one input channel per group, strides <= 2,
//                                kernels <= 7x7 (conv_kernels.h); on every device (it has no barrier)
//   conv/depthwise.wgsl          the other depthwise convs (conv_kernels.h)
//   conv/implicit_gemm.wgsl      other convs with a constant weight and >= 16 out channels per group
//                                (conv_kernels.h)
//   conv/conv2d_vec4.wgsl        direct, input channels per group % 4 == 0 and a constant weight (prepacked
//                                here); with conv2d.wgsl the fallback where the kernels above cannot run
//   conv/conv2d.wgsl             direct, every other Conv; reads the ONNX weight layout, so the weight may be
//                                computed
//   conv/conv_transpose2d.wgsl   ConvTranspose, in gather form
// Where workgroup barriers are costly (SwiftShader) the direct kernels run every other conv they can unless
// another kernel is forced. A 1-D conv runs as a 2-D one of unit height. Shapes and scalars travel in the
// uniform block, so the shader text depends only on the kernel, the fused activation and whether a residual
// is fused (ops/fused_residual.h: every kernel adds it in its epilogue).
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gpu/uniform.h"
#include "kernels/wgsl_library.h"
#include "ops/conv_kernels.h"
#include "ops/families.h"
#include "ops/float16.h"
#include "ops/fused_activation.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

enum class ConvKernel { Direct, DirectVec4, Transposed };

constexpr uint32_t kWorkgroupSize = 64;
// On a depthwise Conv: int, output rows per invocation of the depthwise_rows kernel (1, 2, 4 or 8).
constexpr const char* kDepthwiseRowsAttribute = "wgi.depthwise_rows";
// Below this many output channels per group the implicit GEMM's 64-row tile would be mostly padding; the
// direct kernels do as well there.
constexpr int64_t kImplicitGemmMinChannels = 16;

}  // namespace

AutoPad parse_auto_pad(const PlanContext& ctx) {
  std::string s = ctx.node.attributes.get_string("auto_pad", "NOTSET");
  if (s == "NOTSET") return AutoPad::NotSet;
  if (s == "SAME_UPPER") return AutoPad::SameUpper;
  if (s == "SAME_LOWER") return AutoPad::SameLower;
  if (s == "VALID") return AutoPad::Valid;
  ctx.fail("auto_pad is '" + s + "'; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
}

// An ints attribute with one value per spatial axis (or `per_axis` values per axis, for pads). Values are
// capped at i32's maximum, which the shaders need anyway and which keeps the int64 arithmetic here exact.
std::vector<int64_t> spatial_ints(const PlanContext& ctx, const std::string& name, size_t spatial,
                                  size_t per_axis, int64_t fallback, int64_t min_value) {
  std::vector<int64_t> v =
      ctx.node.attributes.get_ints(name, std::vector<int64_t>(spatial * per_axis, fallback));
  if (v.size() != spatial * per_axis) {
    ctx.fail(name + " has " + std::to_string(v.size()) + " values " + shape_to_string(v) + "; a " +
             std::to_string(spatial) + "-D " + ctx.node.op_type + " needs " +
             std::to_string(spatial * per_axis));
  }
  for (int64_t x : v) {
    if (x < min_value) {
      ctx.fail(name + " " + shape_to_string(v) + " has a value below " + std::to_string(min_value));
    }
    if (x > std::numeric_limits<int32_t>::max()) {
      ctx.fail(name + " " + shape_to_string(v) + " has a value above " +
               std::to_string(std::numeric_limits<int32_t>::max()));
    }
  }
  return v;
}

namespace {

void require_float32(const PlanContext& ctx, size_t input, const char* what) {
  const TensorDesc& d = ctx.input(input);
  if (d.dtype != DType::Float32) {
    ctx.fail(ctx.input_name(input) + " (" + what + ") has type " + std::string(dtype_name(d.dtype)) +
             "; wgi runs " + ctx.node.op_type + " on float32 only");
  }
}

}  // namespace

void require_fits_u32(const PlanContext& ctx, const std::string& what, const Shape& shape) {
  int64_t n = element_count(shape);
  if (n > int64_t{std::numeric_limits<uint32_t>::max()}) {
    ctx.fail(what + " " + shape_to_string(shape) + " has " + std::to_string(n) +
             " elements; wgi's conv kernels index with u32 and take at most 4294967295");
  }
  uint64_t bytes = static_cast<uint64_t>(n) * 4;
  if (bytes > ctx.caps.limits.max_storage_buffer_binding_size) {
    ctx.fail(what + " " + shape_to_string(shape) + " needs " + std::to_string(bytes) +
             " bytes, more than the device's maxStorageBufferBindingSize of " +
             std::to_string(ctx.caps.limits.max_storage_buffer_binding_size));
  }
}

// Conv output size and leading padding along one axis (ONNX Conv, all opsets).
void resolve_conv_axis(const PlanContext& ctx, const char* axis_name, AutoPad auto_pad, int64_t pad_end,
                       ConvAxis& a) {
  const int64_t extent = (a.kernel - 1) * a.dilation + 1;
  if (auto_pad == AutoPad::SameUpper || auto_pad == AutoPad::SameLower) {
    a.output = (a.input + a.stride - 1) / a.stride;
    int64_t total = std::max<int64_t>(0, (a.output - 1) * a.stride + extent - a.input);
    // SAME_UPPER puts the odd padding element at the end, SAME_LOWER at the beginning.
    a.pad_begin = auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
    pad_end = total - a.pad_begin;
  } else {
    if (auto_pad == AutoPad::Valid) {
      a.pad_begin = 0;
      pad_end = 0;
    }
    const int64_t span = a.input + a.pad_begin + pad_end - extent;
    a.output = span < 0 ? 0 : span / a.stride + 1;
  }
  if (a.output <= 0) {
    ctx.fail(std::string("output ") + axis_name + " would be " + std::to_string(a.output) + ": input " +
             axis_name + " " + std::to_string(a.input) + " padded by " + std::to_string(a.pad_begin) + "+" +
             std::to_string(pad_end) + " is smaller than the dilated kernel extent " +
             std::to_string(extent));
  }
}

namespace {

// ConvTranspose output size and leading padding along one axis. `requested` is the output_shape entry or -1.
void resolve_conv_transpose_axis(const PlanContext& ctx, const char* axis_name, AutoPad auto_pad,
                                 int64_t pad_end, int64_t output_padding, int64_t requested, ConvAxis& a) {
  const int64_t extent = (a.kernel - 1) * a.dilation + 1;
  const int64_t full = a.stride * (a.input - 1) + output_padding + extent;
  if (requested >= 0 || auto_pad == AutoPad::SameUpper || auto_pad == AutoPad::SameLower) {
    a.output = requested >= 0 ? requested : a.input * a.stride;
    const int64_t total = full - a.output;
    if (total < 0) {
      // Asked for more than the full output: the extra positions are at the end, as output_padding would
      // put them (ONNX's test_convtranspose_output_shape), and receive only the bias.
      a.pad_begin = 0;
    } else {
      a.pad_begin = auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
    }
  } else {
    if (auto_pad == AutoPad::Valid) {
      a.pad_begin = 0;
      pad_end = 0;
    }
    a.output = full - a.pad_begin - pad_end;
  }
  if (a.output <= 0) {
    ctx.fail(std::string("output ") + axis_name + " would be " + std::to_string(a.output) + " (input " +
             axis_name + " " + std::to_string(a.input) + ", stride " + std::to_string(a.stride) +
             ", dilated kernel extent " + std::to_string(extent) + ", output_padding " +
             std::to_string(output_padding) + ", pads " + std::to_string(a.pad_begin) + "+" +
             std::to_string(pad_end) + "); it must be positive");
  }
}

// [OC, ICg, KH, KW] -> [OC, KH, KW, ICg], so that conv2d_vec4.wgsl reads the weights of four consecutive
// input channels at one tap as one vec4.
// A float16 weight is widened here (docs/float16.md: the direct kernels read float32).
Tensor prepack_weight_ohwi(const Tensor& weight_as_given, const ConvGeometry& g) {
  const int64_t oc_count = g.out_channels;
  const int64_t icpg = g.in_channels / g.groups;
  const int64_t kh_count = g.height.kernel;
  const int64_t kw_count = g.width.kernel;
  const Tensor weight =
      weight_as_given.dtype() == DType::Float16 ? widen_float16(weight_as_given) : weight_as_given;
  Tensor packed(DType::Float32, {oc_count, kh_count, kw_count, icpg});
  auto src = weight.data<float>();
  auto dst = packed.data<float>();
  for (int64_t oc = 0; oc < oc_count; ++oc) {
    for (int64_t ic = 0; ic < icpg; ++ic) {
      for (int64_t kh = 0; kh < kh_count; ++kh) {
        for (int64_t kw = 0; kw < kw_count; ++kw) {
          const int64_t from = ((oc * icpg + ic) * kh_count + kh) * kw_count + kw;
          const int64_t to = ((oc * kh_count + kh) * kw_count + kw) * icpg + ic;
          dst[static_cast<size_t>(to)] = src[static_cast<size_t>(from)];
        }
      }
    }
  }
  return packed;
}

OpPlan plan_conv(const PlanContext& ctx, bool transposed) {
  const std::string& op = ctx.node.op_type;
  require_float32(ctx, 0, "X");
  // A constant float16 weight reaches the plan as it is (register_conv_ops).
  if (ctx.input(1).dtype != DType::Float16 || !ctx.constant(1)) require_float32(ctx, 1, "W");
  const bool has_bias = ctx.has_input(2);
  if (has_bias) require_float32(ctx, 2, "B");

  const Shape& x_shape = ctx.input(0).shape;
  const Shape& w_shape = ctx.input(1).shape;
  if (x_shape.size() != 3 && x_shape.size() != 4) {
    ctx.fail(ctx.input_name(0) + " has shape " + shape_to_string(x_shape) + " (rank " +
             std::to_string(x_shape.size()) + "); wgi runs " + op +
             " on 1-D and 2-D data only: rank 3 [N, C, L] or rank 4 [N, C, H, W]");
  }
  if (w_shape.size() != x_shape.size()) {
    ctx.fail(ctx.input_name(1) + " (W) has shape " + shape_to_string(w_shape) +
             "; it must have the rank of " + ctx.input_name(0) + " " + shape_to_string(x_shape) + ", " +
             std::to_string(x_shape.size()));
  }
  const size_t spatial = x_shape.size() - 2;
  // Early, so that every dim is below 2^32 and the int64 shape arithmetic below cannot overflow.
  require_fits_u32(ctx, ctx.input_name(0) + " (X)", x_shape);
  require_fits_u32(ctx, ctx.input_name(1) + " (W)", w_shape);

  const int64_t groups = ctx.node.attributes.get_int("group", 1);
  if (groups < 1) ctx.fail("group is " + std::to_string(groups) + "; it must be at least 1");
  const AutoPad auto_pad = parse_auto_pad(ctx);

  const std::vector<int64_t> w_kernel(w_shape.begin() + 2, w_shape.end());
  for (int64_t k : w_kernel) {
    if (k < 1) {
      ctx.fail(ctx.input_name(1) + " (W) has shape " + shape_to_string(w_shape) +
               "; its kernel dims must be positive");
    }
  }
  const std::vector<int64_t> kernel_shape = spatial_ints(ctx, "kernel_shape", spatial, 1, 1, 1);
  if (ctx.node.attributes.has("kernel_shape") && kernel_shape != w_kernel) {
    ctx.fail("kernel_shape " + shape_to_string(kernel_shape) + " does not match the spatial dims " +
             shape_to_string(w_kernel) + " of " + ctx.input_name(1) + " (W) " + shape_to_string(w_shape));
  }
  const std::vector<int64_t> strides = spatial_ints(ctx, "strides", spatial, 1, 1, 1);
  const std::vector<int64_t> dilations = spatial_ints(ctx, "dilations", spatial, 1, 1, 1);
  const std::vector<int64_t> pads = spatial_ints(ctx, "pads", spatial, 2, 0, 0);
  std::vector<int64_t> output_padding(spatial, 0);
  std::vector<int64_t> output_shape;
  if (transposed) {
    output_padding = spatial_ints(ctx, "output_padding", spatial, 1, 0, 0);
    for (size_t i = 0; i < spatial; ++i) {
      if (output_padding[i] >= strides[i] && output_padding[i] >= dilations[i]) {
        ctx.fail("output_padding " + shape_to_string(output_padding) + " must be smaller than the stride " +
                 shape_to_string(strides) + " or the dilation " + shape_to_string(dilations) +
                 " on each axis");
      }
    }
    output_shape = ctx.node.attributes.get_ints("output_shape", {});
    // ONNX examples give only the spatial dims; some exporters give the whole [N, C, ...] shape.
    if (output_shape.size() == spatial + 2)
      output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
    if (ctx.node.attributes.has("output_shape") && output_shape.size() != spatial) {
      ctx.fail("output_shape " + shape_to_string(ctx.node.attributes.get_ints("output_shape", {})) + " has " +
               std::to_string(output_shape.size()) + " values; a " + std::to_string(spatial) +
               "-D ConvTranspose needs " + std::to_string(spatial) + " (or " + std::to_string(spatial + 2) +
               ")");
    }
    for (int64_t v : output_shape) {
      if (v <= 0 || v > std::numeric_limits<int32_t>::max()) {
        ctx.fail("output_shape " + shape_to_string(output_shape) +
                 " must be positive and at most 2147483647");
      }
    }
  } else {
    for (const char* name : {"output_padding", "output_shape"}) {
      if (ctx.node.attributes.has(name)) {
        ctx.fail(std::string(name) + " " + shape_to_string(ctx.node.attributes.get_ints(name, {})) +
                 " is a ConvTranspose attribute; Conv does not take it");
      }
    }
  }
  // ONNX forbids explicit pads together with auto_pad; a model that has both is ambiguous, so it is refused
  // unless the pads are all zero (what some exporters write). output_shape makes ONNX ignore pads anyway.
  if (auto_pad != AutoPad::NotSet && output_shape.empty()) {
    for (int64_t p : pads) {
      if (p != 0) {
        ctx.fail("pads " + shape_to_string(pads) + " given together with auto_pad " +
                 ctx.node.attributes.get_string("auto_pad", "") + "; ONNX allows only one of them");
      }
    }
  }

  ConvGeometry g;
  g.batch = x_shape[0];
  g.in_channels = x_shape[1];
  g.groups = groups;
  if (g.in_channels % groups != 0) {
    ctx.fail("group " + std::to_string(groups) + " does not divide the input channels " +
             std::to_string(g.in_channels) + " of " + ctx.input_name(0) + " " + shape_to_string(x_shape));
  }
  const int64_t in_per_group = g.in_channels / groups;
  if (transposed) {
    if (w_shape[0] != g.in_channels) {
      ctx.fail(ctx.input_name(1) + " (W) has shape " + shape_to_string(w_shape) +
               "; its dim 0 must equal the " + std::to_string(g.in_channels) + " input channels of " +
               ctx.input_name(0) + " " + shape_to_string(x_shape) +
               " (ConvTranspose weight layout [C, M/group, kH, kW])");
    }
    g.out_channels = w_shape[1] * groups;
  } else {
    g.out_channels = w_shape[0];
    if (g.out_channels % groups != 0) {
      ctx.fail("group " + std::to_string(groups) + " does not divide the output channels " +
               std::to_string(g.out_channels) + " (dim 0 of " + ctx.input_name(1) + " (W) " +
               shape_to_string(w_shape) + ")");
    }
    if (w_shape[1] != in_per_group) {
      ctx.fail(ctx.input_name(1) + " (W) has shape " + shape_to_string(w_shape) +
               "; its dim 1 must be input channels / group = " + std::to_string(g.in_channels) + " / " +
               std::to_string(groups) + " = " + std::to_string(in_per_group));
    }
  }
  if (has_bias) {
    const Shape& b_shape = ctx.input(2).shape;
    if (b_shape.size() != 1 || b_shape[0] != g.out_channels) {
      ctx.fail(ctx.input_name(2) + " (B) has shape " + shape_to_string(b_shape) + "; expected [" +
               std::to_string(g.out_channels) + "], one bias per output channel");
    }
  }

  // Axis i of the ONNX attributes is height for 2-D, the only axis (width) for 1-D.
  std::array<ConvAxis*, 2> axes = {&g.height, &g.width};
  std::array<const char*, 2> axis_names = {"height", "width"};
  const size_t first_axis = 2 - spatial;
  if (spatial == 1) axis_names[1] = "length";
  for (size_t i = 0; i < spatial; ++i) {
    ConvAxis& a = *axes[first_axis + i];
    const char* name = axis_names[first_axis + i];
    a.input = x_shape[2 + i];
    a.kernel = w_kernel[i];
    a.stride = strides[i];
    a.dilation = dilations[i];
    a.pad_begin = pads[i];
    const int64_t pad_end = pads[spatial + i];
    if (transposed) {
      resolve_conv_transpose_axis(ctx, name, auto_pad, pad_end, output_padding[i],
                                  output_shape.empty() ? -1 : output_shape[i], a);
    } else {
      resolve_conv_axis(ctx, name, auto_pad, pad_end, a);
    }
    // The shaders compute input positions in i32.
    const int64_t reach = (a.output - 1) * a.stride + (a.kernel - 1) * a.dilation + a.input + a.pad_begin;
    if (reach > std::numeric_limits<int32_t>::max()) {
      ctx.fail(std::string("the ") + name + " axis (input " + std::to_string(a.input) + ", kernel " +
               std::to_string(a.kernel) + ", stride " + std::to_string(a.stride) + ", dilation " +
               std::to_string(a.dilation) + ", pad " + std::to_string(a.pad_begin) +
               ") spans more positions than wgi's conv kernels address with i32");
    }
  }

  Shape y_shape = {g.batch, g.out_channels};
  if (spatial == 2) y_shape.push_back(g.height.output);
  y_shape.push_back(g.width.output);

  require_fits_u32(ctx, "output Y", y_shape);

  const FusedActivation activation = FusedActivation::from_node(ctx.node);
  const bool residual = has_fused_residual(ctx);
  if (residual && ctx.input(kFusedResidualInput).shape != y_shape) {
    return plan_residual_fallback(ctx, y_shape,
                                  [transposed](const PlanContext& c) { return plan_conv(c, transposed); });
  }

  OpPlan plan;
  plan.outputs.push_back({DType::Float32, y_shape});
  const int64_t total = element_count(y_shape);
  if (total == 0) return plan;

  // A 1x1 convolution with unit stride and no padding is a matrix product per image:
  // Y[n] (OC x HW) = W (OC x IC) * X[n] (IC x HW), run by the GEMM family with its fused epilogue.
  const bool pointwise = !transposed && groups == 1 && g.height.kernel == 1 && g.width.kernel == 1 &&
                         g.height.stride == 1 && g.width.stride == 1 && g.height.pad_begin == 0 &&
                         g.width.pad_begin == 0 && g.height.output == g.height.input &&
                         g.width.output == g.width.input;
  const bool depthwise = !transposed && groups == g.in_channels && in_per_group == 1;
  const std::string forced = ctx.node.attributes.get_string("wgi.kernel", "");
  static const char* const kKernelNames =
      "gemm, implicit_gemm, implicit_gemm128, implicit_gemm64, implicit_gemm128x64, implicit_gemm64x128, "
      "depthwise_rows, depthwise or direct";
  const bool forced_igemm = forced == "implicit_gemm" || forced == "implicit_gemm128" ||
                            forced == "implicit_gemm64" || forced == "implicit_gemm128x64" ||
                            forced == "implicit_gemm64x128";
  const bool forced_depthwise = forced == "depthwise" || forced == "depthwise_rows";
  if (!forced.empty() && forced != "gemm" && forced != "direct" && !forced_depthwise && !forced_igemm) {
    ctx.fail("unknown wgi.kernel '" + forced + "' (expected " + kKernelNames + ")");
  }
  if (transposed && !forced.empty() && forced != "direct") {
    ctx.fail("wgi.kernel = " + forced + " does not run ConvTranspose (its only kernel is direct)");
  }
  if (forced == "gemm" && !pointwise) {
    ctx.fail("wgi.kernel = gemm needs a 1x1 convolution with stride 1, no padding and group 1");
  }
  // Where barriers are costly (gpu::Capabilities::costly_barriers: SwiftShader) the direct vec4 kernel beats
  // the GEMMs on 1x1 convs too (1x32x24x24 -> 64: 12 ms direct, 19 ms on the seeds' tiled GEMM), and the
  // depthwise and implicit-GEMM kernels lose to the direct ones.
  const bool weight_known = ctx.constant(1) != nullptr;
  const bool direct_vec4_possible = in_per_group > 0 && in_per_group % 4 == 0 && weight_known;
  const bool fast_kernels_pay = !ctx.caps.costly_barriers;
  // A GEMM kernel forced through wgi.gemm_kernel asks for the GEMM route too.
  const bool gemm_forced = ctx.node.attributes.has(kGemmKernelAttribute);
  if (pointwise &&
      (forced == "gemm" || (forced.empty() && (fast_kernels_pay || !direct_vec4_possible || gemm_forced)))) {
    const int64_t pixels = g.height.input * g.width.input;
    GemmLaunchSpec mm;
    mm.m = static_cast<uint32_t>(g.out_channels);
    mm.n = static_cast<uint32_t>(pixels);
    mm.k = static_cast<uint32_t>(g.in_channels);
    mm.batch = static_cast<uint32_t>(g.batch);
    mm.batch_dims = {1, 1, 1, static_cast<uint32_t>(g.batch)};
    mm.b_batch_strides = {0, 0, 0, static_cast<uint32_t>(g.in_channels * pixels)};
    mm.a = TensorRef::input(1);
    mm.b = TensorRef::input(0);
    mm.out = TensorRef::output(0);
    if (has_bias) mm.bias = TensorRef::input(2);
    mm.bias_stride_m = 1;
    if (residual) mm.residual = TensorRef::input(kFusedResidualInput);  // NCHW: [batch][OC][pixels]
    mm.activation = activation;
    plan.launches.push_back(make_gemm_launch(ctx, mm));
    plan.launches.back().program.label = "conv1x1_" + plan.launches.back().program.label;
    return plan;
  }

  // Depthwise: the register-window kernel for strides up to 2 and kernels up to 7x7 (it has no barrier, so it
  // also suits devices where barriers are costly), else the workgroup-window kernel (any geometry) unless the
  // device's workgroup memory cannot hold one output row's input window; then the direct kernel.
  if (forced_depthwise && !depthwise) {
    ctx.fail("wgi.kernel = " + forced +
             " needs group == input channels with one input channel per group; this conv has group " +
             std::to_string(groups) + " and " + std::to_string(g.in_channels) + " input channels");
  }
  const int64_t forced_rows = ctx.node.attributes.get_int(kDepthwiseRowsAttribute, 0);
  if (forced_rows != 0 && forced_rows != 1 && forced_rows != 2 && forced_rows != 4 && forced_rows != 8) {
    ctx.fail(std::string(kDepthwiseRowsAttribute) + " must be 1, 2, 4 or 8, got " +
             std::to_string(forced_rows));
  }
  if (forced_rows != 0 && !(depthwise && (forced.empty() || forced == "depthwise_rows"))) {
    ctx.fail(std::string(kDepthwiseRowsAttribute) + " applies to the depthwise_rows kernel only");
  }
  if (depthwise && (forced == "depthwise_rows" || forced.empty())) {
    std::string why;
    if (auto c = choose_depthwise_rows_config(g, ctx.caps.limits, static_cast<uint32_t>(forced_rows), why)) {
      add_depthwise_rows_launch(ctx, g, *c, activation, has_bias, residual, plan);
      return plan;
    }
    if (forced == "depthwise_rows" || forced_rows != 0)
      ctx.fail("wgi.kernel = depthwise_rows cannot run here: " + why);
  }
  if (depthwise && (forced == "depthwise" || (forced.empty() && fast_kernels_pay))) {
    std::string why;
    if (auto c = choose_depthwise_config(g, ctx.caps.limits, why)) {
      add_depthwise_launch(ctx, g, *c, activation, has_bias, residual, plan);
      return plan;
    }
    if (forced == "depthwise") ctx.fail("wgi.kernel = depthwise cannot run here: " + why);
  }

  // Implicit GEMM for the other convs with a constant weight (prepacked for it) and enough output channels
  // per group to fill most of a 64-row tile. It needs 256 invocations per workgroup: compat devices at their
  // default limits (and any device that cannot hold its workgroup memory) keep the direct kernels.
  const int64_t out_per_group_count = g.out_channels / groups;
  if (forced_igemm || (forced.empty() && fast_kernels_pay && !transposed && !depthwise && weight_known &&
                       out_per_group_count >= kImplicitGemmMinChannels)) {
    if (forced_igemm && !weight_known) {
      ctx.fail("wgi.kernel = " + forced + " needs a constant weight (it is prepacked at plan time); " +
               ctx.input_name(1) + " is computed at run time");
    }
    GemmLaunchSpec knobs;  // the GEMM's tuning attributes (K slab, buffers) apply to the implicit GEMM too
    read_gemm_attributes(ctx, knobs);
    const ops::ImplicitGemmTile tile = forced == "implicit_gemm128"      ? ImplicitGemmTile{128, 128}
                                       : forced == "implicit_gemm64"     ? ImplicitGemmTile{64, 64}
                                       : forced == "implicit_gemm128x64" ? ImplicitGemmTile{128, 64}
                                       : forced == "implicit_gemm64x128" ? ImplicitGemmTile{64, 128}
                                                                         : ImplicitGemmTile{};
    std::string why;
    if (auto c = choose_implicit_gemm_config(g, ctx.caps.limits, tile, knobs.tile_k, knobs.stages, why,
                                             knobs.split_k)) {
      add_implicit_gemm_launch(ctx, g, *c, activation, has_bias, residual, plan);
      return plan;
    }
    if (forced_igemm) ctx.fail("wgi.kernel = " + forced + " cannot run here: " + why);
  }

  ConvKernel kernel = ConvKernel::Direct;
  if (transposed) {
    kernel = ConvKernel::Transposed;
  } else if (direct_vec4_possible) {
    kernel = ConvKernel::DirectVec4;
  }

  KernelLaunch launch;
  const char* file = "conv/conv2d.wgsl";
  std::string label = "conv2d";
  TensorRef weight = TensorRef::input(1);
  switch (kernel) {
    case ConvKernel::Direct:
      break;
    case ConvKernel::DirectVec4:
      file = "conv/conv2d_vec4.wgsl";
      label = "conv2d_vec4";
      plan.constants.push_back(prepack_weight_ohwi(*ctx.constant(1), g));
      weight = TensorRef::constant(0);
      break;
    case ConvKernel::Transposed:
      file = "conv/conv_transpose2d.wgsl";
      label = "conv_transpose2d";
      break;
  }
  kernels::Defines defines;
  activation.add_defines(defines);
  defines["RESIDUAL"] = residual ? "1" : "0";
  const gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(static_cast<uint64_t>(total), kWorkgroupSize, ctx.caps.limits);
  launch.program.label = label + residual_label_suffix(residual) + activation.label_suffix();
  launch.program.wgsl = kernels::load_wgsl(file, defines);
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  launch.program.bindings = {gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::ReadOnlyStorage,
                             gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::Storage,
                             gpu::BindingKind::Uniform};
  launch.bindings = {TensorRef::input(0), weight, has_bias ? TensorRef::input(2) : TensorRef::zero(),
                     TensorRef::output(0)};
  if (residual) append_residual_binding(launch);

  // Every value below was bounded above (u32 element counts, i32 positions), so the narrowing is exact.
  auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
  const int64_t out_per_group = g.out_channels / groups;
  launch.uniform = gpu::UniformBuilder()
                       .u32(u(g.batch))
                       .u32(u(g.in_channels))
                       .u32(u(g.height.input))
                       .u32(u(g.width.input))
                       .u32(u(g.out_channels))
                       .u32(u(g.height.output))
                       .u32(u(g.width.output))
                       .u32(u(groups))
                       .u32(u(g.height.kernel))
                       .u32(u(g.width.kernel))
                       .u32(u(g.height.stride))
                       .u32(u(g.width.stride))
                       .i32(static_cast<int32_t>(g.height.pad_begin))
                       .i32(static_cast<int32_t>(g.width.pad_begin))
                       .u32(u(g.height.dilation))
                       .u32(u(g.width.dilation))
                       .u32(u(in_per_group))
                       .u32(u(out_per_group))
                       .u32(u(total))
                       .u32(has_bias ? 1 : 0)
                       .f32(activation.min)
                       .f32(activation.max)
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

// float16 (ops/float16.h): X, B and the output through float32. A constant float16 weight reaches plan_conv
// as it is: the implicit GEMM keeps it float16 (half the bytes, read packed); the direct vec4 kernel's
// prepacked copy is widened; the kernels that read the weight as stored get a float32 copy of it as a plan
// constant, made once here (no cast per run).
OpPlan plan_conv_float16(const PlanContext& ctx, bool transposed) {
  auto plan_f32 = [transposed](const PlanContext& c) { return plan_conv(c, transposed); };
  const Tensor* weight = ctx.constant(1);
  if (!ctx.has_input(1) || ctx.input(1).dtype != DType::Float16 || !weight)
    return plan_with_float16(ctx, plan_f32);
  OpPlan plan = plan_with_float16(ctx, plan_f32, 1u << 1);
  std::optional<uint32_t> widened;
  for (KernelLaunch& launch : plan.launches) {
    for (TensorRef& ref : launch.bindings) {
      if (ref.kind != TensorRef::Kind::Input || ref.index != 1) continue;
      if (!widened) {
        widened = static_cast<uint32_t>(plan.constants.size());
        plan.constants.push_back(widen_float16(*weight));
      }
      ref = TensorRef::constant(*widened);
    }
  }
  return plan;
}

}  // namespace

void register_conv_ops(OpRegistry& registry) {
  // Versions 1, 11 and 22 of both ops differ in their type lists and wording, not in what the attributes mean
  // for float32, so one handler serves every opset.
  OpHandler conv;
  conv.plan = [](const PlanContext& ctx) { return plan_conv_float16(ctx, false); };
  conv.plans_float16 = true;
  registry.add("", "Conv", 1, kLatestOpset, std::move(conv));
  OpHandler conv_transpose;
  conv_transpose.plan = [](const PlanContext& ctx) { return plan_conv_float16(ctx, true); };
  conv_transpose.plans_float16 = true;
  registry.add("", "ConvTranspose", 1, kLatestOpset, std::move(conv_transpose));
}

}  // namespace wgi::ops
