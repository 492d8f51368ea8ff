// RoiAlign (opset 10; opset 16 adds coordinate_transformation_mode, default half_pixel, where opset 10
// behaves as output_half_pixel): one invocation per output element samples and pools its bin
// (kernels/roi_align/roi_align.wgsl), as the ONNX reference defines it.
#include <algorithm>
#include <limits>

#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

int64_t positive_attribute(const PlanContext& ctx, const std::string& name, int64_t fallback) {
  const int64_t v = ctx.node.attributes.get_int(name, fallback);
  if (v < 1) ctx.fail("attribute '" + name + "' is " + std::to_string(v) + "; expected >= 1");
  return v;
}

OpPlan plan_roi_align(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& rois = ctx.input(1);
  const TensorDesc& batch_indices = ctx.input(2);
  if (x.dtype != DType::Float32 || rois.dtype != DType::Float32) {
    ctx.fail("X has type " + std::string(dtype_name(x.dtype)) + " and rois " +
             std::string(dtype_name(rois.dtype)) + "; wgi runs RoiAlign on float32 and float16");
  }
  if (batch_indices.dtype != DType::Int64 && batch_indices.dtype != DType::Int32) {
    ctx.fail("input 2 (batch_indices, " + ctx.input_name(2) + ") has type " +
             std::string(dtype_name(batch_indices.dtype)) + "; expected int64");
  }
  if (x.shape.size() != 4) ctx.fail("input 0 (X) " + shape_to_string(x.shape) + " must be [N, C, H, W]");
  if (rois.shape.size() != 2 || rois.shape[1] != 4) {
    ctx.fail("input 1 (rois) " + shape_to_string(rois.shape) + " must be [num_rois, 4]");
  }
  if (batch_indices.shape != Shape{rois.shape[0]}) {
    ctx.fail("input 2 (batch_indices) " + shape_to_string(batch_indices.shape) + " must be [" +
             std::to_string(rois.shape[0]) + "], one image index per roi");
  }
  const Attributes& a = ctx.node.attributes;
  const std::string mode = a.get_string("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("attribute 'mode' is '" + mode + "'; expected 'avg' or 'max'");
  const std::string transform = a.get_string("coordinate_transformation_mode",
                                             ctx.node.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctx.node.opset < 16 && a.has("coordinate_transformation_mode")) {
    ctx.fail("attribute 'coordinate_transformation_mode' exists from opset 16 on");
  }
  if (transform != "half_pixel" && transform != "output_half_pixel") {
    ctx.fail("attribute 'coordinate_transformation_mode' is '" + transform +
             "'; expected 'half_pixel' or 'output_half_pixel'");
  }
  const int64_t out_h = positive_attribute(ctx, "output_height", 1);
  const int64_t out_w = positive_attribute(ctx, "output_width", 1);
  const int64_t sampling_ratio = a.get_int("sampling_ratio", 0);
  if (sampling_ratio < 0) {
    ctx.fail("attribute 'sampling_ratio' is " + std::to_string(sampling_ratio) + "; expected >= 0");
  }
  const float spatial_scale = a.get_float("spatial_scale", 1.0f);
  if (const Tensor* known = ctx.constant(2)) {
    const std::vector<int64_t> v = data_movement::tensor_ints(ctx, *known, "input 2 (batch_indices)");
    for (size_t k = 0; k < v.size(); ++k) {
      if (v[k] < 0 || v[k] >= x.shape[0]) {
        ctx.fail("input 2 (batch_indices, " + ctx.input_name(2) + ") has " + std::to_string(v[k]) +
                 " at element " + std::to_string(k) + ", outside [0, " + std::to_string(x.shape[0] - 1) +
                 "]");
      }
    }
  }
  const Shape out_shape = {rois.shape[0], x.shape[1], out_h, out_w};
  if (element_count(out_shape) > 0 && (x.shape[2] == 0 || x.shape[3] == 0)) {
    ctx.fail("input 0 (X) " + shape_to_string(x.shape) + " has no pixels to sample");
  }
  require_addressable(ctx, "input 0 (X)", x.shape);
  require_addressable(ctx, "input 1 (rois)", rois.shape);
  require_addressable(ctx, "the output", out_shape);

  OpPlan plan;
  plan.outputs.push_back({DType::Float32, out_shape});
  const int64_t count = element_count(out_shape);
  if (count == 0) return plan;
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = "roi_align";
  KernelInterface iface;
  iface.read("x", "f32", TensorRef::input(0))
      .read("rois", "f32", TensorRef::input(1))
      .read("batch_indices", "i32", TensorRef::input(2))
      .read_write("y", "f32", TensorRef::output(0))
      .run_status()
      .uniforms({{"count", UniformType::U32},  // output elements
                 {"channels", UniformType::U32},
                 {"height", UniformType::U32},
                 {"width", UniformType::U32},
                 {"out_h", UniformType::U32},
                 {"out_w", UniformType::U32},
                 {"batch", UniformType::U32},           // N
                 {"sampling_ratio", UniformType::U32},  // 0: adaptive
                 {"spatial_scale", UniformType::F32},
                 {"offset", UniformType::F32},  // 0.5 for half_pixel, 0 for output_half_pixel
                 {"max_mode", UniformType::U32},
                 {"status_tag", UniformType::U32}});
  launch.program.wgsl = iface.load_wgsl("roi_align/roi_align.wgsl");
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform =
      iface.values()
          .u32("count", static_cast<uint32_t>(count))
          .u32("channels", static_cast<uint32_t>(x.shape[1]))
          .u32("height", static_cast<uint32_t>(x.shape[2]))
          .u32("width", static_cast<uint32_t>(x.shape[3]))
          .u32("out_h", static_cast<uint32_t>(out_h))
          .u32("out_w", static_cast<uint32_t>(out_w))
          .u32("batch", static_cast<uint32_t>(x.shape[0]))
          .u32("sampling_ratio", static_cast<uint32_t>(std::min<int64_t>(sampling_ratio, UINT32_MAX)))
          .f32("spatial_scale", spatial_scale)
          .f32("offset", transform == "half_pixel" ? 0.5f : 0.0f)
          .u32("max_mode", mode == "max" ? 1 : 0)
          .u32("status_tag", ctx.status_tag)
          .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_roi_align_ops(OpRegistry& registry) {
  OpHandler roi_align;
  roi_align.plan = plan_roi_align;
  registry.add("", "RoiAlign", 10, kLatestOpset, std::move(roi_align));
}

}  // namespace wgi::ops
