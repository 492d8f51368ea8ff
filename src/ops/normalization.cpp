// Reductions (Reduce*, ArgMax, ArgMin), Softmax / LogSoftmax and the normalisations (LayerNormalization,
// InstanceNormalization, GroupNormalization, BatchNormalization in inference mode), float32, f32
// accumulation. Kernels in kernels/normalization/:
//   reduce.wgsl      any set of reduced axes; one workgroup per output (tree) or one invocation per output
//   softmax.wgsl     one axis (opset 13+) or opset < 13's flattened rows; one workgroup or invocation per row
//   row_norm.wgsl    mean / variance over contiguous rows, scale and bias indexed per op
//   layer_norm_rows.wgsl  LayerNormalization's common case (one scale / bias per element, length % 4 == 0)
//   batch_norm.wgsl  elementwise with per-channel statistics
// Reductions with host-known inputs (shape arithmetic, constant subgraphs) are folded on the host.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/wgsl_library.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/normalization.h"
#include "ops/reduction.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

constexpr int64_t kMaxHostFoldElements = int64_t{1} << 24;
constexpr size_t kMaxAxisGroups = 8;  // per kind (kept / reduced) in reduce.wgsl's uniform

std::string str(int64_t v) {
  return std::to_string(v);
}

void require_float32(const PlanContext& ctx, size_t i, const char* what) {
  const TensorDesc& d = ctx.input(i);
  if (d.dtype != DType::Float32) {
    ctx.fail(ctx.input_name(i) + " (" + what + ") has type " + std::string(dtype_name(d.dtype)) +
             "; wgi runs " + ctx.node.op_type + " on float32 only");
  }
}

int64_t normalize_axis(const PlanContext& ctx, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) {
    ctx.fail(what + " is " + str(axis) + "; for a rank-" + str(rank) + " input it must be in [" + str(-rank) +
             ", " + str(rank - 1) + "]");
  }
  return axis < 0 ? axis + rank : axis;
}

int64_t product(const Shape& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= shape[i];
  return p;
}

// Whether output k of the node is wanted (named). Tests that give no output names want output 0 only.
bool output_requested(const PlanContext& ctx, size_t k) {
  if (ctx.node.output_names.empty()) return k == 0;
  return k < ctx.node.output_names.size() && !ctx.node.output_names[k].empty();
}

size_t output_count(const PlanContext& ctx) {
  return std::max<size_t>(1, ctx.node.output_names.size());
}

std::vector<int64_t> int_values(const PlanContext& ctx, size_t input, const Tensor& t, const char* what) {
  std::vector<int64_t> v;
  if (t.dtype() == DType::Int64) {
    for (int64_t x : t.data<int64_t>()) v.push_back(x);
  } else if (t.dtype() == DType::Int32) {
    for (int32_t x : t.data<int32_t>()) v.push_back(x);
  } else {
    ctx.fail(ctx.input_name(input) + " (" + what + ") has type " + std::string(dtype_name(t.dtype())) +
             "; expected int64");
  }
  return v;
}

uint32_t u32(int64_t v) {
  return static_cast<uint32_t>(v);
}

uint32_t next_pow2(uint64_t v) {
  uint32_t p = 1;
  while (p < v && p < (1u << 30)) p <<= 1;
  return p;
}

std::array<uint32_t, 4> vec4_at(const std::vector<uint32_t>& v, size_t first) {
  std::array<uint32_t, 4> r{};
  for (size_t i = 0; i < 4; ++i) r[i] = first + i < v.size() ? v[first + i] : 0;
  return r;
}

// ---------------------------------------------------------------------------------------------------------
// Reductions

const char* reduce_kind_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum:
      return "sum";
    case ReduceKind::Mean:
      return "mean";
    case ReduceKind::Max:
      return "max";
    case ReduceKind::Min:
      return "min";
    case ReduceKind::Prod:
      return "prod";
    case ReduceKind::L1:
      return "l1";
    case ReduceKind::L2:
      return "l2";
    case ReduceKind::SumSquare:
      return "sum_square";
    case ReduceKind::LogSum:
      return "log_sum";
    case ReduceKind::LogSumExp:
      return "log_sum_exp";
    case ReduceKind::ArgMax:
      return "argmax";
    case ReduceKind::ArgMin:
      return "argmin";
  }
  return "?";
}

bool is_arg(ReduceKind k) {
  return k == ReduceKind::ArgMax || k == ReduceKind::ArgMin;
}

// Kinds whose integer results are exact in integer arithmetic (the GPU runs these on int32 / int64 too).
bool integer_exact(ReduceKind k) {
  return k == ReduceKind::Sum || k == ReduceKind::Prod || k == ReduceKind::Max || k == ReduceKind::Min ||
         k == ReduceKind::L1 || k == ReduceKind::SumSquare || is_arg(k);
}

uint32_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// The combine's identity as the element type's bits.
uint32_t identity_bits(ReduceKind k, bool integer) {
  const float inf = std::numeric_limits<float>::infinity();
  switch (k) {
    case ReduceKind::Prod:
      return integer ? 1u : f32_bits(1.0f);
    case ReduceKind::Max:
    case ReduceKind::ArgMax:
    case ReduceKind::LogSumExp:
      return integer ? 0x80000000u : f32_bits(-inf);
    case ReduceKind::Min:
    case ReduceKind::ArgMin:
      return integer ? 0x7fffffffu : f32_bits(inf);
    default:
      return 0;  // 0 and 0.0f share their bits
  }
}

struct Group {
  int64_t size;
  int64_t stride;
  bool reduced;
};

// Merges adjacent axes of the same kind and drops unit axes: the fewest (size, stride) groups that address
// the input the same way, outermost first.
std::vector<Group> collapse_axes(const Shape& shape, const std::vector<bool>& reduced) {
  std::vector<Group> groups;
  int64_t stride = 1;
  std::vector<int64_t> strides(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!groups.empty() && groups.back().reduced == reduced[i]) {
      groups.back().size *= shape[i];
      groups.back().stride = strides[i];
    } else {
      groups.push_back({shape[i], strides[i], reduced[i]});
    }
  }
  return groups;
}

