// Hardmax: 1 at the first maximum of each row of X viewed as [outer, len, inner] (elements `inner` apart),
// 0 elsewhere. One workgroup per row: each invocation keeps the best (value, index) of its strided share, a
// workgroup-memory tree picks the row's, then the row is written. NaN counts as larger than every number
// (numpy's argmax, which the ONNX definition uses); ties go to the lower index.
#include "common/dispatch_grid.wgsl"

const WG: u32 = {{WG}}u;

#interface

var<workgroup> best_value: array<u32, WG>;
var<workgroup> best_index: array<u32, WG>;

fn is_nan(bits: u32) -> bool {
  return (bits & 0x7fffffffu) > 0x7f800000u;
}

// Whether (a, ia) beats (b, ib): NaN first, then the larger number, then the lower index.
fn beats(a: u32, ia: u32, b: u32, ib: u32) -> bool {
  if (is_nan(a) || is_nan(b)) {
    return is_nan(a) && (!is_nan(b) || ia < ib);
  }
  let fa = bitcast<f32>(a);
  let fb = bitcast<f32>(b);
  return fa > fb || (fa == fb && ia < ib);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = linear_workgroup_index(wid, nwg);
  if (row >= params.rows) {
    return;  // the whole workgroup: the barriers below stay in uniform control flow
  }
  let base = (row / params.inner) * params.len * params.inner + row % params.inner;
  var value = 0xff800000u;  // -inf
  var index = 0xffffffffu;
  for (var j = lid; j < params.len; j += WG) {
    let v = source[base + j * params.inner];
    if (index == 0xffffffffu || beats(v, j, value, index)) {
      value = v;
      index = j;
    }
  }
  best_value[lid] = value;
  best_index[lid] = index;
  workgroupBarrier();
  for (var half = WG / 2u; half > 0u; half /= 2u) {
    if (lid < half) {
      let other = lid + half;
      if (best_index[other] != 0xffffffffu &&
          (best_index[lid] == 0xffffffffu ||
           beats(best_value[other], best_index[other], best_value[lid], best_index[lid]))) {
        best_value[lid] = best_value[other];
        best_index[lid] = best_index[other];
      }
    }
    workgroupBarrier();
  }
  let winner = best_index[0];
  for (var j = lid; j < params.len; j += WG) {
    destination[base + j * params.inner] = select(0.0, 1.0, j == winner);
  }
}
