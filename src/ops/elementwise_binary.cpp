// Elementwise ops over several inputs with numpy (multidirectional) broadcasting, and the type conversions:
// Add, Sub, Mul, Div, Pow, Mod, PRelu, Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor, Not,
// Where, variadic Sum / Mean / Min / Max, BitShift, Cast and CastLike.
//
// One kernel, src/kernels/elementwise/broadcast.wgsl, serves them all: each op contributes a WGSL expression
// over its inputs a, b, c at the kernel's element types (F / I / U: the device's f32 / i32 / u32, see
// runtime/device_tensor.h). Adjacent dims that broadcast alike are merged on the host, so the kernel mostly
// sees rank 1 or 2, and it reads vec4s whenever the innermost merged dim is a multiple of 4.
//
// Every op also folds on the host when all its inputs are host-known: shape subgraphs of exported models do
// their int64 arithmetic (Add, Mul, Div, Equal, Where, Cast, ...) on shapes, and that must not reach the GPU.
// The host keeps int64's full range; integer division truncates toward zero like C and ONNX.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "kernels/wgsl_library.h"
#include "ops/elementwise_binary.h"
#include "ops/families.h"
#include "ops/float16.h"
#include "ops/fused_residual.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

constexpr int64_t kMaxHostElements = int64_t{1} << 24;
constexpr size_t kMaxDims = 8;  // merged dims the kernel's uniform holds

// ---- element types ----

// How a dtype lives on the device: f32, i32 (int64, int32, int8) or u32 (uint8, bool).
enum class ElementClass { Float, Signed, Unsigned };

ElementClass element_class(const PlanContext& ctx, DType dtype, const std::string& what) {
  switch (dtype) {
    case DType::Float32:
      return ElementClass::Float;
    case DType::Int64:
    case DType::Int32:
    case DType::Int8:
      return ElementClass::Signed;
    case DType::UInt8:
    case DType::Bool:
      return ElementClass::Unsigned;
    case DType::Float16:
      break;
  }
  ctx.fail(what + " has type " + std::string(dtype_name(dtype)) +
           ", which wgi does not run on the GPU (float16 tensors are not supported yet)");
}

const char* wgsl_type(ElementClass c) {
  return c == ElementClass::Float ? "F" : c == ElementClass::Signed ? "I" : "U";
}
const char* wgsl_scalar(ElementClass c) {
  return c == ElementClass::Float ? "f32" : c == ElementClass::Signed ? "i32" : "u32";
}

// Which dtypes an op accepts.
enum TypeSet : unsigned { kFloat = 1, kInts = 2 /* int64, int32, int8 */, kUInt8 = 4, kBool = 8 };
constexpr unsigned kNumeric = kFloat | kInts | kUInt8;

bool in_set(unsigned set, DType dtype) {
  switch (dtype) {
    case DType::Float32:
    case DType::Float16:  // through float32 on the GPU (ops/float16.h)
      return set & kFloat;
    case DType::Int64:
    case DType::Int32:
    case DType::Int8:
      return set & kInts;
    case DType::UInt8:
      return set & kUInt8;
    case DType::Bool:
      return set & kBool;
  }
  return false;
}

std::string describe_set(unsigned set) {
  std::string s;
  auto add = [&](const char* t) { s += (s.empty() ? "" : ", ") + std::string(t); };
  if (set & kFloat) add("float32, float16");
  if (set & kInts) add("int64, int32, int8");
  if (set & kUInt8) add("uint8");
  if (set & kBool) add("bool");
  return s;
}

void check_type(const PlanContext& ctx, size_t input, unsigned set) {
  const DType dtype = ctx.input(input).dtype;
  if (!in_set(set, dtype)) {
    ctx.fail(ctx.input_name(input) + " has type " + std::string(dtype_name(dtype)) + "; wgi runs " +
             ctx.node.op_type + " on " + describe_set(set) + " only");
  }
}

void check_same_type(const PlanContext& ctx, size_t first, size_t other) {
  if (ctx.input(first).dtype != ctx.input(other).dtype) {
    ctx.fail(ctx.input_name(other) + " has type " + std::string(dtype_name(ctx.input(other).dtype)) +
             " but " + ctx.input_name(first) + " has type " +
             std::string(dtype_name(ctx.input(first).dtype)) + "; they must match");
  }
}

// An integer result of an int8 / uint8 op wraps back into the type, as numpy's does.
std::string wrapped(const std::string& expression, DType dtype) {
  if (dtype == DType::Int8) return "wgi_wrap_i8(" + expression + ")";
  if (dtype == DType::UInt8) return "wgi_wrap_u8(" + expression + ")";
  return expression;
}

// ---- broadcasting ----

Shape broadcast_shapes(const PlanContext& ctx, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    for (const Shape& s : shapes) {
      if (d + s.size() < rank) continue;
      const int64_t dim = s[d + s.size() - rank];
      if (dim == out[d] || dim == 1) continue;
      if (out[d] != 1) {
        std::string list;
        for (const Shape& t : shapes) list += (list.empty() ? "" : ", ") + shape_to_string(t);
        ctx.fail("input shapes " + list + " do not broadcast: dim " +
                 std::to_string(static_cast<int64_t>(d) - static_cast<int64_t>(rank)) + " is " +
                 std::to_string(out[d]) + " in one and " + std::to_string(dim) + " in another");
      }
      out[d] = dim;
    }
  }
  return out;
}

// The output's dims with dims of size 1 dropped and adjacent dims merged where every input either spans both
// or broadcasts along both; per input, its element stride along each merged dim (0 where it broadcasts).
struct BroadcastLayout {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;
};

