#include "ops/control_flow.h"

#include "ops/data_dependent.h"
#include "ops/families.h"
#include "ops/registry.h"

namespace wgi::ops {

bool if_condition(const PlanContext& ctx) {
  const TensorDesc& desc = ctx.input(0);
  if (desc.dtype != DType::Bool) {
    ctx.fail("its condition " + ctx.input_name(0) + " is " + std::string(dtype_name(desc.dtype)) +
             "; If's condition is a bool tensor");
  }
  if (element_count(desc.shape) != 1) {
    ctx.fail("its condition " + ctx.input_name(0) + " has shape " + shape_to_string(desc.shape) +
             "; If's condition holds a single element");
  }
  const Tensor* cond = ctx.constant(0);
  if (!cond) {
    ctx.fail("its condition " + ctx.input_name(0) +
             " is computed on the GPU; wgi runs an If only when its condition is known when planning (a "
             "constant, shape arithmetic folded on the host, or a graph input of at most 64 elements), "
             "and then plans the branch taken in its place");
  }
  return cond->bytes()[0] != std::byte{0};
}

namespace {

OpPlan plan_if(const PlanContext& ctx) {
  if_condition(ctx);  // fails for a condition not known when planning, the only way to get here
  ctx.fail("internal: an If with a known condition is planned by the runtime, as its branch");
}

}  // namespace

void register_control_flow_ops(OpRegistry& registry) {
  registry.add("", "If", 1, kLatestOpset, {plan_if, nullptr});
  // A condition computed on the GPU is read back and the rest planned with it (docs/dynamic_shapes.md).
  DataDependence condition_by_value;
  condition_by_value.value_inputs = {0};
  declare_data_dependence("", "If", std::move(condition_by_value));
}

}  // namespace wgi::ops
