// Weight-only quantized matrix products of the com.microsoft domain, as ONNX Runtime's quantizers write them
// (the _q4 / _q4f16 / _bnb4 variants of onnx-community's exports):
//   MatMulNBits  Y = A @ dequant(B)^T + bias, B [N, K] in blocks of block_size along K, 2, 4 or 8 bits per
//                code, W = (code - zero_point) * scale with one scale (and zero point) per block
//   MatMulBnb4   Y = A @ dequant(B)^T, B [N, K] flattened and cut into blocks of block_size, 4-bit NF4 or
//                FP4 codes, W = table[code] * absmax
// The dequantisation happens inside the kernels (linear/matmul_nbits_gemv.wgsl for M <= 8 rows,
// linear/matmul_nbits_tiled.wgsl otherwise; quantized_common.wgsl has the layouts): B stays packed on the
// GPU, so a 4-bit weight takes an eighth of its float32 bytes plus its scales. Batch dims of A fold into M.
// docs/quantized_matmul.md says what is supported and what is not. The graph passes fuse a bias Add (into
// input 5), a residual Add (input 6, kNBitsResidualInput) and an activation into MatMulNBits; the kernels
// apply them in the GEMMs' epilogue order. A LayerNormalization before MatMulNBits is taken in too
// (graph::fuse_layer_norm_into_products): the GEMV normalises A as it stages it, the other kernels read the
// rows a LayerNormalization launch of their own wrote.
#include <bit>
#include <cstring>
#include <string>

#include "core/integer_math.h"
#include "kernels/wgsl_library.h"
#include "ops/families.h"
#include "ops/float16.h"
#include "ops/fused_activation.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"
#include "ops/internal_ops.h"
#include "ops/kernel_interface.h"
#include "ops/normalization.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

constexpr const char* kDomain = "com.microsoft";
constexpr int64_t kGemvMaxRows = 8;
constexpr uint32_t kWorkgroupInvocations = 128;  // GEMV's workgroup; the tiled kernel's is 64
constexpr uint32_t kTile = 32;                   // the tiled kernel's output tile
// GEMV grids below this many workgroups take more threads per column (about two workgroups per SM of the
// H200's 132, as the float GEMV's rule in gemm_launch.cpp; not yet measured for this kernel).
constexpr int64_t kGemvMinWorkgroups = 256;

std::string str(int64_t v) {
  return std::to_string(v);
}

enum class ZeroPointForm { Default, Packed, Float };

// The quantized weight as the kernels read it (linear/quantized_common.wgsl), and where its parts come from.
struct QuantizedWeight {
  int64_t k = 0, n = 0, bits = 4, block_size = 32;
  int64_t col_words = 0;         // u32 words of codes per column
  int64_t scale_col_stride = 0;  // element (n, k) is in block (n * scale_col_stride + k) / block_size
  int64_t blocks_per_col = 0;
  int64_t zp_col_bits = 0;
  float default_zero = 0;
  const char* code_table = nullptr;  // "NF4", "FP4", or none
  bool scale_per_code = false;
  ZeroPointForm zero_points = ZeroPointForm::Default;
  Tensor packed_b;                           // int32 words: the bytes as the kernels read them
  std::optional<Tensor> packed_zero_points;  // int32 words (ZeroPointForm::Packed)
  TensorRef scales, zero_point_values = TensorRef::zero(), bias = TensorRef::zero();
  bool scales_f16 = false, zero_points_f16 = false, bias_f16 = false, has_bias = false;
  bool accuracy_int8 = false;  // MatMulNBits' accuracy_level 4: A may be quantised to int8
};

bool is_float(DType d) {
  return d == DType::Float32 || d == DType::Float16;
}

std::string type_of(const PlanContext& ctx, size_t i, const char* role) {
  return ctx.input_name(i) + " (" + role + ") has type " + std::string(dtype_name(ctx.input(i).dtype));
}

int64_t required_int(const PlanContext& ctx, const char* name) {
  if (!ctx.node.attributes.has(name)) ctx.fail("attribute " + std::string(name) + " is required but missing");
  return ctx.node.attributes.get_int(name, 0);
}

