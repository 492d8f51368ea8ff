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
// A_VEC4 (GEMV only, K % 4 == 0): A read as vec4s; B_QUADS (GEMV only): B as vec4<u32>s.
// SCALES_F16 / ZP_F16 / BIAS_F16: those inputs are float16 as the model stores them (two per u32 word).
// The bindings and params (QuantizedMatMulParams) are declared by quantized_interface in matmul_nbits.cpp.
#include "common/dispatch_grid.wgsl"
#include "common/activation.wgsl"

#interface

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
