// Pooling (MaxPool, AveragePool over 1-3 spatial axes; GlobalAveragePool, GlobalMaxPool) and resampling
// (Resize, Upsample). Kernels:
//   pooling/pool.wgsl            one invocation per output element, windows per ONNX (pads, auto_pad,
//                                dilations, ceil_mode, count_include_pad), MaxPool's optional Indices
//   normalization/reduce.wgsl    the global pools, as reductions over the spatial axes (ops/reduction.h)
//   pooling/resize.wgsl          gathers / interpolation from per-axis tap tables computed here in float64
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/reduction.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

std::string str(int64_t v) {
  return std::to_string(v);
}
uint32_t u32(int64_t v) {
  return static_cast<uint32_t>(v);
}

// The pooling and resize kernels index with i32 (window positions before the image are negative).
constexpr int64_t kMaxPoolingElements = std::numeric_limits<int32_t>::max();

uint32_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

bool output_requested(const PlanContext& ctx, size_t k) {
  if (ctx.node.output_names.empty()) return k == 0;
  return k < ctx.node.output_names.size() && !ctx.node.output_names[k].empty();
}

// ---------------------------------------------------------------------------------------------------------
// MaxPool / AveragePool

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

AutoPad parse_auto_pad(const PlanContext& ctx) {
  const std::string s = ctx.node.attributes.get_string("auto_pad", "NOTSET");
  if (s == "NOTSET") return AutoPad::NotSet;
  if (s == "SAME_UPPER") return AutoPad::SameUpper;
  if (s == "SAME_LOWER") return AutoPad::SameLower;
  if (s == "VALID") return AutoPad::Valid;
  ctx.fail("auto_pad is '" + s + "'; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
}

std::vector<int64_t> spatial_ints(const PlanContext& ctx, const std::string& name, size_t count,
                                  int64_t fallback, int64_t min_value) {
  std::vector<int64_t> v = ctx.node.attributes.get_ints(name, std::vector<int64_t>(count, fallback));
  if (v.size() != count) {
    ctx.fail(name + " " + shape_to_string(v) + " has " + str(static_cast<int64_t>(v.size())) + " values; a " +
             str(static_cast<int64_t>(ctx.input(0).shape.size()) - 2) + "-D " + ctx.node.op_type + " needs " +
             str(static_cast<int64_t>(count)));
  }
  for (int64_t x : v) {
    if (x < min_value || x > std::numeric_limits<int32_t>::max()) {
      ctx.fail(name + " " + shape_to_string(v) + " has a value outside [" + str(min_value) + ", 2147483647]");
    }
  }
  return v;
}

struct PoolAxis {
  int64_t input = 1, kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0, output = 1;
};

void resolve_pool_axis(const PlanContext& ctx, size_t axis, AutoPad auto_pad, bool ceil_mode, PoolAxis& a) {
  const int64_t extent = (a.kernel - 1) * a.dilation + 1;
  if (auto_pad == AutoPad::SameUpper || auto_pad == AutoPad::SameLower) {
    a.output = (a.input + a.stride - 1) / a.stride;
    const int64_t total = std::max<int64_t>(0, (a.output - 1) * a.stride + extent - a.input);
    a.pad_begin = auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
    a.pad_end = total - a.pad_begin;
  } else {
    if (auto_pad == AutoPad::Valid) a.pad_begin = a.pad_end = 0;
    const int64_t span = a.input + a.pad_begin + a.pad_end - extent;
    if (span < 0) {
      a.output = 0;
    } else if (ceil_mode) {
      a.output = (span + a.stride - 1) / a.stride + 1;
      // A last window that would start in the end padding is dropped (PyTorch, and ONNX since opset 19's
      // clarification), so that every window sees at least one input element.
      if ((a.output - 1) * a.stride >= a.input + a.pad_begin) --a.output;
    } else {
      a.output = span / a.stride + 1;
    }
  }
  if (a.output <= 0) {
    ctx.fail("spatial axis " + str(static_cast<int64_t>(axis)) + ": input size " + str(a.input) +
             " padded by " + str(a.pad_begin) + "+" + str(a.pad_end) +
             " is smaller than the dilated kernel extent " + str(extent));
  }
  if ((a.output - 1) * a.stride + extent + a.input > std::numeric_limits<int32_t>::max()) {
    ctx.fail("spatial axis " + str(static_cast<int64_t>(axis)) +
             " spans more positions than the pool kernel " + "addresses with i32");
  }
}

OpPlan plan_pool(const PlanContext& ctx, bool is_max) {
  const TensorDesc& x = ctx.input(0);
  const std::string& op = ctx.node.op_type;
  std::string type = "f32";
  uint32_t lowest = f32_bits(-std::numeric_limits<float>::infinity());
  if (x.dtype == DType::Int8 && is_max) {
    type = "i32";
    lowest = 0x80000000u;
  } else if (x.dtype == DType::UInt8 && is_max) {
    type = "u32";
    lowest = 0;
  } else if (x.dtype != DType::Float32) {
    ctx.fail(ctx.input_name(0) + " has type " + std::string(dtype_name(x.dtype)) + "; wgi runs " + op +
             (is_max ? " on float32, int8 and uint8" : " on float32") + " only");
  }
  const Shape& shape = x.shape;
  if (shape.size() < 3 || shape.size() > 5) {
    ctx.fail(ctx.input_name(0) + " has shape " + shape_to_string(shape) + "; wgi runs " + op +
             " on 1-D, 2-D and 3-D data: [N, C, L], [N, C, H, W] or [N, C, D, H, W]");
  }
  require_addressable(ctx, ctx.input_name(0), shape, kMaxPoolingElements);
  const size_t spatial = shape.size() - 2;
  if (!ctx.node.attributes.has("kernel_shape")) ctx.fail("the kernel_shape attribute is required");
  const auto kernel = spatial_ints(ctx, "kernel_shape", spatial, 1, 1);
  const auto strides = spatial_ints(ctx, "strides", spatial, 1, 1);
  const auto dilations = spatial_ints(ctx, "dilations", spatial, 1, 1);
  const auto pads = spatial_ints(ctx, "pads", 2 * spatial, 0, 0);
  const AutoPad auto_pad = parse_auto_pad(ctx);
  const bool ceil_mode = ctx.node.attributes.get_int("ceil_mode", 0) != 0;
  const bool count_include_pad = ctx.node.attributes.get_int("count_include_pad", 0) != 0;
  const int64_t storage_order = ctx.node.attributes.get_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) {
    ctx.fail("storage_order is " + str(storage_order) + "; expected 0 (row major) or 1 (column major)");
  }
  if (auto_pad != AutoPad::NotSet) {
    for (int64_t p : pads) {
      if (p != 0) {
        ctx.fail("pads " + shape_to_string(pads) + " given together with auto_pad " +
                 ctx.node.attributes.get_string("auto_pad", "") + "; ONNX allows only one of them");
      }
    }
  }
  // Spatial axes right-aligned into (d, h, w); the missing leading ones stay 1.
  std::array<PoolAxis, 3> axes;
  const size_t first = 3 - spatial;
  for (size_t i = 0; i < spatial; ++i) {
    PoolAxis& a = axes[first + i];
    a.input = shape[2 + i];
    a.kernel = kernel[i];
    a.stride = strides[i];
    a.dilation = dilations[i];
    a.pad_begin = pads[i];
    a.pad_end = pads[spatial + i];
    resolve_pool_axis(ctx, i, auto_pad, ceil_mode, a);
  }
  Shape y_shape = {shape[0], shape[1]};
  for (size_t i = 0; i < spatial; ++i) y_shape.push_back(axes[first + i].output);
  require_addressable(ctx, "output Y", y_shape, kMaxPoolingElements);

  const bool indices = is_max && output_requested(ctx, 1);
  OpPlan plan;
  plan.outputs.push_back({x.dtype, y_shape});
  if (is_max && ctx.node.output_names.size() > 1) plan.outputs.push_back({DType::Int64, y_shape});
  const int64_t total = element_count(y_shape);
  if (total == 0) return plan;

  KernelLaunch launch;
  const gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(static_cast<uint64_t>(total), 64, ctx.caps.limits);
  launch.program.label = std::string(is_max ? "max_pool" : "average_pool") + (indices ? "_indices" : "") +
                         (type == "f32" ? "" : "_" + type);
  KernelInterface iface;
  iface.read("input", "T", TensorRef::input(0)).read_write("output", "T", TensorRef::output(0));
  if (indices) iface.read_write("indices", "i32", TensorRef::output(1));
  iface.uniforms({{"total", UniformType::U32},  // output elements
                  {"count_include_pad", UniformType::U32},
                  {"storage_order", UniformType::U32},
                  // MAX: the smallest value of T, as bits (WGSL constants cannot be -inf)
                  {"lowest_bits", UniformType::U32},
                  {"in_size", UniformType::Vec4U},  // (d, h, w, -)
                  {"out_size", UniformType::Vec4U},
                  {"kernel", UniformType::Vec4U},
                  {"stride", UniformType::Vec4U},
                  {"dilation", UniformType::Vec4U},
                  {"pad_begin", UniformType::Vec4I},
                  {"pad_end", UniformType::Vec4I}});
  launch.program.wgsl = iface.load_wgsl("pooling/pool.wgsl", {{"TYPE", type},
                                                              {"MAX", is_max ? "1" : "0"},
                                                              {"INDICES", indices ? "1" : "0"},
                                                              {"FLOAT", type == "f32" ? "1" : "0"},
                                                              {"MATH_VEC4", "0"}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  auto field = [&](auto get) {
    return std::array<uint32_t, 4>{u32(get(axes[0])), u32(get(axes[1])), u32(get(axes[2])), 0};
  };
  auto signed_field = [&](auto get) {
    return std::array<int32_t, 4>{static_cast<int32_t>(get(axes[0])), static_cast<int32_t>(get(axes[1])),
                                  static_cast<int32_t>(get(axes[2])), 0};
  };
  launch.uniform = iface.values()
                       .u32("total", u32(total))
                       .u32("count_include_pad", count_include_pad ? 1 : 0)
                       .u32("storage_order", u32(storage_order))
                       .u32("lowest_bits", lowest)
                       .vec4u("in_size", field([](const PoolAxis& a) { return a.input; }))
                       .vec4u("out_size", field([](const PoolAxis& a) { return a.output; }))
                       .vec4u("kernel", field([](const PoolAxis& a) { return a.kernel; }))
                       .vec4u("stride", field([](const PoolAxis& a) { return a.stride; }))
                       .vec4u("dilation", field([](const PoolAxis& a) { return a.dilation; }))
                       .vec4i("pad_begin", signed_field([](const PoolAxis& a) { return a.pad_begin; }))
                       .vec4i("pad_end", signed_field([](const PoolAxis& a) { return a.pad_end; }))
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

OpPlan plan_global_pool(const PlanContext& ctx, bool is_max) {
  const TensorDesc& x = ctx.input(0);
  if (x.dtype != DType::Float32) {
    ctx.fail(ctx.input_name(0) + " has type " + std::string(dtype_name(x.dtype)) + "; wgi runs " +
             ctx.node.op_type + " on float32 only");
  }
  if (x.shape.size() < 2) {
    ctx.fail(ctx.input_name(0) + " has shape " + shape_to_string(x.shape) + "; " + ctx.node.op_type +
             " needs [N, C, ...] (rank >= 2)");
  }
  ReductionSpec spec;
  spec.kind = is_max ? ReduceKind::Max : ReduceKind::Mean;
  spec.keepdims = true;
  spec.reduced.assign(x.shape.size(), true);
  spec.reduced[0] = spec.reduced[1] = false;
  return plan_reduction(ctx, spec);
}

// ---------------------------------------------------------------------------------------------------------
// Resize / Upsample

enum class ResizeMode { Nearest, Linear, Cubic };
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };
enum class CoordMode {
  HalfPixel,
  HalfPixelSymmetric,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNn,
  TfCropAndResize
};

struct ResizeAxis {
  int64_t input = 1;
  int64_t output = 1;
  double scale = 1;
  double length_resized =
      1;  // input * scale: ONNX's reference uses it (not the rounded output) in transforms
  double roi_start = 0;
  double roi_end = 1;
};

struct ResizeConfig {
  ResizeMode mode = ResizeMode::Nearest;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  CoordMode coord = CoordMode::HalfPixel;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  float extrapolation = 0;
  std::vector<ResizeAxis> axes;
};

ResizeMode parse_mode(const PlanContext& ctx, const std::string& fallback) {
  const std::string m = ctx.node.attributes.get_string("mode", fallback);
  if (m == "nearest") return ResizeMode::Nearest;
  if (m == "linear" || m == "bilinear") return ResizeMode::Linear;
  if (m == "cubic" && ctx.node.op_type == "Resize" && ctx.node.opset >= 11) return ResizeMode::Cubic;
  ctx.fail("mode is '" + m + "'; expected nearest, linear" +
           std::string(ctx.node.op_type == "Resize" && ctx.node.opset >= 11 ? " or cubic" : ""));
}

NearestMode parse_nearest_mode(const PlanContext& ctx) {
  const std::string m = ctx.node.attributes.get_string("nearest_mode", "round_prefer_floor");
  if (m == "round_prefer_floor") return NearestMode::RoundPreferFloor;
  if (m == "round_prefer_ceil") return NearestMode::RoundPreferCeil;
  if (m == "floor") return NearestMode::Floor;
  if (m == "ceil") return NearestMode::Ceil;
  ctx.fail("nearest_mode is '" + m + "'; expected round_prefer_floor, round_prefer_ceil, floor or ceil");
}

CoordMode parse_coord_mode(const PlanContext& ctx) {
  const std::string m = ctx.node.attributes.get_string("coordinate_transformation_mode", "half_pixel");
  if (m == "half_pixel") return CoordMode::HalfPixel;
  if (m == "half_pixel_symmetric") return CoordMode::HalfPixelSymmetric;
  if (m == "pytorch_half_pixel") return CoordMode::PytorchHalfPixel;
  if (m == "align_corners") return CoordMode::AlignCorners;
  if (m == "asymmetric") return CoordMode::Asymmetric;
  if (m == "tf_half_pixel_for_nn") return CoordMode::TfHalfPixelForNn;
  if (m == "tf_crop_and_resize") return CoordMode::TfCropAndResize;
  ctx.fail("coordinate_transformation_mode is '" + m +
           "'; expected half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, "
           "tf_half_pixel_for_nn or tf_crop_and_resize");
}

// A host-known float input (scales, roi) as doubles; nullopt when absent or empty.
std::optional<std::vector<double>> float_input(const PlanContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return std::nullopt;
  const TensorDesc& d = ctx.input(i);
  if (element_count(d.shape) == 0) return std::nullopt;
  const Tensor* t = ctx.constant(i);
  if (t == nullptr) {
    ctx.fail(ctx.input_name(i) + " (" + what +
             ") is computed while the model runs; wgi needs it when the model " +
             "is planned (an initializer, or a value computable from shapes)");
  }
  if (t->dtype() != DType::Float32) {
    ctx.fail(ctx.input_name(i) + " (" + what + ") has type " + std::string(dtype_name(t->dtype())) +
             "; expected float32");
  }
  std::vector<double> v;
  for (float f : t->data<float>()) v.push_back(f);
  return v;
}

std::optional<std::vector<int64_t>> sizes_input(const PlanContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  if (element_count(ctx.input(i).shape) == 0) return std::nullopt;
  const Tensor* t = ctx.constant(i);
  if (t == nullptr) {
    ctx.fail(ctx.input_name(i) +
             " (sizes) is computed while the model runs; wgi needs the output size when the " +
             "model is planned (an initializer, or a value computable from shapes)");
  }
  if (t->dtype() != DType::Int64) {
    ctx.fail(ctx.input_name(i) + " (sizes) has type " + std::string(dtype_name(t->dtype())) +
             "; expected int64");
  }
  return std::vector<int64_t>(t->data<int64_t>().begin(), t->data<int64_t>().end());
}

// Resize's sizing inputs as given: scales or sizes (one per entry of axes), and axes (empty: every axis).
struct ResizeRequest {
  std::optional<std::vector<double>> scales;
  std::optional<std::vector<int64_t>> sizes;
  std::vector<int64_t> axes;
};

// The modes and the sizing inputs: Upsample and Resize-10 take scales only and sample asymmetric, floor.
ResizeRequest parse_resize(const PlanContext& ctx, ResizeConfig& cfg) {
  const std::string& op = ctx.node.op_type;
  const int opset = ctx.node.opset;
  ResizeRequest r;
  const bool legacy = op == "Upsample" || opset < 11;
  if (legacy) {
    cfg.mode = parse_mode(ctx, "nearest");
    cfg.coord = CoordMode::Asymmetric;
    cfg.nearest = NearestMode::Floor;
    if (op == "Upsample" && opset < 9) {
      if (!ctx.node.attributes.has("scales")) ctx.fail("the scales attribute is required");
      std::vector<double> s;
      for (float f : ctx.node.attributes.get_floats("scales", {})) s.push_back(f);
      r.scales = s;
    } else {
      r.scales = float_input(ctx, 1, "scales");
      if (!r.scales) ctx.fail(ctx.input_name(1) + " (scales) is required and must not be empty");
    }
    return r;
  }
  cfg.mode = parse_mode(ctx, "nearest");
  cfg.nearest = parse_nearest_mode(ctx);
  cfg.coord = parse_coord_mode(ctx);
  cfg.cubic_a = ctx.node.attributes.get_float("cubic_coeff_a", -0.75f);
  cfg.exclude_outside = ctx.node.attributes.get_int("exclude_outside", 0) != 0;
  cfg.extrapolation = ctx.node.attributes.get_float("extrapolation_value", 0.0f);
  r.scales = float_input(ctx, 2, "scales");
  r.sizes = sizes_input(ctx, 3);
  if (r.scales && r.sizes) ctx.fail("scales and sizes are both given; exactly one of them must be non-empty");
  if (!r.scales && !r.sizes)
    ctx.fail("neither scales (input 2) nor sizes (input 3) is given; one is required");
  if (opset >= 18) {
    r.axes = ctx.node.attributes.get_ints("axes", {});
  }
  return r;
}

// The axes the scales or sizes apply to, each in [0, rank) and named once; every axis when none are given.
std::vector<int64_t> resize_axes(const PlanContext& ctx, std::vector<int64_t> axes, size_t rank) {
  if (axes.empty()) {
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
    return axes;
  }
  std::vector<bool> seen(rank, false);
  for (int64_t& a : axes) {
    if (a < -static_cast<int64_t>(rank) || a >= static_cast<int64_t>(rank)) {
      ctx.fail("axes " + shape_to_string(ctx.node.attributes.get_ints("axes", {})) +
               " has an entry outside [" + str(-static_cast<int64_t>(rank)) + ", " +
               str(static_cast<int64_t>(rank) - 1) + "]");
    }
    if (a < 0) a += static_cast<int64_t>(rank);
    if (seen[static_cast<size_t>(a)]) ctx.fail("axes names axis " + str(a) + " twice");
    seen[static_cast<size_t>(a)] = true;
  }
  return axes;
}

// The output sizes from scales: floor(input * scale), of the roi's crop under tf_crop_and_resize.
void apply_scales(const PlanContext& ctx, const std::vector<double>& scales, const std::vector<int64_t>& axes,
                  ResizeConfig& cfg) {
  const size_t n = axes.size();
  for (size_t k = 0; k < n; ++k) {
    ResizeAxis& a = cfg.axes[static_cast<size_t>(axes[k])];
    const double s = scales[k];
    if (!(s > 0) || !std::isfinite(s)) {
      ctx.fail("scales " + std::to_string(s) + " at position " + str(static_cast<int64_t>(k)) +
               " must be a positive finite number");
    }
    a.scale = s;
    a.length_resized = static_cast<double>(a.input) * s;
    const double crop = cfg.coord == CoordMode::TfCropAndResize ? a.roi_end - a.roi_start : 1.0;
    a.output = static_cast<int64_t>(std::floor(static_cast<double>(a.input) * crop * s));
  }
}

// The scales from sizes, per keep_aspect_ratio_policy (opset 18; stretch before).
void apply_sizes(const PlanContext& ctx, const std::vector<int64_t>& sizes, const std::vector<int64_t>& axes,
                 ResizeConfig& cfg) {
  const size_t n = axes.size();
  const std::string policy = ctx.node.opset >= 18
                                 ? ctx.node.attributes.get_string("keep_aspect_ratio_policy", "stretch")
                                 : std::string("stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") {
    ctx.fail("keep_aspect_ratio_policy is '" + policy + "'; expected stretch, not_larger or not_smaller");
  }
  for (size_t k = 0; k < n; ++k) {
    if (sizes[k] < 0) ctx.fail("sizes " + shape_to_string(sizes) + " has a negative entry");
  }
  if (policy == "stretch") {
    for (size_t k = 0; k < n; ++k) {
      ResizeAxis& a = cfg.axes[static_cast<size_t>(axes[k])];
      a.output = sizes[k];
      a.scale = a.input > 0 ? static_cast<double>(a.output) / static_cast<double>(a.input) : 1.0;
      a.length_resized = static_cast<double>(a.output);
    }
    return;
  }
  // One scale for all the given axes, the largest that fits (not_larger) or the smallest that covers.
  double s = policy == "not_larger" ? INFINITY : 0;
  for (size_t k = 0; k < n; ++k) {
    const ResizeAxis& a = cfg.axes[static_cast<size_t>(axes[k])];
    const double r = a.input > 0 ? static_cast<double>(sizes[k]) / static_cast<double>(a.input) : 1.0;
    s = policy == "not_larger" ? std::min(s, r) : std::max(s, r);
  }
  for (size_t k = 0; k < n; ++k) {
    ResizeAxis& a = cfg.axes[static_cast<size_t>(axes[k])];
    a.scale = s;
    a.length_resized = s * static_cast<double>(a.input);
    a.output = static_cast<int64_t>(std::floor(a.length_resized + 0.5));  // ONNX rounds half up here
  }
}

ResizeConfig resize_config(const PlanContext& ctx) {
  const Shape& shape = ctx.input(0).shape;
  const size_t rank = shape.size();
  ResizeConfig cfg;
  ResizeRequest request = parse_resize(ctx, cfg);
  const std::vector<int64_t> axes = resize_axes(ctx, std::move(request.axes), rank);
  const std::optional<std::vector<double>>& scales = request.scales;
  const std::optional<std::vector<int64_t>>& sizes = request.sizes;
  const size_t n = axes.size();
  const size_t given = scales ? scales->size() : sizes->size();
  if (given != n) {
    ctx.fail(std::string(scales ? "scales" : "sizes") + " has " + str(static_cast<int64_t>(given)) +
             " values; expected " + str(static_cast<int64_t>(n)) + " (" +
             (n == rank ? "the input's rank" : "one per entry of axes") + ")");
  }
  cfg.axes.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    cfg.axes[i].input = cfg.axes[i].output = shape[i];
    cfg.axes[i].length_resized = static_cast<double>(shape[i]);
  }
  if (cfg.coord == CoordMode::TfCropAndResize) {
    const auto roi = float_input(ctx, 1, "roi");
    if (!roi || roi->size() != 2 * n) {
      ctx.fail(ctx.input_name(1) + " (roi) must hold " + str(static_cast<int64_t>(2 * n)) +
               " values (starts, then ends) for tf_crop_and_resize");
    }
    for (size_t k = 0; k < n; ++k) {
      cfg.axes[static_cast<size_t>(axes[k])].roi_start = (*roi)[k];
      cfg.axes[static_cast<size_t>(axes[k])].roi_end = (*roi)[n + k];
    }
  }
  if (scales) {
    apply_scales(ctx, *scales, axes, cfg);
  } else {
    apply_sizes(ctx, *sizes, axes, cfg);
  }
  if (ctx.node.attributes.get_int("antialias", 0) != 0 && cfg.mode != ResizeMode::Nearest) {
    for (const ResizeAxis& a : cfg.axes) {
      if (a.scale < 1) {
        ctx.fail("antialias is 1 and an axis is downscaled (scale " + std::to_string(a.scale) +
                 "); wgi does not implement Resize's antialiasing filter");
      }
    }
  }
  return cfg;
}

// Where output coordinate o of an axis samples the input, per coordinate_transformation_mode; nullopt when it
// falls outside the input under tf_crop_and_resize (the output then takes extrapolation_value).
std::optional<double> source_coordinate(const ResizeConfig& cfg, const ResizeAxis& a, int64_t o) {
  const double x = static_cast<double>(o);
  const double in = static_cast<double>(a.input);
  switch (cfg.coord) {
    case CoordMode::HalfPixel:
      return (x + 0.5) / a.scale - 0.5;
    case CoordMode::HalfPixelSymmetric: {
      const double adjustment = static_cast<double>(a.output) / a.length_resized;
      const double offset = in / 2 * (1 - adjustment);
      return offset + (x + 0.5) / a.scale - 0.5;
    }
    case CoordMode::PytorchHalfPixel:
      return a.length_resized > 1 ? (x + 0.5) / a.scale - 0.5 : 0.0;
    case CoordMode::AlignCorners:
      return a.length_resized == 1 ? 0.0 : x * (in - 1) / (a.length_resized - 1);
    case CoordMode::Asymmetric:
      return x / a.scale;
    case CoordMode::TfHalfPixelForNn:
      return (x + 0.5) / a.scale;
    case CoordMode::TfCropAndResize: {
      const double span = a.roi_end - a.roi_start;
      double s = a.length_resized == 1 ? span * (in - 1) / 2 : x * span * (in - 1) / (a.length_resized - 1);
      s += a.roi_start * (in - 1);
      if (s < 0 || s > in - 1) return std::nullopt;
      return s;
    }
  }
  return 0.0;
}

struct Tap {
  int64_t index;
  double weight;
};

// The taps of output coordinate o along one axis, merged by input index (edge clamping can repeat one) and
// without zero weights; {-1, 0} alone for extrapolation.
std::vector<Tap> axis_taps(const ResizeConfig& cfg, const ResizeAxis& a, int64_t o) {
  const std::optional<double> src = source_coordinate(cfg, a, o);
  if (!src) return {{-1, 0.0}};
  const double x = *src;
  const double base = std::floor(x);
  const double ratio = x - base;
  const auto b = static_cast<int64_t>(base);
  std::vector<Tap> raw;
  switch (cfg.mode) {
    case ResizeMode::Nearest: {
      bool up = false;
      if (ratio != 0) {
        switch (cfg.nearest) {
          case NearestMode::RoundPreferFloor:
            up = ratio > 0.5;
            break;
          case NearestMode::RoundPreferCeil:
            up = ratio >= 0.5;
            break;
          case NearestMode::Floor:
            up = false;
            break;
          case NearestMode::Ceil:
            up = true;
            break;
        }
      }
      raw.push_back({b + (up ? 1 : 0), 1.0});
      break;
    }
    case ResizeMode::Linear:
      raw = {{b, 1 - ratio}, {b + 1, ratio}};
      break;
    case ResizeMode::Cubic: {
      const double A = cfg.cubic_a;
      const double r = ratio, s = 1 - ratio;
      raw = {{b - 1, ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A},
             {b, ((A + 2) * r - (A + 3)) * r * r + 1},
             {b + 1, ((A + 2) * s - (A + 3)) * s * s + 1},
             {b + 2, ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A}};
      break;
    }
  }
  if (cfg.exclude_outside && cfg.mode == ResizeMode::Cubic) {
    double sum = 0;
    for (Tap& t : raw) {
      if (t.index < 0 || t.index >= a.input) t.weight = 0;
      sum += t.weight;
    }
    if (sum != 0) {
      for (Tap& t : raw) t.weight /= sum;
    }
  }
  std::vector<Tap> taps;
  for (Tap t : raw) {
    t.index = std::clamp<int64_t>(t.index, 0, a.input - 1);
    auto same = std::find_if(taps.begin(), taps.end(), [&](const Tap& u) { return u.index == t.index; });
    if (same != taps.end()) {
      same->weight += t.weight;
    } else {
      taps.push_back(t);
    }
  }
  taps.erase(std::remove_if(taps.begin(), taps.end(), [](const Tap& t) { return t.weight == 0; }),
             taps.end());
  if (taps.empty()) taps.push_back({std::clamp<int64_t>(b, 0, a.input - 1), 0.0});
  return taps;
}

OpPlan plan_resize(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const ResizeConfig cfg = resize_config(ctx);
  const size_t rank = x.shape.size();
  if (cfg.mode != ResizeMode::Nearest && x.dtype != DType::Float32) {
    ctx.fail(ctx.input_name(0) + " has type " + std::string(dtype_name(x.dtype)) +
             "; wgi interpolates (linear, cubic) float32 only; nearest takes every type");
  }
  if (x.dtype == DType::Float16)
    ctx.fail(ctx.input_name(0) + " has type float16, which wgi does not run yet");
  if (rank > 8)
    ctx.fail(ctx.input_name(0) + " has rank " + str(static_cast<int64_t>(rank)) + "; wgi resizes rank <= 8");
  require_addressable(ctx, ctx.input_name(0), x.shape, kMaxPoolingElements);
  Shape y_shape;
  for (const ResizeAxis& a : cfg.axes) y_shape.push_back(a.output);
  require_addressable(ctx, "output Y", y_shape, kMaxPoolingElements);

  OpPlan plan;
  plan.outputs.push_back({x.dtype, y_shape});
  const int64_t total = element_count(y_shape);
  if (total == 0) return plan;
  if (element_count(x.shape) == 0) {
    ctx.fail(ctx.input_name(0) + " " + shape_to_string(x.shape) + " is empty but the output " +
             shape_to_string(y_shape) + " is not");
  }

  // Per axis: its taps for every output coordinate, padded to the axis's widest; gathers have one tap.
  std::vector<int32_t> table;
  std::vector<uint32_t> table_base(8, 0), out_shape(8, 1), in_strides(8, 0);
  std::vector<size_t> interpolated;
  std::vector<uint32_t> tap_counts;
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    in_strides[i] = u32(stride);
    stride *= x.shape[i];
  }
  for (size_t i = 0; i < rank; ++i) {
    const ResizeAxis& a = cfg.axes[i];
    out_shape[i] = u32(a.output);
    std::vector<std::vector<Tap>> per_coord;
    size_t width = 1;
    bool gather = true;
    for (int64_t o = 0; o < a.output; ++o) {
      per_coord.push_back(axis_taps(cfg, a, o));
      const auto& t = per_coord.back();
      width = std::max(width, t.size());
      if (t.size() != 1 || (t[0].index >= 0 && t[0].weight != 1.0)) gather = false;
    }
    if (!gather) {
      if (interpolated.size() == 2) {
        ctx.fail("interpolates along more than two axes (" + shape_to_string(x.shape) + " -> " +
                 shape_to_string(y_shape) + "); wgi's Resize kernel interpolates at most two (e.g. H and W)");
      }
      interpolated.push_back(i);
      tap_counts.push_back(u32(static_cast<int64_t>(width)));
    } else {
      width = 1;
    }
    table_base[i] = u32(static_cast<int64_t>(table.size() / 2));
    for (const auto& taps : per_coord) {
      for (size_t t = 0; t < width; ++t) {
        const Tap tap = t < taps.size() ? taps[t] : Tap{taps[0].index, 0.0};
        table.push_back(static_cast<int32_t>(tap.index));
        table.push_back(static_cast<int32_t>(f32_bits(static_cast<float>(tap.weight))));
      }
    }
  }
  Tensor table_tensor = Tensor::from_vector<int32_t>({static_cast<int64_t>(table.size())}, table);
  plan.constants.push_back(std::move(table_tensor));

  uint32_t extrapolation_bits = f32_bits(cfg.extrapolation);
  if (x.dtype != DType::Float32) {
    extrapolation_bits = static_cast<uint32_t>(static_cast<int32_t>(cfg.extrapolation));
  }
  const auto r = u32(static_cast<int64_t>(rank));
  KernelLaunch launch;
  const gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(static_cast<uint64_t>(total), 64, ctx.caps.limits);
  static constexpr const char* kModeNames[] = {"nearest", "linear", "cubic"};
  launch.program.label = std::string("resize_") + kModeNames[static_cast<int>(cfg.mode)];
  KernelInterface iface;
  iface.read("input", "u32", TensorRef::input(0))
      .read("table", "i32", TensorRef::constant(0))
      .read_write("output", "u32", TensorRef::output(0))
      .uniforms({{"total", UniformType::U32},
                 {"rank", UniformType::U32},
                 {"axis_a", UniformType::U32},  // interpolated axes; `rank` when absent
                 {"axis_b", UniformType::U32},
                 {"taps_a", UniformType::U32},
                 {"taps_b", UniformType::U32},
                 {"extrapolation_bits", UniformType::U32},
                 {"_pad", UniformType::Pad},
                 {"out_shape", UniformType::Vec4U, 2},
                 {"in_strides", UniformType::Vec4U, 2},
                 // first table entry of each axis; an entry is an (index, weight bits) pair
                 {"table_base", UniformType::Vec4U, 2}});
  launch.program.wgsl = iface.load_wgsl("pooling/resize.wgsl");
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  auto vec4 = [](const std::vector<uint32_t>& v, size_t first) {
    return std::array<uint32_t, 4>{v[first], v[first + 1], v[first + 2], v[first + 3]};
  };
  launch.uniform =
      iface.values()
          .u32("total", u32(total))
          .u32("rank", r)
          .u32("axis_a", interpolated.size() > 0 ? u32(static_cast<int64_t>(interpolated[0])) : r)
          .u32("axis_b", interpolated.size() > 1 ? u32(static_cast<int64_t>(interpolated[1])) : r)
          .u32("taps_a", tap_counts.size() > 0 ? tap_counts[0] : 1)
          .u32("taps_b", tap_counts.size() > 1 ? tap_counts[1] : 1)
          .u32("extrapolation_bits", extrapolation_bits)
          .vec4u_array("out_shape", std::array{vec4(out_shape, 0), vec4(out_shape, 4)})
          .vec4u_array("in_strides", std::array{vec4(in_strides, 0), vec4(in_strides, 4)})
          .vec4u_array("table_base", std::array{vec4(table_base, 0), vec4(table_base, 4)})
          .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_pooling_ops(OpRegistry& registry) {
  registry.add("", "MaxPool", 1, kLatestOpset,
               OpHandler{[](const PlanContext& c) { return plan_pool(c, true); }, {}});
  registry.add("", "AveragePool", 1, kLatestOpset,
               OpHandler{[](const PlanContext& c) { return plan_pool(c, false); }, {}});
  registry.add("", "GlobalMaxPool", 1, kLatestOpset,
               OpHandler{[](const PlanContext& c) { return plan_global_pool(c, true); }, {}});
  registry.add("", "GlobalAveragePool", 1, kLatestOpset,
               OpHandler{[](const PlanContext& c) { return plan_global_pool(c, false); }, {}});
  // Upsample 7-8 (scales attribute), 9 (scales input); deprecated from 10 in favour of Resize.
  registry.add("", "Upsample", 7, 9, OpHandler{plan_resize, {}});
  // Resize 10 (scales only, asymmetric); 11-12 (roi, scales, sizes, coordinate modes); 13-17 (roi and scales
  // optional); 18 (axes, keep_aspect_ratio_policy, antialias); 19 (half_pixel_symmetric). One planner reads
  // the opset.
  registry.add("", "Resize", 10, 10, OpHandler{plan_resize, {}});
  registry.add("", "Resize", 11, 12, OpHandler{plan_resize, {}});
  registry.add("", "Resize", 13, 17, OpHandler{plan_resize, {}});
  registry.add("", "Resize", 18, 18, OpHandler{plan_resize, {}});
  registry.add("", "Resize", 19, kLatestOpset, OpHandler{plan_resize, {}});
}

}  // namespace wgi::ops
