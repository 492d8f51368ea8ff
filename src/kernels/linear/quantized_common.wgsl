// Shared by the weight-only quantized matmuls (src/ops/matmul_nbits.cpp: com.microsoft MatMulNBits and
// MatMulBnb4): out[m, n] = act(sum_k A[m, k] * W[n, k] + bias[n] + R[m, n]), where W is dequantised from
// packed codes in the kernel itself (B never exists as floats in memory). The epilogue's activation is
// common/activation.wgsl's, as the GEMMs'; R, the fused residual (src/ops/fused_residual.h, only with
// RESIDUAL), is bound after the uniform as theirs is.
//
// B: column n (one output feature) holds K codes of BITS bits, little end first within each u32 word, and
//   starts at word n * params.col_words (the op repacks MatMulBnb4's flat, high-nibble-first layout into this
//   one at plan time; MatMulNBits' blobs already are).
// Block of element (n, k): (n * params.scale_col_stride + k) / params.block_size, its scale scales[block].
//   MatMulNBits' blocks restart with each column (scale_col_stride = blocks per column * block_size);
//   MatMulBnb4's run over the flattened [N, K] matrix (scale_col_stride = K), so a word of codes can straddle
//   two blocks when K is not a multiple of the block size (SCALE_PER_CODE then looks each code's block up).
// W = (code - zero) * scale with the zero point packed like B (ZP_PACKED: BITS bits per block, column n
//   starting at bit n * params.zp_col_bits), given as floats (ZP_FLOAT: one per block), or the default
//   2^(BITS-1); with CODE_TABLE (NF4 / FP4), W = table[code] * scale.
// A_VEC4 (GEMV only, K % 4 == 0): A read as vec4s.
// SCALES_F16 / ZP_F16 / BIAS_F16: those inputs are float16 as the model stores them (two per u32 word).
#include "common/dispatch_grid.wgsl"
#include "common/activation.wgsl"

const BITS: u32 = {{BITS}}u;
const CODES_PER_WORD: u32 = 32u / BITS;
const CODE_MASK: u32 = (1u << BITS) - 1u;

struct QuantizedMatMulParams {
  M: u32,
  N: u32,
  K: u32,
  block_size: u32,
  col_words: u32,         // u32 words of B per column
  scale_col_stride: u32,  // see the block of an element above
  zp_col_bits: u32,       // ZP_PACKED: bits of zero points per column (whole bytes)
  blocks_per_col: u32,    // ZP_FLOAT: zero points per column
  has_bias: u32,
  tiles_n: u32,
  tiles_m: u32,
  default_zero: f32,
  act_lo: f32,  // the fused activation's clamp bounds
  act_hi: f32,
}

#if A_VEC4
@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;  // the GEMV's A when K % 4 == 0
#else
@group(0) @binding(0) var<storage, read> a: array<f32>;
#endif
@group(0) @binding(1) var<storage, read> b: array<u32>;
#if SCALES_F16
@group(0) @binding(2) var<storage, read> scales: array<u32>;
#else
@group(0) @binding(2) var<storage, read> scales: array<f32>;
#endif
#if ZP_F16
@group(0) @binding(3) var<storage, read> zero_points: array<u32>;
#else
#if ZP_FLOAT
@group(0) @binding(3) var<storage, read> zero_points: array<f32>;
#else
@group(0) @binding(3) var<storage, read> zero_points: array<u32>;
#endif
#endif
#if BIAS_F16
@group(0) @binding(4) var<storage, read> bias: array<u32>;
#else
@group(0) @binding(4) var<storage, read> bias: array<f32>;
#endif
@group(0) @binding(5) var<storage, read_write> output: array<f32>;
@group(0) @binding(6) var<uniform> params: QuantizedMatMulParams;
#if RESIDUAL
@group(0) @binding(7) var<storage, read> residual: array<f32>;
#endif