// K, N and block_size attributes in range; A float32 with K as its last dim.
void read_common(const PlanContext& ctx, QuantizedWeight& w, int64_t max_block_size) {
  w.k = required_int(ctx, "K");
  w.n = required_int(ctx, "N");
  w.block_size = required_int(ctx, "block_size");
  if (w.k < 1 || w.n < 1) ctx.fail("attributes K = " + str(w.k) + ", N = " + str(w.n) + " must be positive");
  if (w.block_size < 16 || w.block_size > max_block_size || !std::has_single_bit(uint64_t(w.block_size))) {
    ctx.fail("attribute block_size = " + str(w.block_size) +
             " is unsupported: wgi takes powers of two from 16 to " + str(max_block_size));
  }
  const TensorDesc& a = ctx.input(0);
  if (a.dtype != DType::Float32) {
    ctx.fail(type_of(ctx, 0, "A") +
             "; wgi's quantized matmuls take float32 activations (float16 scales, zero points and bias are "
             "read as stored)");
  }
  if (a.shape.empty() || a.shape.back() != w.k) {
    ctx.fail(ctx.input_name(0) + " (A) is " + shape_to_string(a.shape) +
             "; its last dim must be K = " + str(w.k));
  }
  if (!ctx.has_input(1)) ctx.fail(ctx.input_name(1) + " (B) is required but was not given");
  if (ctx.input(1).dtype != DType::UInt8) ctx.fail(type_of(ctx, 1, "B") + "; expected uint8");
  if (!ctx.constant(1)) {
    ctx.fail(ctx.input_name(1) +
             " (B) is not a constant: wgi repacks the quantized weight once at load, so it must be an "
             "initializer");
  }
}

// A float32 / float16 input of `count` elements, bound as stored; returns whether it is float16.
bool read_float_input(const PlanContext& ctx, size_t i, const char* role, int64_t count,
                      const std::string& shape) {
  const TensorDesc& d = ctx.input(i);
  if (!is_float(d.dtype)) ctx.fail(type_of(ctx, i, role) + "; expected float32 or float16");
  if (element_count(d.shape) != count) {
    ctx.fail(ctx.input_name(i) + " (" + role + ") is " + shape_to_string(d.shape) + " (" +
             str(element_count(d.shape)) + " elements); expected " + shape + " (" + str(count) +
             " elements)");
  }
  return d.dtype == DType::Float16;
}

Tensor words_from_bytes(std::span<const std::byte> bytes) {
  Tensor t(DType::Int32, {std::max<int64_t>(1, ceil_div(static_cast<int64_t>(bytes.size()), 4))});
  if (!bytes.empty()) std::memcpy(t.bytes().data(), bytes.data(), bytes.size());
  return t;
}

QuantizedWeight read_matmul_nbits(const PlanContext& ctx) {
  QuantizedWeight w;
  const Attributes& at = ctx.node.attributes;
  w.bits = at.get_int("bits", 4);
  w.accuracy_int8 = at.get_int("accuracy_level", 0) == 4;
  if (w.bits != 2 && w.bits != 4 && w.bits != 8)
    ctx.fail("attribute bits = " + str(w.bits) + " is unsupported: wgi takes 2, 4 or 8");
  if (int64_t prepacked = at.get_int("weight_prepacked", 0); prepacked != 0) {
    ctx.fail("attribute weight_prepacked = " + str(prepacked) +
             ": B is prepacked for another execution provider; wgi reads the standard layout only");
  }
  if (ctx.has_input(4)) {
    ctx.fail(ctx.input_name(4) +
             " (g_idx, the deprecated act-order group index) is given; wgi supports MatMulNBits without it");
  }
  read_common(ctx, w, 256);
  w.blocks_per_col = ceil_div(w.k, w.block_size);
  const int64_t blob = w.block_size * w.bits / 8;  // a multiple of 4 bytes: one column is whole words
  const int64_t b_bytes = w.n * w.blocks_per_col * blob;
  const TensorDesc& b = ctx.input(1);
  const std::string b_shape = "[" + str(w.n) + ", " + str(w.blocks_per_col) + ", " + str(blob) + "]";
  if (element_count(b.shape) != b_bytes ||
      (b.shape.size() == 3 && b.shape != Shape{w.n, w.blocks_per_col, blob})) {
    ctx.fail(ctx.input_name(1) + " (B) is " + shape_to_string(b.shape) + "; expected " + b_shape +
             " (N, ceil(K / block_size), block_size * bits / 8) for K = " + str(w.k) + ", N = " + str(w.n) +
             ", bits = " + str(w.bits) + ", block_size = " + str(w.block_size));
  }
  w.packed_b = words_from_bytes(ctx.constant(1)->bytes());
  w.col_words = w.blocks_per_col * blob / 4;
  w.scale_col_stride = w.blocks_per_col * w.block_size;
  w.default_zero = static_cast<float>(int64_t{1} << (w.bits - 1));
  const std::string per_block = "[" + str(w.n) + ", " + str(w.blocks_per_col) + "]";
  w.scales_f16 = read_float_input(ctx, 2, "scales", w.n * w.blocks_per_col, per_block);
  w.scales = TensorRef::input(2);
  if (ctx.has_input(3)) {
    const TensorDesc& zp = ctx.input(3);
    if (zp.dtype == DType::UInt8) {
      const int64_t col_bytes = ceil_div(w.blocks_per_col * w.bits, 8);
      if (element_count(zp.shape) != w.n * col_bytes) {
        ctx.fail(ctx.input_name(3) + " (zero_points) is " + shape_to_string(zp.shape) + "; expected [" +
                 str(w.n) + ", " + str(col_bytes) +
                 "] (N, ceil(ceil(K / block_size) * bits / 8)) packed uint8");
      }
      if (!ctx.constant(3))
        ctx.fail(ctx.input_name(3) + " (zero_points, packed uint8) must be an initializer");
      w.zero_points = ZeroPointForm::Packed;
      w.zp_col_bits = col_bytes * 8;
      w.packed_zero_points = words_from_bytes(ctx.constant(3)->bytes());
    } else {
      if (!is_float(zp.dtype))
        ctx.fail(type_of(ctx, 3, "zero_points") + "; expected uint8, float32 or float16");
      w.zero_points_f16 = read_float_input(ctx, 3, "zero_points", w.n * w.blocks_per_col, per_block);
      w.zero_points = ZeroPointForm::Float;
      w.zero_point_values = TensorRef::input(3);
    }
  }
  if (ctx.has_input(5)) {
    w.bias_f16 = read_float_input(ctx, 5, "bias", w.n, "[" + str(w.n) + "]");
    w.bias = TensorRef::input(5);
    w.has_bias = true;
  }
  return w;
}

