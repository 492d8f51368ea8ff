// The output of an exact int32 product (MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv;
// integer_matmul.wgsl, integer_gemv.wgsl, conv_integer.wgsl): `acc` for output column (channel) c written at
// output[at] as int32, or with QLINEAR requantized to 8 bits, or with SCALED rescaled to float32 as dynamic
// quantization's Cast, Mul and bias Add do: f32(acc) * (a_scale * b_scale[c]) (+ bias[c] with SCALED_BIAS;
// column_params holds (b_scale[c], bias[c]) pairs), then the fused residual (RESIDUAL: R of the output's
// shape, read at the same index) and activation, as the float GEMMs' epilogue adds them. SPLIT_OUTPUTS
// (SCALED only; sibling products merged, graph::merge_sibling_products): column c goes to its block's output
// (linear/column_split.wgsl), `at` being row * params.N + c.
// The includer declares `output` (and output_1, output_2 with SPLIT_OUTPUTS), params.y_zero_point / qmin /
// qmax / act_lo / act_hi, and the bindings its defines read (multipliers; a_scale and column_params;
// residual).
#include "common/activation.wgsl"
#if SPLIT_OUTPUTS
#include "linear/column_split.wgsl"
#endif

fn store_integer_result(at: u32, acc: i32, c: u32) {
#if QLINEAR
  output[at] = requantize(acc, multipliers[c], params.y_zero_point, params.qmin, params.qmax);
#else
#if SCALED
#if QUANTIZE_A
  let sa = a_quantization.x;  // the includer's own quantization of A (integer_gemv.wgsl)
#else
  let sa = a_scale[0];
#endif
  var y = f32(acc) * (sa * column_params[2u * c]);
#if SCALED_BIAS
  y += column_params[2u * c + 1u];
#endif
#if RESIDUAL
  y += residual[at];
#endif
#if SPLIT_OUTPUTS
  store_split_column(at / params.N, c, fused_activation(y, params.act_lo, params.act_hi));
#else
  output[at] = fused_activation(y, params.act_lo, params.act_hi);
#endif
#else
  output[at] = acc;
#endif
#endif
}