BroadcastLayout merge_dims(const Shape& out, const std::vector<Shape>& inputs) {
  const size_t rank = out.size();
  BroadcastLayout layout;
  std::vector<std::vector<bool>> spans(inputs.size());  // per input, per merged dim
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    std::vector<bool> here;
    for (const Shape& s : inputs) here.push_back(d + s.size() >= rank && s[d + s.size() - rank] != 1);
    bool merge = !layout.dims.empty();
    for (size_t k = 0; merge && k < inputs.size(); ++k) merge = spans[k].back() == here[k];
    if (merge) {
      layout.dims.back() *= out[d];
    } else {
      layout.dims.push_back(out[d]);
      for (size_t k = 0; k < inputs.size(); ++k) spans[k].push_back(here[k]);
    }
  }
  if (layout.dims.empty()) {  // a single element
    layout.dims.push_back(1);
    for (size_t k = 0; k < inputs.size(); ++k) spans[k].push_back(false);
  }
  layout.strides.assign(inputs.size(), std::vector<int64_t>(layout.dims.size(), 0));
  for (size_t k = 0; k < inputs.size(); ++k) {
    int64_t running = 1;
    for (size_t d = layout.dims.size(); d-- > 0;) {
      if (spans[k][d]) {
        layout.strides[k][d] = running;
        running *= layout.dims[d];
      }
    }
  }
  return layout;
}

// Calls f(output index, input offsets) for every output element, walking the merged dims like an odometer.
template <class Fn>
void for_each_element(const BroadcastLayout& layout, Fn&& f) {
  const size_t rank = layout.dims.size(), inputs = layout.strides.size();
  int64_t total = 1;
  for (int64_t d : layout.dims) total *= d;
  std::vector<int64_t> coord(rank, 0), offsets(inputs, 0);
  for (int64_t i = 0; i < total; ++i) {
    f(static_cast<size_t>(i), offsets);
    for (size_t d = rank; d-- > 0;) {
      for (size_t k = 0; k < inputs; ++k) offsets[k] += layout.strides[k][d];
      if (++coord[d] < layout.dims[d]) break;
      for (size_t k = 0; k < inputs; ++k) offsets[k] -= layout.strides[k][d] * layout.dims[d];
      coord[d] = 0;
    }
  }
}

// ---- the kernel ----

struct ElementwiseKernel {
  std::string name;                  // for the kernel label
  std::string expression;            // over a, b, c
  std::vector<ElementClass> inputs;  // a, b, c (with accumulate: a is the output, b input 0)
  ElementClass output = ElementClass::Float;
  bool accumulate = false;
  float scale = 0;
};

// One launch of broadcast.wgsl computing `out_shape` from inputs of `in_shapes` bound as `refs`.
KernelLaunch broadcast_launch(const PlanContext& ctx, const ElementwiseKernel& kernel, const Shape& out_shape,
                              const std::vector<Shape>& in_shapes, const std::vector<TensorRef>& refs) {
  const int64_t total = element_count(out_shape);
  if (total > static_cast<int64_t>(UINT32_MAX)) {
    ctx.fail("output " + shape_to_string(out_shape) +
             " has more elements than the GPU's 32-bit indices reach");
  }
  BroadcastLayout layout = merge_dims(out_shape, in_shapes);
  if (layout.dims.size() > kMaxDims) {
    ctx.fail("output " + shape_to_string(out_shape) + " needs " + std::to_string(layout.dims.size()) +
             " dims after merging those that broadcast alike; the kernel takes at most " +
             std::to_string(kMaxDims));
  }
  const bool vec4 = layout.dims.back() % 4 == 0;
  std::vector<bool> vec_read(in_shapes.size(), false);
  if (vec4) {
    layout.dims.back() /= 4;
    for (size_t k = 0; k < in_shapes.size(); ++k) {
      vec_read[k] = layout.strides[k].back() != 0;
      // A vec4-read input spans the innermost dim (stride 1: one vec4 per vec4 coordinate), so its outer
      // strides are multiples of 4 elements.
      if (vec_read[k]) {
        for (size_t d = 0; d + 1 < layout.dims.size(); ++d) layout.strides[k][d] /= 4;
      }
    }
  }
  const bool flat = layout.dims.size() == 1;
  const uint64_t invocations = static_cast<uint64_t>(total / (vec4 ? 4 : 1));
  const size_t arity = in_shapes.size();

  kernels::Defines defines = {{"MATH_VEC4", vec4 ? "1" : "0"},
                              {"FLAT", flat ? "1" : "0"},
                              {"ACCUMULATE", kernel.accumulate ? "1" : "0"},
                              {"ARITY2", arity >= 2 ? "1" : "0"},
                              {"ARITY3", arity >= 3 ? "1" : "0"},
                              {"TOUT", wgsl_type(kernel.output)},
                              {"EXPR", kernel.expression}};
  for (size_t k = 0; k < kernel.inputs.size(); ++k)
    defines["T" + std::to_string(k)] = wgsl_type(kernel.inputs[k]);
  KernelInterface iface;
  for (size_t k = 0; k < arity; ++k) {
    // With accumulate, binding 0 holds the kernel's input b.
    const ElementClass c = kernel.inputs[kernel.accumulate ? k + 1 : k];
    iface.read("in" + std::to_string(k),
               vec_read[k] ? "vec4<" + std::string(wgsl_scalar(c)) + ">" : std::string(wgsl_scalar(c)),
               refs[k]);
  }
  iface
      .read_write("output",
                  vec4 ? "vec4<" + std::string(wgsl_scalar(kernel.output)) + ">"
                       : std::string(wgsl_scalar(kernel.output)),
                  TensorRef::output(0))
      .uniforms(
          {{"count", UniformType::U32},  // invocations: output elements, or output vec4s
           {"rank", UniformType::U32},   // collapsed dims, 1..8
           {"scale", UniformType::F32},  // Mean's divisor
           {"_pad", UniformType::Pad},
           // Per collapsed dim, outermost first: xyz = the strides of inputs 0, 1, 2 (0 where broadcast,
           // in their own elements), w = the dim's size (in vec4s for the innermost dim with MATH_VEC4).
           {"dims", UniformType::Vec4U, kMaxDims}});

  KernelLaunch launch;
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(invocations, 256, ctx.caps.limits);
  launch.program.label = "elementwise_" + kernel.name + (vec4 ? "_vec4" : "") + (flat ? "_flat" : "");
  launch.program.wgsl = iface.load_wgsl("elementwise/broadcast.wgsl", defines);
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  std::array<std::array<uint32_t, 4>, kMaxDims> dims{};
  for (size_t d = 0; d < layout.dims.size(); ++d) {
    for (size_t k = 0; k < arity; ++k) dims[d][k] = static_cast<uint32_t>(layout.strides[k][d]);
    dims[d][3] = static_cast<uint32_t>(layout.dims[d]);
  }
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(invocations))
                       .u32("rank", static_cast<uint32_t>(layout.dims.size()))
                       .f32("scale", kernel.scale)
                       .vec4u_array("dims", dims)
                       .bytes();
  launch.groups = grid.groups;
  return launch;
}