#if CODE_TABLE
// The 16 values a 4-bit code stands for, as multiples of the block's absmax (MatMulBnb4's quant_type).
#if NF4
// NF4 (QLoRA, arXiv 2305.14314): quantiles of a standard normal scaled to [-1, 1], with an exact zero.
var<private> code_table: array<f32, 16> = array<f32, 16>(
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023,
    1.0);
#else
// bitsandbytes' FP4: sign bit 8, then a 3-bit e2m1-like magnitude (0, 0.0625, 8, 12, 4, 6, 2, 3 for codes
// 0..7) divided by its largest value, 12.
var<private> code_table: array<f32, 16> = array<f32, 16>(
    0.0, 0.0625 / 12.0, 8.0 / 12.0, 1.0, 4.0 / 12.0, 6.0 / 12.0, 2.0 / 12.0, 3.0 / 12.0,
    -0.0, -0.0625 / 12.0, -8.0 / 12.0, -1.0, -4.0 / 12.0, -6.0 / 12.0, -2.0 / 12.0, -3.0 / 12.0);
#endif
#endif

fn load_scale(i: u32) -> f32 {
#if SCALES_F16
  return unpack2x16float(scales[i / 2u])[i % 2u];
#else
  return scales[i];
#endif
}

fn load_bias(n: u32) -> f32 {
  if (params.has_bias == 0u) {
    return 0.0;
  }
#if BIAS_F16
  return unpack2x16float(bias[n / 2u])[n % 2u];
#else
  return bias[n];
#endif
}

// Output element (m, n) from its sum over K: bias, residual and activation, in the GEMMs' order.
fn quantized_epilogue(acc: f32, m: u32, n: u32, bias_n: f32) -> f32 {
  var v = acc + bias_n;
#if RESIDUAL
  v += residual[m * params.N + n];
#endif
  return fused_activation(v, params.act_lo, params.act_hi);
}

// The scale and zero point of the block holding element (n, k).
struct BlockQuant {
  scale: f32,
  zero: f32,
}

fn block_quant(n: u32, k: u32) -> BlockQuant {
  let block = (n * params.scale_col_stride + k) / params.block_size;
  var q: BlockQuant;
  q.scale = load_scale(block);
  q.zero = params.default_zero;
#if ZP_PACKED
  let bit = n * params.zp_col_bits + (k / params.block_size) * BITS;
  q.zero = f32((zero_points[bit / 32u] >> (bit % 32u)) & CODE_MASK);
#endif
#if ZP_FLOAT
  let zi = n * params.blocks_per_col + k / params.block_size;
#if ZP_F16
  q.zero = unpack2x16float(zero_points[zi / 2u])[zi % 2u];
#else
  q.zero = zero_points[zi];
#endif
#endif
  return q;
}

fn dequantize(code: u32, q: BlockQuant) -> f32 {
#if CODE_TABLE
  return code_table[code] * q.scale;
#else
  return (f32(code) - q.zero) * q.scale;
#endif
}

// The CODES_PER_WORD weights of column n from element k0 (a multiple of CODES_PER_WORD) on, zero at and
// past K (the padding of a partial last block, or past the column's end). A word never straddles two of
// MatMulNBits' blocks: a block (16 codes or more, a power of two) holds whole words.
fn dequantize_word(n: u32, k0: u32) -> array<f32, CODES_PER_WORD> {
  if (k0 >= params.K) {
    return array<f32, CODES_PER_WORD>();
  }
  return dequantize_codes(n, k0, b[n * params.col_words + k0 / CODES_PER_WORD]);
}

// The same from the word already read (k0 < K).
fn dequantize_codes(n: u32, k0: u32, word: u32) -> array<f32, CODES_PER_WORD> {
  var w: array<f32, CODES_PER_WORD>;
  var q = block_quant(n, k0);
  for (var i = 0u; i < CODES_PER_WORD; i++) {
    let k = k0 + i;
#if SCALE_PER_CODE
    q = block_quant(n, min(k, params.K - 1u));
#endif
    let v = dequantize((word >> (i * BITS)) & CODE_MASK, q);
    w[i] = select(0.0, v, k < params.K);
  }
  return w;
}
