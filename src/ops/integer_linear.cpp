// Integer linear algebra: MatMulInteger and ConvInteger (opset 10, exact int32 results) and their
// requantizing forms QLinearMatMul and QLinearConv (opset 10), on two kernels
// (src/kernels/quantize/integer_matmul.wgsl, conv_integer.wgsl) that accumulate (a - a_zp)(b - b_zp) in i32,
// never in float.
//
// Memory: the device widens 8-bit tensors to 32 bits per element (runtime/device_tensor.h). A constant
// weight (MatMulInteger's / QLinearMatMul's B, the convs' W, what dynamic quantization writes) is instead
// prepacked once, four bytes per u32 along the reduction axis: [batch..., N, ceil(K / 4)] words for B,
// [M, ceil(C / group * KH * KW / 4)] for W. The widened initializer is then never bound, so it is never
// uploaded: a quantized model's weights take a quarter of their float32 size on the GPU. A runtime B or W is
// read widened, in ONNX's layout.
//
// Zero points: A's per tensor or per row of A (1-D of M), B's per tensor or per column (1-D of N); x's per
// tensor, W's per tensor or per output channel. They are bound as tensors, so DynamicQuantizeLinear's
// zero point, computed on the GPU, is read where it lies.
//
// QLinear*: scales and the output zero point must be known when planned (initializers, as the quantizers
// write them): the kernel multiplies the exact int32 sum by the float32 multiplier
// a_scale * b_scale / y_scale per output column / channel, rounds half to even, adds the zero point and
// saturates, as ONNX Runtime's CPU kernels do.
//
// MatMulInteger with wgi.scaled_output (graph::fuse_dynamically_quantized_products; internal_ops.h): dynamic
// quantization's Cast to float, its Mul by a_scale * b_scale and the bias Add after it, in the kernel's
// epilogue: f32(sum) * (a_scale * b_scale[n]) (+ bias[n]), the float32 operations of those nodes in their
// order, so the output equals theirs bit for bit.
#include <algorithm>
#include <bit>
#include <cstring>

#include "ops/conv/conv.h"
#include "ops/families.h"
#include "ops/fused_activation.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"
#include "ops/internal_ops.h"
#include "ops/kernel_interface.h"
#include "ops/normalization.h"
#include "ops/quantize.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

bool is_8bit(DType t) {
  return t == DType::UInt8 || t == DType::Int8;
}

void require_8bit(const PlanContext& ctx, size_t i, const char* role) {
  const DType t = ctx.input(i).dtype;
  if (!is_8bit(t)) {
    ctx.fail(ctx.input_name(i) + " (" + role + ") has type " + std::string(dtype_name(t)) + "; " +
             ctx.node.op_type + " takes uint8 or int8 there");
  }
}

// A zero point's stride over its axis: 0 for one value (or none), 1 for one per row / column / channel.
uint32_t zero_point_stride(const PlanContext& ctx, size_t zp, size_t of, const char* role, int64_t per_count,
                           const char* per_what) {
  if (!ctx.has_input(zp)) return 0;
  const TensorDesc& desc = ctx.input(zp);
  if (desc.dtype != ctx.input(of).dtype) {
    ctx.fail(ctx.input_name(zp) + " (" + role + ") has type " + std::string(dtype_name(desc.dtype)) +
             " but " + ctx.input_name(of) + " has " + std::string(dtype_name(ctx.input(of).dtype)) +
             "; they must match");
  }
  if (element_count(desc.shape) == 1 && desc.shape.size() <= 1) return 0;
  if (desc.shape.size() == 1 && desc.shape[0] == per_count && per_what) return 1;
  ctx.fail(ctx.input_name(zp) + " (" + role + ") has shape " + shape_to_string(desc.shape) +
           "; wgi takes a scalar" +
           (per_what ? std::string(" or a 1-D tensor of ") + std::to_string(per_count) + " (one per " +
                           per_what + ")"
                     : std::string()));
}

TensorRef zero_point_ref(const PlanContext& ctx, size_t zp) {
  return ctx.has_input(zp) ? TensorRef::input(static_cast<uint32_t>(zp)) : TensorRef::zero();
}

// The bytes of `matrices` row-major [rows, length] 8-bit matrices, each row read from `source` (a callback
// giving element (matrix, row, i) of the constant), packed four per u32 along `length`, rows padded with zero
// bytes to whole words. Stored as an int32 tensor, which the device holds as is.
template <class Element>
Tensor pack_rows(int64_t matrices, int64_t rows, int64_t length, Element element) {
  const int64_t words = std::max<int64_t>(1, (length + 3) / 4);
  std::vector<uint32_t> packed(static_cast<size_t>(std::max<int64_t>(1, matrices * rows * words)), 0);
  for (int64_t m = 0; m < matrices; ++m) {
    for (int64_t r = 0; r < rows; ++r) {
      uint32_t* row = packed.data() + (m * rows + r) * words;
      for (int64_t i = 0; i < length; ++i) row[i / 4] |= uint32_t{element(m, r, i)} << (8 * (i % 4));
    }
  }
  Tensor t(DType::Int32, {static_cast<int64_t>(packed.size())});
  std::memcpy(t.bytes().data(), packed.data(), packed.size() * 4);
  return t;
}

const uint8_t* raw_bytes(const Tensor& t) {
  return reinterpret_cast<const uint8_t*>(t.bytes().data());
}

// A float32 input that must be known when planned, with 1 or `per_count` values.
std::vector<float> known_scales(const PlanContext& ctx, size_t i, const char* role, int64_t per_count) {
  const TensorDesc& desc = ctx.input(i);
  if (desc.dtype != DType::Float32) {
    ctx.fail(ctx.input_name(i) + " (" + role + ") has type " + std::string(dtype_name(desc.dtype)) +
             "; wgi takes float32 scales");
  }
  const Tensor* t = ctx.constant(i);
  if (!t) {
    ctx.fail(ctx.input_name(i) + " (" + role + ") is computed at run time; wgi's " + ctx.node.op_type +
             " needs its scales known when the model is planned (an initializer)");
  }
  const int64_t n = t->element_count();
  if (n != 1 && !(desc.shape.size() == 1 && n == per_count)) {
    ctx.fail(ctx.input_name(i) + " (" + role + ") has shape " + shape_to_string(desc.shape) +
             "; expected a scalar" + (per_count > 1 ? " or " + std::to_string(per_count) + " values" : ""));
  }
  auto v = t->data<float>();
  return {v.begin(), v.end()};
}

// QLinear*'s requantization: float32 multipliers per output column / channel, the output's type, zero point
// and range.
struct Requantization {
  std::vector<float> multipliers;
  DType out_type = DType::UInt8;
  int32_t zero_point = 0, qmin = 0, qmax = 255;
};

