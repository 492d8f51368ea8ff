// EyeLike: one (the output type's bits of 1) where col - row == k, zero bits elsewhere, for one matrix.
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
  let diagonal = i32(i % params.cols) - i32(i / params.cols);
  destination[i] = select(0u, params.one, diagonal == params.k);
}
