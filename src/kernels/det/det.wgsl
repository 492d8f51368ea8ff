// Det of a batch of square matrices [batch, m, m]: one invocation per matrix copies it into its scratch
// region and runs Gaussian elimination with partial pivoting there (f32), the determinant being the product
// of the pivots times the sign of the row swaps. O(m^3) per matrix: Det in exported models sees small m.
#include "common/dispatch_grid.wgsl"

#interface

override WG_SIZE: u32 = 64;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let b = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (b >= params.batch) {
    return;
  }
  let m = params.m;
  let base = b * m * m;
  for (var e = 0u; e < m * m; e++) {
    work[base + e] = x[base + e];
  }
  var det = 1.0;
  for (var c = 0u; c < m; c++) {
    var pivot_row = c;
    var pivot = abs(work[base + c * m + c]);
    for (var r = c + 1u; r < m; r++) {
      let v = abs(work[base + r * m + c]);
      if (v > pivot) {
        pivot = v;
        pivot_row = r;
      }
    }
    if (pivot == 0.0) {
      det = 0.0;
      break;
    }
    if (pivot_row != c) {
      for (var j = c; j < m; j++) {
        let t = work[base + c * m + j];
        work[base + c * m + j] = work[base + pivot_row * m + j];
        work[base + pivot_row * m + j] = t;
      }
      det = -det;
    }
    let diagonal = work[base + c * m + c];
    det *= diagonal;
    for (var r = c + 1u; r < m; r++) {
      let factor = work[base + r * m + c] / diagonal;
      for (var j = c + 1u; j < m; j++) {
        work[base + r * m + j] -= factor * work[base + c * m + j];
      }
    }
  }
  y[b] = det;
}
