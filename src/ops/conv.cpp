// Conv and ConvTranspose (ONNX, float32, NCHW, 1-D and 2-D; float16 through float32): the router. plan_conv
// runs four steps, each in its own file under src/ops/conv/ (conv/conv.h lists them):
//   parse     parse_conv_attributes (geometry.cpp): types, ranks, the ONNX attributes
//   validate  resolve_conv_geometry (geometry.cpp): channels, bias, padding and output size (ONNX's rules)
//   choose    choose_conv_algorithm (choose.cpp, with the routing rules): the algorithm, tile and split, a
//             pure function of the geometry, wgi's kernel hints and the device
//   build     the chosen algorithm's add_*_launch (matrix_f16.cpp, pointwise_gemm.cpp, depthwise.cpp,
//             implicit_gemm.cpp, direct.cpp, transposed.cpp)
// A 1-D conv runs as a 2-D one of unit height. Every kernel applies the bias, a fused residual
// (ops/fused_residual.h) and a fused activation (ops/fused_activation.h) in its epilogue.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "ops/conv/conv.h"
#include "ops/families.h"
#include "ops/float16.h"
#include "ops/fused_activation.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"
#include "ops/internal_ops.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

// The choose step's inputs from the node: the geometry and wgi's kernel hints.
ConvRequest conv_request(const PlanContext& ctx, const ConvGeometry& g, bool transposed) {
  ConvRequest r;
  r.geometry = g;
  r.transposed = transposed;
  r.weight_known = ctx.constant(1) != nullptr;
  r.weight_name = ctx.input_name(1);
  const ConvInternalAttributes internal = read_conv_internal_attributes(ctx.node);
  r.forced_kernel = internal.kernel;
  r.forced_rows = internal.depthwise_rows;
  r.gemm_kernel_forced = internal.tuning.kernel.has_value();
  return r;
}

// The choice for ctx's conv; fails naming why when a forced kernel cannot run it.
ConvChoice choose_for(const PlanContext& ctx, ConvRequest request) {
  ConvChoice choice = choose_conv_algorithm(request, ctx.caps);
  if (choice.needs_gemm_knobs) {
    GemmLaunchSpec knobs;  // the GEMM's tuning attributes (K slab, buffers) apply to the implicit GEMM too
    read_gemm_attributes(ctx, knobs);
    request.gemm_knobs = ConvGemmKnobs{knobs.tile_k, knobs.stages, knobs.split_k};
    choice = choose_conv_algorithm(request, ctx.caps);
  }
  if (!choice.error.empty()) ctx.fail(choice.error);
  return choice;
}

void build_conv(const PlanContext& ctx, const ConvGeometry& g, const ConvChoice& choice,
                const ConvEpilogue& epilogue, OpPlan& plan) {
  switch (choice.algorithm) {
    case ConvAlgorithm::MatrixF16:
      add_matrix_f16_conv_launch(ctx, g, epilogue, plan);
      return;
    case ConvAlgorithm::PointwiseGemm:
      add_pointwise_gemm_launch(ctx, g, epilogue, plan);
      return;
    case ConvAlgorithm::DepthwiseRows:
      add_depthwise_rows_launch(ctx, g, choice.depthwise_rows, epilogue, plan);
      return;
    case ConvAlgorithm::Depthwise:
      add_depthwise_launch(ctx, g, choice.depthwise, epilogue, plan);
      return;
    case ConvAlgorithm::ImplicitGemm:
      add_implicit_gemm_launch(ctx, g, choice.implicit_gemm, epilogue, plan);
      return;
    case ConvAlgorithm::DirectVec4:
    case ConvAlgorithm::Direct:
      add_direct_launch(ctx, g, choice.algorithm == ConvAlgorithm::DirectVec4, epilogue, plan);
      return;
    case ConvAlgorithm::Transposed:
      add_conv_transpose_launch(ctx, g, epilogue, plan);
      return;
  }
}

OpPlan plan_conv(const PlanContext& ctx, bool transposed) {
  const ConvAttributes attributes = parse_conv_attributes(ctx, transposed);
  Shape y_shape;
  const ConvGeometry g = resolve_conv_geometry(ctx, attributes, transposed, y_shape);

  ConvEpilogue epilogue;
  epilogue.activation = FusedActivation::from_node(ctx.node);
  epilogue.has_bias = ctx.has_input(2);
  epilogue.residual = has_fused_residual(ctx);
  if (epilogue.residual && ctx.input(kFusedResidualInput).shape != y_shape) {
    return plan_residual_fallback(ctx, y_shape,
                                  [transposed](const PlanContext& c) { return plan_conv(c, transposed); });
  }

  OpPlan plan;
  plan.outputs.push_back({DType::Float32, y_shape});
  if (element_count(y_shape) == 0) return plan;
  const ConvChoice choice = choose_for(ctx, conv_request(ctx, g, transposed));
  build_conv(ctx, g, choice, epilogue, plan);
  return plan;
}

// float16 (ops/float16.h): X, B and the output through float32. A constant float16 weight reaches plan_conv
// as it is: the implicit GEMM keeps it float16 (half the bytes, read packed); the direct vec4 kernel's
// prepacked copy is widened; the kernels that read the weight as stored get a float32 copy of it as a plan
// constant, made once here (no cast per run).
OpPlan plan_conv_float16(const PlanContext& ctx, bool transposed) {
  auto plan_f32 = [transposed](const PlanContext& c) { return plan_conv(c, transposed); };
  const Tensor* weight = ctx.constant(1);
  if (!ctx.has_input(1) || ctx.input(1).dtype != DType::Float16 || !weight)
    return plan_with_float16(ctx, plan_f32);
  OpPlan plan = plan_with_float16(ctx, plan_f32, 1u << 1);
  std::optional<uint32_t> widened;
  for (KernelLaunch& launch : plan.launches) {
    for (TensorRef& ref : launch.bindings) {
      if (ref.kind != TensorRef::Kind::Input || ref.index != 1) continue;
      if (!widened) {
        widened = static_cast<uint32_t>(plan.constants.size());
        plan.constants.push_back(widen_float16(*weight));
      }
      ref = TensorRef::constant(*widened);
    }
  }
  return plan;
}

}  // namespace

void register_conv_ops(OpRegistry& registry) {
  // Versions 1, 11 and 22 of both ops differ in their type lists and wording, not in what the attributes mean
  // for float32, so one handler serves every opset.
  OpHandler conv;
  conv.plan = [](const PlanContext& ctx) { return plan_conv_float16(ctx, false); };
  conv.plans_float16 = true;
  registry.add("", "Conv", 1, kLatestOpset, std::move(conv));
  OpHandler conv_transpose;
  conv_transpose.plan = [](const PlanContext& ctx) { return plan_conv_float16(ctx, true); };
  conv_transpose.plans_float16 = true;
  registry.add("", "ConvTranspose", 1, kLatestOpset, std::move(conv_transpose));
}

}  // namespace wgi::ops