Requantization resolve_requantization(const PlanContext& ctx, size_t a_scale, size_t b_scale, size_t y_scale,
                                      size_t y_zp, int64_t columns) {
  Requantization r;
  const float sa = known_scales(ctx, a_scale, "input scale", 1)[0];
  const std::vector<float> sb = known_scales(ctx, b_scale, "weight scale", columns);
  const float sy = known_scales(ctx, y_scale, "output scale", 1)[0];
  r.multipliers.resize(static_cast<size_t>(columns));
  for (int64_t c = 0; c < columns; ++c) {
    // In float32, step by step, as ONNX Runtime computes it.
    const float product = sa * sb[sb.size() == 1 ? 0 : static_cast<size_t>(c)];
    r.multipliers[static_cast<size_t>(c)] = product / sy;
  }
  require_8bit(ctx, y_zp, "output zero point");
  r.out_type = ctx.input(y_zp).dtype;
  const Tensor* zp = ctx.constant(y_zp);
  if (!zp || zp->element_count() != 1) {
    ctx.fail(ctx.input_name(y_zp) + " (output zero point) must be a single value known when planned");
  }
  r.zero_point =
      r.out_type == DType::UInt8 ? int32_t{zp->data<uint8_t>()[0]} : int32_t{zp->data<int8_t>()[0]};
  if (r.out_type == DType::Int8) r.qmin = -128, r.qmax = 127;
  return r;
}

Tensor float_tensor(const std::vector<float>& v) {
  return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
}

// Input positions of the matrix-product forms.
struct MatMulInputs {
  size_t a = 0, b = 1, a_zp = 2, b_zp = 3;
  bool qlinear = false;
  size_t a_scale = 0, b_scale = 0, y_scale = 0, y_zp = 0;
};

constexpr MatMulInputs kMatMulInteger{};
constexpr MatMulInputs kQLinearMatMul{0, 3, 2, 5, true, 1, 4, 6, 7};

// ---- MatMulInteger / QLinearMatMul ----

// Dim i of a batch shape right-aligned to `rank` dims: 1 where it has none.
int64_t batch_dim(const Shape& s, size_t rank, size_t i) {
  return i < rank - s.size() ? 1 : s[i - (rank - s.size())];
}

// The product's sizes: A [batch..., M, K] times B [batch..., K, N], rank-1 operands numpy-style, the batch
// dims broadcast.
struct IntegerMatMulShapes {
  int64_t m = 0, n = 0, k = 0;
  Shape a_batch, b_batch, out_batch;
  int64_t batches = 0;
  Shape out_shape;
};

// `quantize_a`: A is the float32 tensor the product quantizes itself (wgi.quantize_a).
IntegerMatMulShapes integer_matmul_shapes(const PlanContext& ctx, const MatMulInputs& in, bool quantize_a) {
  if (!quantize_a) {
    require_8bit(ctx, in.a, "A");
  } else if (ctx.input(in.a).dtype != DType::Float32) {
    ctx.fail(ctx.input_name(in.a) + " (A) has type " + std::string(dtype_name(ctx.input(in.a).dtype)) + "; " +
             kIntegerQuantizeAAttribute + " quantizes a float32 A");
  }
  require_8bit(ctx, in.b, "B");
  Shape a_shape = ctx.input(in.a).shape, b_shape = ctx.input(in.b).shape;
  if (a_shape.empty() || b_shape.empty()) ctx.fail("A and B must have rank 1 or more (numpy matmul)");
  const bool a_vector = a_shape.size() == 1, b_vector = b_shape.size() == 1;
  if (a_vector) a_shape.insert(a_shape.begin(), 1);
  if (b_vector) b_shape.push_back(1);
  IntegerMatMulShapes s;
  s.m = a_shape[a_shape.size() - 2];
  s.k = a_shape.back();
  s.n = b_shape.back();
  if (b_shape[b_shape.size() - 2] != s.k) {
    ctx.fail("A " + shape_to_string(ctx.input(in.a).shape) + " and B " +
             shape_to_string(ctx.input(in.b).shape) +
             " do not chain: A's last dim must equal B's second to last");
  }
  require_fits_u32(ctx, ctx.input_name(in.a) + " (A)", ctx.input(in.a).shape);
  if (ctx.constant(in.b)) {
    // Bound only as its packed copy, four bytes a word along K (the widened initializer never is): a uint8 LM
    // head of 768 x 51289 takes 39 MB, not the 158 MB of its widened form.
    const int64_t columns = s.k == 0 ? 0 : element_count(b_shape) / s.k;  // over B's batch
    require_fits_u32(ctx, ctx.input_name(in.b) + " (B, packed four bytes a word)",
                     {columns * std::max<int64_t>(1, (s.k + 3) / 4)});
  } else {
    require_fits_u32(ctx, ctx.input_name(in.b) + " (B)", ctx.input(in.b).shape);
  }

  // Batch dims broadcast numpy-style.
  s.a_batch = Shape(a_shape.begin(), a_shape.end() - 2);
  s.b_batch = Shape(b_shape.begin(), b_shape.end() - 2);
  const size_t rank = std::max(s.a_batch.size(), s.b_batch.size());
  s.out_batch = Shape(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = batch_dim(s.a_batch, rank, i), db = batch_dim(s.b_batch, rank, i);
    if (da != db && da != 1 && db != 1) {
      ctx.fail("batch dims of A " + shape_to_string(s.a_batch) + " and B " + shape_to_string(s.b_batch) +
               " do not broadcast");
    }
    s.out_batch[i] = std::max(da, db);
  }
  s.batches = element_count(s.out_batch);
  if (s.batches > int64_t{ctx.caps.limits.max_compute_workgroups_per_dimension}) {
    ctx.fail("the product has " + std::to_string(s.batches) +
             " batches; wgi's integer kernel takes at most " +
             std::to_string(ctx.caps.limits.max_compute_workgroups_per_dimension));
  }
  s.out_shape = s.out_batch;
  if (!a_vector) s.out_shape.push_back(s.m);
  if (!b_vector) s.out_shape.push_back(s.n);
  return s;
}

