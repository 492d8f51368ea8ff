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

LoopBounds loop_bounds(const PlanContext& ctx) {
  LoopBounds bounds;
  auto known_scalar = [&](size_t i, DType dtype, const char* what) -> const Tensor* {
    if (!ctx.has_input(i)) return nullptr;
    const TensorDesc& desc = ctx.input(i);
    if (desc.dtype != dtype || element_count(desc.shape) != 1) {
      ctx.fail(std::string("its ") + what + " " + ctx.input_name(i) + " is " +
               std::string(dtype_name(desc.dtype)) + " " + shape_to_string(desc.shape) + "; Loop's " + what +
               " is a single " + std::string(dtype_name(dtype)) + " element");
    }
    const Tensor* t = ctx.constant(i);
    if (!t) {
      ctx.fail(std::string("its ") + what + " " + ctx.input_name(i) +
               " is computed on the GPU; wgi runs a Loop only when its trip count and condition are known "
               "when planning (constants, shape arithmetic folded on the host, or graph inputs of at most 64 "
               "elements), and then plans each iteration's body in its place");
    }
    return t;
  };
  if (const Tensor* m = known_scalar(0, DType::Int64, "trip count"))
    bounds.trip_count = m->data<int64_t>()[0];
  if (const Tensor* c = known_scalar(1, DType::Bool, "condition"))
    bounds.condition = c->bytes()[0] != std::byte{0};
  return bounds;
}

ScanAttributes scan_attributes(const PlanContext& ctx, size_t scan_outputs) {
  ScanAttributes a;
  const int64_t count = ctx.node.attributes.get_int("num_scan_inputs", -1);
  if (count < 1) ctx.fail("the num_scan_inputs attribute is required and must be at least 1");
  a.scan_inputs = static_cast<size_t>(count);
  auto per_entry = [&](const char* name, size_t n, int64_t fallback, bool direction) {
    std::vector<int64_t> values = ctx.node.attributes.get_ints(name, std::vector<int64_t>(n, fallback));
    if (values.size() != n) {
      ctx.fail(std::string("its ") + name + " attribute has " + std::to_string(values.size()) +
               " entries; expected " + std::to_string(n) + ", one per scan " +
               (std::string(name).find("output") != std::string::npos ? "output" : "input"));
    }
    for (int64_t v : values) {
      if (direction && v != 0 && v != 1)
        ctx.fail(std::string("its ") + name + " holds " + std::to_string(v) + "; a direction is 0 or 1");
    }
    return values;
  };
  auto as_bools = [](const std::vector<int64_t>& v) {
    std::vector<bool> out;
    for (int64_t x : v) out.push_back(x != 0);
    return out;
  };
  if (ctx.node.opset < 9) {
    a.input_reversed = as_bools(per_entry("directions", a.scan_inputs, 0, true));
    a.input_axes.assign(a.scan_inputs, 0);
    a.output_axes.assign(scan_outputs, 0);
    a.output_reversed.assign(scan_outputs, false);
    return a;
  }
  a.input_axes = per_entry("scan_input_axes", a.scan_inputs, 0, false);
  a.input_reversed = as_bools(per_entry("scan_input_directions", a.scan_inputs, 0, true));
  a.output_axes = per_entry("scan_output_axes", scan_outputs, 0, false);
  a.output_reversed = as_bools(per_entry("scan_output_directions", scan_outputs, 0, true));
  return a;
}

namespace {

OpPlan plan_if(const PlanContext& ctx) {
  if_condition(ctx);  // fails for a condition not known when planning, the only way to get here
  ctx.fail("internal: an If with a known condition is planned by the runtime, as its branch");
}

// Loop and Scan are unrolled by the runtime (runtime/loop_unrolling.h), which never calls this.
OpPlan plan_unrolled(const PlanContext& ctx) {
  ctx.fail("internal: a " + ctx.node.op_type + " is planned by the runtime, as its unrolled iterations");
}

}  // namespace

void register_control_flow_ops(OpRegistry& registry) {
  registry.add("", "If", 1, kLatestOpset, {plan_if, nullptr});
  registry.add("", "Loop", 1, kLatestOpset, {plan_unrolled, nullptr});
  registry.add("", "Scan", 8, kLatestOpset, {plan_unrolled, nullptr});
  // A condition computed on the GPU is read back and the rest planned with it (docs/dynamic_shapes.md).
  DataDependence condition_by_value;
  condition_by_value.value_inputs = {0};
  declare_data_dependence("", "If", std::move(condition_by_value));
  // A Loop's trip count and condition computed on the GPU: read back, then the Loop planned for them.
  DataDependence bounds_by_value;
  bounds_by_value.value_inputs = {0, 1};
  declare_data_dependence("", "Loop", std::move(bounds_by_value));
}

}  // namespace wgi::ops