// A plan of one launch over all of the node's inputs.
OpPlan single_launch_plan(const PlanContext& ctx, ElementwiseKernel kernel, DType out_dtype) {
  std::vector<Shape> shapes;
  std::vector<TensorRef> refs;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    shapes.push_back(ctx.input(i).shape);
    refs.push_back(TensorRef::input(static_cast<uint32_t>(i)));
  }
  OpPlan plan;
  const Shape out = broadcast_shapes(ctx, shapes);
  plan.outputs.push_back({out_dtype, out});
  if (element_count(out) > 0) plan.launches.push_back(broadcast_launch(ctx, kernel, out, shapes, refs));
  return plan;
}

// ---- host values ----

// float -> integer truncates toward zero; int32 and int64 saturate (NaN -> 0) as the device's f32 -> i32
// conversion does, int8 and uint8 wrap from the truncated value (numpy's astype on x86).
int64_t float_to_int(double v, DType to) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (to == DType::Int32) return static_cast<int64_t>(std::clamp(v, -2147483648.0, 2147483647.0));
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(v);
}

double load_float(const Tensor& t, size_t i) {
  const std::byte* p = t.bytes().data();
  switch (t.dtype()) {
    case DType::Float32:
      return t.data<float>()[i];
    case DType::Float16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return half_to_float(h);
    }
    case DType::Int64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DType::Int32:
      return t.data<int32_t>()[i];
    case DType::Int8:
      return t.data<int8_t>()[i];
    case DType::UInt8:
      return t.data<uint8_t>()[i];
    case DType::Bool:
      return p[i] != std::byte{0};
  }
  return 0;
}

int64_t load_int(const Tensor& t, size_t i) {
  switch (t.dtype()) {
    case DType::Int64:
      return t.data<int64_t>()[i];
    case DType::Int32:
      return t.data<int32_t>()[i];
    case DType::Int8:
      return t.data<int8_t>()[i];
    case DType::UInt8:
      return t.data<uint8_t>()[i];
    case DType::Bool:
      return t.bytes()[i] != std::byte{0};
    case DType::Float32:
    case DType::Float16:
      return float_to_int(load_float(t, i), DType::Int64);
  }
  return 0;
}

// Integer results wrap to the output type (two's complement, like the device and numpy).
void store_int(Tensor& t, size_t i, int64_t v) {
  std::byte* p = t.bytes().data();
  switch (t.dtype()) {
    case DType::Int64:
      t.data<int64_t>()[i] = v;
      break;
    case DType::Int32:
      t.data<int32_t>()[i] = static_cast<int32_t>(static_cast<uint32_t>(v));
      break;
    case DType::Int8:
      t.data<int8_t>()[i] = static_cast<int8_t>(static_cast<uint8_t>(v));
      break;
    case DType::UInt8:
      t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
      break;
    case DType::Bool:
      p[i] = std::byte{v != 0};
      break;
    case DType::Float32:
      t.data<float>()[i] = static_cast<float>(v);
      break;
    case DType::Float16: {
      uint16_t h = float_to_half(static_cast<float>(v));
      std::memcpy(p + 2 * i, &h, 2);
      break;
    }
  }
}

void store_float(Tensor& t, size_t i, double v) {
  switch (t.dtype()) {
    case DType::Float32:
      t.data<float>()[i] = static_cast<float>(v);
      break;
    case DType::Float16: {
      uint16_t h = float_to_half(static_cast<float>(v));
      std::memcpy(t.bytes().data() + 2 * i, &h, 2);
      break;
    }
    case DType::Bool:
      t.bytes()[i] = std::byte{v != 0};
      break;
    default:
      store_int(t, i, float_to_int(v, t.dtype()));
  }
}

bool is_float(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16;
}