// Each output batch's A and B matrix offsets (in elements, B's in words where it is packed), row-major.
std::vector<uint32_t> batch_offsets(const IntegerMatMulShapes& s, int64_t b_matrix) {
  const size_t rank = s.out_batch.size();
  std::vector<uint32_t> offsets;
  offsets.reserve(static_cast<size_t>(2 * s.batches));
  for (int64_t bi = 0; bi < s.batches; ++bi) {
    int64_t rest = bi, ai = 0, bj = 0, a_step = 1, b_step = 1;
    for (size_t i = rank; i-- > 0;) {
      const int64_t idx = rest % s.out_batch[i];
      rest /= s.out_batch[i];
      const int64_t da = batch_dim(s.a_batch, rank, i), db = batch_dim(s.b_batch, rank, i);
      if (da != 1) ai += idx * a_step;
      if (db != 1) bj += idx * b_step;
      a_step *= da;
      b_step *= db;
    }
    offsets.push_back(static_cast<uint32_t>(ai * s.m * s.k));
    offsets.push_back(static_cast<uint32_t>(bj * b_matrix));
  }
  return offsets;
}

// wgi.scaled_output's constants: (B's scale, bias) per output column / channel (a zero bias without one).
struct IntegerRescale {
  Tensor column_params;
  bool has_bias = false;
};

// A float32 constant of 1 or `columns` values (`per_column_only`: exactly `columns`), named by its role.
const Tensor& rescale_constant(const PlanContext& ctx, size_t i, const char* role, int64_t columns,
                               bool per_column_only) {
  const Tensor* t = ctx.has_input(i) ? ctx.constant(i) : nullptr;
  const bool count_ok = t && (t->element_count() == columns || (!per_column_only && t->element_count() == 1));
  if (!t || t->dtype() != DType::Float32 || !count_ok) {
    ctx.fail(std::string(kIntegerScaledOutputAttribute) + ": input " + std::to_string(i) + " (" + role +
             ") must be a float32 constant of " + (per_column_only ? "" : "1 or ") + std::to_string(columns) +
             " values");
  }
  return *t;
}

// `quantize_a`: the product computes A's scale itself, so input 4 must be absent.
IntegerRescale resolve_rescale(const PlanContext& ctx, int64_t columns, bool quantize_a) {
  if (quantize_a) {
    if (ctx.has_input(ScaledIntegerInput::kAScale) || ctx.has_input(2))
      ctx.fail(std::string(kIntegerQuantizeAAttribute) +
               ": the product computes A's scale and zero point itself, so inputs 2 and 4 must be empty");
  } else if (!ctx.has_input(ScaledIntegerInput::kAScale) ||
             ctx.input(ScaledIntegerInput::kAScale).dtype != DType::Float32 ||
             element_count(ctx.input(ScaledIntegerInput::kAScale).shape) != 1) {
    ctx.fail(std::string(kIntegerScaledOutputAttribute) + ": input " +
             std::to_string(ScaledIntegerInput::kAScale) + " (A's scale) must be one float32 value");
  }
  const Tensor& b_scale = rescale_constant(ctx, ScaledIntegerInput::kBScale, "B's scale", columns, false);
  IntegerRescale r;
  r.has_bias = ctx.has_input(ScaledIntegerInput::kBias);
  std::vector<float> params(static_cast<size_t>(2 * columns), 0.0f);
  const Tensor* bias =
      r.has_bias ? &rescale_constant(ctx, ScaledIntegerInput::kBias, "bias", columns, true) : nullptr;
  for (int64_t c = 0; c < columns; ++c) {
    params[static_cast<size_t>(2 * c)] = b_scale.data<float>()[b_scale.element_count() == 1 ? 0 : c];
    if (bias) params[static_cast<size_t>(2 * c + 1)] = bias->data<float>()[c];
  }
  r.column_params = float_tensor(params);
  return r;
}

// What an integer product writes (quantize/integer_epilogue.wgsl): int32 sums, QLinear*'s requantization or
// wgi.scaled_output's rescale, and with the rescale (a float output) the fused residual
// (ScaledIntegerInput::kResidual) and activation.
struct IntegerEpilogue {
  std::optional<Requantization> requant;
  std::optional<IntegerRescale> rescale;
  bool residual = false;
  FusedActivation activation;
  // With the rescale: where A's scale lies, or none where the kernel quantizes A itself (QUANTIZE_A).
  std::optional<TensorRef> a_scale = TensorRef::input(ScaledIntegerInput::kAScale);
};

// wgi.scaled_output's rescale of `channels` output columns / channels, with the fused residual and activation
// graph::fuse_residual_adds / fuse_activations give it; an error for those on an int32 or 8-bit output.
// Returns false where the residual does not have the output's shape: the caller then plans the product and
// one Add (plan_residual_fallback).
bool resolve_scaled_epilogue(const PlanContext& ctx, bool qlinear, int64_t channels, const Shape& out_shape,
                             IntegerEpilogue& e, bool quantize_a = false) {
  if (!qlinear && ctx.node.attributes.get_int(kIntegerScaledOutputAttribute, 0) != 0)
    e.rescale = resolve_rescale(ctx, channels, quantize_a);
  if (quantize_a && !e.rescale)
    ctx.fail(std::string(kIntegerQuantizeAAttribute) + " needs " + kIntegerScaledOutputAttribute);
  if (!e.rescale) {
    const EpilogueAttributes epilogue = read_epilogue_attributes(ctx.node);
    if (epilogue.residual || !epilogue.activation.empty())
      ctx.fail(std::string("a fused residual or activation needs ") + kIntegerScaledOutputAttribute +
               " (a float32 output)");
    return true;
  }
  e.activation = FusedActivation::from_node(ctx.node);
  e.residual = has_fused_residual(ctx, ScaledIntegerInput::kResidual);
  return !e.residual || ctx.input(ScaledIntegerInput::kResidual).shape == out_shape;
}

DType integer_output_type(const IntegerEpilogue& e) {
  return e.requant ? e.requant->out_type : e.rescale ? DType::Float32 : DType::Int32;
}

// The zero points' strides and the epilogue.
struct IntegerMatMulQuantization : IntegerEpilogue {
  uint32_t a_zp_stride = 0, b_zp_stride = 0;
  // int8 operands: both matrix kernels take the bytes as unsigned, an int8 one's flipped (+128), its zero
  // point raised by 128 (a_offset, b_offset).
  bool a_signed = false, b_signed = false;
  // The 8-bit A and its zero point: the node's inputs, or where the DynamicQuantizeLinear launches for
  // wgi.quantize_a wrote them (kernels that do not quantize A themselves).
  TensorRef a, a_zero_point;
  // Merged sibling products (wgi.split_columns, with the rescale): the output's column blocks, which the GEMV
  // writes itself and the tile kernel leaves to a copy.
  std::optional<GemmLaunchSpec::ColumnSplit> split;
  // A LayerNormalization the GEMV applies to A before quantizing it (A_LAYER_NORM), writing the normalised
  // rows to `normalized`, its parameters `ln_params` (fused_layer_norm_params).
  std::optional<FusedLayerNorm> gemv_layer_norm;
  TensorRef normalized;
};

