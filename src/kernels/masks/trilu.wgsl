// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of every [rows, cols] matrix of the
// input's last two dims and writes zero bits elsewhere (0, 0.0 and false are all zero bits on the device).
// k comes from the uniform when it is known at plan time, else from its one-element tensor (K_INPUT).
#include "common/dispatch_grid.wgsl"

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
#if K_INPUT
  // Clamped like the uniform's k, so that j - i - k cannot overflow.
  let k = clamp(k_input[0], -i32(params.rows), i32(params.cols));
#else
  let k = params.k;
#endif
  let col = i32(i % params.cols);
  let row = i32((i / params.cols) % params.rows);
#if UPPER
  let keep = col - row >= k;
#else
  let keep = col - row <= k;
#endif
  destination[i] = select(0u, source[i], keep);
}
