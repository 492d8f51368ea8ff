// Elementwise unary ops (Relu, Sigmoid, Tanh, Erf, Gelu, Clip, ...): one handler and one kernel for the whole
// family. Each op is a row in the table below: its WGSL expressions over x (float, and where ONNX allows
// them, signed and unsigned integers), how its attributes become alpha / beta, and its float64 / int64 form
// for folding host-known values. The numerically careful helpers (tails of Sigmoid, Tanh, Softplus, Erf) live
// in src/kernels/elementwise/math.wgsl.
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <limits>

#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

// Host folding declines above this many elements: beyond it the GPU is the better place for the work.
constexpr int64_t kMaxHostElements = int64_t{1} << 24;

using FloatFn = double (*)(double x, double alpha, double beta);
using IntFn = int64_t (*)(int64_t x, int64_t alpha, int64_t beta);

struct Attribute {
  const char* name = nullptr;  // nullptr: the parameter is not an attribute (or unused)
  double fallback = 0;
};

struct UnaryOp {
  const char* op_type;
  int since_version;
  const char* float_expr;  // over x: F (f32 or vec4<f32>); parameters alpha() / beta are f32
  FloatFn float_host;      // float64 form, rounded to float32 when folding
  Attribute alpha = {};
  Attribute beta = {};
  const char* signed_expr = nullptr;    // over x: I, for int32 / int64 / int8; nullptr: not for integers
  const char* unsigned_expr = nullptr;  // over x: U, for uint8
  IntFn int_host = nullptr;
};

constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kSqrtTwoOverPi = 0.79788456080286535588;

double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(kSqrtTwoOverPi * (x + 0.044715 * x * x * x)));
}
double softplus(double x) {
  return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
}