// The bindings the epilogue reads (quantize/integer_epilogue.wgsl): QLINEAR's multipliers, SCALED's A scale
// and column constants.
void bind_integer_epilogue(const IntegerEpilogue& quant, KernelInterface& iface, OpPlan& plan) {
  if (quant.requant) {
    plan.constants.push_back(float_tensor(quant.requant->multipliers));
    // a_scale * b_scale / y_scale per column
    iface.read("multipliers", "f32", TensorRef::constant(static_cast<uint32_t>(plan.constants.size() - 1)));
  }
  if (quant.rescale) {
    plan.constants.push_back(quant.rescale->column_params);
    if (quant.a_scale) iface.read("a_scale", "f32", *quant.a_scale);
    iface.read("column_params", "f32", TensorRef::constant(static_cast<uint32_t>(plan.constants.size() - 1)));
  }
}

// The fused residual's binding, after the uniform block (quantize/integer_epilogue.wgsl).
void bind_integer_residual(const IntegerEpilogue& quant, KernelInterface& iface) {
  if (quant.residual) add_residual_binding(iface, TensorRef::input(ScaledIntegerInput::kResidual));
}

// The uniform members both matrix kernels read, then the kernel's own `members`.
std::vector<UniformMember> integer_product_members(std::vector<UniformMember> members) {
  std::vector<UniformMember> all = {{"M", UniformType::U32},
                                    {"N", UniformType::U32},
                                    {"K", UniformType::U32},
                                    {"k_words", UniformType::U32},
                                    {"a_zp_stride", UniformType::U32},
                                    {"b_zp_stride", UniformType::U32},
                                    {"y_zero_point", UniformType::I32},
                                    {"qmin", UniformType::I32},
                                    {"qmax", UniformType::I32},
                                    {"act_lo", UniformType::F32},  // the fused activation's clamp bounds
                                    {"act_hi", UniformType::F32},
                                    {"a_offset", UniformType::U32},   // 128 where A is int8
                                    {"b_offset", UniformType::U32}};  // 128 where B is int8
  all.insert(all.end(), members.begin(), members.end());
  return all;
}

// Their values for a product of `rows` rows.
UniformValues& set_integer_product_values(UniformValues& values, int64_t rows, const IntegerMatMulShapes& s,
                                          const IntegerMatMulQuantization& quant) {
  const std::optional<Requantization>& requant = quant.requant;
  return values.u32("M", static_cast<uint32_t>(rows))
      .u32("N", static_cast<uint32_t>(s.n))
      .u32("K", static_cast<uint32_t>(s.k))
      .u32("k_words", static_cast<uint32_t>(std::max<int64_t>(1, (s.k + 3) / 4)))
      .u32("a_zp_stride", quant.a_zp_stride)
      .u32("b_zp_stride", quant.b_zp_stride)
      .i32("y_zero_point", requant ? requant->zero_point : 0)
      .i32("qmin", requant ? requant->qmin : 0)
      .i32("qmax", requant ? requant->qmax : 0)
      .f32("act_lo", quant.activation.min)
      .f32("act_hi", quant.activation.max)
      .u32("a_offset", quant.a_signed ? 128 : 0)
      .u32("b_offset", quant.b_signed ? 128 : 0);
}

void add_integer_epilogue_defines(bool qlinear, const IntegerEpilogue& quant, kernels::Defines& defines) {
  defines["QLINEAR"] = qlinear ? "1" : "0";
  defines["SCALED"] = quant.rescale ? "1" : "0";
  defines["SCALED_BIAS"] = quant.rescale && quant.rescale->has_bias ? "1" : "0";
  defines["QUANTIZE_A"] = quant.rescale && !quant.a_scale ? "1" : "0";
  defines["SPLIT_OUTPUTS"] = "0";  // the GEMV's own (add_integer_gemv_launch)
  defines["SPLIT_THIRD"] = "0";
  defines["RESIDUAL"] = quant.residual ? "1" : "0";
  quant.activation.add_defines(defines);
}

// The defines both matrix kernels test: the operands' signs, packed dot products, and the epilogue's.
kernels::Defines integer_product_defines(const PlanContext& ctx, bool qlinear,
                                         const IntegerMatMulQuantization& quant) {
  kernels::Defines defines = {{"A_FLIP", quant.a_signed ? "1" : "0"},
                              {"B_SIGNED", quant.b_signed ? "1" : "0"},
                              {"PACKED_DOT", ctx.caps.features.packed_int8_dot ? "1" : "0"}};
  add_integer_epilogue_defines(qlinear, quant, defines);
  return defines;
}