ReductionSpec reduce_spec(const PlanContext& ctx, ReduceKind kind, bool axes_from_input) {
  const int64_t rank = static_cast<int64_t>(ctx.input(0).shape.size());
  ReductionSpec spec;
  spec.kind = kind;
  spec.keepdims = ctx.node.attributes.get_int("keepdims", 1) != 0;
  std::vector<int64_t> axes;
  if (axes_from_input) {
    if (ctx.node.attributes.has("axes")) {
      ctx.fail("has an axes attribute; from opset " + str(ctx.node.op_type == "ReduceSum" ? 13 : 18) +
               " on, " + ctx.node.op_type + " takes its axes as input 1");
    }
    if (ctx.has_input(1)) {
      const Tensor* t = ctx.constant(1);
      if (t == nullptr) {
        ctx.fail(ctx.input_name(1) +
                 " (axes) is computed while the model runs; wgi needs the reduced axes when " +
                 "the model is planned (an initializer, or a value computable from shapes)");
      }
      axes = int_values(ctx, 1, *t, "axes");
    }
    if (axes.empty() && ctx.node.attributes.get_int("noop_with_empty_axes", 0) != 0) {
      spec.reduced.assign(static_cast<size_t>(rank), false);
      return spec;
    }
  } else {
    if (ctx.has_input(1)) {
      ctx.fail("has a second input; before opset " + str(ctx.node.op_type == "ReduceSum" ? 13 : 18) + ", " +
               ctx.node.op_type + " takes its axes as an attribute");
    }
    axes = ctx.node.attributes.get_ints("axes", {});
  }
  spec.reduced.assign(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    const auto n = static_cast<size_t>(normalize_axis(ctx, a, rank, "axes entry"));
    if (spec.reduced[n]) ctx.fail("axes " + shape_to_string(axes) + " names axis " + str(a) + " twice");
    spec.reduced[n] = true;
  }
  return spec;
}

ReductionSpec arg_spec(const PlanContext& ctx, ReduceKind kind) {
  const int64_t rank = static_cast<int64_t>(ctx.input(0).shape.size());
  ReductionSpec spec;
  spec.kind = kind;
  spec.keepdims = ctx.node.attributes.get_int("keepdims", 1) != 0;
  spec.select_last_index = ctx.node.attributes.get_int("select_last_index", 0) != 0;
  const int64_t axis = normalize_axis(ctx, ctx.node.attributes.get_int("axis", 0), rank, "axis");
  spec.reduced.assign(static_cast<size_t>(rank), false);
  spec.reduced[static_cast<size_t>(axis)] = true;
  return spec;
}

template <class V>
std::vector<V> values_as(const Tensor& t) {
  std::vector<V> v;
  v.reserve(static_cast<size_t>(t.element_count()));
  switch (t.dtype()) {
    case DType::Float32:
      for (float x : t.data<float>()) v.push_back(static_cast<V>(x));
      break;
    case DType::Int64:
      for (int64_t x : t.data<int64_t>()) v.push_back(static_cast<V>(x));
      break;
    case DType::Int32:
      for (int32_t x : t.data<int32_t>()) v.push_back(static_cast<V>(x));
      break;
    default:
      throw Error("internal: host reduction of " + std::string(dtype_name(t.dtype())));
  }
  return v;
}

// The accumulator's start: the identity of the kind's step (the extreme value for Max / Min and Arg*).
template <class V>
V reduce_start(ReduceKind kind) {
  V start;
  switch (kind) {
    case ReduceKind::Prod:
      start = V(1);
      break;
    case ReduceKind::Max:
    case ReduceKind::ArgMax:
      start = std::numeric_limits<V>::lowest();
      break;
    case ReduceKind::Min:
    case ReduceKind::ArgMin:
      start = std::numeric_limits<V>::max();
      break;
    default:
      start = V(0);
      break;
  }
  if constexpr (std::is_floating_point_v<V>) {
    if (kind == ReduceKind::Max) start = -std::numeric_limits<V>::infinity();
    if (kind == ReduceKind::Min) start = std::numeric_limits<V>::infinity();
  }
  return start;
}

// One input value `v` into its output's accumulator; `k` is its index along the reduced axis (Arg*), `shift`
// LogSumExp's maximum.
template <class V>
void reduce_step(const ReductionSpec& spec, V v, V shift, int64_t k, V& acc, int64_t& best_index) {
  const ReduceKind kind = spec.kind;
  switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean:
    case ReduceKind::LogSum:
      acc += v;
      break;
    case ReduceKind::Max:
      acc = std::max(acc, v);
      break;
    case ReduceKind::Min:
      acc = std::min(acc, v);
      break;
    case ReduceKind::Prod:
      acc *= v;
      break;
    case ReduceKind::L1:
      acc += v < 0 ? -v : v;
      break;
    case ReduceKind::L2:
    case ReduceKind::SumSquare:
      acc += v * v;
      break;
    case ReduceKind::LogSumExp:
      acc += static_cast<V>(std::exp(double(v - shift)));
      break;
    case ReduceKind::ArgMax:
    case ReduceKind::ArgMin: {
      const bool wins = kind == ReduceKind::ArgMax ? v > acc : v < acc;
      if (best_index < 0 || wins || (v == acc && spec.select_last_index)) {
        acc = v;
        best_index = k;
      }
      break;
    }
  }
}

// The output from its accumulator.
template <class V>
double reduce_finish(ReduceKind kind, V acc, V shift, int64_t best_index, int64_t reduce_size) {
  const double a = static_cast<double>(acc);
  switch (kind) {
    case ReduceKind::Mean:
      return a / static_cast<double>(reduce_size);
    case ReduceKind::L2:
      return std::sqrt(a);
    case ReduceKind::LogSum:
      return std::log(a);
    case ReduceKind::LogSumExp:
      return std::log(a) + static_cast<double>(shift);
    case ReduceKind::ArgMax:
    case ReduceKind::ArgMin:
      return static_cast<double>(std::max<int64_t>(best_index, 0));
    default:
      return a;
  }
}