QuantizedWeight read_matmul_bnb4(const PlanContext& ctx) {
  QuantizedWeight w;
  const Attributes& at = ctx.node.attributes;
  w.bits = 4;
  const int64_t quant_type = required_int(ctx, "quant_type");
  if (quant_type != 0 && quant_type != 1)
    ctx.fail("attribute quant_type = " + str(quant_type) + " is unknown: 0 is FP4, 1 is NF4");
  w.code_table = quant_type == 1 ? "NF4" : "FP4";
  if (int64_t trans_b = at.get_int("transB", 1); trans_b != 1) {
    ctx.fail("attribute transB = " + str(trans_b) +
             " is unsupported: wgi runs MatMulBnb4 with transB = 1 only");
  }
  read_common(ctx, w, 4096);
  const int64_t codes = w.n * w.k;
  const TensorDesc& b = ctx.input(1);
  if (element_count(b.shape) != (codes + 1) / 2) {
    ctx.fail(ctx.input_name(1) + " (B) is " + shape_to_string(b.shape) + "; expected [" +
             str((codes + 1) / 2) + "] ((N * K + 1) / 2) for K = " + str(w.k) + ", N = " + str(w.n));
  }
  // Column n's codes into whole words of its own, low nibble first (bitsandbytes puts the first code of a
  // byte in its high nibble, and a column can start mid-byte).
  w.col_words = ceil_div(w.k, 8);
  w.packed_b = Tensor(DType::Int32, {w.n * w.col_words});
  auto src = ctx.constant(1)->data<uint8_t>();
  auto dst = w.packed_b.data<int32_t>();
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t k = 0; k < w.k; ++k) {
      const int64_t i = n * w.k + k;
      const uint32_t code = (i % 2 == 0 ? src[i / 2] >> 4 : src[i / 2]) & 0xfu;
      dst[n * w.col_words + k / 8] |= static_cast<int32_t>(code << (4 * (k % 8)));
    }
  }
  w.scale_col_stride = w.k;
  w.scale_per_code = w.k % w.block_size != 0;  // then a word of codes can straddle two blocks
  w.blocks_per_col = ceil_div(w.k, w.block_size);
  w.scales_f16 = read_float_input(ctx, 2, "absmax", ceil_div(codes, w.block_size),
                                  "[" + str(ceil_div(codes, w.block_size)) + "] (ceil(N * K / block_size))");
  w.scales = TensorRef::input(2);
  return w;
}