// Opsets: each op is registered from the first opset whose semantics wgi implements (older ones predate the
// importer's minimum of 7, or had consumed_inputs / experimental forms).
const UnaryOp kUnaryOps[] = {
    // wgi_max / wgi_min / wgi_clamp (common/nan.wgsl) keep NaN, as ONNX Runtime does.
    {"Relu",
     6,
     "wgi_max(x, T(0.0))",
     [](double x, double, double) { return x > 0 || std::isnan(x) ? x : 0.0; },
     {},
     {},
     "max(x, T(0))",
     nullptr,
     [](int64_t x, int64_t, int64_t) { return std::max<int64_t>(x, 0); }},
    {"Sigmoid", 6, "wgi_sigmoid(x)", [](double x, double, double) { return 1 / (1 + std::exp(-x)); }},
    {"Tanh", 6, "wgi_tanh(x)", [](double x, double, double) { return std::tanh(x); }},
    {"Exp", 6, "exp(x)", [](double x, double, double) { return std::exp(x); }},
    {"Log", 6, "log(x)", [](double x, double, double) { return std::log(x); }},
    {"Sqrt", 6, "sqrt(x)", [](double x, double, double) { return std::sqrt(x); }},
    {"Reciprocal", 6, "T(1.0) / x", [](double x, double, double) { return 1 / x; }},
    {"Neg",
     6,
     "-x",
     [](double x, double, double) { return -x; },
     {},
     {},
     "-x",
     nullptr,
     [](int64_t x, int64_t, int64_t) { return static_cast<int64_t>(0ull - static_cast<uint64_t>(x)); }},
    {"Abs",
     6,
     "abs(x)",
     [](double x, double, double) { return std::abs(x); },
     {},
     {},
     "abs(x)",
     "x",
     [](int64_t x, int64_t, int64_t) {
       return x < 0 ? static_cast<int64_t>(0ull - static_cast<uint64_t>(x)) : x;
     }},
    {"Floor", 6, "floor(x)", [](double x, double, double) { return std::floor(x); }},
    {"Ceil", 6, "ceil(x)", [](double x, double, double) { return std::ceil(x); }},
    {"Round", 11, "round(x)", [](double x, double, double) { return std::nearbyint(x); }},
    {"Sign",
     9,
     "sign(x)",
     [](double x, double, double) { return x > 0   ? 1.0
                                           : x < 0 ? -1.0
                                                   : x; },
     {},
     {},
     "sign(x)",
     "min(x, T(1u))",
     [](int64_t x, int64_t, int64_t) { return int64_t{x > 0} - int64_t{x < 0}; }},
    {"Erf", 9, "wgi_erf(x)", [](double x, double, double) { return std::erf(x); }},
    {"Sin", 7, "wgi_sin(x)", [](double x, double, double) { return std::sin(x); }},
    {"Cos", 7, "wgi_cos(x)", [](double x, double, double) { return std::cos(x); }},
    {"Tan", 7, "wgi_sin(x) / wgi_cos(x)", [](double x, double, double) { return std::tan(x); }},
    {"Asin", 7, "wgi_asin(x)", [](double x, double, double) { return std::asin(x); }},
    {"Acos", 7, "wgi_acos(x)", [](double x, double, double) { return std::acos(x); }},
    {"Atan", 7, "wgi_atan(x)", [](double x, double, double) { return std::atan(x); }},
    {"Sinh", 9, "wgi_sinh(x)", [](double x, double, double) { return std::sinh(x); }},
    {"Cosh", 9, "wgi_cosh(x)", [](double x, double, double) { return std::cosh(x); }},
    {"Asinh", 9, "wgi_asinh(x)", [](double x, double, double) { return std::asinh(x); }},
    {"Acosh", 9, "wgi_acosh(x)", [](double x, double, double) { return std::acosh(x); }},
    {"Atanh", 9, "wgi_atanh(x)", [](double x, double, double) { return std::atanh(x); }},
    // Gelu's approximate = "tanh" form is chosen in resolve_unary.
    {"Gelu", 20, "T(0.5) * x * (T(1.0) + wgi_erf(x * T(0.70710678118654752)))",
     [](double x, double, double) { return 0.5 * x * std::erfc(-x * kSqrtHalf); }},
    {"Softplus", 1, "wgi_softplus(x)", [](double x, double, double) { return softplus(x); }},
    {"Softsign", 1, "x / (T(1.0) + abs(x))", [](double x, double, double) { return x / (1 + std::abs(x)); }},
    {"Mish", 18, "x * wgi_tanh(wgi_softplus(x))",
     [](double x, double, double) { return x * std::tanh(softplus(x)); }},
    {"LeakyRelu",
     6,
     "select(x * T(alpha()), x, x >= T(0.0))",
     [](double x, double a, double) { return x >= 0 ? x : a * x; },
     {"alpha", 0.01}},
    {"ThresholdedRelu",
     10,
     "select(T(0.0), x, x > T(alpha()))",
     [](double x, double a, double) { return x > a ? x : 0.0; },
     {"alpha", 1.0}},
    {"HardSigmoid",
     6,
     "wgi_max(T(0.0), wgi_min(T(1.0), T(alpha()) * x + T(beta())))",
     [](double x, double a, double b) { return std::isnan(x) ? x : std::max(0.0, std::min(1.0, a * x + b)); },
     {"alpha", 0.2},
     {"beta", 0.5}},
    {"HardSwish", 14, "x * max(T(0.0), min(T(1.0), x * T(1.0 / 6.0) + T(0.5)))",
     [](double x, double, double) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); }},
    {"Elu",
     6,
     "select(T(alpha()) * wgi_expm1(x), x, x >= T(0.0))",
     [](double x, double a, double) { return x >= 0 ? x : a * std::expm1(x); },
     {"alpha", 1.0}},
    {"Selu",
     6,
     "T(beta()) * select(T(alpha()) * wgi_expm1(x), x, x > T(0.0))",
     [](double x, double a, double g) { return g * (x > 0 ? x : a * std::expm1(x)); },
     {"alpha", 1.67326319217681884765625},
     {"gamma", 1.05070102214813232421875}},
    {"Celu",
     12,
     "wgi_max(T(0.0), x) + wgi_min(T(0.0), T(alpha()) * wgi_expm1(x / T(alpha())))",
     [](double x, double a, double) {
       return std::isnan(x) ? x : std::max(0.0, x) + std::min(0.0, a * std::expm1(x / a));
     },
     {"alpha", 1.0}},
    {"Shrink",
     9,
     "select(select(T(0.0), x - T(beta()), x > T(alpha())), x + T(beta()), x < -T(alpha()))",
     [](double x, double l, double b) { return x < -l  ? x + b
                                               : x > l ? x - b
                                                       : 0.0; },
     {"lambd", 0.5},
     {"bias", 0.0}},
    // Clip's bounds are attributes before opset 11 and optional inputs since; resolve_unary reads them.
    {"Clip",
     6,
     "wgi_clamp(x, T(alpha()), T(beta()))",
     [](double x, double lo, double hi) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); },
     {},
     {},
     "min(max(x, T(alpha())), T(beta()))",
     "min(max(x, T(alpha())), T(beta()))",
     [](int64_t x, int64_t lo, int64_t hi) { return std::min(std::max(x, lo), hi); }},
};

