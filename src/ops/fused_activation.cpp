#include "ops/fused_activation.h"

#include <cfloat>

namespace wgi::ops {

FusedActivation FusedActivation::from_node(const NodeInfo& node) {
  FusedActivation a;
  const EpilogueAttributes epilogue = read_epilogue_attributes(node);
  const std::string& kind = epilogue.activation;
  if (kind.empty()) return a;
  if (kind == "Relu") {
    a.kind = Kind::Relu;
    a.min = 0.0f;
    a.max = FLT_MAX;  // unused: Relu's expression has no upper bound, so +inf stays +inf
  } else if (kind == "Clip") {
    a.kind = Kind::Clip;
    a.min = epilogue.activation_min.value_or(-FLT_MAX);
    a.max = epilogue.activation_max.value_or(FLT_MAX);
    if (!(a.min <= a.max)) {
      throw Error(node.describe() + ": fused Clip has min " + std::to_string(a.min) + " > max " +
                  std::to_string(a.max));
    }
  } else if (kind == "Gelu") {
    a.kind = Kind::Gelu;
  } else if (kind == "GeluTanh") {
    a.kind = Kind::GeluTanh;
  } else {
    throw Error(node.describe() + ": unknown fused activation '" + kind +
                "' (wgi fuses Relu, Clip, Gelu and GeluTanh)");
  }
  return a;
}

std::string FusedActivation::wgsl_expression() const {
  return wgsl_expression("v", "lo", "hi");
}

std::string FusedActivation::wgsl_expression(const std::string& v, const std::string& lo,
                                             const std::string& hi) const {
  switch (kind) {
    case Kind::None:
      return v;
    // NaN stays NaN, as in the unfused ops (common/nan.wgsl).
    case Kind::Relu:
      return "wgi_max(" + v + ", " + lo + ")";
    case Kind::Clip:
      return "wgi_clamp(" + v + ", " + lo + ", " + hi + ")";
    // The same expressions as the standalone Gelu op (src/ops/elementwise_unary.cpp), so a fused and an
    // unfused Gelu give the same values.
    case Kind::Gelu:
      return "0.5 * " + v + " * (1.0 + wgi_erf(" + v + " * 0.70710678118654752))";
    case Kind::GeluTanh:
      // 0.5 v (1 + tanh(u)) = v sigmoid(2u): no cancellation of 1 + tanh(u) for very negative v.
      return v + " * wgi_sigmoid(1.5957691216057308 * (" + v + " + 0.044715 * " + v + " * " + v + " * " + v +
             "))";
  }
  return v;
}

void FusedActivation::add_defines(kernels::Defines& defines) const {
  defines["ACTIVATION"] = wgsl_expression();
  defines["ACTIVATION_MATH"] = uses_math() ? "1" : "0";
  // activation.wgsl's helpers (elementwise/math.wgsl) at scalar width.
  defines["MATH_VEC4"] = "0";
}

std::string FusedActivation::label_suffix() const {
  switch (kind) {
    case Kind::None:
      return "";
    case Kind::Relu:
      return "_relu";
    case Kind::Clip:
      return "_clip";
    case Kind::Gelu:
      return "_gelu";
    case Kind::GeluTanh:
      return "_gelu_tanh";
  }
  return "";
}

}  // namespace wgi::ops
