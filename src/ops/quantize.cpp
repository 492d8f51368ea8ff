// Linear quantization: QuantizeLinear, DequantizeLinear (opsets 10-22: per tensor, per axis from 13, blocked
// from 21) and DynamicQuantizeLinear (opset 11), all on the GPU (src/kernels/quantize/). The ops that
// ONNX Runtime's dynamic quantization writes around MatMulInteger / ConvInteger (integer_linear.cpp).
//
// Element types: quantized tensors are uint8 or int8 (DequantizeLinear also reads int32, with a zero point
// of 0 as the spec requires); scales and real values are float32. 16-bit, 4-bit and float8 types of the later
// opsets are rejected by name. The device holds 8-bit values widened to 32 bits (runtime/device_tensor.h).
//
// Rounding: WGSL's round() rounds half to even, as ONNX wants. The quotients x / scale (and
// DynamicQuantizeLinear's range / 255 and -min / scale) are divided correctly rounded by
// quantize/divide.wgsl, not by WGSL's division, which may be 2.5 ULP off: an exact tie k + 0.5 must stay one
// on every GPU.
//
// No host folding: a DequantizeLinear of a constant uint8 table stays a GPU op instead of becoming a float
// constant at load.
#include <algorithm>

#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/quantize.h"
#include "ops/reduction.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

// Quantize / Dequantize are claimed up to this opset; 23 adds float4 and the `precision` attribute.
constexpr int kLastLinearQuantizeOpset = 22;
// Elements each DynamicQuantizeLinear range workgroup reduces (at most kMaxRangeWorkgroups of them, so the
// final launch reads at most that many partial pairs).
constexpr uint64_t kRangeChunk = 4096;
constexpr uint64_t kMaxRangeWorkgroups = 65535;

std::pair<int32_t, int32_t> quantized_range(DType t) {
  return t == DType::Int8 ? std::pair{-128, 127} : std::pair{0, 255};
}

void require_type(const PlanContext& ctx, size_t i, const char* role, std::initializer_list<DType> allowed) {
  const DType t = ctx.input(i).dtype;
  if (std::find(allowed.begin(), allowed.end(), t) != allowed.end()) return;
  std::string names;
  for (DType a : allowed) names += (names.empty() ? "" : " or ") + std::string(dtype_name(a));
  ctx.fail(ctx.input_name(i) + " (" + role + ") has type " + std::string(dtype_name(t)) + "; wgi runs " +
           ctx.node.op_type + " with " + names + " there");
}

// Where element i of x finds its scale and zero point (quantize/quantize_linear.wgsl's formula).
struct ScaleLayout {
  uint32_t inner = 1, axis_len = 1, block = 1;
  uint32_t outer_stride = 0, axis_stride = 0, inner_stride = 0;
};