int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
// Division by zero gives the dividend and remainder by zero 0, the device's (WGSL's) answers, where ONNX
// leaves them undefined.
int64_t int_div(int64_t a, int64_t b) {
  if (b == 0 || (b == -1 && a == std::numeric_limits<int64_t>::min())) return a;
  return a / b;
}
int64_t int_rem(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  return a % b;
}
int64_t int_mod_floor(int64_t a, int64_t b) {
  int64_t r = int_rem(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
int64_t int_pow(int64_t x, int64_t y) {
  if (y < 0) return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
  int64_t acc = 1;
  for (; y; y >>= 1) {
    if (y & 1) acc = wrap_mul(acc, x);
    x = wrap_mul(x, x);
  }
  return acc;
}

bool host_foldable(std::span<const Tensor* const> inputs, size_t required) {
  if (inputs.size() < required) return false;
  for (size_t i = 0; i < required; ++i) {
    if (!inputs[i] || inputs[i]->element_count() > kMaxHostElements) return false;
  }
  return true;
}

// out[i] = f(index of input 0's element, of input 1's, ...) with broadcasting; f writes the element itself.
template <class Fn>
Tensor fold_broadcast(const PlanContext& ctx, std::span<const Tensor* const> inputs, DType out_dtype,
                      Fn&& f) {
  std::vector<Shape> shapes;
  for (const Tensor* t : inputs) shapes.push_back(t->shape());
  const Shape out_shape = broadcast_shapes(ctx, shapes);
  Tensor out(out_dtype, out_shape);
  if (out.element_count() == 0) return out;
  for_each_element(merge_dims(out_shape, shapes),
                   [&](size_t i, const std::vector<int64_t>& offsets) { f(out, i, offsets); });
  return out;
}

// ---- binary arithmetic, comparison and logic ----

using FloatHost = double (*)(float a, float b);
using IntHost = int64_t (*)(int64_t a, int64_t b);

struct BinaryOp {
  const char* op_type;
  int since_version;
  unsigned types;
  bool bool_output;
  const char* float_expr;  // over a, b: F
  const char* int_expr;    // over a, b: I (int64, int32, int8)
  const char* uint_expr;   // over a, b: U (uint8, bool)
  FloatHost float_host;
  IntHost int_host;  // also for uint8 and bool (read as 0 / 1)
};

const BinaryOp kBinaryOps[] = {
    {"Add", 7, kNumeric, false, "a + b", "a + b", "a + b", [](float a, float b) -> double { return a + b; },
     wrap_add},
    {"Sub", 7, kNumeric, false, "a - b", "a - b", "a - b", [](float a, float b) -> double { return a - b; },
     wrap_sub},
    {"Mul", 7, kNumeric, false, "a * b", "a * b", "a * b", [](float a, float b) -> double { return a * b; },
     wrap_mul},
    {"Div", 7, kNumeric, false, "a / b", "a / b", "a / b", [](float a, float b) -> double { return a / b; },
     int_div},
    {"PRelu", 7, kFloat | kInts, false, "select(a * b, a, a >= F(0.0))", "select(a * b, a, a >= I(0))",
     nullptr, [](float a, float b) -> double { return a >= 0 ? a : a * b; },
     [](int64_t a, int64_t b) { return a >= 0 ? a : wrap_mul(a, b); }},
    {"Equal", 7, kNumeric | kBool, true, "a == b", "a == b", "a == b",
     [](float a, float b) -> double { return a == b; },
     [](int64_t a, int64_t b) -> int64_t { return a == b; }},
    {"Less", 7, kNumeric, true, "a < b", "a < b", "a < b", [](float a, float b) -> double { return a < b; },
     [](int64_t a, int64_t b) -> int64_t { return a < b; }},
    {"Greater", 7, kNumeric, true, "a > b", "a > b", "a > b",
     [](float a, float b) -> double { return a > b; }, [](int64_t a, int64_t b) -> int64_t { return a > b; }},
    {"LessOrEqual", 12, kNumeric, true, "a <= b", "a <= b", "a <= b",
     [](float a, float b) -> double { return a <= b; },
     [](int64_t a, int64_t b) -> int64_t { return a <= b; }},
    {"GreaterOrEqual", 12, kNumeric, true, "a >= b", "a >= b", "a >= b",
     [](float a, float b) -> double { return a >= b; },
     [](int64_t a, int64_t b) -> int64_t { return a >= b; }},
    {"And", 7, kBool, true, nullptr, nullptr, "a & b", nullptr, [](int64_t a, int64_t b) { return a & b; }},
    {"Or", 7, kBool, true, nullptr, nullptr, "a | b", nullptr, [](int64_t a, int64_t b) { return a | b; }},
    {"Xor", 7, kBool, true, nullptr, nullptr, "a ^ b", nullptr, [](int64_t a, int64_t b) { return a ^ b; }},
};

void check_binary_inputs(const BinaryOp& op, const PlanContext& ctx) {
  check_type(ctx, 0, op.types);
  check_same_type(ctx, 0, 1);
  if (std::string_view(op.op_type) == "PRelu") {
    // The slope broadcasts to X, never X to the slope.
    Shape out = broadcast_shapes(ctx, {ctx.input(0).shape, ctx.input(1).shape});
    if (out != ctx.input(0).shape) {
      ctx.fail("slope " + shape_to_string(ctx.input(1).shape) + " does not broadcast to X " +
               shape_to_string(ctx.input(0).shape));
    }
  }
}

OpPlan plan_binary(const BinaryOp& op, const PlanContext& ctx) {
  check_binary_inputs(op, ctx);
  const DType dtype = ctx.input(0).dtype;
  const ElementClass cls = element_class(ctx, dtype, ctx.input_name(0));
  const char* expr = cls == ElementClass::Float    ? op.float_expr
                     : cls == ElementClass::Signed ? op.int_expr
                                                   : op.uint_expr;
  ElementwiseKernel kernel{op.op_type,
                           op.bool_output ? expr : wrapped(expr, dtype),
                           {cls, cls},
                           op.bool_output ? ElementClass::Unsigned : cls};
  return single_launch_plan(ctx, kernel, op.bool_output ? DType::Bool : dtype);
}

std::vector<Tensor> evaluate_binary(const BinaryOp& op, const PlanContext& ctx,
                                    std::span<const Tensor* const> in) {
  if (!host_foldable(in, 2)) return {};
  check_binary_inputs(op, ctx);
  const DType dtype = in[0]->dtype();
  const Tensor &a = *in[0], &b = *in[1];
  if (dtype == DType::Float32 && !op.bool_output) {
    // The common case (shape arithmetic in float, a decoder's token embedding scaled and offset each step)
    // without the per-element type dispatch: the same values.
    const float* pa = a.data<float>().data();
    const float* pb = b.data<float>().data();
    float* py = nullptr;
    Tensor out =
        fold_broadcast(ctx, in.first(2), dtype, [&](Tensor& y, size_t i, const std::vector<int64_t>& o) {
          if (!py) py = y.data<float>().data();
          py[i] = static_cast<float>(op.float_host(pa[o[0]], pb[o[1]]));
        });
    return {std::move(out)};
  }
  Tensor out = fold_broadcast(ctx, in.first(2), op.bool_output ? DType::Bool : dtype,
                              [&](Tensor& y, size_t i, const std::vector<int64_t>& o) {
                                const size_t ia = static_cast<size_t>(o[0]), ib = static_cast<size_t>(o[1]);
                                if (is_float(dtype)) {
                                  store_float(y, i,
                                              op.float_host(static_cast<float>(load_float(a, ia)),
                                                            static_cast<float>(load_float(b, ib))));
                                } else {
                                  store_int(y, i, op.int_host(load_int(a, ia), load_int(b, ib)));
                                }
                              });
  return {std::move(out)};
}

// ---- Pow ----

// Base and exponent may differ in type (opset 12+): a float32 exponent on an integer base, or the reverse.
void check_pow(const PlanContext& ctx) {
  for (size_t i = 0; i < 2; ++i) {
    const DType d = ctx.input(i).dtype;
    if (d != DType::Float32 && d != DType::Float16 && d != DType::Int64 && d != DType::Int32) {
      ctx.fail(ctx.input_name(i) + " has type " + std::string(dtype_name(d)) +
               "; wgi runs Pow on float32, float16, int64, int32 only");
    }
  }
}

OpPlan plan_pow(const PlanContext& ctx) {
  check_pow(ctx);
  const DType base = ctx.input(0).dtype, exponent = ctx.input(1).dtype;
  const bool float_base = base == DType::Float32, float_exponent = exponent == DType::Float32;
  const char* expr = float_base && float_exponent ? "wgi_pow(a, b)"
                     : float_base                 ? "wgi_pow(a, F(b))"
                     : float_exponent             ? "I(wgi_pow(F(a), b))"
                                                  : "wgi_ipow(a, b)";
  const ElementClass base_class = float_base ? ElementClass::Float : ElementClass::Signed;
  ElementwiseKernel kernel{
      "Pow", expr, {base_class, float_exponent ? ElementClass::Float : ElementClass::Signed}, base_class};
  return single_launch_plan(ctx, kernel, base);
}

std::vector<Tensor> evaluate_pow(const PlanContext& ctx, std::span<const Tensor* const> in) {
  if (!host_foldable(in, 2)) return {};
  check_pow(ctx);
  const Tensor &a = *in[0], &b = *in[1];
  const DType base = a.dtype();
  Tensor out =
      fold_broadcast(ctx, in.first(2), base, [&](Tensor& y, size_t i, const std::vector<int64_t>& o) {
        const size_t ia = static_cast<size_t>(o[0]), ib = static_cast<size_t>(o[1]);
        if (is_float(base)) {
          store_float(y, i, std::pow(load_float(a, ia), load_float(b, ib)));
        } else if (is_float(b.dtype())) {
          store_int(y, i, float_to_int(std::pow(load_float(a, ia), load_float(b, ib)), base));
        } else {
          store_int(y, i, int_pow(load_int(a, ia), load_int(b, ib)));
        }
      });
  return {std::move(out)};
}

// ---- Mod ----

int64_t mod_attribute(const PlanContext& ctx) {
  check_type(ctx, 0, kNumeric);
  check_same_type(ctx, 0, 1);
  const int64_t fmod = ctx.node.attributes.get_int("fmod", 0);
  if (fmod != 0 && fmod != 1) ctx.fail("attribute 'fmod' is " + std::to_string(fmod) + "; expected 0 or 1");
  if (fmod == 0 && (ctx.input(0).dtype == DType::Float32 || ctx.input(0).dtype == DType::Float16)) {
    ctx.fail("attribute 'fmod' is 0, but ONNX requires fmod = 1 for floating-point inputs");
  }
  return fmod;
}

OpPlan plan_mod(const PlanContext& ctx) {
  const int64_t fmod = mod_attribute(ctx);
  const DType dtype = ctx.input(0).dtype;
  const ElementClass cls = element_class(ctx, dtype, ctx.input_name(0));
  const char* expr = cls == ElementClass::Float                 ? "wgi_fmod(a, b)"
                     : cls == ElementClass::Signed && fmod == 0 ? "wgi_mod_floor(a, b)"
                                                                : "a % b";
  return single_launch_plan(ctx, ElementwiseKernel{"Mod", expr, {cls, cls}, cls}, dtype);
}

std::vector<Tensor> evaluate_mod(const PlanContext& ctx, std::span<const Tensor* const> in) {
  if (!host_foldable(in, 2)) return {};
  const int64_t fmod = mod_attribute(ctx);
  const Tensor &a = *in[0], &b = *in[1];
  const DType dtype = a.dtype();
  Tensor out =
      fold_broadcast(ctx, in.first(2), dtype, [&](Tensor& y, size_t i, const std::vector<int64_t>& o) {
        const size_t ia = static_cast<size_t>(o[0]), ib = static_cast<size_t>(o[1]);
        if (is_float(dtype)) {
          store_float(
              y, i, std::fmod(static_cast<float>(load_float(a, ia)), static_cast<float>(load_float(b, ib))));
        } else {
          const int64_t x = load_int(a, ia), d = load_int(b, ib);
          store_int(y, i, fmod ? int_rem(x, d) : int_mod_floor(x, d));
        }
      });
  return {std::move(out)};
}

// ---- BitShift ----

// uint8 is the only unsigned integer type wgi has (uint16 / uint32 / uint64 models fail at load). A shift by
// 8 or more gives 0 both ways; WGSL would take the shift amount modulo 32 instead.
bool bit_shift_left(const PlanContext& ctx) {
  if (ctx.input(0).dtype != DType::UInt8 || ctx.input(1).dtype != DType::UInt8) {
    ctx.fail("inputs have types " + std::string(dtype_name(ctx.input(0).dtype)) + " and " +
             std::string(dtype_name(ctx.input(1).dtype)) + "; wgi runs BitShift on uint8 only");
  }
  if (!ctx.node.attributes.has("direction")) ctx.fail("attribute 'direction' is required");
  const std::string direction = ctx.node.attributes.get_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    ctx.fail("attribute 'direction' is '" + direction + "'; expected 'LEFT' or 'RIGHT'");
  }
  return direction == "LEFT";
}

OpPlan plan_bit_shift(const PlanContext& ctx) {
  const bool left = bit_shift_left(ctx);
  const char* expr =
      left ? "select(U(0u), wgi_wrap_u8(a << b), b < U(8u))" : "select(U(0u), a >> b, b < U(8u))";
  ElementwiseKernel kernel{left ? "BitShiftLeft" : "BitShiftRight",
                           expr,
                           {ElementClass::Unsigned, ElementClass::Unsigned},
                           ElementClass::Unsigned};
  return single_launch_plan(ctx, kernel, DType::UInt8);
}

std::vector<Tensor> evaluate_bit_shift(const PlanContext& ctx, std::span<const Tensor* const> in) {
  if (!host_foldable(in, 2)) return {};
  const bool left = bit_shift_left(ctx);
  const Tensor &a = *in[0], &b = *in[1];
  Tensor out =
      fold_broadcast(ctx, in.first(2), DType::UInt8, [&](Tensor& y, size_t i, const std::vector<int64_t>& o) {
        const int64_t v = load_int(a, static_cast<size_t>(o[0])), s = load_int(b, static_cast<size_t>(o[1]));
        store_int(y, i, s >= 8 ? 0 : left ? (v << s) & 255 : v >> s);
      });
  return {std::move(out)};
}

// ---- Where, Not ----

ElementClass check_where(const PlanContext& ctx) {
  check_type(ctx, 0, kBool);
  check_same_type(ctx, 1, 2);
  return element_class(ctx, ctx.input(1).dtype, ctx.input_name(1));
}

OpPlan plan_where(const PlanContext& ctx) {
  const ElementClass cls = check_where(ctx);
  ElementwiseKernel kernel{"Where", "select(c, b, a != U(0u))", {ElementClass::Unsigned, cls, cls}, cls};
  return single_launch_plan(ctx, kernel, ctx.input(1).dtype);
}

std::vector<Tensor> evaluate_where(const PlanContext& ctx, std::span<const Tensor* const> in) {
  if (!host_foldable(in, 3)) return {};
  check_where(ctx);
  const Tensor &cond = *in[0], &x = *in[1], &y = *in[2];
  const size_t size = dtype_size(x.dtype());
  Tensor out =
      fold_broadcast(ctx, in.first(3), x.dtype(), [&](Tensor& r, size_t i, const std::vector<int64_t>& o) {
        const bool take_x = cond.bytes()[static_cast<size_t>(o[0])] != std::byte{0};
        const std::byte* src = take_x ? x.bytes().data() + static_cast<size_t>(o[1]) * size
                                      : y.bytes().data() + static_cast<size_t>(o[2]) * size;
        std::memcpy(r.bytes().data() + i * size, src, size);
      });
  return {std::move(out)};
}

OpPlan plan_not(const PlanContext& ctx) {
  check_type(ctx, 0, kBool);
  ElementwiseKernel kernel{"Not", "a ^ U(1u)", {ElementClass::Unsigned}, ElementClass::Unsigned};
  return single_launch_plan(ctx, kernel, DType::Bool);
}

std::vector<Tensor> evaluate_not(const PlanContext& ctx, std::span<const Tensor* const> in) {
  if (!host_foldable(in, 1)) return {};
  check_type(ctx, 0, kBool);
  Tensor out(DType::Bool, in[0]->shape());
  for (size_t i = 0; i < out.byte_size(); ++i) out.bytes()[i] = std::byte{in[0]->bytes()[i] == std::byte{0}};
  return {std::move(out)};
}

// ---- Cast, CastLike ----

DType cast_target(const PlanContext& ctx) {
  if (ctx.node.op_type == "CastLike") return ctx.input(1).dtype;
  if (!ctx.node.attributes.has("to")) ctx.fail("attribute 'to' is required");
  const int64_t to = ctx.node.attributes.get_int("to", 0);
  if (std::optional<DType> dtype = dtype_from_tensor_proto(to)) return *dtype;
  ctx.fail("attribute 'to' asks for TensorProto data type " + std::to_string(to) +
           ", which wgi does not support (float32, float16, int64, int32, int8, uint8, bool)");
}

// Whether `from` values are already `to` values on the device (device_tensor.h): integers of every width sit
// sign-extended in 32 bits, bool as 0 / 1.
bool same_device_bits(DType from, DType to) {
  if (from == to) return true;
  switch (to) {
    case DType::Int64:
    case DType::Int32:
      return from == DType::Int64 || from == DType::Int32 || from == DType::Int8 || from == DType::UInt8 ||
             from == DType::Bool;
    case DType::Int8:
    case DType::UInt8:
      return from == DType::Bool;
    default:
      return false;
  }
}

// The device class of a dtype the GPU holds in 32-bit words.
ElementClass device_class(DType dtype) {
  return dtype == DType::Float32                         ? ElementClass::Float
         : dtype == DType::UInt8 || dtype == DType::Bool ? ElementClass::Unsigned
                                                         : ElementClass::Signed;
}

// The conversion of `a` (of class `from`) to `to`'s values, in `to`'s device class.
std::string cast_expression(ElementClass from, DType to) {
  switch (to) {
    case DType::Float32:
      return "F(a)";
    case DType::Int64:
    case DType::Int32:
      return "I(a)";  // from float: truncation toward zero, saturating
    case DType::Int8:
      return from == ElementClass::Signed ? "wgi_wrap_i8(a)" : "wgi_wrap_i8(I(a))";
    case DType::UInt8:
      return from == ElementClass::Float ? "wgi_wrap_u8(U(I(a)))" : "wgi_wrap_u8(U(a))";
    case DType::Bool:
      return from == ElementClass::Float    ? "a != F(0.0)"
             : from == ElementClass::Signed ? "a != I(0)"
                                            : "a != U(0u)";
    case DType::Float16:
      break;
  }
  return "a";
}

}  // namespace