// The product on the fast GEMM tiles (gemm_fast.wgsl with B_QUANT: B's codes dequantised as its slab is
// loaded into workgroup memory), with the GEMMs' epilogue, split-K and tile rules. `plan` holds the packed
// codes as constant 0 and packed zero points as constant 1.
void append_fast_quantized_launches(const PlanContext& ctx, const QuantizedWeight& w, int64_t m, TensorRef a,
                                    bool residual, const std::optional<GemmLaunchSpec::ColumnSplit>& split,
                                    OpPlan& plan) {
  GemmLaunchSpec spec;
  spec.m = static_cast<uint32_t>(m);
  spec.n = static_cast<uint32_t>(w.n);
  spec.k = static_cast<uint32_t>(w.k);
  spec.b_nk = true;
  spec.a = a;
  spec.b = TensorRef::constant(0);
  spec.out = TensorRef::output(0);
  spec.column_split = split;
  if (w.has_bias) {
    spec.bias = w.bias;
    spec.bias_stride_n = 1;
    if (w.bias_f16) {  // the GEMM epilogue reads float32: a constant float16 bias widened once
      plan.constants.push_back(widen_float16(*ctx.constant(5)));
      spec.bias = TensorRef::constant(static_cast<uint32_t>(plan.constants.size() - 1));
    }
  }
  if (residual) spec.residual = TensorRef::input(kNBitsResidualInput);
  spec.activation = FusedActivation::from_node(ctx.node);
  GemmLaunchSpec::QuantizedB q;
  q.bits = static_cast<uint32_t>(w.bits);
  q.block_size = static_cast<uint32_t>(w.block_size);
  q.col_words = static_cast<uint32_t>(w.col_words);
  q.scale_col_stride = static_cast<uint32_t>(w.scale_col_stride);
  q.zp_col_bits = static_cast<uint32_t>(w.zp_col_bits);
  q.blocks_per_col = static_cast<uint32_t>(w.blocks_per_col);
  q.default_zero = w.default_zero;
  q.scales_f16 = w.scales_f16;
  q.zero_points_packed = w.zero_points == ZeroPointForm::Packed;
  q.zero_points_float = w.zero_points == ZeroPointForm::Float;
  q.zero_points_f16 = w.zero_points_f16;
  q.scale_per_code = w.scale_per_code;
  q.code_table = w.code_table;
  q.scales = w.scales;
  q.zero_points = w.packed_zero_points ? TensorRef::constant(1) : w.zero_point_values;
  spec.b_quantized = q;
  append_gemm_launches(ctx, spec, plan);
}

enum class QuantizedKernel { Gemv, Fast, Tiled };

// The kernel for M rows: the GEMV up to kGemvMaxRows, else the fast GEMM tiles or the 32x32 tiled kernel;
// wgi.kernel forces one (an error where it cannot run this product or on this device).
QuantizedKernel choose_quantized_kernel(const PlanContext& ctx, const QuantizedWeight& w,
                                        const NBitsAttributes& internal, int64_t m) {
  const std::string forced = internal.kernel.empty() ? "auto" : internal.kernel;
  if (forced != "auto" && forced != "gemv" && forced != "gemv_int8" && forced != "fast" && forced != "tiled")
    ctx.fail("attribute " + std::string(kForcedKernelAttribute) + " = '" + forced +
             "' is unknown: auto, gemv, gemv_int8, fast or tiled");
  const bool gemv = forced.starts_with("gemv") || (forced == "auto" && m <= kGemvMaxRows);
  if (gemv && m > kGemvMaxRows)
    ctx.fail("the gemv kernel takes at most " + str(kGemvMaxRows) + " rows; A has " + str(m));
  // More rows: the fast GEMM tiles, where the device runs them (256 invocations and their workgroup memory)
  // and its barriers are cheap (gpu::Capabilities::costly_barriers: SwiftShader); the GEMM epilogue reads a
  // float32 bias (a constant float16 one is widened). Otherwise the 32x32 tiled kernel below.
  const bool runtime_f16_bias = w.bias_f16 && !ctx.constant(5);
  const bool fast_possible = gemm_views_supported(ctx.caps) && !runtime_f16_bias;
  if (forced == "fast" && !fast_possible) {
    ctx.fail(runtime_f16_bias
                 ? "the fast kernel reads a float32 bias; " + ctx.input_name(5) +
                       " is float16 and not a constant"
                 : "the fast kernel needs 256 invocations per workgroup and its workgroup memory, "
                   "which this device does not allow");
  }
  const bool fast =
      forced == "fast" || (forced == "auto" && !gemv && fast_possible && !ctx.caps.costly_barriers);
  if (ctx.caps.limits.max_compute_invocations_per_workgroup < kWorkgroupInvocations) {
    ctx.fail("the device allows " + str(ctx.caps.limits.max_compute_invocations_per_workgroup) +
             " invocations per workgroup; wgi's quantized matmuls need " + str(kWorkgroupInvocations));
  }

  return fast ? QuantizedKernel::Fast : gemv ? QuantizedKernel::Gemv : QuantizedKernel::Tiled;
}

// A LayerNormalization the GEMV applies to A as it stages it (A_LAYER_NORM, linear/layer_norm_a.wgsl).
struct GemvLayerNorm {
  FusedLayerNorm inputs;
  TensorRef normalized;  // the normalised rows, the LayerNormalization's output
  TensorRef params;      // the K scales, then the K biases (fused_layer_norm_params)
};