enum class ElementClass { Float, Signed, Unsigned };

ElementClass element_class(const PlanContext& ctx, const UnaryOp& op, DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return ElementClass::Float;
    case DType::Int64:
    case DType::Int32:
    case DType::Int8:
      if (op.signed_expr) return ElementClass::Signed;
      break;
    case DType::UInt8:
      if (op.unsigned_expr) return ElementClass::Unsigned;
      break;
    case DType::Float16:
    case DType::Bool:
      break;
  }
  std::string supported = "float32";
  if (op.signed_expr) supported += ", int64, int32, int8";
  if (op.unsigned_expr) supported += ", uint8";
  ctx.fail("input 0 has type " + std::string(dtype_name(dtype)) + "; wgi runs " + op.op_type + " on " +
           supported + " only");
}

// What one node computes: the expression and its parameters, both as the kernel sees them and for host
// folding.
struct UnaryConfig {
  std::string expression;
  FloatFn float_host = nullptr;
  double alpha = 0, beta = 0;                    // float ops
  int64_t int_alpha = 0, int_beta = 0;           // integer Clip
  bool alpha_input = false, beta_input = false;  // Clip bounds read from inputs 1 / 2 on the GPU
};

// One Clip bound given as an input (opset 11+): a one-element tensor of the input's type. Host-known bounds
// go into the uniform (and fold); others are read by the kernel from their tensor (runtime_bound).
template <class V>
V clip_bound(const PlanContext& ctx, size_t index, V fallback, bool& runtime_bound) {
  runtime_bound = false;
  if (!ctx.has_input(index)) return fallback;
  const std::string which =
      std::string("Clip's ") + (index == 1 ? "min" : "max") + " (" + ctx.input_name(index) + ")";
  const TensorDesc& desc = ctx.input(index);
  if (desc.dtype != ctx.input(0).dtype) {
    ctx.fail(which + " has type " + std::string(dtype_name(desc.dtype)) + " but the input has type " +
             std::string(dtype_name(ctx.input(0).dtype)));
  }
  if (element_count(desc.shape) != 1) {
    ctx.fail(which + " must hold one element, got shape " + shape_to_string(desc.shape));
  }
  const Tensor* bound = ctx.constant(index);
  if (!bound) {
    runtime_bound = true;
    return fallback;
  }
  switch (bound->dtype()) {
    case DType::Float32:
      return static_cast<V>(bound->data<float>()[0]);
    case DType::Int64:
      return static_cast<V>(bound->data<int64_t>()[0]);
    case DType::Int32:
      return static_cast<V>(bound->data<int32_t>()[0]);
    case DType::Int8:
      return static_cast<V>(bound->data<int8_t>()[0]);
    case DType::UInt8:
      return static_cast<V>(bound->data<uint8_t>()[0]);
    default:
      ctx.fail(which + " has unsupported type " + std::string(dtype_name(bound->dtype())));
  }
}

