// GridSample of X [N, C, d1..dR] at the normalized positions of grid [N, o1..oR, R] (R = 1 to 3), as the
// ONNX reference defines it: Y [N, C, o1..oR]. One invocation per output element.
//
// Per spatial dim (grid component R-1-d addresses dim d): the position is denormalized (align_corners), rounded
// half to even for nearest, then a position outside [lo, hi] (the pixel-centre range: [0, size-1] with
// align_corners, [-0.5, size-0.5] without) is clamped (border) or reflected (reflection). The taps
// (1 nearest, 2 linear, 4 cubic per dim) are then padded one by one: zeros reads 0 outside the tensor,
// border clamps the index, reflection reflects it.
#include "common/dispatch_grid.wgsl"

#interface

override WG_SIZE: u32 = 256;

const PADDING_ZEROS: u32 = 0u;
const PADDING_BORDER: u32 = 1u;

// Reflects v into [lo, hi] by the nearer border, repeatedly (the ONNX reference's _gs_reflect).
fn reflect_into(v: f32, lo: f32, hi: f32) -> f32 {
  let range = hi - lo;
  if (range <= 0.0) {
    return lo;
  }
  if (v < lo) {
    let dv = lo - v;
    let n = floor(dv / range);
    let r = dv - n * range;
    return select(hi - r, lo + r, (u32(n) & 1u) == 0u);
  }
  if (v > hi) {
    let dv = v - hi;
    let n = floor(dv / range);
    let r = dv - n * range;
    return select(lo + r, hi - r, (u32(n) & 1u) == 0u);
  }
  return v;
}

// Keys' cubic convolution weights (A = -0.75) of the taps at floor - 1 .. floor + 2, t = position - floor.
fn cubic_weights(t: f32) -> vec4<f32> {
  let a = -0.75;
  let t1 = t + 1.0;
  let t2 = 1.0 - t;
  let t3 = 2.0 - t;
  return vec4<f32>(((a * t1 - 5.0 * a) * t1 + 8.0 * a) * t1 - 4.0 * a,
                   ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0,
                   ((a + 2.0) * t2 - (a + 3.0)) * t2 * t2 + 1.0,
                   ((a * t3 - 5.0 * a) * t3 + 8.0 * a) * t3 - 4.0 * a);
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  let o = i % params.out_spatial;
  let nc = i / params.out_spatial;
  let n = nc / params.channels;
  let grid_at = (n * params.out_spatial + o) * params.rank;
  let align = params.align_corners != 0u;

  var first: vec4<i32>;     // per dim, the index of tap 0
  var weights: array<vec4<f32>, 3>;
  var in_size = 1u;
  for (var d = 0u; d < params.rank; d++) {
    let size = params.in_dims[d];
    in_size *= size;
    let g = grid[grid_at + params.rank - 1u - d];
    let fsize = f32(size);
    var v = select(((g + 1.0) * fsize - 1.0) * 0.5, (g + 1.0) * 0.5 * (fsize - 1.0), align);
    if (params.taps == 1u) {
      v = round(v);  // WGSL's round() is half to even, like numpy's rint
    }
    let lo = select(-0.5, 0.0, align);
    let hi = select(fsize - 0.5, fsize - 1.0, align);
    if (v < lo || v > hi) {
      if (params.padding == PADDING_BORDER) {
        v = clamp(v, 0.0, fsize - 1.0);
      } else if (params.padding != PADDING_ZEROS) {
        v = reflect_into(v, lo, hi);
      }
    }
    if (params.taps == 1u) {
      first[d] = i32(v);  // an integer already (rounded, clamped or reflected by a half-integer border)
      weights[d] = vec4<f32>(1.0, 0.0, 0.0, 0.0);
    } else if (params.taps == 2u) {
      let f = floor(v);
      first[d] = i32(f);
      weights[d] = vec4<f32>(1.0 - (v - f), v - f, 0.0, 0.0);
    } else {
      let f = floor(v);
      first[d] = i32(f) - 1;
      weights[d] = cubic_weights(v - f);
    }
  }

  let plane = nc * in_size;
  var total_taps = 1u;
  for (var d = 0u; d < params.rank; d++) {
    total_taps *= params.taps;
  }
  var sum = 0.0;
  for (var t = 0u; t < total_taps; t++) {
    var rest = t;
    var offset = 0u;
    var weight = 1.0;
    var inside = true;
    for (var d = 0u; d < params.rank; d++) {
      let k = rest % params.taps;
      rest /= params.taps;
      let size = params.in_dims[d];
      var index = first[d] + i32(k);
      if (index < 0 || index >= i32(size)) {
        if (params.padding == PADDING_ZEROS) {
          inside = false;
        } else if (params.padding == PADDING_BORDER) {
          index = clamp(index, 0, i32(size) - 1);
        } else {
          let lo = select(-0.5, 0.0, align);
          let hi = select(f32(size) - 0.5, f32(size) - 1.0, align);
          index = clamp(i32(reflect_into(f32(index), lo, hi)), 0, i32(size) - 1);
        }
      }
      offset = offset * size + u32(max(index, 0));
      weight *= weights[d][k];
    }
    if (inside) {
      sum += weight * x[plane + offset];
    }
  }
  y[i] = sum;
}
