// Elementwise unary ops (Relu, Sigmoid, ...): one handler and one kernel for the whole family. Each op is a
// row in the table below: its WGSL expression over x and how its attributes become alpha/beta.
#include <cmath>

#include "gpu/uniform.h"
#include "kernels/wgsl_library.h"
#include "ops/families.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

struct UnaryOp {
  const char* op_type;
  int since_version;
  const char* expression;  // over x: T, with constants as T(c); may use params.alpha / params.beta
};

// Opsets: each op is registered from the first opset whose semantics wgi implements for float32.
constexpr UnaryOp kUnaryOps[] = {
    {"Relu", 6, "max(x, T(0.0))"},
    {"Sigmoid", 6, "T(1.0) / (T(1.0) + exp(-x))"},
};

OpPlan plan_unary(const UnaryOp& op, const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  if (x.dtype != DType::Float32) {
    ctx.fail("input 0 has type " + std::string(dtype_name(x.dtype)) + "; wgi runs " + op.op_type +
             " on float32 only");
  }
  const int64_t n = element_count(x.shape);
  const bool vec4 = n % 4 == 0;
  const uint64_t elements = static_cast<uint64_t>(vec4 ? n / 4 : n);

  OpPlan plan;
  plan.outputs.push_back(x);
  if (n == 0) return plan;
  KernelLaunch launch;
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(elements, 256, ctx.caps.limits);
  launch.program.label = std::string("unary_") + op.op_type + (vec4 ? "_vec4" : "");
  launch.program.wgsl = kernels::load_wgsl("elementwise/unary.wgsl",
                                           {{"TYPE", vec4 ? "vec4<f32>" : "f32"}, {"EXPR", op.expression}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  launch.program.bindings = {gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::Storage,
                             gpu::BindingKind::Uniform};
  launch.bindings = {TensorRef::input(0), TensorRef::output(0)};
  launch.uniform = gpu::UniformBuilder().u32(static_cast<uint32_t>(elements)).f32(0).f32(0).u32(0).bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_unary_ops(OpRegistry& registry) {
  for (const UnaryOp& op : kUnaryOps) {
    OpHandler handler;
    handler.plan = [&op](const PlanContext& ctx) { return plan_unary(op, ctx); };
    registry.add("", op.op_type, op.since_version, kLatestOpset, std::move(handler));
  }
}

}  // namespace wgi::ops