// The reduction in V (double, or int64 for exact integer kinds), one pass over the input in order.
template <class V>
void host_reduce(const std::vector<V>& x, const Shape& shape, const ReductionSpec& spec, int64_t out_count,
                 std::vector<double>& result) {
  const size_t rank = shape.size();
  std::vector<int64_t> out_stride(rank, 0);
  int64_t reduce_size = 1;
  int64_t s = 1;
  size_t arg_axis = rank;
  for (size_t i = rank; i-- > 0;) {
    if (spec.reduced[i]) {
      reduce_size *= shape[i];
      arg_axis = i;
    } else {
      out_stride[i] = s;
      s *= shape[i];
    }
  }
  const ReduceKind kind = spec.kind;
  std::vector<V> acc(static_cast<size_t>(out_count));
  std::vector<int64_t> best_index(static_cast<size_t>(out_count), -1);
  std::vector<V> shift(static_cast<size_t>(out_count), V(0));
  auto for_each = [&](auto&& f) {
    std::vector<int64_t> coord(rank, 0);
    int64_t o = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      f(i, static_cast<size_t>(o), arg_axis < rank ? coord[arg_axis] : 0);
      for (size_t a = rank; a-- > 0;) {
        ++coord[a];
        o += out_stride[a];
        if (coord[a] < shape[a]) break;
        o -= out_stride[a] * shape[a];
        coord[a] = 0;
      }
    }
  };
  if (kind == ReduceKind::LogSumExp) {
    std::fill(acc.begin(), acc.end(), -std::numeric_limits<V>::infinity());
    for_each([&](size_t i, size_t o, int64_t) { acc[o] = std::max(acc[o], x[i]); });
    for (size_t o = 0; o < acc.size(); ++o) shift[o] = std::isfinite(double(acc[o])) ? acc[o] : V(0);
  }
  std::fill(acc.begin(), acc.end(), reduce_start<V>(kind));
  for_each(
      [&](size_t i, size_t o, int64_t k) { reduce_step(spec, x[i], shift[o], k, acc[o], best_index[o]); });
  result.resize(acc.size());
  for (size_t o = 0; o < acc.size(); ++o) {
    result[o] = reduce_finish(kind, acc[o], shift[o], best_index[o], reduce_size);
  }
}

std::vector<Tensor> evaluate_reduce(const PlanContext& ctx, std::span<const Tensor* const> host,
                                    ReduceKind kind, bool axes_from_input) {
  if (host.empty() || host[0] == nullptr) return {};
  const Tensor& x = *host[0];
  if (x.element_count() > kMaxHostFoldElements) return {};
  if (x.dtype() != DType::Float32 && x.dtype() != DType::Int64 && x.dtype() != DType::Int32) return {};
  if (axes_from_input && ctx.has_input(1) && (host.size() < 2 || host[1] == nullptr)) return {};
  const ReductionSpec spec = is_arg(kind) ? arg_spec(ctx, kind) : reduce_spec(ctx, kind, axes_from_input);
  return {reduce_on_host(x, spec)};
}

// ---------------------------------------------------------------------------------------------------------
// Softmax / LogSoftmax

}  // namespace

KernelLaunch make_softmax_launch(const PlanContext& ctx, int64_t rows, int64_t length, int64_t inner,
                                 bool log, TensorRef in, TensorRef out) {
  const bool row_per_workgroup = length >= 64 || (length >= 16 && rows < 4096);
  KernelLaunch launch;
  if (row_per_workgroup) {
    const uint32_t wg = pow2_workgroup_size(
        std::clamp<uint32_t>(next_pow2(static_cast<uint64_t>(length)), 32, 256), ctx.caps.limits);
    launch.program.constants = {{"WG_SIZE", wg}};
    launch.groups = gpu::fold_workgroups(static_cast<uint64_t>(rows),
                                         ctx.caps.limits.max_compute_workgroups_per_dimension);
  } else {
    const gpu::DispatchGrid grid =
        gpu::compute_dispatch_grid(static_cast<uint64_t>(rows), 64, ctx.caps.limits);
    launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
    launch.groups = grid.groups;
  }
  launch.program.label =
      std::string(log ? "log_softmax" : "softmax") + (row_per_workgroup ? "_rows" : "_threads");
  KernelInterface iface;
  iface.read("input", "f32", in)
      .read_write("output", "f32", out)
      .uniforms({{"rows", UniformType::U32},
                 {"length", UniformType::U32},
                 {"inner", UniformType::U32},
                 {"_pad", UniformType::Pad}});
  launch.program.wgsl = iface.load_wgsl(
      "normalization/softmax.wgsl",
      {{"ROW_PER_WORKGROUP", row_per_workgroup ? "1" : "0"}, {"LOG", log ? "1" : "0"}, {"MATH_VEC4", "0"}});
  iface.bind(launch);
  launch.uniform =
      iface.values().u32("rows", u32(rows)).u32("length", u32(length)).u32("inner", u32(inner)).bytes();
  return launch;
}

namespace {

OpPlan plan_softmax(const PlanContext& ctx, bool log) {
  require_float32(ctx, 0, "input");
  const Shape& shape = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0) ctx.fail(ctx.input_name(0) + " is a scalar; " + ctx.node.op_type + " needs rank >= 1");
  require_addressable(ctx, ctx.input_name(0), shape);
  // Before opset 13 the input is flattened to 2-D at `axis` (default 1) and each row normalised as a whole;
  // from 13 on only `axis` (default -1) is: different results for rank > 2.
  const bool flatten = ctx.node.opset < 13;
  const int64_t axis =
      normalize_axis(ctx, ctx.node.attributes.get_int("axis", flatten ? 1 : -1), rank, "axis");
  const auto a = static_cast<size_t>(axis);
  const int64_t outer = product(shape, 0, a);
  const int64_t length = flatten ? product(shape, a, shape.size()) : shape[a];
  const int64_t inner = flatten ? 1 : product(shape, a + 1, shape.size());
  const int64_t rows = outer * inner;

  OpPlan plan;
  plan.outputs.push_back(ctx.input(0));
  if (rows * length == 0) return plan;
  plan.launches.push_back(
      make_softmax_launch(ctx, rows, length, inner, log, TensorRef::input(0), TensorRef::output(0)));
  return plan;
}

// ---------------------------------------------------------------------------------------------------------
// LayerNormalization, InstanceNormalization, GroupNormalization: row_norm.wgsl

struct RowNorm {
  int64_t rows = 0;
  int64_t length = 0;
  int64_t row_mod = 1;
  int64_t row_mul = 0;
  int64_t pos_div = 1;
  int64_t scale_pos_mod = 1;
  int64_t bias_pos_mod = 1;
  bool has_bias = false;
  float epsilon = 1e-5f;
  bool stats = false;  // write mean and inv_std (to outputs 1 and 2, or scratch where not requested)
  // The tensors read and written: the node's X, scale, bias and Y, unless a fused product plans it
  // (append_layer_norm).
  TensorRef input = TensorRef::input(0), scale = TensorRef::input(1), bias = TensorRef::input(2),
            output = TensorRef::output(0);
};