void add_integer_matmul_launch(const PlanContext& ctx, const MatMulInputs& in, const IntegerMatMulShapes& s,
                               const IntegerMatMulQuantization& quant, OpPlan& plan) {
  const int64_t m = s.m, n = s.n, k = s.k, batches = s.batches;
  const std::optional<IntegerRescale>& rescale = quant.rescale;
  const Tensor* b_const = ctx.constant(in.b);
  const int64_t k_words = std::max<int64_t>(1, (k + 3) / 4);
  const int64_t b_matrix = b_const ? n * k_words : k * n;
  const std::vector<uint32_t> offsets = batch_offsets(s, b_matrix);

  KernelLaunch launch;
  launch.program.label = std::string(in.qlinear ? "qlinear_matmul" : "matmul_integer") +
                         (b_const ? "_packed" : "") + (rescale ? "_scaled" : "") +
                         quant.activation.label_suffix() + residual_label_suffix(quant.residual) +
                         (b_const && ctx.caps.features.packed_int8_dot ? "_dot4" : "");
  if (b_const) {
    const int64_t b_batches = element_count(s.b_batch);
    const uint8_t* bytes = raw_bytes(*b_const);
    const uint8_t flip = quant.b_signed ? 0x80 : 0x00;
    // B [batch, K, N] -> [batch, N, K] bytes, unsigned.
    plan.constants.push_back(pack_rows(b_batches, n, k, [&](int64_t mat, int64_t col, int64_t i) {
      return static_cast<uint8_t>(bytes[(mat * k + i) * n + col] ^ flip);
    }));
  }
  plan.constants.push_back(Tensor::from_vector<int32_t>(
      {static_cast<int64_t>(offsets.size())}, std::vector<int32_t>(offsets.begin(), offsets.end())));
  const TensorRef offsets_ref = TensorRef::constant(static_cast<uint32_t>(plan.constants.size() - 1));
  KernelInterface iface;
  iface.read("a", "i32", quant.a)
      .read("b", b_const ? "u32" : "i32",
            b_const ? TensorRef::constant(0) : TensorRef::input(static_cast<uint32_t>(in.b)))
      .read("a_zero_point", "i32", quant.a_zero_point)
      .read("b_zero_point", "i32", zero_point_ref(ctx, in.b_zp))
      .read("batch_offsets", "u32", offsets_ref);  // per batch: A's, B's element offset
  bind_integer_epilogue(quant, iface, plan);
  // A split output: the whole product first, then a copy into the blocks.
  const TensorRef whole = quant.split
                              ? plan.add_scratch(static_cast<uint64_t>(batches * m * n) * sizeof(float))
                              : TensorRef::output(0);
  iface.read_write("output", rescale ? "f32" : "i32", whole).uniforms(integer_product_members({}));
  bind_integer_residual(quant, iface);
  kernels::Defines defines = integer_product_defines(ctx, in.qlinear, quant);
  defines["B_PACKED"] = b_const ? "1" : "0";
  launch.program.wgsl = iface.load_wgsl("quantize/integer_matmul.wgsl", defines);
  iface.bind(launch);
  UniformValues values = iface.values();
  launch.uniform = set_integer_product_values(values, m, s, quant).bytes();
  const auto tiles = [](int64_t v) { return static_cast<uint32_t>((v + 31) / 32); };
  if (tiles(m) > ctx.caps.limits.max_compute_workgroups_per_dimension) {
    ctx.fail("A has " + std::to_string(m) + " rows; wgi's integer kernel takes at most " +
             std::to_string(int64_t{ctx.caps.limits.max_compute_workgroups_per_dimension} * 32));
  }
  launch.groups = {tiles(n), tiles(m), static_cast<uint32_t>(batches)};
  plan.launches.push_back(std::move(launch));
  if (quant.split)
    plan.launches.push_back(
        split_columns_launch(ctx, *quant.split, static_cast<uint32_t>(batches * m), whole));
}

constexpr int64_t kIntegerGemvMaxRows = 8;
constexpr uint32_t kIntegerGemvWorkgroup = 128;  // integer_gemv.wgsl's
// Grids below this many workgroups give a column more lanes (as the quantized GEMV's rule, matmul_nbits.cpp).
constexpr int64_t kIntegerGemvMinWorkgroups = 256;

// The storage buffers the integer GEMV binds for a rescaled product that quantizes A
// (add_integer_gemv_launch): a, b, b_zero_point, column_sums, column_params, the output or its blocks, the
// residual, and with `layer_norm` ln_params and normalized.
uint32_t integer_gemv_storage_buffers(const IntegerMatMulQuantization& quant, bool layer_norm) {
  const uint32_t outputs = quant.split ? static_cast<uint32_t>(quant.split->outputs.size()) : 1u;
  return 5u + outputs + (quant.residual ? 1u : 0u) + (layer_norm ? 2u : 0u);
}

// integer_gemv.wgsl over `rows` rows of A (its batch dims folded in) against the constant B [K, N], its bytes
// packed per column four a word, flipped to unsigned where B is int8, with their column sums.
void add_integer_gemv_launch(const PlanContext& ctx, const MatMulInputs& in, const IntegerMatMulShapes& s,
                             int64_t rows, const IntegerMatMulQuantization& quant, OpPlan& plan) {
  const int64_t n = s.n, k = s.k, k_words = std::max<int64_t>(1, (k + 3) / 4);
  const bool quantize_a = quant.rescale && !quant.a_scale;  // A float32, quantized as it is staged
  const uint8_t flip = quant.b_signed ? 0x80 : 0x00;
  const uint8_t* bytes = raw_bytes(*ctx.constant(in.b));
  std::vector<int32_t> column_sums(static_cast<size_t>(n), 0);  // summed as the bytes are packed
  plan.constants.push_back(pack_rows(1, n, k, [&](int64_t, int64_t col, int64_t i) {
    const auto byte = static_cast<uint8_t>(bytes[i * n + col] ^ flip);
    column_sums[static_cast<size_t>(col)] += byte;
    return byte;
  }));
  plan.constants.push_back(Tensor::from_vector<int32_t>({n}, column_sums));

  // Lanes per column: 4, doubled while the grid has fewer than kIntegerGemvMinWorkgroups workgroups and each
  // lane keeps two or more words.
  int64_t lanes = 4;
  while (lanes < 64 &&
         ceil_div(n, static_cast<int64_t>(kIntegerGemvWorkgroup) / lanes) < kIntegerGemvMinWorkgroups &&
         2 * lanes * 2 <= k_words)
    lanes *= 2;
  const uint32_t tiles =
      static_cast<uint32_t>(ceil_div(n, static_cast<int64_t>(kIntegerGemvWorkgroup) / lanes));
  const int64_t bound = static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(rows)));

  KernelLaunch launch;
  launch.program.label =
      std::string(in.qlinear ? "qlinear_gemv" : "matmul_integer_gemv") + "_r" + std::to_string(bound) + "_l" +
      std::to_string(lanes) + (quant.rescale ? "_scaled" : "") + quant.activation.label_suffix() +
      residual_label_suffix(quant.residual) + (quantize_a ? "_quantize_a" : "") +
      (quant.gemv_layer_norm ? "_ln" : "") + (ctx.caps.features.packed_int8_dot ? "_dot4" : "");
  KernelInterface iface;
  iface.read("a", quantize_a ? "f32" : "i32", quant.a).read("b", "u32", TensorRef::constant(0));
  if (!quantize_a) iface.read("a_zero_point", "i32", quant.a_zero_point);
  iface.read("b_zero_point", "i32", zero_point_ref(ctx, in.b_zp))
      .read("column_sums", "u32", TensorRef::constant(1));  // sum over K of B's unsigned bytes per column
  bind_integer_epilogue(quant, iface, plan);
  iface.read_write("output", quant.rescale ? "f32" : "i32",
                   quant.split ? quant.split->outputs[0] : TensorRef::output(0));
  std::vector<UniformMember> members = {
      {"tiles", UniformType::U32},
      // 255 (QUANTIZE_A's divisor, from the uniform as in dynamic_range.wgsl)
      {"levels", UniformType::F32}};
  if (quant.split) bind_column_split_outputs(*quant.split, "f32", iface, members);
  if (quant.gemv_layer_norm) {
    plan.constants.push_back(fused_layer_norm_params(ctx, *quant.gemv_layer_norm, k));
    bind_layer_norm_a(TensorRef::constant(static_cast<uint32_t>(plan.constants.size() - 1)), quant.normalized,
                      iface, members);
  }
  iface.uniforms(integer_product_members(std::move(members)));
  bind_integer_residual(quant, iface);
  kernels::Defines defines = integer_product_defines(ctx, in.qlinear, quant);
  defines["ROWS"] = std::to_string(bound);
  defines["LANES"] = std::to_string(lanes);
  if (quant.split) {
    defines["SPLIT_OUTPUTS"] = "1";
    defines["SPLIT_THIRD"] = quant.split->widths.size() > 2 ? "1" : "0";
  }
  defines["A_LAYER_NORM"] = quant.gemv_layer_norm ? "1" : "0";
  launch.program.wgsl = iface.load_wgsl("quantize/integer_gemv.wgsl", defines);
  iface.bind(launch);
  UniformValues values = iface.values();
  set_integer_product_values(values, rows, s, quant).u32("tiles", tiles).f32("levels", 255.0f);
  if (quant.split) add_column_split_values(*quant.split, values);
  if (quant.gemv_layer_norm) set_layer_norm_a_values(quant.gemv_layer_norm->epsilon, k, values);
  launch.uniform = values.bytes();
  launch.groups = gpu::fold_workgroups(tiles, ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
}