// Casts from or to float16 (packed two per word on the device) through cast_f16.wgsl.
KernelLaunch cast_f16_launch(const PlanContext& ctx, const TensorDesc& x, DType to, TensorRef in,
                             TensorRef out) {
  const bool from_f16 = x.dtype == DType::Float16;
  const int64_t n = element_count(x.shape);
  if (n > static_cast<int64_t>(UINT32_MAX) / 2)
    ctx.fail("input " + shape_to_string(x.shape) + " is too large");
  const uint64_t invocations = static_cast<uint64_t>(from_f16 ? n : (n + 1) / 2);
  kernels::Defines defines = {{"MATH_VEC4", "0"}, {"FROM_F16", from_f16 ? "1" : "0"}};
  std::string in_element = "u32", out_element = "u32";  // packed halves
  if (from_f16) {
    if (to != DType::Float16) out_element = wgsl_scalar(device_class(to));
    defines["TOUT"] = wgsl_type(device_class(to));
    defines["EXPR"] = cast_expression(ElementClass::Float, to);
  } else {
    in_element = wgsl_scalar(element_class(ctx, x.dtype, ctx.input_name(0)));
  }
  KernelInterface iface;
  iface.read("input", in_element, in)
      .read_write("output", out_element, out)
      .uniforms({{"count", UniformType::U32},     // invocations
                 {"elements", UniformType::U32},  // elements of the tensor
                 {"_pad0", UniformType::Pad},
                 {"_pad1", UniformType::Pad}});
  KernelLaunch launch;
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(invocations, 256, ctx.caps.limits);
  launch.program.label =
      "elementwise_Cast_" + std::string(dtype_name(x.dtype)) + "_to_" + std::string(dtype_name(to));
  launch.program.wgsl = iface.load_wgsl("elementwise/cast_f16.wgsl", defines);
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(invocations))
                       .u32("elements", static_cast<uint32_t>(n))
                       .bytes();
  launch.groups = grid.groups;
  return launch;
}

