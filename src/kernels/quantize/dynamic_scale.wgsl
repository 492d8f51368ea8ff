// DynamicQuantizeLinear's uint8 scale and zero point of the range [x_lo, x_hi] (0 inside it) as ONNX's
// reference computes them in float32 (dynamic_range.wgsl, and integer_gemv.wgsl quantizing its own A):
//   scale = (x_hi == x_lo ? 1 : x_hi - x_lo) / levels,  zero_point = round_half_even(clamp(0 - x_lo / scale, 0,
//   levels)), levels = 255 (passed in: the divisions are wgi_div_rn's, but a literal would invite folding).
#include "quantize/quantize_step.wgsl"

fn dynamic_scale_and_zero_point(x_lo: f32, x_hi: f32, levels: f32) -> vec2<f32> {
  var range = x_hi - x_lo;
  if (x_hi == x_lo) {
    range = 1.0;
  }
  let s = wgi_div_rn(range, levels);
  return vec2<f32>(s, round(clamp(0.0 - wgi_div_rn(x_lo, s), 0.0, levels)));
}