// The GEMV for a constant 2-D B and at most kIntegerGemvMaxRows rows of A (its batch dims folded in; a zero
// point per row of A only without batch dims), else the 32x32 tile kernel; wgi.kernel "gemv" or "tiled"
// forces one (an error where the GEMV cannot run the product).
bool integer_gemv_applies(const PlanContext& ctx, const MatMulInputs& in, const IntegerMatMulShapes& s,
                          const IntegerMatMulQuantization& quant, int64_t rows) {
  const std::string forced = ctx.node.attributes.get_string(kForcedKernelAttribute, "");
  if (!forced.empty() && forced != "gemv" && forced != "tiled")
    ctx.fail("attribute " + std::string(kForcedKernelAttribute) + " = '" + forced +
             "' is unknown: gemv or tiled");
  const bool possible = ctx.constant(in.b) && s.b_batch.empty() && rows <= kIntegerGemvMaxRows &&
                        (quant.a_zp_stride == 0 || s.batches == 1);
  if (forced == "gemv" && !possible)
    ctx.fail("the gemv kernel takes a constant 2-D B and at most " + std::to_string(kIntegerGemvMaxRows) +
             " rows of A (a zero point per row only without batch dims); this product has " +
             std::to_string(rows) + " rows");
  return possible && forced != "tiled";
}

OpPlan plan_integer_matmul(const PlanContext& ctx, const MatMulInputs& in) {
  const bool quantize_a = !in.qlinear && ctx.node.attributes.get_int(kIntegerQuantizeAAttribute, 0) != 0;
  const IntegerMatMulShapes s = integer_matmul_shapes(ctx, in, quantize_a);
  IntegerMatMulQuantization quant;
  quant.a = TensorRef::input(static_cast<uint32_t>(in.a));
  quant.a_zero_point = zero_point_ref(ctx, in.a_zp);
  quant.a_signed = ctx.input(in.a).dtype == DType::Int8;  // a quantized float A is uint8
  quant.b_signed = ctx.input(in.b).dtype == DType::Int8;
  if (!quantize_a)
    quant.a_zp_stride = zero_point_stride(ctx, in.a_zp, in.a, "A's zero point", s.m, "row of A");
  quant.b_zp_stride = zero_point_stride(ctx, in.b_zp, in.b, "B's zero point", s.n, "column of B");
  if (in.qlinear)
    quant.requant = resolve_requantization(ctx, in.a_scale, in.b_scale, in.y_scale, in.y_zp, s.n);
  if (!resolve_scaled_epilogue(ctx, in.qlinear, s.n, s.out_shape, quant, quantize_a)) {
    return plan_residual_fallback(
        ctx, s.out_shape, [in](const PlanContext& c) { return plan_integer_matmul(c, in); },
        ScaledIntegerInput::kResidual);
  }

  OpPlan plan;
  const std::vector<int64_t> widths = ctx.node.attributes.get_ints(kSplitColumnsAttribute, {});
  if (!widths.empty() && !quant.rescale)
    ctx.fail(std::string("attribute ") + kSplitColumnsAttribute + " needs " + kIntegerScaledOutputAttribute);
  // A LayerNormalization before the quantization (graph::fuse_layer_norm_into_products): its output, which
  // other nodes read, is the last.
  std::optional<FusedLayerNorm> layer_norm;
  if (ctx.node.attributes.has(kMatMulLayerNormEpsilonAttribute)) {
    if (!quantize_a)
      ctx.fail(std::string(kMatMulLayerNormEpsilonAttribute) + " on " + ctx.node.op_type + " needs " +
               kIntegerQuantizeAAttribute + " (a float A to normalise)");
    layer_norm =
        read_fused_layer_norm(ctx, s.k, ctx.node.attributes.get_float(kMatMulLayerNormEpsilonAttribute, 0),
                              IntegerLayerNormInput::kScale, IntegerLayerNormInput::kBias);
  }
  if (quant.rescale) {
    quant.split =
        plan_column_split(ctx, widths, s.out_shape, quant.residual, plan.outputs, layer_norm ? 1 : 0);
  } else {
    plan.outputs.push_back({integer_output_type(quant), s.out_shape});
  }
  if (layer_norm) {
    quant.normalized = TensorRef::output(static_cast<uint32_t>(plan.outputs.size()));
    plan.outputs.push_back({DType::Float32, ctx.input(in.a).shape});
  }
  if (s.m == 0 || s.n == 0 || s.batches == 0) return plan;
  const int64_t rows = s.batches * s.m;
  const bool gemv = integer_gemv_applies(ctx, in, s, quant, rows);
  // The GEMV normalises A itself where its bindings fit the device (batch dims folded: the LayerNorm's rows
  // are the product's); otherwise the LayerNormalization runs first and the product quantizes its output.
  if (layer_norm && gemv &&
      integer_gemv_storage_buffers(quant, true) <= ctx.caps.limits.max_storage_buffers_per_shader_stage) {
    quant.gemv_layer_norm = layer_norm;
  } else if (layer_norm) {
    append_fused_layer_norm(ctx, *layer_norm, element_count(ctx.input(in.a).shape) / s.k, s.k,
                            TensorRef::input(static_cast<uint32_t>(in.a)), quant.normalized, plan);
    quant.a = quant.normalized;
  }
  if (gemv) {
    if (quantize_a) quant.a_scale.reset();  // the GEMV quantizes A as it stages it
    add_integer_gemv_launch(ctx, in, s, rows, quant, plan);
    return plan;
  }
  if (quantize_a) {
    // The tile kernel reads 8-bit A: DynamicQuantizeLinear's launches first, into scratch.
    const uint64_t count = static_cast<uint64_t>(element_count(ctx.input(in.a).shape));
    const TensorRef source = quant.a;
    quant.a = plan.add_scratch(count * sizeof(int32_t));
    quant.a_scale = plan.add_scratch(sizeof(float));
    quant.a_zero_point = plan.add_scratch(sizeof(uint32_t));
    append_dynamic_quantize_linear(ctx, count, source, quant.a, *quant.a_scale, quant.a_zero_point, plan);
  }
  add_integer_matmul_launch(ctx, in, s, quant, plan);
  return plan;
}

