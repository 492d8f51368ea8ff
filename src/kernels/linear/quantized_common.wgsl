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
#if B_QUADS
@group(0) @binding(1) var<storage, read> b: array<vec4<u32>>;  // the GEMV's B when a column is whole quads
#else
@group(0) @binding(1) var<storage, read> b: array<u32>;
#endif
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

#include "linear/quantized_dequant.wgsl"
