// GridSample (opset 16: 4-D, modes bilinear / nearest / bicubic; opset 20+: 3-D to 5-D, modes linear /
// nearest / cubic), paddings zeros / border / reflection, align_corners 0 / 1: one invocation per output
// element sums its taps (kernels/grid_sample/grid_sample.wgsl), following the ONNX reference's definition.
#include <array>

#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

constexpr size_t kMaxSpatialRank = 3;  // the uniform's in_dims and the kernel's per-dim arrays

// Taps per dim of the interpolation mode; opset 20 renamed bilinear / bicubic to linear / cubic.
uint32_t mode_taps(const PlanContext& ctx) {
  const bool renamed = ctx.node.opset >= 20;
  const std::string mode = ctx.node.attributes.get_string("mode", renamed ? "linear" : "bilinear");
  if (mode == "nearest") return 1;
  if (mode == (renamed ? "linear" : "bilinear")) return 2;
  if (mode == (renamed ? "cubic" : "bicubic")) return 4;
  ctx.fail("attribute 'mode' is '" + mode + "'; opset " + std::to_string(ctx.node.opset) + " expects " +
           (renamed ? "'linear', 'nearest' or 'cubic'" : "'bilinear', 'nearest' or 'bicubic'"));
}

uint32_t padding_code(const PlanContext& ctx) {
  const std::string padding = ctx.node.attributes.get_string("padding_mode", "zeros");
  if (padding == "zeros") return 0;
  if (padding == "border") return 1;
  if (padding == "reflection") return 2;
  ctx.fail("attribute 'padding_mode' is '" + padding + "'; expected 'zeros', 'border' or 'reflection'");
}

OpPlan plan_grid_sample(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& grid = ctx.input(1);
  for (size_t i = 0; i < 2; ++i) {
    if (ctx.input(i).dtype != DType::Float32) {
      ctx.fail("input " + std::to_string(i) + " (" + ctx.input_name(i) + ") has type " +
               std::string(dtype_name(ctx.input(i).dtype)) + "; wgi runs GridSample on float32 and float16");
    }
  }
  const size_t rank = x.shape.size();
  const size_t min_rank = ctx.node.opset >= 20 ? 3 : 4;
  const size_t max_rank = ctx.node.opset >= 20 ? kMaxSpatialRank + 2 : 4;
  if (rank < min_rank || rank > max_rank) {
    ctx.fail("input 0 (X) " + shape_to_string(x.shape) + " has rank " + std::to_string(rank) + "; opset " +
             std::to_string(ctx.node.opset) + " GridSample takes " +
             (min_rank == max_rank ? "rank 4 [N, C, H, W]" : "rank 3 to 5 [N, C, spatial...] in wgi"));
  }
  const size_t spatial = rank - 2;
  if (grid.shape.size() != rank || grid.shape[0] != x.shape[0] ||
      grid.shape.back() != static_cast<int64_t>(spatial)) {
    ctx.fail("input 1 (grid) " + shape_to_string(grid.shape) + " must be [N, out spatial..., " +
             std::to_string(spatial) + "] for X " + shape_to_string(x.shape));
  }
  const uint32_t taps = mode_taps(ctx), padding = padding_code(ctx);
  const int64_t align_corners = ctx.node.attributes.get_int("align_corners", 0);
  if (align_corners != 0 && align_corners != 1) {
    ctx.fail("attribute 'align_corners' is " + std::to_string(align_corners) + "; expected 0 or 1");
  }
  for (size_t d = 2; d < rank; ++d) {
    if (x.shape[d] == 0 && element_count(grid.shape) > 0) {
      ctx.fail("input 0 (X) " + shape_to_string(x.shape) + " has an empty spatial dim to sample from");
    }
  }
  Shape out_shape = {x.shape[0], x.shape[1]};
  out_shape.insert(out_shape.end(), grid.shape.begin() + 1, grid.shape.end() - 1);
  require_addressable(ctx, "input 0 (X)", x.shape);
  require_addressable(ctx, "input 1 (grid)", grid.shape);
  require_addressable(ctx, "the output", out_shape);

  OpPlan plan;
  plan.outputs.push_back({DType::Float32, out_shape});
  const int64_t count = element_count(out_shape);
  if (count == 0) return plan;
  int64_t out_spatial = 1;
  for (size_t d = 2; d < out_shape.size(); ++d) out_spatial *= out_shape[d];
  std::array<uint32_t, 4> in_dims = {1, 1, 1, 1};
  for (size_t d = 0; d < spatial; ++d) in_dims[d] = static_cast<uint32_t>(x.shape[d + 2]);

  gpu::DispatchGrid dispatch = gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = "grid_sample";
  KernelInterface iface;
  iface.read("x", "f32", TensorRef::input(0))
      .read("grid", "f32", TensorRef::input(1))
      .read_write("y", "f32", TensorRef::output(0))
      .uniforms({{"count", UniformType::U32},  // output elements
                 {"channels", UniformType::U32},
                 {"out_spatial", UniformType::U32},  // o1 * ... * oR
                 {"rank", UniformType::U32},         // R
                 {"in_dims", UniformType::Vec4U},    // d1..dR (unused lanes 1)
                 {"taps", UniformType::U32},         // per dim: 1 nearest, 2 linear, 4 cubic
                 {"padding", UniformType::U32},      // 0 zeros, 1 border, 2 reflection
                 {"align_corners", UniformType::U32},
                 {"_pad", UniformType::Pad}});
  launch.program.wgsl = iface.load_wgsl("grid_sample/grid_sample.wgsl");
  launch.program.constants = {{"WG_SIZE", dispatch.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(count))
                       .u32("channels", static_cast<uint32_t>(x.shape[1]))
                       .u32("out_spatial", static_cast<uint32_t>(out_spatial))
                       .u32("rank", static_cast<uint32_t>(spatial))
                       .vec4u("in_dims", in_dims)
                       .u32("taps", taps)
                       .u32("padding", padding)
                       .u32("align_corners", static_cast<uint32_t>(align_corners))
                       .bytes();
  launch.groups = dispatch.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_grid_sample_ops(OpRegistry& registry) {
  OpHandler grid_sample;
  grid_sample.plan = plan_grid_sample;
  registry.add("", "GridSample", 16, kLatestOpset, std::move(grid_sample));
}

}  // namespace wgi::ops
