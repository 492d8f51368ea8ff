// QuantizeLinear (QUANTIZE) and DequantizeLinear (!QUANTIZE), per tensor, per axis or blocked (opset 21), one
// invocation per element (src/ops/quantize.cpp). Quantized values live widened to 32 bits on the device
// (uint8 as u32 0..255, int8 sign-extended), so both types are read and written as i32.
//   quantize:   q = clamp(round(x / scale) + zero_point, qmin, qmax), round() rounding half to even, the
//               division correctly rounded (quantize/divide.wgsl)
//   dequantize: y = f32(q - zero_point) * scale
// The scale and zero point of element i sit at
//   outer(i) * outer_stride + (axis(i) / block) * axis_stride + inner(i) * inner_stride
// with inner(i) = i % inner, axis(i) = (i / inner) % axis_len, outer(i) = i / (inner * axis_len): all strides
// 0 per tensor; axis_stride 1 per axis; scale [outer, ceil(axis_len / block), inner] when blocked.
// DynamicQuantizeLinear's last step is the per-tensor quantize with its scale and zero point computed on the
// GPU (quantize/dynamic_range.wgsl).
#include "common/dispatch_grid.wgsl"
#include "quantize/quantize_step.wgsl"

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  let inner = i % params.inner;
  let rest = i / params.inner;
  let axis = rest % params.axis_len;
  let outer = rest / params.axis_len;
  let p = outer * params.outer_stride + (axis / params.block) * params.axis_stride + inner * params.inner_stride;
  let s = scale[p];
  let zp = zero_point[p];
#if QUANTIZE
  y[i] = quantize_step(x[i], s, f32(zp), f32(params.qmin), f32(params.qmax));
#else
  y[i] = f32(x[i] - zp) * s;
#endif
}
