// Conv / ConvTranspose, parse and validate (src/ops/conv.cpp's first two steps): the node's types, ranks and
// attributes, then the channels, the bias and every axis's padding and output size by ONNX's formulas, into a
// ConvGeometry every algorithm plans from. Every value is bounded here (u32 element counts, i32 positions),
// so the algorithms narrow without checks.
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ops/conv/conv.h"

namespace wgi::ops {

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

// X, W and B: float32 (W also a constant float16, which reaches the plan as it is: register_conv_ops), rank 3
// or 4, within u32.
void check_conv_inputs(const PlanContext& ctx) {
  const std::string& op = ctx.node.op_type;
  require_float32(ctx, 0, "X");
  // A constant float16 weight reaches the plan as it is (register_conv_ops).
  if (ctx.input(1).dtype != DType::Float16 || !ctx.constant(1)) require_float32(ctx, 1, "W");
  if (ctx.has_input(2)) require_float32(ctx, 2, "B");

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
  // Early, so that every dim is below 2^32 and the int64 shape arithmetic below cannot overflow.
  require_fits_u32(ctx, ctx.input_name(0) + " (X)", x_shape);
  require_fits_u32(ctx, ctx.input_name(1) + " (W)", w_shape);
}

// ConvTranspose's output_padding and output_shape into `a`; Conv refuses both.
void parse_transpose_attributes(const PlanContext& ctx, bool transposed, ConvAttributes& a) {
  const size_t spatial = a.spatial;
  const std::vector<int64_t>& strides = a.strides;
  const std::vector<int64_t>& dilations = a.dilations;
  std::vector<int64_t>& output_padding = a.output_padding;
  std::vector<int64_t>& output_shape = a.output_shape;
  output_padding.assign(spatial, 0);
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
}

}  // namespace

ConvAttributes parse_conv_attributes(const PlanContext& ctx, bool transposed) {
  check_conv_inputs(ctx);
  const Shape& w_shape = ctx.input(1).shape;
  ConvAttributes a;
  a.spatial = w_shape.size() - 2;
  const size_t spatial = a.spatial;
  a.groups = ctx.node.attributes.get_int("group", 1);
  if (a.groups < 1) ctx.fail("group is " + std::to_string(a.groups) + "; it must be at least 1");
  a.auto_pad = parse_auto_pad(ctx);

  a.kernel.assign(w_shape.begin() + 2, w_shape.end());
  const std::vector<int64_t>& w_kernel = a.kernel;
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
  a.strides = spatial_ints(ctx, "strides", spatial, 1, 1, 1);
  a.dilations = spatial_ints(ctx, "dilations", spatial, 1, 1, 1);
  a.pads = spatial_ints(ctx, "pads", spatial, 2, 0, 0);
  parse_transpose_attributes(ctx, transposed, a);
  // ONNX forbids explicit pads together with auto_pad; a model that has both is ambiguous, so it is refused
  // unless the pads are all zero (what some exporters write). output_shape makes ONNX ignore pads anyway.
  if (a.auto_pad != AutoPad::NotSet && a.output_shape.empty()) {
    for (int64_t p : a.pads) {
      if (p != 0) {
        ctx.fail("pads " + shape_to_string(a.pads) + " given together with auto_pad " +
                 ctx.node.attributes.get_string("auto_pad", "") + "; ONNX allows only one of them");
      }
    }
  }
  return a;
}

namespace {

// The channel counts (X's, W's, the group's) and the bias length, into g's batch, channels and groups.
void resolve_channels(const PlanContext& ctx, int64_t groups, bool transposed, ConvGeometry& g) {
  const Shape& x_shape = ctx.input(0).shape;
  const Shape& w_shape = ctx.input(1).shape;
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
  if (ctx.has_input(2)) {
    const Shape& b_shape = ctx.input(2).shape;
    if (b_shape.size() != 1 || b_shape[0] != g.out_channels) {
      ctx.fail(ctx.input_name(2) + " (B) has shape " + shape_to_string(b_shape) + "; expected [" +
               std::to_string(g.out_channels) + "], one bias per output channel");
    }
  }
}

}  // namespace

ConvGeometry resolve_conv_geometry(const PlanContext& ctx, const ConvAttributes& attributes, bool transposed,
                                   Shape& y_shape) {
  const Shape& x_shape = ctx.input(0).shape;
  const size_t spatial = attributes.spatial;
  ConvGeometry g;
  resolve_channels(ctx, attributes.groups, transposed, g);

  // Axis i of the ONNX attributes is height for 2-D, the only axis (width) for 1-D.
  std::array<ConvAxis*, 2> axes = {&g.height, &g.width};
  std::array<const char*, 2> axis_names = {"height", "width"};
  const size_t first_axis = 2 - spatial;
  if (spatial == 1) axis_names[1] = "length";
  for (size_t i = 0; i < spatial; ++i) {
    ConvAxis& a = *axes[first_axis + i];
    const char* name = axis_names[first_axis + i];
    a.input = x_shape[2 + i];
    a.kernel = attributes.kernel[i];
    a.stride = attributes.strides[i];
    a.dilation = attributes.dilations[i];
    a.pad_begin = attributes.pads[i];
    const int64_t pad_end = attributes.pads[spatial + i];
    if (transposed) {
      resolve_conv_transpose_axis(ctx, name, attributes.auto_pad, pad_end, attributes.output_padding[i],
                                  attributes.output_shape.empty() ? -1 : attributes.output_shape[i], a);
    } else {
      resolve_conv_axis(ctx, name, attributes.auto_pad, pad_end, a);
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

  y_shape = {g.batch, g.out_channels};
  if (spatial == 2) y_shape.push_back(g.height.output);
  y_shape.push_back(g.width.output);

  require_fits_u32(ctx, "output Y", y_shape);
  return g;
}

}  // namespace wgi::ops