// The layout of input `scale_input` (and the zero point after it, which must have its shape) against x.
ScaleLayout resolve_scale_layout(const PlanContext& ctx, size_t scale_input) {
  const Shape& x = ctx.input(0).shape;
  const Shape& scale = ctx.input(scale_input).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  const size_t zp_input = scale_input + 1;
  // A scalar zero point with a [1] scale (or the reverse) is the same per-tensor quantization.
  const bool both_single = ctx.has_input(zp_input) && element_count(scale) == 1 &&
                           element_count(ctx.input(zp_input).shape) == 1 && scale.size() <= 1 &&
                           ctx.input(zp_input).shape.size() <= 1;
  if (ctx.has_input(zp_input) && ctx.input(zp_input).shape != scale && !both_single) {
    ctx.fail(ctx.input_name(zp_input) + " (zero point) has shape " +
             shape_to_string(ctx.input(zp_input).shape) + " but the scale " + ctx.input_name(scale_input) +
             " has " + shape_to_string(scale) + "; they must match");
  }
  const int64_t block = ctx.node.opset >= 21 ? ctx.node.attributes.get_int("block_size", 0) : 0;
  if (block < 0) ctx.fail("block_size is " + std::to_string(block) + "; it must be at least 0");
  ScaleLayout layout;
  // A one-element scale is per tensor whatever its rank (ONNX Runtime reads [1] so too).
  if (element_count(scale) == 1 && block == 0) return layout;
  if (ctx.node.opset < 13) {
    ctx.fail("the scale " + ctx.input_name(scale_input) + " has shape " + shape_to_string(scale) +
             "; before opset 13 it must be a scalar (per-axis quantization starts at opset 13)");
  }
  if (rank == 0) ctx.fail("per-axis quantization of a scalar input");
  const int64_t axis =
      data_movement::normalize_axis(ctx, ctx.node.attributes.get_int("axis", 1), rank, "axis");
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x[static_cast<size_t>(d)];
  const int64_t axis_len = x[static_cast<size_t>(axis)];
  layout.inner = static_cast<uint32_t>(std::max<int64_t>(inner, 1));
  layout.axis_len = static_cast<uint32_t>(std::max<int64_t>(axis_len, 1));
  if (block == 0) {
    if (scale.size() != 1 || scale[0] != axis_len) {
      ctx.fail("the scale " + ctx.input_name(scale_input) + " has shape " + shape_to_string(scale) +
               "; per-axis quantization along axis " + std::to_string(axis) + " of " + shape_to_string(x) +
               " needs a 1-D scale of " + std::to_string(axis_len) + " elements");
    }
    layout.axis_stride = 1;
    return layout;
  }
  Shape expected = x;
  const int64_t blocks = (axis_len + block - 1) / block;
  expected[static_cast<size_t>(axis)] = blocks;
  if (scale != expected) {
    ctx.fail("the scale " + ctx.input_name(scale_input) + " has shape " + shape_to_string(scale) +
             "; blocked quantization (block_size " + std::to_string(block) + ") along axis " +
             std::to_string(axis) + " of " + shape_to_string(x) + " needs " + shape_to_string(expected));
  }
  layout.block = static_cast<uint32_t>(block);
  layout.inner_stride = 1;
  layout.axis_stride = static_cast<uint32_t>(std::max<int64_t>(inner, 1));
  layout.outer_stride = static_cast<uint32_t>(blocks * std::max<int64_t>(inner, 1));
  return layout;
}

