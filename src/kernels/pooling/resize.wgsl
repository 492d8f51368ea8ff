// Resize / Upsample, one invocation per output element. The host works out every axis's sampling once, in
// float64 with ONNX's formulas (coordinate transformation, nearest rounding, linear / cubic coefficients,
// exclude_outside, edge clamping), into a table of taps per output coordinate: (input index, weight) pairs,
// index -1 for tf_crop_and_resize's extrapolation. Axes whose every output coordinate reads exactly one input
// coordinate with weight 1 (all axes for nearest; unresized axes) are gathers; at most two axes interpolate
// (axis_a, axis_b), summing taps_a x taps_b weighted reads.
//
// Gathers move the element's 32 bits whatever its type, so nearest serves every device element type; the
// interpolating path reads and writes f32 bits.
#include "common/dispatch_grid.wgsl"

#interface

override WG_SIZE: u32 = 64;

fn tap_index(entry: u32) -> i32 {
  return table[2u * entry];
}

fn tap_weight(entry: u32) -> f32 {
  return bitcast<f32>(table[2u * entry + 1u]);
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.total) {
    return;
  }
  var rest = i;
  var base = 0u;
  var coord_a = 0u;
  var coord_b = 0u;
  var outside = false;
  for (var k = params.rank; k > 0u; k--) {
    let a = k - 1u;
    let size = params.out_shape[a >> 2u][a & 3u];
    let c = rest % size;
    rest = rest / size;
    if (a == params.axis_a) {
      coord_a = c;
    } else if (a == params.axis_b) {
      coord_b = c;
    } else {
      let index = tap_index(params.table_base[a >> 2u][a & 3u] + c);
      outside = outside || index < 0;
      base += u32(max(index, 0)) * params.in_strides[a >> 2u][a & 3u];
    }
  }
  if (params.axis_a >= params.rank) {
    output[i] = select(input[base], params.extrapolation_bits, outside);
    return;
  }
  let first_a = params.table_base[params.axis_a >> 2u][params.axis_a & 3u] + coord_a * params.taps_a;
  let stride_a = params.in_strides[params.axis_a >> 2u][params.axis_a & 3u];
  var first_b = 0u;
  var stride_b = 0u;
  var taps_b = 1u;
  if (params.axis_b < params.rank) {
    first_b = params.table_base[params.axis_b >> 2u][params.axis_b & 3u] + coord_b * params.taps_b;
    stride_b = params.in_strides[params.axis_b >> 2u][params.axis_b & 3u];
    taps_b = params.taps_b;
    outside = outside || tap_index(first_b) < 0;
  }
  outside = outside || tap_index(first_a) < 0;
  if (outside) {
    output[i] = params.extrapolation_bits;
    return;
  }
  var acc = 0.0;
  for (var ta = 0u; ta < params.taps_a; ta++) {
    let row = base + u32(tap_index(first_a + ta)) * stride_a;
    let wa = tap_weight(first_a + ta);
    for (var tb = 0u; tb < taps_b; tb++) {
      var at = row;
      var w = wa;
      if (params.axis_b < params.rank) {
        at += u32(tap_index(first_b + tb)) * stride_b;
        w *= tap_weight(first_b + tb);
      }
      acc += w * bitcast<f32>(input[at]);
    }
  }
  output[i] = bitcast<u32>(acc);
}
