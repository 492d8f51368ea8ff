// An activation applied in a GEMM or conv kernel's epilogue instead of as a separate pass over memory
// (the seeds' conv_with_clamp, Conv+Relu, MatMul+Clip, ...).
//
// The graph's fusion pass marks a node with the internal attributes below (EpilogueAttributes, written and
// read through internal_ops.h); tests set them directly:
//   "wgi.activation"      string: "Relu", "Clip", "Gelu" (erf form) or "GeluTanh" (tanh approximation)
//   "wgi.activation_min"  float (Clip only; default -FLT_MAX)
//   "wgi.activation_max"  float (Clip only; default +FLT_MAX)
#pragma once

#include <string>

#include "kernels/wgsl_library.h"
#include "ops/internal_ops.h"
#include "ops/op.h"

namespace wgi::ops {

struct FusedActivation {
  enum class Kind { None, Relu, Clip, Gelu, GeluTanh };
  Kind kind = Kind::None;
  float min = 0.0f;  // clamp bounds passed in the uniform block (Relu: [0, FLT_MAX])
  float max = 0.0f;

  // Reads the node's fused-activation attributes; throws naming the node for an unknown activation.
  static FusedActivation from_node(const NodeInfo& node);

  // The WGSL expression over `v` (and the uniform's lo/hi) that src/kernels/common/activation.wgsl inserts.
  std::string wgsl_expression() const;
  // The same over the WGSL expressions `v`, `lo` and `hi` (e.g. in another kernel's element type).
  std::string wgsl_expression(const std::string& v, const std::string& lo, const std::string& hi) const;
  // "", "_relu", "_clip", "_gelu", "_gelu_tanh": appended to kernel labels so profiles show what was fused.
  std::string label_suffix() const;
  // Whether the expression calls the elementwise kernels' math helpers (e.g. wgi_erf: the Gelu forms).
  bool uses_math() const { return kind == Kind::Gelu || kind == Kind::GeluTanh; }
  // Adds the ACTIVATION define for common/activation.wgsl (and ACTIVATION_MATH where uses_math()).
  void add_defines(kernels::Defines& defines) const;
};

}  // namespace wgi::ops