// The storage buffers a GEMV launch binds (quantized_interface): A, B, scales, zero points where given, bias
// and the output, each further block of a split output, the residual, and a LayerNormalization's parameters
// and normalised rows.
uint32_t gemv_storage_buffers(const QuantizedWeight& w,
                              const std::optional<GemmLaunchSpec::ColumnSplit>& split, bool residual,
                              bool layer_norm) {
  return 5 + (w.zero_points != ZeroPointForm::Default ? 1 : 0) +
         (split ? static_cast<uint32_t>(split->outputs.size()) - 1 : 0) + (residual ? 1 : 0) +
         (layer_norm ? 2 : 0);
}

// The kernels' interface (linear/quantized_common.wgsl): A, the packed B, scales, zero points (where given),
// bias (each in the element type the defines select), the output, QuantizedMatMulParams, then the fused
// residual. `split`: the GEMV writes the output's column blocks itself (their outputs, then their uniform
// members); otherwise the output is `out`. `ln`: the GEMV's LayerNormalization (its bindings after the
// outputs).
KernelInterface quantized_interface(const QuantizedWeight& w, const kernels::Defines& defines, TensorRef a,
                                    TensorRef zero_points, bool residual, TensorRef out,
                                    const GemmLaunchSpec::ColumnSplit* split, const GemvLayerNorm* ln) {
  const auto on = [&](const char* name) { return defines.at(name) == "1"; };
  KernelInterface iface;
  iface.read("a", on("A_VEC4") ? "vec4<f32>" : "f32", a)
      .read("b", on("B_QUADS") ? "vec4<u32>" : "u32", TensorRef::constant(0))
      .read("scales", on("SCALES_F16") ? "u32" : "f32", w.scales);
  // Zero points are read only where given (linear/quantized_dequant.wgsl): a binding fewer without them.
  if (on("ZP_PACKED") || on("ZP_FLOAT"))
    iface.read("zero_points", !on("ZP_F16") && on("ZP_FLOAT") ? "f32" : "u32", zero_points);
  iface.read("bias", on("BIAS_F16") ? "u32" : "f32", w.bias)
      .read_write("output", "f32", split ? split->outputs[0] : out);
  std::vector<UniformMember> members = {
      {"M", UniformType::U32},
      {"N", UniformType::U32},
      {"K", UniformType::U32},
      {"block_size", UniformType::U32},
      {"col_words", UniformType::U32},         // u32 words of B per column
      {"scale_col_stride", UniformType::U32},  // see the block of an element in the kernel file
      {"zp_col_bits", UniformType::U32},       // ZP_PACKED: bits of zero points per column
      {"blocks_per_col", UniformType::U32},    // ZP_FLOAT: zero points per column
      {"has_bias", UniformType::U32},
      {"tiles_n", UniformType::U32},
      {"tiles_m", UniformType::U32},
      {"default_zero", UniformType::F32},
      {"act_lo", UniformType::F32},  // the fused activation's clamp bounds
      {"act_hi", UniformType::F32}};
  if (split) bind_column_split_outputs(*split, "f32", iface, members);
  if (ln) bind_layer_norm_a(ln->params, ln->normalized, iface, members);
  iface.uniforms(std::move(members), "QuantizedMatMulParams");
  if (residual) add_residual_binding(iface, TensorRef::input(kNBitsResidualInput));
  return iface;
}

// The GEMV's output columns per thread (THREAD_COLS): a thread reads each value of A from workgroup memory
// once for all of them and has as many loads of B in flight. Doubled while the grid keeps kGemvMinWorkgroups
// workgroups and rows x columns stays within 8 (the partial sums in workgroup memory), up to 4 for 8-bit
// codes and for one row of 4-bit codes (the linear path applies their scales per block, which leaves the
// registers for it; two rows with 4 columns are not measured) and 2 for the others: NF4 / FP4 (dequantised
// per code; 4 measured slower) and 2-bit codes (16 codes a word); docs/performance.md has the measurements.
int64_t gemv_thread_columns(const PlanContext& ctx, const NBitsAttributes& internal, int64_t bits,
                            bool code_table, int64_t n, int64_t rows, int64_t columns_per_slot) {
  if (internal.gemv_thread_columns != 0) {
    const int64_t c = internal.gemv_thread_columns;
    if ((c != 1 && c != 2 && c != 4) || c * rows > 8)
      ctx.fail("attribute " + std::string(kGemvThreadColumnsAttribute) + " = " + str(c) +
               " must be 1, 2 or 4 with at most 8 rows x columns (" + str(rows) + " rows)");
    return c;
  }
  const int64_t most = bits == 8 || (bits == 4 && !code_table && rows == 1) ? 4 : 2;
  int64_t c = 1;
  while (c < most && 2 * c * rows <= 8 && ceil_div(n, columns_per_slot * 2 * c) >= kGemvMinWorkgroups) c *= 2;
  return c;
}

