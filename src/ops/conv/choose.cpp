// Conv / ConvTranspose, the choose step (src/ops/conv.cpp's router calls it between validating and
// building): which algorithm runs a conv, with which tile and K split, from the geometry, wgi's kernel hints
// and the device alone. The rules, in order:
//   matrix f16      a session computing in float16 (caps.f16_compute): Conv with group 1, a constant weight,
//                   no kernel or hint forced, and at least a wave of its 128x128 output tiles (pixels x
//                   channels): it has no K split, so smaller grids idle most of a large GPU (ResNet-50's
//                   later stages ran slower than on the f32 kernels, docs/performance.md)
//   pointwise GEMM  1x1, stride 1, no padding, group 1 (or wgi.kernel = gemm)
//   depthwise_rows  group == in channels, one input channel per group, strides <= 2, kernels <= 7x7; on every
//                   device (it has no barrier)
//   depthwise       the other depthwise convs
//   implicit GEMM   other convs with a constant weight and >= 16 out channels per group
//   direct vec4     input channels per group % 4 == 0 and a constant weight (prepacked); with direct the
//                   fallback where the kernels above cannot run
//   direct          every other Conv (reads the ONNX weight layout, so the weight may be computed)
//   transposed      ConvTranspose
// Where workgroup barriers are costly (gpu::Capabilities::costly_barriers: SwiftShader) the direct vec4
// kernel beats the GEMMs on 1x1 convs too (docs/performance.md, "Measurements behind the planner's rules"),
// and the depthwise and implicit-GEMM kernels lose to the direct ones: there the direct kernels run every
// conv they can unless another kernel is forced.
#include <cstdint>
#include <optional>
#include <string>

#include "ops/conv/conv.h"
#include "ops/gemm_matrix_f16.h"
#include "ops/internal_ops.h"