namespace {

OpPlan plan_cast(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const DType to = cast_target(ctx);
  OpPlan plan;
  plan.outputs.push_back({to, x.shape});
  if (same_device_bits(x.dtype, to)) {
    plan.alias_output_to_input = 0;
    return plan;
  }
  if (x.dtype == DType::Float16 || to == DType::Float16) {
    if (element_count(x.shape) > 0) {
      plan.launches.push_back(cast_f16_launch(ctx, x, to, TensorRef::input(0), TensorRef::output(0)));
    }
    return plan;
  }
  const ElementClass from = element_class(ctx, x.dtype, ctx.input_name(0));
  const ElementClass out_class = device_class(to);
  ElementwiseKernel kernel{"Cast_" + std::string(dtype_name(x.dtype)) + "_to_" + std::string(dtype_name(to)),
                           cast_expression(from, to),
                           {from},
                           out_class};
  if (element_count(x.shape) > 0) {
    plan.launches.push_back(broadcast_launch(ctx, kernel, x.shape, {x.shape}, {TensorRef::input(0)}));
  }
  return plan;
}

std::vector<Tensor> evaluate_cast(const PlanContext& ctx, std::span<const Tensor* const> in) {
  if (!host_foldable(in, 1)) return {};
  const Tensor& x = *in[0];
  const DType to = cast_target(ctx);
  Tensor out(to, x.shape());
  const size_t n = static_cast<size_t>(x.element_count());
  for (size_t i = 0; i < n; ++i) {
    if (is_float(x.dtype())) {
      store_float(out, i, load_float(x, i));
    } else {
      store_int(out, i, load_int(x, i));
    }
  }
  return {std::move(out)};
}

// ---- variadic Sum, Mean, Min, Max ----

struct VariadicOp {
  const char* op_type;
  unsigned types;
  const char* float_expr;
  const char* int_expr;
  const char* uint_expr;
  FloatHost float_host;
  IntHost int_host;
  bool mean;
};

double nan_min(float a, float b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
}
double nan_max(float a, float b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
}

const VariadicOp kVariadicOps[] = {
    {"Sum", kFloat, "a + b", nullptr, nullptr, [](float a, float b) -> double { return a + b; }, nullptr,
     false},
    {"Mean", kFloat, "a + b", nullptr, nullptr, [](float a, float b) -> double { return a + b; }, nullptr,
     true},
    {"Min", kNumeric, "wgi_min(a, b)", "min(a, b)", "min(a, b)", nan_min,
     [](int64_t a, int64_t b) { return std::min(a, b); }, false},
    {"Max", kNumeric, "wgi_max(a, b)", "max(a, b)", "max(a, b)", nan_max,
     [](int64_t a, int64_t b) { return std::max(a, b); }, false},
};

void check_variadic(const VariadicOp& op, const PlanContext& ctx) {
  if (ctx.input_count() == 0) ctx.fail("needs at least one input");
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    check_type(ctx, i, op.types);
    check_same_type(ctx, 0, i);
  }
}

