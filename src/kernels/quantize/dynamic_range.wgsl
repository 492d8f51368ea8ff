// DynamicQuantizeLinear's range (src/ops/quantize.cpp), in two launches of this file:
//   !FINAL: each workgroup reduces a contiguous chunk of x to (min, max), written to partials[2 g], [2 g + 1];
//   FINAL:  one workgroup reduces the partials and writes the uint8 scale and zero point exactly as ONNX's
//           reference computes them in float32:
//             lo = min(0, min(x)), hi = max(0, max(x))
//             scale = (hi == lo ? 1 : hi - lo) / 255
//             zero_point = round_half_even(clamp(0 - lo / scale, 0, 255))
// NaN elements are skipped (min / max of WGSL may return either operand for NaN; an explicit test keeps the
// range finite).
#include "quantize/divide.wgsl"

#interface

override WG_SIZE: u32 = 256;
const MAX_WG: u32 = 1024u;

var<workgroup> lo_shared: array<f32, MAX_WG>;
var<workgroup> hi_shared: array<f32, MAX_WG>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  // 0 is part of every range, so it is also the neutral start.
  var lo = 0.0;
  var hi = 0.0;
#if FINAL
  for (var j = lid; j < params.count; j += WG_SIZE) {
    lo = min(lo, values[2u * j]);
    hi = max(hi, values[2u * j + 1u]);
  }
#else
  let begin = wid.x * params.chunk;
  let end = min(begin + params.chunk, params.count);
  for (var j = begin + lid; j < end; j += WG_SIZE) {
    let v = values[j];
    if (v == v) {
      lo = min(lo, v);
      hi = max(hi, v);
    }
  }
#endif
  lo_shared[lid] = lo;
  hi_shared[lid] = hi;
  workgroupBarrier();
  for (var stride = WG_SIZE / 2u; stride > 0u; stride = stride / 2u) {
    if (lid < stride) {
      lo_shared[lid] = min(lo_shared[lid], lo_shared[lid + stride]);
      hi_shared[lid] = max(hi_shared[lid], hi_shared[lid + stride]);
    }
    workgroupBarrier();
  }
  if (lid != 0u) {
    return;
  }
#if FINAL
  let x_lo = lo_shared[0];
  let x_hi = hi_shared[0];
  var range = x_hi - x_lo;
  if (x_hi == x_lo) {
    range = 1.0;
  }
  let s = wgi_div_rn(range, params.levels);
  scale_out[0] = s;
  zero_point_out[0] = u32(round(clamp(0.0 - wgi_div_rn(x_lo, s), 0.0, params.levels)));
#else
  partials[2u * wid.x] = lo_shared[0];
  partials[2u * wid.x + 1u] = hi_shared[0];
#endif
}