namespace wgi::ops {

namespace {

// Below this many output channels per group the implicit GEMM's 64-row tile would be mostly padding; the
// direct kernels do as well there.
constexpr int64_t kImplicitGemmMinChannels = 16;

constexpr const char* kKernelNames =
    "gemm, implicit_gemm, implicit_gemm128, implicit_gemm64, implicit_gemm128x64, implicit_gemm64x128, "
    "depthwise_rows, depthwise or direct";

// The tile an "implicit_gemm..." kernel name forces ({0, 0}: the planner's), nullopt for other names.
std::optional<ImplicitGemmTile> forced_implicit_gemm_tile(const std::string& name) {
  if (name == "implicit_gemm") return ImplicitGemmTile{};
  if (name == "implicit_gemm128") return ImplicitGemmTile{128, 128};
  if (name == "implicit_gemm64") return ImplicitGemmTile{64, 64};
  if (name == "implicit_gemm128x64") return ImplicitGemmTile{128, 64};
  if (name == "implicit_gemm64x128") return ImplicitGemmTile{64, 128};
  return std::nullopt;
}

// What the rules below look at besides the request.
struct ConvTraits {
  bool pointwise = false;  // a matrix product per image
  bool depthwise = false;  // one input channel per group, group == in channels
  bool direct_vec4 = false;
  bool fast_kernels_pay = false;  // workgroup barriers are cheap
  std::optional<ImplicitGemmTile> forced_igemm;
};

ConvTraits conv_traits(const ConvRequest& r, const gpu::Capabilities& caps) {
  const ConvGeometry& g = r.geometry;
  const int64_t in_per_group = g.in_channels / g.groups;
  ConvTraits t;
  t.pointwise = !r.transposed && g.groups == 1 && g.height.kernel == 1 && g.width.kernel == 1 &&
                g.height.stride == 1 && g.width.stride == 1 && g.height.pad_begin == 0 &&
                g.width.pad_begin == 0 && g.height.output == g.height.input &&
                g.width.output == g.width.input;
  t.depthwise = !r.transposed && g.groups == g.in_channels && in_per_group == 1;
  t.direct_vec4 = in_per_group > 0 && in_per_group % 4 == 0 && r.weight_known;
  t.fast_kernels_pay = !caps.costly_barriers;
  t.forced_igemm = forced_implicit_gemm_tile(r.forced_kernel);
  return t;
}

ConvChoice failure(std::string message) {
  ConvChoice c;
  c.error = std::move(message);
  return c;
}

ConvChoice chosen(ConvAlgorithm algorithm) {
  ConvChoice c;
  c.algorithm = algorithm;
  return c;
}

// wgi.kernel's name, and whether this conv can take it at all; nullopt when it can.
std::optional<ConvChoice> check_forced_kernel(const ConvRequest& r, const ConvTraits& t) {
  const std::string& forced = r.forced_kernel;
  const bool forced_depthwise = forced == "depthwise" || forced == "depthwise_rows";
  if (!forced.empty() && forced != "gemm" && forced != "direct" && !forced_depthwise && !t.forced_igemm) {
    return failure("unknown wgi.kernel '" + forced + "' (expected " + kKernelNames + ")");
  }
  if (r.transposed && !forced.empty() && forced != "direct") {
    return failure("wgi.kernel = " + forced + " does not run ConvTranspose (its only kernel is direct)");
  }
  if (forced == "gemm" && !t.pointwise) {
    return failure("wgi.kernel = gemm needs a 1x1 convolution with stride 1, no padding and group 1");
  }
  return std::nullopt;
}

bool takes_pointwise_gemm(const ConvRequest& r, const ConvTraits& t) {
  const std::string& forced = r.forced_kernel;
  // A GEMM kernel forced through wgi.gemm_kernel asks for the GEMM route too.
  return t.pointwise && (forced == "gemm" ||
                         (forced.empty() && (t.fast_kernels_pay || !t.direct_vec4 || r.gemm_kernel_forced)));
}

// The depthwise hints (wgi.kernel = depthwise*, wgi.depthwise_rows) against this conv; nullopt when valid.
std::optional<ConvChoice> check_depthwise_hints(const ConvRequest& r, const ConvTraits& t) {
  const std::string& forced = r.forced_kernel;
  const ConvGeometry& g = r.geometry;
  if ((forced == "depthwise" || forced == "depthwise_rows") && !t.depthwise) {
    return failure("wgi.kernel = " + forced +
                   " needs group == input channels with one input channel per group; this conv has group " +
                   std::to_string(g.groups) + " and " + std::to_string(g.in_channels) + " input channels");
  }
  const int64_t rows = r.forced_rows;
  if (rows != 0 && rows != 1 && rows != 2 && rows != 4 && rows != 8) {
    return failure(std::string(kDepthwiseRowsAttribute) + " must be 1, 2, 4 or 8, got " +
                   std::to_string(rows));
  }
  if (rows != 0 && !(t.depthwise && (forced.empty() || forced == "depthwise_rows"))) {
    return failure(std::string(kDepthwiseRowsAttribute) + " applies to the depthwise_rows kernel only");
  }
  return std::nullopt;
}

// Depthwise: the register-window kernel for strides up to 2 and kernels up to 7x7 (it has no barrier, so it
// also suits devices where barriers are costly), else the workgroup-window kernel (any geometry) unless the
// device's workgroup memory cannot hold one output row's input window; then (nullopt) the direct kernel.
std::optional<ConvChoice> choose_depthwise(const ConvRequest& r, const ConvTraits& t,
                                           const gpu::Capabilities& caps) {
  const std::string& forced = r.forced_kernel;
  if (!t.depthwise) return std::nullopt;
  if (forced == "depthwise_rows" || forced.empty()) {
    std::string why;
    const uint32_t rows = static_cast<uint32_t>(r.forced_rows);
    if (auto c = choose_depthwise_rows_config(r.geometry, caps.limits, rows, why)) {
      ConvChoice choice = chosen(ConvAlgorithm::DepthwiseRows);
      choice.depthwise_rows = *c;
      return choice;
    }
    if (forced == "depthwise_rows" || r.forced_rows != 0)
      return failure("wgi.kernel = depthwise_rows cannot run here: " + why);
  }
  if (forced == "depthwise" || (forced.empty() && t.fast_kernels_pay)) {
    std::string why;
    if (auto c = choose_depthwise_config(r.geometry, caps.limits, why)) {
      ConvChoice choice = chosen(ConvAlgorithm::Depthwise);
      choice.depthwise = *c;
      return choice;
    }
    if (forced == "depthwise") return failure("wgi.kernel = depthwise cannot run here: " + why);
  }
  return std::nullopt;
}

// The implicit GEMM for the other convs with a constant weight (prepacked for it) and enough output channels
// per group to fill most of a 64-row tile. It needs 256 invocations per workgroup: compat devices at their
// default limits (and any device that cannot hold its workgroup memory) keep the direct kernels (nullopt).
std::optional<ConvChoice> choose_implicit_gemm(const ConvRequest& r, const ConvTraits& t,
                                               const gpu::Capabilities& caps) {
  const ConvGeometry& g = r.geometry;
  const std::string& forced = r.forced_kernel;
  const int64_t out_per_group = g.out_channels / g.groups;
  if (!t.forced_igemm && !(forced.empty() && t.fast_kernels_pay && !r.transposed && !t.depthwise &&
                           r.weight_known && out_per_group >= kImplicitGemmMinChannels)) {
    return std::nullopt;
  }
  if (t.forced_igemm && !r.weight_known) {
    return failure("wgi.kernel = " + forced + " needs a constant weight (it is prepacked at plan time); " +
                   r.weight_name + " is computed at run time");
  }
  if (!r.gemm_knobs) {
    ConvChoice ask;
    ask.needs_gemm_knobs = true;
    return ask;
  }
  const ConvGemmKnobs& knobs = *r.gemm_knobs;
  std::string why;
  if (auto c = choose_implicit_gemm_config(g, caps.limits, t.forced_igemm.value_or(ImplicitGemmTile{}),
                                           knobs.tile_k, knobs.stages, why, knobs.split_k)) {
    ConvChoice choice = chosen(ConvAlgorithm::ImplicitGemm);
    choice.implicit_gemm = *c;
    return choice;
  }
  if (t.forced_igemm) return failure("wgi.kernel = " + forced + " cannot run here: " + why);
  return std::nullopt;
}

// Float16 compute: the subgroup-matrix GEMM for the convs whose 128x128 output tiles fill a large GPU and
// whose K (input channels x taps) is deep enough for the tensor cores to pay for the NHWC copy of the input
// and the bounced stores: below 512 the float32 kernels were as fast or faster (K = 64: 3.5x faster; 256:
// even; docs/performance.md, "ResNet-50's convs by K").
inline constexpr int64_t kMatrixF16ConvMinK = 512;

bool takes_matrix_f16(const ConvRequest& r, const gpu::Capabilities& caps) {
  const ConvGeometry& g = r.geometry;
  const uint64_t pixels = static_cast<uint64_t>(g.batch * g.height.output * g.width.output);
  const uint64_t tiles = ceil_div(pixels, uint64_t{kMatrixF16Tile}) *
                         ceil_div(static_cast<uint64_t>(g.out_channels), uint64_t{kMatrixF16Tile});
  const int64_t k = g.in_channels * g.height.kernel * g.width.kernel;  // group 1
  return caps.f16_compute && r.forced_kernel.empty() && r.forced_rows == 0 && !r.gemm_kernel_forced &&
         !r.transposed && g.groups == 1 && r.weight_known && tiles >= kMatrixF16WaveTiles &&
         k >= kMatrixF16ConvMinK;
}

}  // namespace

ConvChoice choose_conv_algorithm(const ConvRequest& r, const gpu::Capabilities& caps) {
  const ConvTraits t = conv_traits(r, caps);
  if (auto refused = check_forced_kernel(r, t)) return *refused;
  if (takes_matrix_f16(r, caps)) return chosen(ConvAlgorithm::MatrixF16);
  if (takes_pointwise_gemm(r, t)) return chosen(ConvAlgorithm::PointwiseGemm);
  if (auto refused = check_depthwise_hints(r, t)) return *refused;
  if (auto c = choose_depthwise(r, t, caps)) return *c;
  if (auto c = choose_implicit_gemm(r, t, caps)) return *c;
  if (r.transposed) return chosen(ConvAlgorithm::Transposed);
  return chosen(t.direct_vec4 ? ConvAlgorithm::DirectVec4 : ConvAlgorithm::Direct);
}

}  // namespace wgi::ops