// ---- ConvInteger / QLinearConv ----

struct ConvInputs {
  size_t x = 0, w = 1, x_zp = 2, w_zp = 3;
  bool qlinear = false;
  size_t x_scale = 0, w_scale = 0, y_scale = 0, y_zp = 0, bias = 0;
};

constexpr ConvInputs kConvInteger{};
constexpr ConvInputs kQLinearConv{0, 3, 2, 5, true, 1, 4, 6, 7, 8};

// x [N, C, (H,) W] and w [M, C / group, (KH,) KW] as a 2-D conv: a 1-D conv's height axis is all ones.
struct IntegerConvGeometry {
  Shape x_shape, w_shape;
  size_t spatial = 0;
  int64_t groups = 1, channels = 0, out_channels = 0;
  ConvAxis h, w;
};

IntegerConvGeometry integer_conv_geometry(const PlanContext& ctx, const ConvInputs& in) {
  require_8bit(ctx, in.x, "x");
  require_8bit(ctx, in.w, "w");
  const Shape& x_shape = ctx.input(in.x).shape;
  const Shape& w_shape = ctx.input(in.w).shape;
  if (x_shape.size() != 3 && x_shape.size() != 4) {
    ctx.fail(ctx.input_name(in.x) + " has shape " + shape_to_string(x_shape) + "; wgi runs " +
             ctx.node.op_type + " on 1-D and 2-D data only: rank 3 [N, C, L] or rank 4 [N, C, H, W]");
  }
  if (w_shape.size() != x_shape.size()) {
    ctx.fail(ctx.input_name(in.w) + " (w) has shape " + shape_to_string(w_shape) +
             "; it must have the rank of " + shape_to_string(x_shape));
  }
  require_fits_u32(ctx, ctx.input_name(in.x) + " (x)", x_shape);
  require_fits_u32(ctx, ctx.input_name(in.w) + " (w)", w_shape);
  const size_t spatial = x_shape.size() - 2;
  const int64_t groups = ctx.node.attributes.get_int("group", 1);
  const int64_t channels = x_shape[1], out_channels = w_shape[0];
  if (groups < 1 || channels % groups != 0 || out_channels % groups != 0 || w_shape[1] * groups != channels) {
    ctx.fail("group " + std::to_string(groups) + " does not fit x " + shape_to_string(x_shape) + " and w " +
             shape_to_string(w_shape) + ": it must divide both channel counts, with w's dim 1 = C / group");
  }
  const AutoPad auto_pad = parse_auto_pad(ctx);
  const std::vector<int64_t> kernel_shape = spatial_ints(ctx, "kernel_shape", spatial, 1, 1, 1);
  if (ctx.node.attributes.has("kernel_shape") && kernel_shape != Shape(w_shape.begin() + 2, w_shape.end())) {
    ctx.fail("kernel_shape " + shape_to_string(kernel_shape) + " does not match w " +
             shape_to_string(w_shape));
  }
  const std::vector<int64_t> strides = spatial_ints(ctx, "strides", spatial, 1, 1, 1);
  const std::vector<int64_t> dilations = spatial_ints(ctx, "dilations", spatial, 1, 1, 1);
  const std::vector<int64_t> pads = spatial_ints(ctx, "pads", spatial, 2, 0, 0);
  ConvAxis axes[2];
  for (size_t i = 0; i < spatial; ++i) {
    ConvAxis& a = axes[2 - spatial + i];
    a.input = x_shape[2 + i];
    a.kernel = w_shape[2 + i];
    a.stride = strides[i];
    a.dilation = dilations[i];
    a.pad_begin = pads[i];
    resolve_conv_axis(ctx, spatial == 1 ? "length" : (i == 0 ? "height" : "width"), auto_pad,
                      pads[spatial + i], a);
  }
  return IntegerConvGeometry{.x_shape = x_shape,
                             .w_shape = w_shape,
                             .spatial = spatial,
                             .groups = groups,
                             .channels = channels,
                             .out_channels = out_channels,
                             .h = axes[0],
                             .w = axes[1]};
}

// The zero points (x's one value, w's per output channel or one), QLinearConv's int32 bias, and the epilogue.
struct IntegerConvQuantization : IntegerEpilogue {
  uint32_t w_zp_stride = 0;
  bool has_bias = false;
};

IntegerConvQuantization integer_conv_quantization(const PlanContext& ctx, const ConvInputs& in,
                                                  int64_t out_channels) {
  IntegerConvQuantization q;
  zero_point_stride(ctx, in.x_zp, in.x, "x's zero point", 0, nullptr);  // checks it is one value
  q.w_zp_stride = zero_point_stride(ctx, in.w_zp, in.w, "w's zero point", out_channels, "output channel");
  if (in.qlinear) {
    q.requant = resolve_requantization(ctx, in.x_scale, in.w_scale, in.y_scale, in.y_zp, out_channels);
    q.has_bias = ctx.has_input(in.bias);
    if (q.has_bias) {
      const TensorDesc& b = ctx.input(in.bias);
      if (b.dtype != DType::Int32 || b.shape != Shape{out_channels}) {
        ctx.fail(ctx.input_name(in.bias) + " (B) is " + std::string(dtype_name(b.dtype)) + " " +
                 shape_to_string(b.shape) + "; expected int32 [" + std::to_string(out_channels) + "]");
      }
    }
  }
  return q;
}

