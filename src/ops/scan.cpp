// Scans: CumSum (exclusive / reverse, the axis as an input known when planned). A workgroup scans a row in
// parallel (kernels/scan/cumsum.wgsl: per-invocation serial sums of 4 elements, a workgroup-memory scan of
// the partial sums, a carry across chunks), so long rows cost len / 1024 chunk steps, not len serial adds.
#include <algorithm>
#include <limits>

#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/reduction.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

OpPlan plan_cumsum(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const char* element = nullptr;
  switch (x.dtype) {
    case DType::Float32:
      element = "f32";
      break;
    case DType::Int64:  // held as i32 on the device (runtime/device_tensor.h): sums wrap at 32 bits
    case DType::Int32:
      element = "i32";
      break;
    default:
      ctx.fail("input 0 has type " + std::string(dtype_name(x.dtype)) +
               "; wgi runs CumSum on float32, int32 and int64");
  }
  const TensorDesc& axis_desc = ctx.input(1);
  if (element_count(axis_desc.shape) != 1) {
    ctx.fail("input 1 (axis, " + ctx.input_name(1) + ") has shape " + shape_to_string(axis_desc.shape) +
             "; expected a single value");
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) ctx.fail("input 0 is a scalar; CumSum needs rank >= 1");
  const size_t axis = static_cast<size_t>(
      data_movement::normalize_axis(ctx, data_movement::known_ints(ctx, 1, "axis")[0], rank, "axis"));
  const int64_t exclusive = ctx.node.attributes.get_int("exclusive", 0);
  const int64_t reverse = ctx.node.attributes.get_int("reverse", 0);
  if ((exclusive != 0 && exclusive != 1) || (reverse != 0 && reverse != 1)) {
    ctx.fail("attributes 'exclusive' and 'reverse' must be 0 or 1, got " + std::to_string(exclusive) +
             " and " + std::to_string(reverse));
  }
  require_addressable(ctx, "input 0", x.shape, std::numeric_limits<int32_t>::max());

  OpPlan plan;
  plan.outputs.push_back(x);
  const int64_t count = element_count(x.shape);
  if (count == 0) return plan;
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t len = x.shape[axis];
  const int64_t rows = count / len;
  // Short rows need fewer invocations (each takes 4 elements); at most 256.
  uint32_t want = 32;
  while (want < 256 && static_cast<int64_t>(want) * 4 < len) want *= 2;
  const uint32_t wg = pow2_workgroup_size(want, ctx.caps.limits);

  KernelLaunch launch;
  launch.program.label = std::string("cumsum_") + element + "_wg" + std::to_string(wg);
  KernelInterface iface;
  iface.read("source", element, TensorRef::input(0))
      .read_write("destination", element, TensorRef::output(0))
      .uniforms({{"rows", UniformType::U32},
                 {"len", UniformType::U32},
                 {"inner", UniformType::U32},
                 {"exclusive", UniformType::U32},
                 {"reverse", UniformType::U32}});
  launch.program.wgsl = iface.load_wgsl("scan/cumsum.wgsl", {{"TYPE", element}, {"WG", std::to_string(wg)}});
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("rows", static_cast<uint32_t>(rows))
                       .u32("len", static_cast<uint32_t>(len))
                       .u32("inner", static_cast<uint32_t>(inner))
                       .u32("exclusive", static_cast<uint32_t>(exclusive))
                       .u32("reverse", static_cast<uint32_t>(reverse))
                       .bytes();
  launch.groups =
      gpu::fold_workgroups(static_cast<uint64_t>(rows), ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_scan_ops(OpRegistry& registry) {
  OpHandler cumsum;
  cumsum.plan = plan_cumsum;
  registry.add("", "CumSum", 11, kLatestOpset, std::move(cumsum));
}

}  // namespace wgi::ops
