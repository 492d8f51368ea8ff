#include "ops/fused_residual.h"

#include <algorithm>

#include "ops/elementwise_binary.h"

namespace wgi::ops {

bool has_fused_residual(const PlanContext& ctx, size_t input) {
  if (!read_epilogue_attributes(ctx.node).residual) return false;
  if (!ctx.has_input(input)) {
    ctx.fail(std::string(kFusedResidualAttribute) + " is set but input " + std::to_string(input) +
             " (the residual) is not given");
  }
  const TensorDesc& r = ctx.input(input);
  if (r.dtype != DType::Float32) {
    ctx.fail(ctx.input_name(input) + " (the fused residual) has type " + std::string(dtype_name(r.dtype)) +
             "; expected float32");
  }
  return true;
}

Shape residual_sum_shape(const PlanContext& ctx, const Shape& out_shape, size_t input) {
  const Shape& r_shape = ctx.input(input).shape;
  const size_t rank = std::max(out_shape.size(), r_shape.size());
  Shape sum_shape(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i + out_shape.size() >= rank ? out_shape[i + out_shape.size() - rank] : 1;
    const int64_t b = i + r_shape.size() >= rank ? r_shape[i + r_shape.size() - rank] : 1;
    if (a != b && a != 1 && b != 1) {
      ctx.fail("the fused residual " + shape_to_string(r_shape) + " does not broadcast with the output " +
               shape_to_string(out_shape));
    }
    sum_shape[i] = a == 1 ? b : a;
  }
  return sum_shape;
}

OpPlan plan_residual_fallback(const PlanContext& ctx, const Shape& out_shape,
                              const std::function<OpPlan(const PlanContext&)>& plan, size_t input) {
  const Shape& r_shape = ctx.input(input).shape;
  const Shape sum_shape = residual_sum_shape(ctx, out_shape, input);

  NodeInfo stripped = ctx.node;
  write_epilogue_attributes(EpilogueAttributes(), stripped.attributes);
  PlanContext inner{stripped, ctx.inputs, ctx.constant_inputs, ctx.caps, ctx.gemm_tuning};
  inner.inputs.resize(input);
  inner.constant_inputs.resize(std::min(inner.constant_inputs.size(), input));
  OpPlan result = plan(inner);
  if (result.outputs.size() != 1 || result.outputs[0].shape != out_shape ||
      result.alias_output_to_input >= 0) {
    ctx.fail("internal: the plan without the fused residual does not have the output " +
             shape_to_string(out_shape));
  }
  result.outputs[0].shape = sum_shape;
  if (element_count(sum_shape) == 0) {
    result.launches.clear();
    return result;
  }
  // The product goes to a scratch buffer; the add writes the output.
  const TensorRef product = result.add_scratch(
      static_cast<uint64_t>(std::max<int64_t>(1, element_count(out_shape))) * sizeof(float));
  for (KernelLaunch& launch : result.launches) {
    for (TensorRef& ref : launch.bindings) {
      if (ref.kind == TensorRef::Kind::Output && ref.index == 0) ref = product;
    }
  }
  result.launches.push_back(broadcast_add_launch(ctx, sum_shape, out_shape, product, r_shape,
                                                 TensorRef::input(input),
                                                 FusedActivation::from_node(ctx.node)));
  return result;
}

void append_residual_binding(KernelLaunch& launch, TensorRef residual) {
  launch.program.bindings.push_back(gpu::BindingKind::ReadOnlyStorage);
  launch.bindings.push_back(residual);
}

void add_residual_binding(KernelInterface& iface, TensorRef residual, const char* element) {
  iface.read("residual", element, residual);
}

}  // namespace wgi::ops
