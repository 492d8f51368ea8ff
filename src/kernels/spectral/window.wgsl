// The cosine-sum windows (HannWindow, HammingWindow, BlackmanWindow):
//   w[i] = a0 - a1 cos(2 pi i / n) + a2 cos(4 pi i / n), n = size (periodic) or size - 1 (symmetric),
// and [1] for a symmetric window of one point.
#include "common/dispatch_grid.wgsl"
#include "spectral/twiddle.wgsl"

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.size) {
    return;
  }
  if (params.one_point != 0u) {
    y[i] = 1.0;
    return;
  }
  let m = i % params.n;  // i = n (the symmetric window's last point) is angle 0 again
  y[i] = params.a0 - params.a1 * twiddle(m, params.n).x + params.a2 * twiddle((2u * m) % params.n, params.n).x;
}
