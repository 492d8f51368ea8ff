// GatherND (batch_dims): one invocation per output element decodes its index tuple and slice position
// (kernels/gather_nd/gather_nd.wgsl); any 4-byte device element type.
#include <limits>

#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

constexpr size_t kMaxTupleLength = 8;  // the uniform's dims / strides arrays

OpPlan plan_gather_nd(const PlanContext& ctx) {
  const TensorDesc& data = ctx.input(0);
  data_movement::require_device_elements(ctx, 0);
  const TensorDesc& indices = ctx.input(1);
  if (indices.dtype != DType::Int64 && indices.dtype != DType::Int32) {
    ctx.fail("input 1 (indices, " + ctx.input_name(1) + ") has type " +
             std::string(dtype_name(indices.dtype)) + "; expected int64");
  }
  const int64_t r = static_cast<int64_t>(data.shape.size()), m = static_cast<int64_t>(indices.shape.size());
  const int64_t b = ctx.node.attributes.get_int("batch_dims", 0);
  if (r < 1 || m < 1) ctx.fail("data and indices must have rank >= 1");
  if (b != 0 && ctx.node.opset < 12) ctx.fail("attribute 'batch_dims' exists from opset 12 on");
  if (b < 0 || b >= std::min(r, m)) {
    ctx.fail("attribute 'batch_dims' is " + std::to_string(b) + "; expected 0 to " +
             std::to_string(std::min(r, m) - 1));
  }
  for (int64_t d = 0; d < b; ++d) {
    if (data.shape[static_cast<size_t>(d)] != indices.shape[static_cast<size_t>(d)]) {
      ctx.fail("data " + shape_to_string(data.shape) + " and indices " + shape_to_string(indices.shape) +
               " differ in batch dim " + std::to_string(d));
    }
  }
  const int64_t q = indices.shape.back();
  if (q < 1 || q > r - b || static_cast<size_t>(q) > kMaxTupleLength) {
    ctx.fail("indices " + shape_to_string(indices.shape) + " address " + std::to_string(q) +
             " dims per tuple; expected 1 to " + std::to_string(std::min<int64_t>(r - b, kMaxTupleLength)));
  }
  const size_t bs = static_cast<size_t>(b), qs = static_cast<size_t>(q);
  const Shape dims(data.shape.begin() + static_cast<std::ptrdiff_t>(bs),
                   data.shape.begin() + static_cast<std::ptrdiff_t>(bs + qs));
  if (const Tensor* known = ctx.constant(1)) {
    const std::vector<int64_t> v = data_movement::tensor_ints(ctx, *known, "input 1 (indices)");
    for (size_t k = 0; k < v.size(); ++k) {
      const int64_t n = dims[k % qs];
      if (v[k] < -n || v[k] >= n) {
        ctx.fail("input 1 (indices, " + ctx.input_name(1) + ") has " + std::to_string(v[k]) + " at element " +
                 std::to_string(k) + ", outside [" + std::to_string(-n) + ", " + std::to_string(n - 1) +
                 "] for data " + shape_to_string(data.shape) + " axis " + std::to_string(bs + k % qs));
      }
    }
  }
  Shape out_shape(indices.shape.begin(), indices.shape.end() - 1);
  out_shape.insert(out_shape.end(), data.shape.begin() + static_cast<std::ptrdiff_t>(bs + qs),
                   data.shape.end());
  require_addressable(ctx, "input 0 (data)", data.shape, std::numeric_limits<int32_t>::max());
  require_addressable(ctx, "input 1 (indices)", indices.shape, std::numeric_limits<int32_t>::max());
  require_addressable(ctx, "the output", out_shape, std::numeric_limits<int32_t>::max());

  OpPlan plan;
  plan.outputs.push_back({data.dtype, out_shape});
  const int64_t count = element_count(out_shape);
  if (count == 0) return plan;
  const std::vector<int64_t> data_strides = data_movement::row_major_strides(data.shape);
  const std::vector<int64_t> strides(data_strides.begin() + static_cast<std::ptrdiff_t>(bs),
                                     data_strides.begin() + static_cast<std::ptrdiff_t>(bs + qs));
  int64_t slice = 1, batch_stride = 1, tuples_per_batch = 1;
  for (size_t d = bs + qs; d < data.shape.size(); ++d) slice *= data.shape[d];
  for (size_t d = bs; d < data.shape.size(); ++d) batch_stride *= data.shape[d];
  for (size_t d = bs; d + 1 < indices.shape.size(); ++d) tuples_per_batch *= indices.shape[d];
  if (tuples_per_batch == 0) return plan;  // count would be 0 as well

  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = "gather_nd";
  KernelInterface iface;
  iface.read("data", "u32", TensorRef::input(0))
      .read("indices", "i32", TensorRef::input(1))
      .read_write("destination", "u32", TensorRef::output(0))
      .run_status()
      .uniforms({{"count", UniformType::U32},  // output elements
                 {"slice", UniformType::U32},  // elements of data.shape[b + q:]
                 {"q", UniformType::U32},
                 {"tuples_per_batch", UniformType::U32},  // elements of indices.shape[b:-1]
                 {"batch_stride", UniformType::U32},      // elements of data.shape[b:]
                 {"dims", UniformType::Vec4U, 2},         // data.shape[b : b + q]
                 {"strides", UniformType::Vec4U, 2},      // their element strides in data
                 {"status_tag", UniformType::U32}});
  launch.program.wgsl = iface.load_wgsl("gather_nd/gather_nd.wgsl");
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform =
      iface.values()
          .u32("count", static_cast<uint32_t>(count))
          .u32("slice", static_cast<uint32_t>(slice))
          .u32("q", static_cast<uint32_t>(q))
          .u32("tuples_per_batch", static_cast<uint32_t>(tuples_per_batch))
          .u32("batch_stride", static_cast<uint32_t>(batch_stride))
          .vec4u_array("dims", std::array{data_movement::u32x4(dims, 0), data_movement::u32x4(dims, 4)})
          .vec4u_array("strides",
                       std::array{data_movement::u32x4(strides, 0), data_movement::u32x4(strides, 4)})
          .u32("status_tag", ctx.status_tag)
          .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_gather_nd_ops(OpRegistry& registry) {
  OpHandler gather_nd;
  gather_nd.plan = plan_gather_nd;
  registry.add("", "GatherND", 11, kLatestOpset, std::move(gather_nd));
}

}  // namespace wgi::ops