KernelLaunch make_quantize_launch(const PlanContext& ctx, bool quantize, uint64_t count, const ScaleLayout& l,
                                  DType quantized, TensorRef x, TensorRef scale, TensorRef zero_point,
                                  TensorRef y) {
  const auto [qmin, qmax] = quantized_range(quantized);
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(count, 256, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = quantize ? "quantize_linear" : "dequantize_linear";
  KernelInterface iface;
  iface.read("x", quantize ? "f32" : "i32", x)
      .read("scale", "f32", scale)
      .read("zero_point", "i32", zero_point)
      .read_write("y", quantize ? "i32" : "f32", y)
      .uniforms({{"count", UniformType::U32},
                 {"inner", UniformType::U32},
                 {"axis_len", UniformType::U32},
                 {"block", UniformType::U32},
                 {"outer_stride", UniformType::U32},
                 {"axis_stride", UniformType::U32},
                 {"inner_stride", UniformType::U32},
                 {"qmin", UniformType::I32},
                 {"qmax", UniformType::I32},
                 {"_pad0", UniformType::Pad},
                 {"_pad1", UniformType::Pad},
                 {"_pad2", UniformType::Pad}});
  launch.program.wgsl =
      iface.load_wgsl("quantize/quantize_linear.wgsl", {{"QUANTIZE", quantize ? "1" : "0"}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(count))
                       .u32("inner", l.inner)
                       .u32("axis_len", l.axis_len)
                       .u32("block", l.block)
                       .u32("outer_stride", l.outer_stride)
                       .u32("axis_stride", l.axis_stride)
                       .u32("inner_stride", l.inner_stride)
                       .i32("qmin", qmin)
                       .i32("qmax", qmax)
                       .bytes();
  launch.groups = grid.groups;
  return launch;
}

// QuantizeLinear's output type: the zero point's, else opset 21's output_dtype, else uint8.
DType quantize_output_type(const PlanContext& ctx) {
  if (ctx.has_input(2)) {
    require_type(ctx, 2, "y_zero_point", {DType::UInt8, DType::Int8});
    return ctx.input(2).dtype;
  }
  const int64_t output_dtype = ctx.node.opset >= 21 ? ctx.node.attributes.get_int("output_dtype", 0) : 0;
  switch (output_dtype) {
    case 0:  // not given
    case 2:  // TensorProto.UINT8
      return DType::UInt8;
    case 3:  // TensorProto.INT8
      return DType::Int8;
    default:
      ctx.fail("output_dtype is " + std::to_string(output_dtype) +
               "; wgi quantizes to uint8 (2) and int8 (3) only");
  }
}

void reject_unsupported_attributes(const PlanContext& ctx) {
  // `saturate` (opset 19) only concerns float8 outputs, which wgi rejects by type; 8-bit integers always
  // saturate.
  if (ctx.node.attributes.has("precision")) ctx.fail("attribute 'precision' (opset 23) is not implemented");
}

OpPlan plan_quantize_linear(const PlanContext& ctx) {
  reject_unsupported_attributes(ctx);
  require_type(ctx, 0, "x", {DType::Float32});
  require_type(ctx, 1, "y_scale", {DType::Float32});
  const DType out_type = quantize_output_type(ctx);
  const ScaleLayout layout = resolve_scale_layout(ctx, 1);
  const TensorDesc& x = ctx.input(0);
  require_addressable(ctx, ctx.input_name(0) + " (x)", x.shape);
  OpPlan plan;
  plan.outputs.push_back({out_type, x.shape});
  const int64_t n = element_count(x.shape);
  if (n == 0) return plan;
  plan.launches.push_back(make_quantize_launch(
      ctx, true, static_cast<uint64_t>(n), layout, out_type, TensorRef::input(0), TensorRef::input(1),
      ctx.has_input(2) ? TensorRef::input(2) : TensorRef::zero(), TensorRef::output(0)));
  return plan;
}

OpPlan plan_dequantize_linear(const PlanContext& ctx) {
  reject_unsupported_attributes(ctx);
  require_type(ctx, 0, "x", {DType::UInt8, DType::Int8, DType::Int32});
  require_type(ctx, 1, "x_scale", {DType::Float32});
  const TensorDesc& x = ctx.input(0);
  if (ctx.has_input(2) && ctx.input(2).dtype != x.dtype) {
    ctx.fail(ctx.input_name(2) + " (x_zero_point) has type " + std::string(dtype_name(ctx.input(2).dtype)) +
             " but x has " + std::string(dtype_name(x.dtype)) + "; they must match");
  }
  if (x.dtype == DType::Int32 && ctx.has_input(2)) {
    // The spec requires a zero point of 0 for int32: check it where it is known.
    if (const Tensor* zp = ctx.constant(2)) {
      for (int32_t v : zp->data<int32_t>()) {
        if (v != 0)
          ctx.fail("an int32 x needs a zero point of 0; " + ctx.input_name(2) + " holds " +
                   std::to_string(v));
      }
    }
  }
  const ScaleLayout layout = resolve_scale_layout(ctx, 1);
  require_addressable(ctx, ctx.input_name(0) + " (x)", x.shape);
  OpPlan plan;
  plan.outputs.push_back({DType::Float32, x.shape});
  const int64_t n = element_count(x.shape);
  if (n == 0) return plan;
  plan.launches.push_back(make_quantize_launch(
      ctx, false, static_cast<uint64_t>(n), layout, DType::UInt8, TensorRef::input(0), TensorRef::input(1),
      ctx.has_input(2) ? TensorRef::input(2) : TensorRef::zero(), TensorRef::output(0)));
  return plan;
}

OpPlan plan_dynamic_quantize_linear(const PlanContext& ctx) {
  require_type(ctx, 0, "x", {DType::Float32});
  const TensorDesc& x = ctx.input(0);
  require_addressable(ctx, ctx.input_name(0) + " (x)", x.shape);
  OpPlan plan;
  plan.outputs = {{DType::UInt8, x.shape}, {DType::Float32, {}}, {DType::UInt8, {}}};
  append_dynamic_quantize_linear(ctx, static_cast<uint64_t>(element_count(x.shape)), TensorRef::input(0),
                                 TensorRef::output(0), TensorRef::output(1), TensorRef::output(2), plan);
  return plan;
}

}  // namespace

void append_dynamic_quantize_linear(const PlanContext& ctx, uint64_t n, TensorRef x, TensorRef y,
                                    TensorRef scale, TensorRef zero_point, OpPlan& plan) {
  const uint64_t chunk = std::max<uint64_t>(kRangeChunk, (n + kMaxRangeWorkgroups - 1) / kMaxRangeWorkgroups);
  const uint64_t groups = std::max<uint64_t>(1, (n + chunk - 1) / chunk);
  const uint32_t wg = pow2_workgroup_size(256, ctx.caps.limits);
  // An x of one chunk (a decoder step's activations): the whole op in one launch (SINGLE).
  const bool single = n > 0 && groups == 1;
  const TensorRef partials = single ? TensorRef::zero() : plan.add_scratch(groups * 2 * sizeof(float));

  // The range over chunks, then (apply) every workgroup finishes it and quantizes its chunk; or both at once.
  for (bool apply : {false, true}) {
    if (single && apply) break;
    KernelLaunch launch;
    launch.program.label = single  ? "dynamic_quantize_single"
                           : apply ? "dynamic_quantize_apply"
                                   : "dynamic_quantize_range";
    KernelInterface iface;
    iface.read("values", "f32", x);
    if (single || apply) {
      if (apply) iface.read("partials", "f32", partials);
      iface.read_write("scale_out", "f32", scale)
          .read_write("zero_point_out", "u32", zero_point)
          .read_write("y", "i32", y);
    } else {
      iface.read_write("partials", "f32", partials);
    }
    iface.uniforms({{"count", UniformType::U32},  // elements of x
                    {"chunk", UniformType::U32},  // elements per workgroup
                    // 255, from the uniform (the divisions are wgi_div_rn's, but a literal would invite the
                    // compiler to fold)
                    {"levels", UniformType::F32},
                    {"groups", UniformType::U32}});  // partial pairs (APPLY)
    launch.program.wgsl =
        iface.load_wgsl("quantize/dynamic_range.wgsl",
                        {{"APPLY", apply ? "1" : "0"}, {"QUANTIZE", single || apply ? "1" : "0"}});
    launch.program.constants = {{"WG_SIZE", wg}};
    iface.bind(launch);
    launch.uniform = iface.values()
                         .u32("count", static_cast<uint32_t>(n))
                         .u32("chunk", static_cast<uint32_t>(chunk))
                         .f32("levels", 255.0f)
                         .u32("groups", static_cast<uint32_t>(groups))
                         .bytes();
    launch.groups = {static_cast<uint32_t>(groups), 1, 1};
    plan.launches.push_back(std::move(launch));
  }
}

void register_quantize_ops(OpRegistry& registry) {
  registry.add("", "QuantizeLinear", 10, kLastLinearQuantizeOpset, {plan_quantize_linear, nullptr});
  registry.add("", "DequantizeLinear", 10, kLastLinearQuantizeOpset, {plan_dequantize_linear, nullptr});
  registry.add("", "DynamicQuantizeLinear", 11, kLatestOpset, {plan_dynamic_quantize_linear, nullptr});
}

}  // namespace wgi::ops
