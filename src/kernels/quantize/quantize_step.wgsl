// The quantize step of QuantizeLinear and DynamicQuantizeLinear (quantize_linear.wgsl, dynamic_range.wgsl,
// integer_gemv.wgsl): clamp(round(x / scale) + zero_point, qmin, qmax), round() rounding half to even, the
// clamp in f32 before the conversion (ONNX's saturation), and the result that of the correctly rounded
// division. The hardware's x / scale (WGSL allows 2.5 ULP) can only round to another integer where the exact
// quotient lies within those ULPs of a half-integer k + 1/2; there the division is redone correctly rounded
// (quantize/divide.wgsl, a 24-step loop), elsewhere the hardware quotient rounds alike.
#include "quantize/divide.wgsl"

fn quantize_step(x: f32, scale: f32, zero_point: f32, qmin: f32, qmax: f32) -> i32 {
  let fast = x / scale;
  // One ULP of `fast` (its exponent's weight times 2^-23; 0 for zeros and subnormals, which are nowhere near a
  // half-integer), and how far its fraction is from 1/2 (exact: t - trunc(t) loses nothing).
  let ulp = bitcast<f32>(bitcast<u32>(abs(fast)) & 0x7f800000u) * 1.1920929e-7;
  var q = round(fast);
  if (abs(abs(fast - trunc(fast)) - 0.5) <= 8.0 * ulp) {
    q = round(wgi_div_rn(x, scale));
  }
  return i32(clamp(q + zero_point, qmin, qmax));
}
