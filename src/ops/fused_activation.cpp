#include "ops/fused_activation.h"

#include <cfloat>

namespace wgi::ops {

FusedActivation FusedActivation::from_node(const NodeInfo& node) {
  FusedActivation a;
  std::string kind = node.attributes.get_string(kFusedActivationAttribute, "");
  if (kind.empty()) return a;
  if (kind == "Relu") {
    a.kind = Kind::Relu;
    a.min = 0.0f;
    a.max = FLT_MAX;
  } else if (kind == "Clip") {
    a.kind = Kind::Clip;
    a.min = node.attributes.get_float(kFusedActivationMinAttribute, -FLT_MAX);
    a.max = node.attributes.get_float(kFusedActivationMaxAttribute, FLT_MAX);
    if (!(a.min <= a.max)) {
      throw Error(node.describe() + ": fused Clip has min " + std::to_string(a.min) + " > max " +
                  std::to_string(a.max));
    }
  } else {
    throw Error(node.describe() + ": unknown fused activation '" + kind + "' (wgi fuses Relu and Clip)");
  }
  return a;
}

std::string FusedActivation::wgsl_expression() const {
  switch (kind) {
    case Kind::None:
      return "v";
    case Kind::Relu:
    case Kind::Clip:
      return "clamp(v, lo, hi)";
  }
  return "v";
}

std::string FusedActivation::label_suffix() const {
  switch (kind) {
    case Kind::None:
      return "";
    case Kind::Relu:
      return "_relu";
    case Kind::Clip:
      return "_clip";
  }
  return "";
}

}  // namespace wgi::ops
