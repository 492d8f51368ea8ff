// The quantize step of QuantizeLinear and DynamicQuantizeLinear (quantize_linear.wgsl, dynamic_range.wgsl):
// clamp(round(x / scale) + zero_point, qmin, qmax), round() rounding half to even, the division correctly
// rounded (quantize/divide.wgsl), the clamp in f32 before the conversion (ONNX's saturation).
#include "quantize/divide.wgsl"

fn quantize_step(x: f32, scale: f32, zero_point: f32, qmin: f32, qmax: f32) -> i32 {
  return i32(clamp(round(wgi_div_rn(x, scale)) + zero_point, qmin, qmax));
}
