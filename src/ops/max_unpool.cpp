// MaxUnpool: the output (shape from kernel_shape / strides / pads, or the output_shape input, which must be
// known when the model is planned and may only be larger) filled with zeros, then each input element
// scattered to its index, an index into the unpooled shape placed at the same coordinates of the output
// (kernels/max_unpool/max_unpool.wgsl).
#include <array>
#include <limits>

#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

constexpr size_t kMaxSpatialRank = 4;  // the kernel's vec4 dims

Shape unpooled_shape(const PlanContext& ctx, const Shape& x) {
  const size_t spatial = x.size() - 2;
  const Attributes& a = ctx.node.attributes;
  if (!a.has("kernel_shape")) ctx.fail("attribute 'kernel_shape' is required");
  const std::vector<int64_t> kernel = a.get_ints("kernel_shape", {});
  const std::vector<int64_t> strides = a.get_ints("strides", std::vector<int64_t>(spatial, 1));
  const std::vector<int64_t> pads = a.get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  if (kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial) {
    ctx.fail("attributes kernel_shape (" + std::to_string(kernel.size()) + " values), strides (" +
             std::to_string(strides.size()) + ") and pads (" + std::to_string(pads.size()) + ") must have " +
             std::to_string(spatial) + ", " + std::to_string(spatial) + " and " +
             std::to_string(2 * spatial) + " values for input " + shape_to_string(x));
  }
  Shape out = {x[0], x[1]};
  for (size_t d = 0; d < spatial; ++d) {
    if (kernel[d] < 1 || strides[d] < 1 || pads[d] < 0 || pads[d + spatial] < 0) {
      ctx.fail("kernel_shape and strides must be >= 1 and pads >= 0 (spatial dim " + std::to_string(d) + ")");
    }
    const int64_t size = (x[d + 2] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + spatial];
    if (size < 0) ctx.fail("the pads leave spatial dim " + std::to_string(d) + " of the output negative");
    out.push_back(size);
  }
  return out;
}

OpPlan plan_max_unpool(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& indices = ctx.input(1);
  if (x.dtype != DType::Float32) {
    ctx.fail("input 0 (X) has type " + std::string(dtype_name(x.dtype)) +
             "; wgi runs MaxUnpool on float32 and float16");
  }
  if (indices.dtype != DType::Int64 && indices.dtype != DType::Int32) {
    ctx.fail("input 1 (I, " + ctx.input_name(1) + ") has type " + std::string(dtype_name(indices.dtype)) +
             "; expected int64");
  }
  if (x.shape.size() < 3) ctx.fail("input 0 (X) " + shape_to_string(x.shape) + " must be [N, C, spatial...]");
  if (indices.shape != x.shape) {
    ctx.fail("input 1 (I) " + shape_to_string(indices.shape) + " must have X's shape " +
             shape_to_string(x.shape));
  }
  const Shape unpooled = unpooled_shape(ctx, x.shape);
  Shape out_shape = unpooled;
  if (ctx.has_input(2)) {
    const std::vector<int64_t> given = data_movement::known_ints(ctx, 2, "input 2 (output_shape)");
    if (given.size() != x.shape.size() || given[0] != x.shape[0] || given[1] != x.shape[1]) {
      ctx.fail("input 2 (output_shape) is " + shape_to_string(given) + "; expected " +
               std::to_string(x.shape.size()) + " dims starting with X's N and C " +
               shape_to_string(x.shape));
    }
    for (size_t d = 2; d < given.size(); ++d) {
      if (given[d] < unpooled[d]) {
        ctx.fail("input 2 (output_shape) " + shape_to_string(given) + " is smaller than the unpooled shape " +
                 shape_to_string(unpooled) + " in dim " + std::to_string(d));
      }
    }
    out_shape = given;
  }
  if (x.shape.size() - 2 > kMaxSpatialRank) {
    ctx.fail("input 0 (X) " + shape_to_string(x.shape) + " has " + std::to_string(x.shape.size() - 2) +
             " spatial dims; wgi's MaxUnpool takes at most " + std::to_string(kMaxSpatialRank));
  }
  require_addressable(ctx, "input 0 (X)", x.shape, std::numeric_limits<int32_t>::max());
  require_addressable(ctx, "the output", out_shape, std::numeric_limits<int32_t>::max());
  require_addressable(ctx, "the unpooled shape", unpooled, std::numeric_limits<int32_t>::max());
  const int64_t out_count = element_count(out_shape), unpooled_count = element_count(unpooled);
  if (const Tensor* known = ctx.constant(1)) {
    const std::vector<int64_t> v = data_movement::tensor_ints(ctx, *known, "input 1 (I)");
    for (size_t k = 0; k < v.size(); ++k) {
      if (v[k] < 0 || v[k] >= unpooled_count) {
        ctx.fail("input 1 (I, " + ctx.input_name(1) + ") has " + std::to_string(v[k]) + " at element " +
                 std::to_string(k) + ", outside the unpooled shape " + shape_to_string(unpooled) + "'s [0, " +
                 std::to_string(unpooled_count - 1) + "]");
      }
    }
  }

  OpPlan plan;
  plan.outputs.push_back({DType::Float32, out_shape});
  if (out_count == 0) return plan;
  data_movement::add_fill_launch(ctx, plan, TensorRef::output(0), out_count, 0u);
  const int64_t count = element_count(x.shape);
  if (count == 0) return plan;
  const size_t spatial = x.shape.size() - 2;
  // The spatial dims of a shape, padded with 1s.
  auto dims4 = [&](const Shape& s) {
    std::array<uint32_t, 4> v = {1, 1, 1, 1};
    for (size_t d = 0; d < spatial; ++d) v[d] = static_cast<uint32_t>(s[d + 2]);
    return v;
  };
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = "max_unpool";
  KernelInterface iface;
  iface.read("x", "f32", TensorRef::input(0))
      .read("indices", "i32", TensorRef::input(1))
      .read_write("y", "f32", TensorRef::output(0))
      .run_status()
      .uniforms({{"count", UniformType::U32},           // input elements
                 {"unpooled_count", UniformType::U32},  // elements of [N, C, inferred...]
                 {"spatial_rank", UniformType::U32},
                 {"status_tag", UniformType::U32},
                 {"inferred", UniformType::Vec4U},    // the unpooled spatial dims
                 {"out_dims", UniformType::Vec4U}});  // the output's spatial dims
  launch.program.wgsl = iface.load_wgsl("max_unpool/max_unpool.wgsl");
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(count))
                       .u32("unpooled_count", static_cast<uint32_t>(unpooled_count))
                       .u32("spatial_rank", static_cast<uint32_t>(spatial))
                       .u32("status_tag", ctx.status_tag)
                       .vec4u("inferred", dims4(unpooled))
                       .vec4u("out_dims", dims4(out_shape))
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_max_unpool_ops(OpRegistry& registry) {
  OpHandler max_unpool;
  max_unpool.plan = plan_max_unpool;
  registry.add("", "MaxUnpool", 9, kLatestOpset, std::move(max_unpool));
}

}  // namespace wgi::ops