// The least quads of words a GEMV thread multiplies for its int8 activations to pay (A_INT8).
constexpr int64_t kInt8GemvMinQuads = 8;

// The GEMV or the 32x32 tiled kernel, which dequantise B's codes as they read them, A from `a`.
// `split`: the output's column blocks, which the GEMV writes itself and the tiled kernel leaves to a copy.
// `ln` (GEMV only): the LayerNormalization it applies to A, its parameters' constant still to be made.
void append_quantized_launch(const PlanContext& ctx, QuantizedWeight& w, const NBitsAttributes& internal,
                             int64_t m, TensorRef a, bool gemv, bool residual,
                             const FusedActivation& activation,
                             const std::optional<GemmLaunchSpec::ColumnSplit>& split,
                             std::optional<GemvLayerNorm> ln, OpPlan& plan) {
  kernels::Defines defines = {{"BITS", str(w.bits)},
                              {"SCALES_F16", w.scales_f16 ? "1" : "0"},
                              {"ZP_PACKED", w.zero_points == ZeroPointForm::Packed ? "1" : "0"},
                              {"ZP_FLOAT", w.zero_points == ZeroPointForm::Float ? "1" : "0"},
                              {"ZP_F16", w.zero_points_f16 ? "1" : "0"},
                              {"BIAS_F16", w.bias_f16 ? "1" : "0"},
                              {"SCALE_PER_CODE", w.scale_per_code ? "1" : "0"},
                              {"CODE_TABLE", w.code_table ? "1" : "0"},
                              {"NF4", w.code_table && std::string(w.code_table) == "NF4" ? "1" : "0"},
                              {"RESIDUAL", residual ? "1" : "0"},
                              {"SPLIT_OUTPUTS", split && gemv ? "1" : "0"},
                              {"SPLIT_THIRD", split && gemv && split->widths.size() > 2 ? "1" : "0"},
                              {"A_INT8", "0"},
                              {"A_LAYER_NORM", ln ? "1" : "0"}};
  activation.add_defines(defines);
  KernelLaunch launch;
  uint32_t tiles_n = 0, tiles_m = 1;
  const char* kernel_file = nullptr;
  std::string label = w.code_table ? std::string(w.code_table) : "q" + str(w.bits);
  if (gemv) {
    // A column's codes are read four words (16 bytes: a whole 32-code block of 4 bits) per load where its
    // words are whole quads. K is staged CHUNK elements at a time (8 KiB of A whatever the rows); a column
    // gets 8 lanes (4 where a chunk holds fewer than 8 loads of it), doubled while the grid has fewer than
    // kGemvMinWorkgroups workgroups (a narrow N on a large GPU) but never past the loads one chunk holds:
    // more would idle between the chunk's barriers (768 x 3072 ran slower with 64 lanes on half a word
    // each; the LM head runs faster with 8 lanes than with 4 or 16: docs/performance.md).
    const int64_t rows = static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(m)));
    const int64_t chunk = 2048 / rows;
    const bool quads = w.col_words % 4 == 0;
    const int64_t loads_per_chunk =
        ceil_div(std::min(w.k, chunk), (32 / w.bits) * (quads ? 4 : 1));  // per column
    int64_t lanes = loads_per_chunk >= 8 ? 8 : 4;
    while (lanes < kWorkgroupInvocations && 2 * lanes <= loads_per_chunk &&
           ceil_div(w.n, kWorkgroupInvocations / lanes) < kGemvMinWorkgroups)
      lanes *= 2;
    if (internal.tuning.gemv_lanes) {
      lanes = *internal.tuning.gemv_lanes;
      if (lanes < 4 || lanes > kWorkgroupInvocations || !std::has_single_bit(static_cast<uint64_t>(lanes)))
        ctx.fail("attribute " + std::string(kGemvLanesAttribute) + " = " + str(lanes) +
                 " must be a power of two from 4 to " + str(kWorkgroupInvocations));
    }
    const int64_t columns = gemv_thread_columns(ctx, internal, w.bits, w.code_table != nullptr, w.n, rows,
                                                kWorkgroupInvocations / lanes);
    defines["ROWS"] = str(rows);
    defines["CHUNK"] = str(chunk);
    defines["B_QUADS"] = quads ? "1" : "0";
    // A quad of words (128 bits) inside one block: its codes' scale and zero point are applied once.
    defines["QUAD_ONE_BLOCK"] = w.block_size * w.bits >= 128 ? "1" : "0";
    const bool prefetch = quads && w.bits == 8 && !w.code_table;
    defines["PREFETCH_QUAD"] = prefetch ? "1" : "0";
    defines["A_VEC4"] = w.k % 4 == 0 ? "1" : "0";
    defines["LANES"] = str(lanes);
    defines["THREAD_COLS"] = str(columns);
    // accuracy_level 4 lets A be int8 (ONNX Runtime quantises it so too): the GEMV's products of 4- and 8-bit
    // codes then run as integer dot products of four bytes (docs/quantized_matmul.md). Each workgroup first
    // quantises its chunk of A, which pays only where a thread has many codes to multiply: at least
    // kInt8GemvMinQuads quads of words (rows x columns x its quads per column); the LM head has 12 a thread,
    // a decoder step's 768-wide products 2 (they measured slower with it: docs/performance.md).
    // wgi.kernel "gemv_int8" takes it wherever it applies (tests, benchmarks).
    const bool int8_possible = w.accuracy_int8 && ctx.caps.features.packed_int8_dot &&
                               (w.bits == 4 || w.bits == 8) && !w.code_table && !w.scale_per_code &&
                               w.zero_points != ZeroPointForm::Float && w.block_size >= 16;
    const bool int8_forced = internal.kernel == "gemv_int8";
    if (int8_forced && !int8_possible)
      ctx.fail(
          "the gemv_int8 kernel takes accuracy_level 4, 4- or 8-bit codes, integer zero points and blocks "
          "of 16 or more, on a device with WGSL's packed_4x8_integer_dot_product");
    const int64_t thread_quads = rows * columns * ceil_div(loads_per_chunk, lanes);
    const bool int8_a = int8_possible && (int8_forced || thread_quads >= kInt8GemvMinQuads);
    defines["A_INT8"] = int8_a ? "1" : "0";
    tiles_n = static_cast<uint32_t>(ceil_div(w.n, kWorkgroupInvocations / lanes * columns));
    kernel_file = "linear/matmul_nbits_gemv.wgsl";
    label = "matmul_nbits_gemv_" + label + "_m" + defines["ROWS"] + "_l" + str(lanes) + "_c" + str(columns) +
            (w.k % 4 == 0 ? "_vec4" : "") + (quads ? "_quads" : "") + (prefetch ? "_prefetch" : "") +
            (int8_a ? "_i8a" : "") + (ln ? "_ln" : "");
  } else {
    tiles_n = static_cast<uint32_t>(ceil_div(w.n, kTile));
    tiles_m = static_cast<uint32_t>(ceil_div(m, kTile));
    defines["B_QUADS"] = "0";
    defines["A_VEC4"] = "0";
    kernel_file = "linear/matmul_nbits_tiled.wgsl";
    label = "matmul_nbits_tiled_" + label;
  }
  launch.program.label = label + activation.label_suffix() + residual_label_suffix(residual);
  // B's initializer is never bound (so never uploaded): the kernels read the packed words below.
  plan.constants.push_back(std::move(w.packed_b));
  TensorRef zero_points = w.zero_point_values;
  if (w.packed_zero_points) {
    plan.constants.push_back(std::move(*w.packed_zero_points));
    zero_points = TensorRef::constant(1);
  }
  if (ln) {
    ln->params = TensorRef::constant(static_cast<uint32_t>(plan.constants.size()));
    plan.constants.push_back(fused_layer_norm_params(ctx, ln->inputs, w.k));
  }
  // The tiled kernel writes a split product whole, to be copied into its blocks below.
  const TensorRef whole = split && !gemv ? plan.add_scratch(static_cast<uint64_t>(m * w.n) * sizeof(float))
                                         : TensorRef::output(0);
  const GemmLaunchSpec::ColumnSplit* gemv_split = split && gemv ? &*split : nullptr;
  const KernelInterface iface =
      quantized_interface(w, defines, a, zero_points, residual, whole, gemv_split, ln ? &*ln : nullptr);
  launch.program.wgsl = iface.load_wgsl(kernel_file, defines);
  iface.bind(launch);
  UniformValues values = iface.values();
  values.u32("M", static_cast<uint32_t>(m))
      .u32("N", static_cast<uint32_t>(w.n))
      .u32("K", static_cast<uint32_t>(w.k))
      .u32("block_size", static_cast<uint32_t>(w.block_size))
      .u32("col_words", static_cast<uint32_t>(w.col_words))
      .u32("scale_col_stride", static_cast<uint32_t>(w.scale_col_stride))
      .u32("zp_col_bits", static_cast<uint32_t>(w.zp_col_bits))
      .u32("blocks_per_col", static_cast<uint32_t>(w.blocks_per_col))
      .u32("has_bias", w.has_bias ? 1 : 0)
      .u32("tiles_n", tiles_n)
      .u32("tiles_m", tiles_m)
      .f32("default_zero", w.default_zero)
      .f32("act_lo", activation.min)
      .f32("act_hi", activation.max);
  if (gemv_split) add_column_split_values(*gemv_split, values);
  if (ln) set_layer_norm_a_values(ln->inputs.epsilon, w.k, values);
  launch.uniform = values.bytes();
  launch.groups =
      gpu::fold_workgroups(uint64_t{tiles_n} * tiles_m, ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
  if (split && !gemv)
    plan.launches.push_back(split_columns_launch(ctx, *split, static_cast<uint32_t>(m), whole));
}