// The interface both row kernels share: X, scale, bias (the device's zero buffer when the node has none: the
// kernels read it only when params.has_bias), Y; with r.stats mean and inv_std (outputs 1 and 2 where
// requested, else scratch); then the kernel's own uniforms.
KernelInterface row_norm_interface(const PlanContext& ctx, const RowNorm& r, OpPlan& plan,
                                   const std::string& element, std::vector<UniformMember> uniforms) {
  KernelInterface iface;
  iface.read("input", element, r.input)
      .read("scale", element, r.scale)
      .read("bias", element, r.has_bias ? r.bias : TensorRef::zero())
      .read_write("output", element, r.output);
  if (r.stats) {
    const auto statistic = [&](uint32_t k) {
      return output_requested(ctx, k) ? TensorRef::output(k)
                                      : plan.add_scratch(static_cast<uint64_t>(r.rows) * 4);
    };
    const TensorRef mean = statistic(1);
    const TensorRef inv_std = statistic(2);
    iface.read_write("mean_out", "f32", mean).read_write("inv_std_out", "f32", inv_std);
  }
  iface.uniforms(std::move(uniforms));
  return iface;
}

void add_row_norm_launch(const PlanContext& ctx, const RowNorm& r, OpPlan& plan) {
  if (r.rows * r.length == 0) return;
  KernelLaunch launch;
  const uint32_t wg = pow2_workgroup_size(
      std::clamp<uint32_t>(next_pow2(static_cast<uint64_t>(r.length)), 64, 256), ctx.caps.limits);
  launch.program.label = std::string("row_norm_") + ctx.node.op_type + (r.stats ? "_stats" : "");
  const KernelInterface iface = row_norm_interface(ctx, r, plan, "f32",
                                                   {{"rows", UniformType::U32},
                                                    {"length", UniformType::U32},
                                                    {"row_mod", UniformType::U32},
                                                    {"row_mul", UniformType::U32},
                                                    {"pos_div", UniformType::U32},
                                                    {"scale_pos_mod", UniformType::U32},
                                                    {"bias_pos_mod", UniformType::U32},
                                                    {"has_bias", UniformType::U32},
                                                    {"epsilon", UniformType::F32},
                                                    {"inv_length", UniformType::F32},
                                                    {"_pad0", UniformType::Pad},
                                                    {"_pad1", UniformType::Pad}});
  launch.program.wgsl = iface.load_wgsl("normalization/row_norm.wgsl", {{"STATS", r.stats ? "1" : "0"}});
  launch.program.constants = {{"WG_SIZE", wg}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("rows", u32(r.rows))
                       .u32("length", u32(r.length))
                       .u32("row_mod", u32(r.row_mod))
                       .u32("row_mul", u32(r.row_mul))
                       .u32("pos_div", u32(r.pos_div))
                       .u32("scale_pos_mod", u32(r.scale_pos_mod))
                       .u32("bias_pos_mod", u32(r.bias_pos_mod))
                       .u32("has_bias", r.has_bias ? 1 : 0)
                       .f32("epsilon", r.epsilon)
                       .f32("inv_length", static_cast<float>(1.0 / static_cast<double>(r.length)))
                       .bytes();
  launch.groups = gpu::fold_workgroups(static_cast<uint64_t>(r.rows),
                                       ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
}

// layer_norm_rows.wgsl: LayerNormalization whose scale (and bias) hold one value per row element, with a row
// length that is a multiple of 4, up to this many elements (128 invocations x 16 vec4s in registers).
constexpr int64_t kLayerNormRowsMaxLength = 8192;

bool layer_norm_rows_applies(const PlanContext& ctx, const RowNorm& r) {
  const gpu::Limits& limits = ctx.caps.limits;
  return r.row_mod == 1 && r.pos_div == 1 && r.scale_pos_mod == r.length &&
         (!r.has_bias || r.bias_pos_mod == r.length) && r.length % 4 == 0 && r.length > 0 &&
         r.length <= kLayerNormRowsMaxLength && limits.max_compute_invocations_per_workgroup >= 256 &&
         limits.max_compute_workgroup_size_x >= 256;
}

// Exists for speed: row_norm.wgsl (one workgroup per row, shared-memory trees, three scalar passes over the
// row, a division and two modulos per element for the scale / bias index) ran DaViT's LayerNorms far below
// the H200's bandwidth. This kernel reads each element once as part of a vec4, keeps the row in registers,
// normalises several rows per workgroup and reduces with one barrier per statistic, and beat row_norm on
// every shape timed (docs/performance.md, "Measurements behind the planner's rules").
void add_layer_norm_rows_launch(const PlanContext& ctx, const RowNorm& r, OpPlan& plan) {
  if (r.rows == 0) return;
  const int64_t length4 = r.length / 4;
  // Invocations per row: a power of two, 8 to 128, giving each about 4 vec4s of rows up to 512 elements and
  // about 8 of longer ones (16 at the cap). On the H200, fewer invocations holding more vec4s lost on short
  // rows; more invocations lost on long rows, since each invocation reads its row's partial sums one by one
  // (docs/performance.md, "Measurements behind the planner's rules").
  const int64_t per_invocation = length4 <= 128 ? 4 : 8;
  const uint32_t threads_per_row = std::clamp<uint32_t>(
      next_pow2(static_cast<uint64_t>((length4 + per_invocation - 1) / per_invocation)), 8, 128);
  const auto values_per_thread = static_cast<uint32_t>((length4 + threads_per_row - 1) / threads_per_row);
  const uint32_t rows_per_workgroup = 256 / threads_per_row;
  KernelLaunch launch;
  launch.program.label = std::string("layer_norm_rows") + (r.stats ? "_stats" : "");
  const KernelInterface iface = row_norm_interface(ctx, r, plan, "vec4<f32>",
                                                   {{"rows", UniformType::U32},
                                                    {"length4", UniformType::U32},  // the row length in vec4s
                                                    {"has_bias", UniformType::U32},
                                                    {"_pad0", UniformType::Pad},
                                                    {"epsilon", UniformType::F32},
                                                    {"inv_length", UniformType::F32},
                                                    {"_pad1", UniformType::Pad},
                                                    {"_pad2", UniformType::Pad}});
  launch.program.wgsl = iface.load_wgsl("normalization/layer_norm_rows.wgsl",
                                        {{"STATS", r.stats ? "1" : "0"},
                                         {"THREADS_PER_ROW", std::to_string(threads_per_row)},
                                         {"VALUES_PER_THREAD", std::to_string(values_per_thread)}});
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("rows", u32(r.rows))
                       .u32("length4", u32(length4))
                       .u32("has_bias", r.has_bias ? 1 : 0)
                       .f32("epsilon", r.epsilon)
                       .f32("inv_length", static_cast<float>(1.0 / static_cast<double>(r.length)))
                       .bytes();
  const uint64_t workgroups = (static_cast<uint64_t>(r.rows) + rows_per_workgroup - 1) / rows_per_workgroup;
  launch.groups = gpu::fold_workgroups(workgroups, ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
}

float epsilon_attribute(const PlanContext& ctx) {
  const float eps = ctx.node.attributes.get_float("epsilon", 1e-5f);
  if (!(eps >= 0)) ctx.fail("epsilon is " + std::to_string(eps) + "; it must be >= 0");
  return eps;
}

void require_stash_type_float(const PlanContext& ctx) {
  const int64_t stash = ctx.node.attributes.get_int("stash_type", 1);
  if (stash != 1) {
    ctx.fail("stash_type is " + str(stash) + "; wgi computes the statistics in float32 (stash_type 1) only");
  }
}

// How many elements a LayerNormalization parameter has, if it broadcasts onto the normalised axes as a suffix
// (after dropping leading 1s): then element k of a row uses parameter k % count.
int64_t suffix_broadcast_count(const PlanContext& ctx, size_t input, const char* what,
                               const Shape& normalized) {
  const Shape& p = ctx.input(input).shape;
  size_t first = 0;
  while (first < p.size() && p[first] == 1) ++first;
  const size_t k = p.size() - first;
  bool ok = k <= normalized.size();
  for (size_t i = 0; ok && i < k; ++i) ok = p[first + i] == normalized[normalized.size() - k + i];
  if (!ok) {
    ctx.fail(ctx.input_name(input) + " (" + what + ") has shape " + shape_to_string(p) +
             "; wgi needs it to match the normalised axes " + shape_to_string(normalized) +
             " or a trailing part of them");
  }
  return product(p, first, p.size());
}

}  // namespace

void append_layer_norm(const PlanContext& ctx, const LayerNormLaunch& ln, OpPlan& plan) {
  RowNorm r;
  r.rows = ln.rows;
  r.length = ln.length;
  r.scale_pos_mod = r.bias_pos_mod = ln.length;
  r.has_bias = ln.has_bias;
  r.epsilon = ln.epsilon;
  r.input = ln.input;
  r.scale = ln.scale;
  r.bias = ln.bias;
  r.output = ln.output;
  if (layer_norm_rows_applies(ctx, r)) {
    add_layer_norm_rows_launch(ctx, r, plan);
  } else {
    add_row_norm_launch(ctx, r, plan);
  }
}

FusedLayerNorm read_fused_layer_norm(const PlanContext& ctx, int64_t k, float epsilon, size_t scale_input,
                                     size_t bias_input) {
  const auto check = [&](size_t i, const char* what) {
    const Tensor* t = ctx.constant(i);
    if (!t || t->dtype() != DType::Float32 || t->shape() != Shape{k}) {
      ctx.fail(std::string("the fused LayerNormalization's ") + what + " (input " + std::to_string(i) + ", " +
               ctx.input_name(i) + ") must be a float32 constant of shape [" + std::to_string(k) + "]");
    }
  };
  FusedLayerNorm ln;
  ln.epsilon = epsilon;
  ln.scale_input = scale_input;
  ln.bias_input = bias_input;
  check(scale_input, "scale");
  ln.has_bias = ctx.has_input(bias_input);
  if (ln.has_bias) check(bias_input, "bias");
  return ln;
}

void bind_layer_norm_a(TensorRef params, TensorRef normalized, KernelInterface& iface,
                       std::vector<UniformMember>& members) {
  iface.read("ln_params", "f32", params).read_write("normalized", "f32", normalized);
  members.push_back({"ln_epsilon", UniformType::F32});
  members.push_back({"ln_inv_k", UniformType::F32});
}

void set_layer_norm_a_values(float epsilon, int64_t k, UniformValues& values) {
  values.f32("ln_epsilon", epsilon).f32("ln_inv_k", static_cast<float>(1.0 / static_cast<double>(k)));
}

Tensor fused_layer_norm_params(const PlanContext& ctx, const FusedLayerNorm& ln, int64_t k) {
  Tensor params(DType::Float32, {2 * k});
  auto* values = reinterpret_cast<float*>(params.bytes().data());
  const size_t count = static_cast<size_t>(k);
  std::memcpy(values, ctx.constant(ln.scale_input)->bytes().data(), count * sizeof(float));
  if (ln.has_bias) {
    std::memcpy(values + count, ctx.constant(ln.bias_input)->bytes().data(), count * sizeof(float));
  } else {
    std::fill(values + count, values + 2 * count, 0.0f);
  }
  return params;
}

void append_fused_layer_norm(const PlanContext& ctx, const FusedLayerNorm& ln, int64_t rows, int64_t k,
                             TensorRef input, TensorRef output, OpPlan& plan) {
  append_layer_norm(
      ctx,
      {.rows = rows,
       .length = k,
       .has_bias = ln.has_bias,
       .epsilon = ln.epsilon,
       .input = input,
       .scale = TensorRef::input(static_cast<uint32_t>(ln.scale_input)),
       .bias = ln.has_bias ? TensorRef::input(static_cast<uint32_t>(ln.bias_input)) : TensorRef::zero(),
       .output = output},
      plan);
}

namespace {

OpPlan plan_layer_norm(const PlanContext& ctx) {
  require_float32(ctx, 0, "X");
  require_float32(ctx, 1, "Scale");
  const bool has_bias = ctx.has_input(2);
  if (has_bias) require_float32(ctx, 2, "B");
  require_stash_type_float(ctx);
  const Shape& shape = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0) ctx.fail(ctx.input_name(0) + " is a scalar; LayerNormalization needs rank >= 1");
  require_addressable(ctx, ctx.input_name(0), shape);
  const auto axis =
      static_cast<size_t>(normalize_axis(ctx, ctx.node.attributes.get_int("axis", -1), rank, "axis"));
  const Shape normalized(shape.begin() + static_cast<std::ptrdiff_t>(axis), shape.end());
  RowNorm r;
  r.rows = product(shape, 0, axis);
  r.length = product(shape, axis, shape.size());
  r.scale_pos_mod = suffix_broadcast_count(ctx, 1, "Scale", normalized);
  r.bias_pos_mod = has_bias ? suffix_broadcast_count(ctx, 2, "B", normalized) : 1;
  r.has_bias = has_bias;
  r.epsilon = epsilon_attribute(ctx);
  r.stats = output_requested(ctx, 1) || output_requested(ctx, 2);

  OpPlan plan;
  plan.outputs.push_back(ctx.input(0));
  Shape stat_shape(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(axis));
  stat_shape.resize(shape.size(), 1);
  for (size_t k = 1; k < std::min<size_t>(output_count(ctx), 3); ++k)
    plan.outputs.push_back({DType::Float32, stat_shape});
  if (r.scale_pos_mod == 0 || (has_bias && r.bias_pos_mod == 0)) return plan;  // empty normalised axes
  if (layer_norm_rows_applies(ctx, r)) {
    add_layer_norm_rows_launch(ctx, r, plan);
  } else {
    add_row_norm_launch(ctx, r, plan);
  }
  return plan;
}

// X [N, C, spatial...]: checks the rank and returns {N, C, spatial size}.
std::array<int64_t, 3> channel_layout(const PlanContext& ctx) {
  const Shape& shape = ctx.input(0).shape;
  if (shape.size() < 2) {
    ctx.fail(ctx.input_name(0) + " has shape " + shape_to_string(shape) + "; " + ctx.node.op_type +
             " needs [N, C, ...] (rank >= 2)");
  }
  require_addressable(ctx, ctx.input_name(0), shape);
  return {shape[0], shape[1], product(shape, 2, shape.size())};
}

void require_param_count(const PlanContext& ctx, size_t input, const char* what, int64_t expected,
                         const std::string& meaning) {
  const Shape& p = ctx.input(input).shape;
  if (element_count(p) != expected) {
    ctx.fail(ctx.input_name(input) + " (" + what + ") has shape " + shape_to_string(p) + "; expected [" +
             str(expected) + "], " + meaning);
  }
}

OpPlan plan_instance_norm(const PlanContext& ctx) {
  require_float32(ctx, 0, "input");
  require_float32(ctx, 1, "scale");
  require_float32(ctx, 2, "B");
  const auto [n, c, spatial] = channel_layout(ctx);
  require_param_count(ctx, 1, "scale", c, "one per channel");
  require_param_count(ctx, 2, "B", c, "one per channel");
  RowNorm r;
  r.rows = n * c;
  r.length = spatial;
  r.row_mod = std::max<int64_t>(c, 1);
  r.row_mul = 1;
  r.has_bias = true;
  r.epsilon = epsilon_attribute(ctx);
  OpPlan plan;
  plan.outputs.push_back(ctx.input(0));
  add_row_norm_launch(ctx, r, plan);
  return plan;
}

OpPlan plan_group_norm(const PlanContext& ctx) {
  require_float32(ctx, 0, "X");
  require_float32(ctx, 1, "scale");
  require_float32(ctx, 2, "bias");
  if (ctx.node.opset >= 21) require_stash_type_float(ctx);
  const auto [n, c, spatial] = channel_layout(ctx);
  if (!ctx.node.attributes.has("num_groups")) ctx.fail("the num_groups attribute is required");
  const int64_t groups = ctx.node.attributes.get_int("num_groups", 1);
  if (groups < 1 || c % groups != 0) {
    ctx.fail("num_groups is " + str(groups) + "; it must be positive and divide the " + str(c) + " channels");
  }
  // Opset 18 has one scale and bias per group; opset 21 (which deprecated 18's definition) one per channel.
  const bool per_channel = ctx.node.opset >= 21;
  const int64_t expected = per_channel ? c : groups;
  const std::string meaning = per_channel ? "one per channel (opset 21)" : "one per group (opset 18)";
  require_param_count(ctx, 1, "scale", expected, meaning);
  require_param_count(ctx, 2, "bias", expected, meaning);
  RowNorm r;
  r.rows = n * groups;
  r.length = (c / groups) * spatial;
  r.row_mod = groups;
  if (per_channel) {
    r.row_mul = c / groups;
    r.pos_div = std::max<int64_t>(spatial, 1);
    r.scale_pos_mod = r.bias_pos_mod = std::max<int64_t>(c / groups, 1);
  } else {
    r.row_mul = 1;
  }
  r.has_bias = true;
  r.epsilon = epsilon_attribute(ctx);
  OpPlan plan;
  plan.outputs.push_back(ctx.input(0));
  add_row_norm_launch(ctx, r, plan);
  return plan;
}

// ---------------------------------------------------------------------------------------------------------
// BatchNormalization (inference)

OpPlan plan_batch_norm(const PlanContext& ctx) {
  const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 0; i < 5; ++i) require_float32(ctx, i, names[i]);
  if (ctx.node.attributes.get_int("training_mode", 0) != 0) {
    ctx.fail("training_mode is 1; wgi runs BatchNormalization in inference mode only (training_mode 0)");
  }
  for (size_t k = 1; k < ctx.node.output_names.size(); ++k) {
    if (output_requested(ctx, k)) {
      ctx.fail(
          "output " + str(static_cast<int64_t>(k)) + " ('" + ctx.node.output_names[k] +
          "') is requested; it exists only in training mode, and wgi runs BatchNormalization in inference "
          "mode only (output Y)");
    }
  }
  const auto [n, c, spatial] = channel_layout(ctx);
  (void)n;
  // Opsets 7-8: spatial = 0 keeps statistics per channel and position ([C, D1, ...]).
  const bool per_position = ctx.node.opset < 9 && ctx.node.attributes.get_int("spatial", 1) == 0;
  const int64_t channels = per_position ? c * spatial : c;
  for (size_t i = 1; i < 5; ++i) {
    if (element_count(ctx.input(i).shape) != channels) {
      ctx.fail(ctx.input_name(i) + " (" + names[i] + ") has shape " + shape_to_string(ctx.input(i).shape) +
               "; expected " + str(channels) + " elements, " +
               (per_position ? "one per channel and position (spatial = 0)" : "one per channel"));
    }
  }
  const float eps = epsilon_attribute(ctx);
  OpPlan plan;
  plan.outputs.push_back(ctx.input(0));
  const int64_t count = element_count(ctx.input(0).shape);
  if (count == 0) return plan;
  KernelLaunch launch;
  const gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
  launch.program.label = "batch_norm";
  KernelInterface iface;
  iface.read("input", "f32", TensorRef::input(0))
      .read("scale", "f32", TensorRef::input(1))
      .read("bias", "f32", TensorRef::input(2))
      .read("mean", "f32", TensorRef::input(3))
      .read("variance", "f32", TensorRef::input(4))
      .read_write("output", "f32", TensorRef::output(0))
      .uniforms({{"count", UniformType::U32},
                 {"inner", UniformType::U32},
                 {"channels", UniformType::U32},
                 {"_pad0", UniformType::Pad},
                 {"epsilon", UniformType::F32}});
  launch.program.wgsl = iface.load_wgsl("normalization/batch_norm.wgsl");
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", u32(count))
                       .u32("inner", u32(per_position ? 1 : std::max<int64_t>(spatial, 1)))
                       .u32("channels", u32(std::max<int64_t>(channels, 1)))
                       .f32("epsilon", eps)
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

struct ReduceOp {
  const char* op_type;
  ReduceKind kind;
  int axes_input_since;  // the opset from which axes is input 1 instead of an attribute
};

constexpr ReduceOp kReduceOps[] = {
    {"ReduceSum", ReduceKind::Sum, 13},       {"ReduceMean", ReduceKind::Mean, 18},
    {"ReduceMax", ReduceKind::Max, 18},       {"ReduceMin", ReduceKind::Min, 18},
    {"ReduceProd", ReduceKind::Prod, 18},     {"ReduceL1", ReduceKind::L1, 18},
    {"ReduceL2", ReduceKind::L2, 18},         {"ReduceSumSquare", ReduceKind::SumSquare, 18},
    {"ReduceLogSum", ReduceKind::LogSum, 18}, {"ReduceLogSumExp", ReduceKind::LogSumExp, 18},
};

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// The shared reduction planner

uint32_t pow2_workgroup_size(uint32_t desired, const gpu::Limits& limits) {
  const uint32_t cap = std::max<uint32_t>(1, std::min({desired, limits.max_compute_invocations_per_workgroup,
                                                       limits.max_compute_workgroup_size_x}));
  uint32_t p = 1;
  while (p * 2 <= cap) p *= 2;
  return p;
}

TensorDesc reduction_output(const TensorDesc& input, const ReductionSpec& spec) {
  TensorDesc out;
  out.dtype = is_arg(spec.kind) ? DType::Int64 : input.dtype;
  for (size_t i = 0; i < input.shape.size(); ++i) {
    if (!spec.reduced[i]) {
      out.shape.push_back(input.shape[i]);
    } else if (spec.keepdims) {
      out.shape.push_back(1);
    }
  }
  return out;
}

namespace {

// reduce.wgsl's defines for one reduction: the element type, the layout and the combine's expressions.
kernels::Defines reduction_defines(ReduceKind kind, bool integer, bool row_per_workgroup) {
  const bool log_sum_exp = kind == ReduceKind::LogSumExp;
  kernels::Defines defines = {{"TYPE", integer ? "i32" : "f32"},
                              {"ROW_PER_WORKGROUP", row_per_workgroup ? "1" : "0"},
                              {"ARG", is_arg(kind) ? "1" : "0"},
                              {"LOG_SUM_EXP", log_sum_exp ? "1" : "0"},
                              {"FLOAT", integer ? "0" : "1"}};
  defines["MATH_VEC4"] = "0";  // elementwise/math.wgsl's helpers at scalar width
  std::string pre = "x", combine = "a + b", post = "acc";
  switch (kind) {
    case ReduceKind::Mean:
      post = "acc * params.mean_scale";
      break;
    // NaN propagates in float reductions (common/nan.wgsl), as in the elementwise Max / Min.
    case ReduceKind::Max:
      combine = integer ? "max(a, b)" : "wgi_max(a, b)";
      break;
    case ReduceKind::Min:
      combine = integer ? "min(a, b)" : "wgi_min(a, b)";
      break;
    case ReduceKind::Prod:
      combine = "a * b";
      break;
    case ReduceKind::L1:
      pre = "abs(x)";
      break;
    case ReduceKind::L2:
      pre = "x * x";
      post = "sqrt(acc)";
      break;
    case ReduceKind::SumSquare:
      pre = "x * x";
      break;
    case ReduceKind::LogSum:
      post = "log(acc)";
      break;
    default:
      break;
  }
  if (is_arg(kind)) {
    defines["CMP"] = kind == ReduceKind::ArgMax ? ">" : "<";
  } else if (!log_sum_exp) {
    defines["PRE"] = pre;
    defines["COMBINE"] = combine;
    defines["POST"] = post;
  }
  return defines;
}

}  // namespace

OpPlan plan_reduction(const PlanContext& ctx, const ReductionSpec& spec) {
  const TensorDesc& x = ctx.input(0);
  const bool integer = x.dtype == DType::Int64 || x.dtype == DType::Int32;
  const bool gpu_integer_kind = spec.kind == ReduceKind::Sum || spec.kind == ReduceKind::Prod ||
                                spec.kind == ReduceKind::Max || spec.kind == ReduceKind::Min ||
                                is_arg(spec.kind);
  if (x.dtype != DType::Float32 && !(integer && gpu_integer_kind)) {
    ctx.fail(ctx.input_name(0) + " has type " + std::string(dtype_name(x.dtype)) + "; wgi runs " +
             ctx.node.op_type + " on float32" + (gpu_integer_kind ? ", int32 and int64" : "") +
             " tensors only");
  }
  require_addressable(ctx, ctx.input_name(0), x.shape);
  OpPlan plan;
  plan.outputs.push_back(reduction_output(x, spec));
  const int64_t out_count = element_count(plan.outputs[0].shape);
  if (out_count == 0) return plan;

  std::vector<uint32_t> kept_sizes, kept_strides, reduced_sizes, reduced_strides;
  int64_t reduce_size = 1;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (spec.reduced[i]) reduce_size *= x.shape[i];
  }
  for (const Group& g : collapse_axes(x.shape, spec.reduced)) {
    (g.reduced ? reduced_sizes : kept_sizes).push_back(u32(g.size));
    (g.reduced ? reduced_strides : kept_strides).push_back(u32(g.stride));
  }
  if (kept_sizes.size() > kMaxAxisGroups || reduced_sizes.size() > kMaxAxisGroups) {
    ctx.fail(ctx.input_name(0) + " " + shape_to_string(x.shape) + " has more than " + str(kMaxAxisGroups) +
             " separate runs of kept or of reduced axes; wgi's reduction kernel takes at most that many");
  }

  const bool row_per_workgroup = reduce_size >= 256 || (reduce_size >= 32 && out_count < 8192);
  const kernels::Defines defines = reduction_defines(spec.kind, integer, row_per_workgroup);

  KernelLaunch launch;
  if (row_per_workgroup) {
    const uint32_t wg = pow2_workgroup_size(
        std::clamp<uint32_t>(next_pow2(static_cast<uint64_t>(reduce_size)), 32, 256), ctx.caps.limits);
    launch.program.constants = {{"WG_SIZE", wg}};
    launch.groups = gpu::fold_workgroups(static_cast<uint64_t>(out_count),
                                         ctx.caps.limits.max_compute_workgroups_per_dimension);
  } else {
    const gpu::DispatchGrid grid =
        gpu::compute_dispatch_grid(static_cast<uint64_t>(out_count), 64, ctx.caps.limits);
    launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
    launch.groups = grid.groups;
  }
  launch.program.label = std::string("reduce_") + reduce_kind_name(spec.kind) + (integer ? "_i32" : "") +
                         (row_per_workgroup ? "_rows" : "_threads");
  KernelInterface iface;
  iface.read("input", "T", TensorRef::input(0))
      .read_write("output", is_arg(spec.kind) ? "i32" : "T", TensorRef::output(0))
      .uniforms({{"outputs", UniformType::U32},
                 {"reduce_size", UniformType::U32},  // elements combined into each output
                 {"kept_count", UniformType::U32},
                 {"reduced_count", UniformType::U32},
                 {"kept_sizes", UniformType::Vec4U, 2},
                 {"kept_strides", UniformType::Vec4U, 2},
                 {"reduced_sizes", UniformType::Vec4U, 2},
                 {"reduced_strides", UniformType::Vec4U, 2},
                 {"mean_scale", UniformType::F32},  // 1 / reduce_size, for ReduceMean
                 // The combine's identity as T's bits (-inf, +inf, 0, 1, INT_MIN, ...): WGSL constants cannot
                 // be infinite.
                 {"init_bits", UniformType::U32},
                 {"select_last", UniformType::U32},  // ARG: on ties, the last index instead of the first
                 {"_pad", UniformType::Pad}});
  launch.program.wgsl = iface.load_wgsl("normalization/reduce.wgsl", defines);
  iface.bind(launch);
  const auto dims8 = [](const std::vector<uint32_t>& v) { return std::array{vec4_at(v, 0), vec4_at(v, 4)}; };
  launch.uniform =
      iface.values()
          .u32("outputs", u32(out_count))
          .u32("reduce_size", u32(reduce_size))
          .u32("kept_count", u32(static_cast<int64_t>(kept_sizes.size())))
          .u32("reduced_count", u32(static_cast<int64_t>(reduced_sizes.size())))
          .vec4u_array("kept_sizes", dims8(kept_sizes))
          .vec4u_array("kept_strides", dims8(kept_strides))
          .vec4u_array("reduced_sizes", dims8(reduced_sizes))
          .vec4u_array("reduced_strides", dims8(reduced_strides))
          .f32("mean_scale", reduce_size > 0 ? static_cast<float>(1.0 / static_cast<double>(reduce_size))
                                             : std::numeric_limits<float>::quiet_NaN())
          .u32("init_bits", identity_bits(spec.kind, integer))
          .u32("select_last", spec.select_last_index ? 1 : 0)
          .bytes();
  plan.launches.push_back(std::move(launch));
  return plan;
}

Tensor reduce_on_host(const Tensor& input, const ReductionSpec& spec) {
  const TensorDesc out_desc = reduction_output({input.dtype(), input.shape()}, spec);
  const int64_t out_count = element_count(out_desc.shape);
  std::vector<double> result;
  const bool integer = input.dtype() != DType::Float32;
  if (integer && integer_exact(spec.kind)) {
    host_reduce(values_as<int64_t>(input), input.shape(), spec, out_count, result);
  } else {
    host_reduce(values_as<double>(input), input.shape(), spec, out_count, result);
  }
  Tensor out(out_desc.dtype, out_desc.shape);
  for (size_t i = 0; i < result.size(); ++i) {
    switch (out_desc.dtype) {
      case DType::Float32:
        out.data<float>()[i] = static_cast<float>(result[i]);
        break;
      case DType::Int64:
        out.data<int64_t>()[i] = static_cast<int64_t>(result[i]);
        break;
      case DType::Int32:
        out.data<int32_t>()[i] = static_cast<int32_t>(result[i]);
        break;
      default:
        throw Error("internal: host reduction to " + std::string(dtype_name(out_desc.dtype)));
    }
  }
  return out;
}

void register_normalization_ops(OpRegistry& registry) {
  for (const ReduceOp& op : kReduceOps) {
    for (bool from_input : {false, true}) {
      OpHandler h;
      h.plan = [&op, from_input](const PlanContext& ctx) {
        return plan_reduction(ctx, reduce_spec(ctx, op.kind, from_input));
      };
      h.evaluate_on_host = [&op, from_input](const PlanContext& ctx, std::span<const Tensor* const> host) {
        return evaluate_reduce(ctx, host, op.kind, from_input);
      };
      if (from_input) {
        registry.add("", op.op_type, op.axes_input_since, kLatestOpset, std::move(h));
      } else {
        registry.add("", op.op_type, 1, op.axes_input_since - 1, std::move(h));
      }
    }
  }
  for (const auto& [name, kind] :
       {std::pair{"ArgMax", ReduceKind::ArgMax}, std::pair{"ArgMin", ReduceKind::ArgMin}}) {
    OpHandler h;
    // [kind = kind]: clang < 16 (the browser build's Emscripten) cannot capture structured bindings.
    h.plan = [kind = kind](const PlanContext& ctx) { return plan_reduction(ctx, arg_spec(ctx, kind)); };
    h.evaluate_on_host = [kind = kind](const PlanContext& ctx, std::span<const Tensor* const> host) {
      return evaluate_reduce(ctx, host, kind, false);
    };
    registry.add("", name, 1, kLatestOpset, std::move(h));
  }
  for (bool log : {false, true}) {
    const char* name = log ? "LogSoftmax" : "Softmax";
    // Opsets 1-12 flatten at `axis`; 13+ normalise along `axis` alone. One planner reads the opset.
    registry.add("", name, 1, 12,
                 OpHandler{[log](const PlanContext& ctx) { return plan_softmax(ctx, log); }, {}});
    registry.add("", name, 13, kLatestOpset,
                 OpHandler{[log](const PlanContext& ctx) { return plan_softmax(ctx, log); }, {}});
  }
  registry.add("", "LayerNormalization", 17, kLatestOpset, OpHandler{plan_layer_norm, {}});
  registry.add("", "InstanceNormalization", 6, kLatestOpset, OpHandler{plan_instance_norm, {}});
  registry.add("", "GroupNormalization", 18, 20, OpHandler{plan_group_norm, {}});
  registry.add("", "GroupNormalization", 21, kLatestOpset, OpHandler{plan_group_norm, {}});
  registry.add("", "BatchNormalization", 7, kLatestOpset, OpHandler{plan_batch_norm, {}});
}

}  // namespace wgi::ops