void add_integer_conv_launch(const PlanContext& ctx, const ConvInputs& in, const IntegerConvGeometry& geo,
                             const IntegerConvQuantization& quant, int64_t count, OpPlan& plan) {
  const Shape& w_shape = geo.w_shape;
  const int64_t channels = geo.channels, out_channels = geo.out_channels, groups = geo.groups;
  const ConvAxis& h = geo.h;
  const ConvAxis& w = geo.w;
  const uint32_t w_zp_stride = quant.w_zp_stride;
  const std::optional<Requantization>& requant = quant.requant;
  const Tensor* w_const = ctx.constant(in.w);
  const int64_t reduce = w_shape[1] * h.kernel * w.kernel;  // ONNX's [M, C / group, KH, KW] order
  const int64_t reduce_words = std::max<int64_t>(1, (reduce + 3) / 4);
  if (w_const) {
    const uint8_t* bytes = raw_bytes(*w_const);
    plan.constants.push_back(pack_rows(
        1, out_channels, reduce, [&](int64_t, int64_t row, int64_t i) { return bytes[row * reduce + i]; }));
  }

  const gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 64, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = std::string(in.qlinear ? "qlinear_conv" : "conv_integer") +
                         (w_const ? "_packed" : "") + (quant.rescale ? "_scaled" : "") +
                         quant.activation.label_suffix() + residual_label_suffix(quant.residual);
  KernelInterface iface;
  iface
      .read("x", "i32", TensorRef::input(static_cast<uint32_t>(in.x)))
      // a runtime weight is read widened, in ONNX's layout
      .read("w", w_const ? "u32" : "i32",
            w_const ? TensorRef::constant(0) : TensorRef::input(static_cast<uint32_t>(in.w)))
      .read("x_zero_point", "i32", zero_point_ref(ctx, in.x_zp))
      .read("w_zero_point", "i32", zero_point_ref(ctx, in.w_zp));
  if (requant) {
    iface.read("bias", "i32",
               quant.has_bias ? TensorRef::input(static_cast<uint32_t>(in.bias)) : TensorRef::zero());
  }
  bind_integer_epilogue(quant, iface, plan);
  iface.read_write("output", quant.rescale ? "f32" : "i32", TensorRef::output(0))
      .uniforms({{"count", UniformType::U32},
                 {"channels", UniformType::U32},
                 {"height", UniformType::U32},
                 {"width", UniformType::U32},
                 {"out_channels", UniformType::U32},
                 {"out_height", UniformType::U32},
                 {"out_width", UniformType::U32},
                 {"kernel_h", UniformType::U32},
                 {"kernel_w", UniformType::U32},
                 {"stride_h", UniformType::U32},
                 {"stride_w", UniformType::U32},
                 {"dilation_h", UniformType::U32},
                 {"dilation_w", UniformType::U32},
                 {"pad_h", UniformType::U32},
                 {"pad_w", UniformType::U32},
                 {"group_channels", UniformType::U32},
                 {"group_out_channels", UniformType::U32},
                 {"reduce", UniformType::U32},
                 {"reduce_words", UniformType::U32},
                 {"w_zp_stride", UniformType::U32},  // 0 per tensor, 1 per output channel
                 {"y_zero_point", UniformType::I32},
                 {"qmin", UniformType::I32},
                 {"qmax", UniformType::I32},
                 {"has_bias", UniformType::U32},
                 {"act_lo", UniformType::F32},  // the fused activation's clamp bounds
                 {"act_hi", UniformType::F32}});
  bind_integer_residual(quant, iface);
  kernels::Defines defines = {{"B_SIGNED", ctx.input(in.w).dtype == DType::Int8 ? "1" : "0"},
                              {"W_PACKED", w_const ? "1" : "0"}};
  add_integer_epilogue_defines(in.qlinear, quant, defines);
  launch.program.wgsl = iface.load_wgsl("quantize/conv_integer.wgsl", defines);
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
  launch.uniform = iface.values()
                       .u32("count", u(count))
                       .u32("channels", u(channels))
                       .u32("height", u(h.input))
                       .u32("width", u(w.input))
                       .u32("out_channels", u(out_channels))
                       .u32("out_height", u(h.output))
                       .u32("out_width", u(w.output))
                       .u32("kernel_h", u(h.kernel))
                       .u32("kernel_w", u(w.kernel))
                       .u32("stride_h", u(h.stride))
                       .u32("stride_w", u(w.stride))
                       .u32("dilation_h", u(h.dilation))
                       .u32("dilation_w", u(w.dilation))
                       .u32("pad_h", u(h.pad_begin))
                       .u32("pad_w", u(w.pad_begin))
                       .u32("group_channels", u(w_shape[1]))
                       .u32("group_out_channels", u(out_channels / groups))
                       .u32("reduce", u(reduce))
                       .u32("reduce_words", u(reduce_words))
                       .u32("w_zp_stride", w_zp_stride)
                       .i32("y_zero_point", requant ? requant->zero_point : 0)
                       .i32("qmin", requant ? requant->qmin : 0)
                       .i32("qmax", requant ? requant->qmax : 0)
                       .u32("has_bias", quant.has_bias ? 1 : 0)
                       .f32("act_lo", quant.activation.min)
                       .f32("act_hi", quant.activation.max)
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
}

OpPlan plan_integer_conv(const PlanContext& ctx, const ConvInputs& in) {
  const IntegerConvGeometry geo = integer_conv_geometry(ctx, in);
  IntegerConvQuantization quant = integer_conv_quantization(ctx, in, geo.out_channels);

  Shape out_shape = {geo.x_shape[0], geo.out_channels};
  if (geo.spatial == 2) out_shape.push_back(geo.h.output);
  out_shape.push_back(geo.w.output);
  require_fits_u32(ctx, "the output", out_shape);
  if (!resolve_scaled_epilogue(ctx, in.qlinear, geo.out_channels, out_shape, quant)) {
    return plan_residual_fallback(
        ctx, out_shape, [in](const PlanContext& c) { return plan_integer_conv(c, in); },
        ScaledIntegerInput::kResidual);
  }
  OpPlan plan;
  plan.outputs.push_back({integer_output_type(quant), out_shape});
  const int64_t count = element_count(out_shape);
  if (count == 0) return plan;
  add_integer_conv_launch(ctx, in, geo, quant, count, plan);
  return plan;
}

}  // namespace

void register_integer_linear_ops(OpRegistry& registry) {
  registry.add("", "MatMulInteger", 10, kLatestOpset,
               {[](const PlanContext& ctx) { return plan_integer_matmul(ctx, kMatMulInteger); }, nullptr});
  registry.add("", "QLinearMatMul", 10, kLatestOpset,
               {[](const PlanContext& ctx) { return plan_integer_matmul(ctx, kQLinearMatMul); }, nullptr});
  registry.add("", "ConvInteger", 10, kLatestOpset,
               {[](const PlanContext& ctx) { return plan_integer_conv(ctx, kConvInteger); }, nullptr});
  registry.add("", "QLinearConv", 10, kLatestOpset,
               {[](const PlanContext& ctx) { return plan_integer_conv(ctx, kQLinearConv); }, nullptr});
}

}  // namespace wgi::ops
