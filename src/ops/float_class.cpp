// Float classification: IsNaN and IsInf (detect_negative / detect_positive), read from float32 bit patterns
// (kernels/float_class/float_class.wgsl) into bool outputs.
#include <limits>

#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

OpPlan plan_float_class(const PlanContext& ctx, bool is_nan) {
  const TensorDesc& x = ctx.input(0);
  if (x.dtype != DType::Float32) {
    ctx.fail("input 0 has type " + std::string(dtype_name(x.dtype)) + "; wgi runs " + ctx.node.op_type +
             " on float32 only");
  }
  const int64_t negative = ctx.node.attributes.get_int("detect_negative", 1);
  const int64_t positive = ctx.node.attributes.get_int("detect_positive", 1);
  require_addressable(ctx, "input 0", x.shape, std::numeric_limits<int32_t>::max());
  OpPlan plan;
  plan.outputs.push_back({DType::Bool, x.shape});
  const int64_t count = element_count(x.shape);
  if (count == 0) return plan;
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = is_nan ? "is_nan" : "is_inf";
  KernelInterface iface;
  iface.read("source", "u32", TensorRef::input(0))
      .read_write("destination", "u32", TensorRef::output(0))
      .uniforms({{"count", UniformType::U32},
                 {"detect_negative", UniformType::U32},  // IsInf
                 {"detect_positive", UniformType::U32}});
  launch.program.wgsl = iface.load_wgsl("float_class/float_class.wgsl", {{"IS_NAN", is_nan ? "1" : "0"}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(count))
                       .u32("detect_negative", negative != 0 ? 1u : 0u)
                       .u32("detect_positive", positive != 0 ? 1u : 0u)
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_float_class_ops(OpRegistry& registry) {
  OpHandler is_nan;
  is_nan.plan = [](const PlanContext& ctx) { return plan_float_class(ctx, true); };
  registry.add("", "IsNaN", 9, kLatestOpset, std::move(is_nan));
  OpHandler is_inf;
  is_inf.plan = [](const PlanContext& ctx) { return plan_float_class(ctx, false); };
  registry.add("", "IsInf", 10, kLatestOpset, std::move(is_inf));
}

}  // namespace wgi::ops