UnaryConfig resolve_unary(const UnaryOp& op, const PlanContext& ctx) {
  const DType dtype = ctx.input(0).dtype;
  const ElementClass cls = element_class(ctx, op, dtype);
  const Attributes& attrs = ctx.node.attributes;
  UnaryConfig config;
  config.expression = cls == ElementClass::Float    ? op.float_expr
                      : cls == ElementClass::Signed ? op.signed_expr
                                                    : op.unsigned_expr;
  config.float_host = op.float_host;
  if (op.alpha.name) config.alpha = attrs.get_float(op.alpha.name, static_cast<float>(op.alpha.fallback));
  if (op.beta.name) config.beta = attrs.get_float(op.beta.name, static_cast<float>(op.beta.fallback));
  const std::string_view type(op.op_type);
  if (type == "Gelu") {
    const std::string approximate = attrs.get_string("approximate", "none");
    if (approximate == "tanh") {
      // 0.5 x (1 + tanh(u)) = x sigmoid(2u): no cancellation of 1 + tanh(u) for very negative x.
      config.expression = "x * wgi_sigmoid(T(1.5957691216057308) * (x + T(0.044715) * x * x * x))";
      config.float_host = [](double x, double, double) { return gelu_tanh(x); };
    } else if (approximate != "none") {
      ctx.fail("attribute 'approximate' is '" + approximate + "'; expected 'none' or 'tanh'");
    }
  } else if (type == "Celu" && config.alpha == 0) {
    ctx.fail("attribute 'alpha' must not be 0");
  } else if (type == "Clip") {
    if (cls != ElementClass::Float && ctx.node.opset < 12) {
      ctx.fail("Clip runs on integer types from opset 12 on; this node has input type " +
               std::string(dtype_name(dtype)));
    }
    if (ctx.node.opset < 11) {
      config.alpha = attrs.get_float("min", -FLT_MAX);
      config.beta = attrs.get_float("max", FLT_MAX);
    } else if (cls == ElementClass::Float) {
      config.alpha = clip_bound<double>(ctx, 1, -FLT_MAX, config.alpha_input);
      config.beta = clip_bound<double>(ctx, 2, FLT_MAX, config.beta_input);
    } else {
      // The device holds every integer type in 32 bits, so the type's own limits are the defaults.
      int64_t lo = INT64_MIN, hi = INT64_MAX;
      if (dtype == DType::Int32) lo = INT32_MIN, hi = INT32_MAX;
      if (dtype == DType::Int8) lo = INT8_MIN, hi = INT8_MAX;
      if (dtype == DType::UInt8) lo = 0, hi = UINT8_MAX;
      config.int_alpha = clip_bound<int64_t>(ctx, 1, lo, config.alpha_input);
      config.int_beta = clip_bound<int64_t>(ctx, 2, hi, config.beta_input);
    }
  }
  return config;
}

// The uniform's alpha / beta in the kernel's parameter type P.
void set_param(UniformValues& values, std::string_view name, ElementClass cls, double float_value,
               int64_t int_value) {
  if (cls == ElementClass::Float) {
    values.f32(name, static_cast<float>(float_value));
  } else if (cls == ElementClass::Signed) {
    // Bounds past the 32-bit range clamp to it: every device value lies within.
    values.i32(name, static_cast<int32_t>(std::clamp<int64_t>(int_value, INT32_MIN, INT32_MAX)));
  } else {
    values.u32(name, static_cast<uint32_t>(std::clamp<int64_t>(int_value, 0, UINT32_MAX)));
  }
}