// Two inputs: one launch. More: the first two into the output, then each further input accumulated in place.
// Mean divides in the last step.
OpPlan plan_variadic(const VariadicOp& op, const PlanContext& ctx) {
  check_variadic(op, ctx);
  const size_t n = ctx.input_count();
  const DType dtype = ctx.input(0).dtype;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < n; ++i) shapes.push_back(ctx.input(i).shape);
  OpPlan plan;
  const Shape out = broadcast_shapes(ctx, shapes);
  plan.outputs.push_back({dtype, out});
  if (n == 1) {
    plan.alias_output_to_input = 0;
    return plan;
  }
  if (element_count(out) == 0) return plan;
  const ElementClass cls = element_class(ctx, dtype, ctx.input_name(0));
  const std::string expr = cls == ElementClass::Float    ? op.float_expr
                           : cls == ElementClass::Signed ? op.int_expr
                                                         : op.uint_expr;
  const std::string last = op.mean ? "(" + expr + ") / F(params.scale)" : expr;
  const float scale = static_cast<float>(n);
  plan.launches.push_back(
      broadcast_launch(ctx, {op.op_type, n == 2 ? last : expr, {cls, cls}, cls, false, scale}, out,
                       {shapes[0], shapes[1]}, {TensorRef::input(0), TensorRef::input(1)}));
  for (size_t k = 2; k < n; ++k) {
    ElementwiseKernel acc{
        std::string(op.op_type) + "_accumulate", k + 1 == n ? last : expr, {cls, cls}, cls, true, scale};
    plan.launches.push_back(
        broadcast_launch(ctx, acc, out, {shapes[k]}, {TensorRef::input(static_cast<uint32_t>(k))}));
  }
  return plan;
}