// `replan`: the op's plan function, for the residual's fallback (a residual that broadcasts).
OpPlan plan_quantized_matmul(const PlanContext& ctx, QuantizedWeight w,
                             OpPlan (*replan)(const PlanContext&)) {
  const Shape& a_shape = ctx.input(0).shape;
  const int64_t m = element_count(a_shape) / w.k;
  Shape out_shape(a_shape.begin(), a_shape.end() - 1);
  out_shape.push_back(w.n);
  const NBitsAttributes internal = read_nbits_attributes(ctx.node);
  const bool residual = has_fused_residual(ctx, kNBitsResidualInput);
  if (residual && ctx.input(kNBitsResidualInput).shape != out_shape)
    return plan_residual_fallback(ctx, out_shape, replan, kNBitsResidualInput);
  const FusedActivation activation = FusedActivation::from_node(ctx.node);
  require_addressable(ctx, ctx.input_name(0) + " (A)", a_shape);
  require_addressable(ctx, "the output", out_shape);
  require_addressable(ctx, "the packed weight", {w.n * w.col_words});
  if (w.n * w.scale_col_stride > int64_t{UINT32_MAX} || w.n * w.zp_col_bits > int64_t{UINT32_MAX})
    ctx.fail("the weight's " + str(w.n) + " x " + str(w.k) + " codes exceed the kernels' 32-bit indices");

  OpPlan plan;
  const std::optional<GemmLaunchSpec::ColumnSplit> split = plan_column_split(
      ctx, internal.split_columns, out_shape, residual, plan.outputs, internal.layer_norm_epsilon ? 1 : 0);
  // A fused LayerNormalization's output (its other readers'): the last output.
  std::optional<FusedLayerNorm> layer_norm;
  TensorRef normalized;
  if (internal.layer_norm_epsilon) {
    layer_norm = read_fused_layer_norm(ctx, w.k, *internal.layer_norm_epsilon, NBitsLayerNormInput::kScale,
                                       NBitsLayerNormInput::kBias);
    normalized = TensorRef::output(static_cast<uint32_t>(plan.outputs.size()));
    plan.outputs.push_back({DType::Float32, a_shape});
  }
  if (m == 0) return plan;

  const QuantizedKernel kernel = choose_quantized_kernel(ctx, w, internal, m);
  // The GEMV normalises A itself where its bindings fit the device; otherwise the LayerNormalization runs
  // first and the product reads its output.
  std::optional<GemvLayerNorm> gemv_layer_norm;
  TensorRef a = TensorRef::input(0);
  if (layer_norm) {
    if (kernel == QuantizedKernel::Gemv && gemv_storage_buffers(w, split, residual, true) <=
                                               ctx.caps.limits.max_storage_buffers_per_shader_stage) {
      gemv_layer_norm = GemvLayerNorm{.inputs = *layer_norm, .normalized = normalized, .params = {}};
    } else {
      append_fused_layer_norm(ctx, *layer_norm, m, w.k, a, normalized, plan);
      a = normalized;
    }
  }
  if (kernel == QuantizedKernel::Fast) {
    plan.constants.push_back(std::move(w.packed_b));
    if (w.packed_zero_points) plan.constants.push_back(std::move(*w.packed_zero_points));
    append_fast_quantized_launches(ctx, w, m, a, residual, split, plan);
    return plan;
  }

  append_quantized_launch(ctx, w, internal, m, a, kernel == QuantizedKernel::Gemv, residual, activation,
                          split, gemv_layer_norm, plan);
  return plan;
}

OpPlan plan_matmul_nbits(const PlanContext& ctx) {
  return plan_quantized_matmul(ctx, read_matmul_nbits(ctx), plan_matmul_nbits);
}

OpPlan plan_matmul_bnb4(const PlanContext& ctx) {
  return plan_quantized_matmul(ctx, read_matmul_bnb4(ctx), plan_matmul_bnb4);
}

}  // namespace

void register_quantized_matmul_ops(OpRegistry& registry) {
  registry.add(kDomain, "MatMulNBits", 1, kLatestOpset, {plan_matmul_nbits, nullptr});
  registry.add(kDomain, "MatMulBnb4", 1, kLatestOpset, {plan_matmul_bnb4, nullptr});
}

}  // namespace wgi::ops