OpPlan plan_unary(const UnaryOp& op, const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const UnaryConfig config = resolve_unary(op, ctx);
  const ElementClass cls = element_class(ctx, op, x.dtype);
  const int64_t n = element_count(x.shape);
  const bool vec4 = n % 4 == 0;
  const uint64_t elements = static_cast<uint64_t>(vec4 ? n / 4 : n);

  OpPlan plan;
  plan.outputs.push_back(x);
  if (n == 0) return plan;
  std::string expression = config.expression;
  if (x.dtype == DType::Int8) expression = "wgi_wrap_i8(" + expression + ")";
  if (x.dtype == DType::UInt8) expression = "wgi_wrap_u8(" + expression + ")";
  const char* element = cls == ElementClass::Float ? "F" : cls == ElementClass::Signed ? "I" : "U";
  const char* param = cls == ElementClass::Float ? "f32" : cls == ElementClass::Signed ? "i32" : "u32";

  KernelLaunch launch;
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(elements, 256, ctx.caps.limits);
  launch.program.label =
      std::string("unary_") + op.op_type + "_" + std::string(dtype_name(x.dtype)) + (vec4 ? "_vec4" : "");
  KernelInterface iface;
  iface.read("input", "T", TensorRef::input(0)).read_write("output", "T", TensorRef::output(0));
  if (config.alpha_input) iface.read("alpha_input", "P", TensorRef::input(1));
  if (config.beta_input) iface.read("beta_input", "P", TensorRef::input(2));
  const UniformType param_type = cls == ElementClass::Float    ? UniformType::F32
                                 : cls == ElementClass::Signed ? UniformType::I32
                                                               : UniformType::U32;
  iface.uniforms({{"count", UniformType::U32},  // number of T elements
                  {"alpha", param_type},
                  {"beta", param_type},
                  {"_pad", UniformType::Pad}});
  launch.program.wgsl =
      iface.load_wgsl("elementwise/unary.wgsl", {{"MATH_VEC4", vec4 ? "1" : "0"},
                                                 {"TYPE", element},
                                                 {"PARAM_TYPE", param},
                                                 {"EXPR", expression},
                                                 {"ALPHA_INPUT", config.alpha_input ? "1" : "0"},
                                                 {"BETA_INPUT", config.beta_input ? "1" : "0"}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  UniformValues values = iface.values();
  values.u32("count", static_cast<uint32_t>(elements));
  set_param(values, "alpha", cls, config.alpha, config.int_alpha);
  set_param(values, "beta", cls, config.beta, config.int_beta);
  launch.uniform = values.bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

// Integer results wrap to the tensor's type, as the device does (int64 keeps its full range on the host).
template <class V>
void fold_integers(const Tensor& x, Tensor& y, IntFn fn, int64_t alpha, int64_t beta) {
  auto in = x.data<V>();
  auto out = y.data<V>();
  for (size_t i = 0; i < in.size(); ++i) out[i] = static_cast<V>(fn(in[i], alpha, beta));
}

std::vector<Tensor> evaluate_unary(const UnaryOp& op, const PlanContext& ctx,
                                   std::span<const Tensor* const> inputs) {
  if (inputs.empty() || !inputs[0] || inputs[0]->element_count() > kMaxHostElements) return {};
  const Tensor& x = *inputs[0];
  const UnaryConfig config = resolve_unary(op, ctx);
  Tensor y(x.dtype(), x.shape());
  switch (x.dtype()) {
    case DType::Float32: {
      auto in = x.data<float>();
      auto out = y.data<float>();
      for (size_t i = 0; i < in.size(); ++i) {
        out[i] = static_cast<float>(config.float_host(in[i], config.alpha, config.beta));
      }
      break;
    }
    case DType::Int64:
      fold_integers<int64_t>(x, y, op.int_host, config.int_alpha, config.int_beta);
      break;
    case DType::Int32:
      fold_integers<int32_t>(x, y, op.int_host, config.int_alpha, config.int_beta);
      break;
    case DType::Int8:
      fold_integers<int8_t>(x, y, op.int_host, config.int_alpha, config.int_beta);
      break;
    case DType::UInt8:
      fold_integers<uint8_t>(x, y, op.int_host, config.int_alpha, config.int_beta);
      break;
    default:
      return {};  // element_class already rejected it
  }
  return {std::move(y)};
}

}  // namespace

void register_unary_ops(OpRegistry& registry) {
  for (const UnaryOp& op : kUnaryOps) {
    OpHandler handler;
    handler.plan = [&op](const PlanContext& ctx) { return plan_unary(op, ctx); };
    handler.evaluate_on_host = [&op](const PlanContext& ctx, std::span<const Tensor* const> inputs) {
      return evaluate_unary(op, ctx, inputs);
    };
    registry.add("", op.op_type, op.since_version, kLatestOpset, std::move(handler));
  }
}

}  // namespace wgi::ops