std::vector<Tensor> evaluate_variadic(const VariadicOp& op, const PlanContext& ctx,
                                      std::span<const Tensor* const> in) {
  if (!host_foldable(in, ctx.input_count())) return {};
  check_variadic(op, ctx);
  const DType dtype = in[0]->dtype();
  Tensor acc = *in[0];
  for (size_t k = 1; k < in.size(); ++k) {
    const std::array<const Tensor*, 2> pair = {&acc, in[k]};
    acc = fold_broadcast(ctx, pair, dtype, [&](Tensor& y, size_t i, const std::vector<int64_t>& o) {
      const size_t ia = static_cast<size_t>(o[0]), ib = static_cast<size_t>(o[1]);
      if (is_float(dtype)) {
        store_float(y, i,
                    op.float_host(static_cast<float>(load_float(acc, ia)),
                                  static_cast<float>(load_float(*in[k], ib))));
      } else {
        store_int(y, i, op.int_host(load_int(acc, ia), load_int(*in[k], ib)));
      }
    });
  }
  if (op.mean) {
    const float n = static_cast<float>(in.size());
    for (size_t i = 0; i < static_cast<size_t>(acc.element_count()); ++i) {
      store_float(acc, i, static_cast<float>(load_float(acc, i)) / n);
    }
  }
  return {std::move(acc)};
}

}  // namespace

KernelLaunch broadcast_add_launch(const PlanContext& ctx, const Shape& out_shape, const Shape& a_shape,
                                  TensorRef a, const Shape& b_shape, TensorRef b,
                                  const FusedActivation& activation) {
  // The clamp bounds as exact bit patterns (FLT_MAX written in decimal could round past f32's range).
  auto bits = [](float v) {
    uint32_t u = 0;
    std::memcpy(&u, &v, sizeof u);
    return "F(bitcast<f32>(" + std::to_string(u) + "u))";
  };
  ElementwiseKernel kernel{"Add" + activation.label_suffix(),
                           activation.wgsl_expression("(a + b)", bits(activation.min), bits(activation.max)),
                           {ElementClass::Float, ElementClass::Float},
                           ElementClass::Float};
  return broadcast_launch(ctx, kernel, out_shape, {a_shape, b_shape}, {a, b});
}

void register_binary_ops(OpRegistry& registry) {
  for (const BinaryOp& op : kBinaryOps) {
    registry.add("", op.op_type, op.since_version, kLatestOpset,
                 {[&op](const PlanContext& ctx) { return plan_binary(op, ctx); },
                  [&op](const PlanContext& ctx, std::span<const Tensor* const> in) {
                    return evaluate_binary(op, ctx, in);
                  }});
  }
  // Opsets 6-7 required equal shapes, 8+ broadcast: broadcasting serves both.
  for (const VariadicOp& op : kVariadicOps) {
    registry.add("", op.op_type, 6, kLatestOpset,
                 {[&op](const PlanContext& ctx) { return plan_variadic(op, ctx); },
                  [&op](const PlanContext& ctx, std::span<const Tensor* const> in) {
                    return evaluate_variadic(op, ctx, in);
                  }});
  }
  registry.add("", "Pow", 7, kLatestOpset, {plan_pow, evaluate_pow});
  registry.add("", "Mod", 10, kLatestOpset, {plan_mod, evaluate_mod});
  registry.add("", "Where", 9, kLatestOpset, {plan_where, evaluate_where});
  registry.add("", "Not", 1, kLatestOpset, {plan_not, evaluate_not});
  registry.add("", "BitShift", 11, kLatestOpset, {plan_bit_shift, evaluate_bit_shift});
  // Casts convert float16 themselves (cast_f16.wgsl), not through the float32 wrapper of ops/float16.h.
  OpHandler cast{plan_cast, evaluate_cast};
  cast.plans_float16 = true;
  registry.add("", "Cast", 6, kLatestOpset, cast);
  registry.add("", "CastLike", 15, kLatestOpset, cast);
}

}  // namespace wgi::ops
