// Compress, after the positions (nonzero.wgsl on the condition): output [outer, count, inner] from X viewed
// as [outer, len, inner], slice j being X's slice positions[j]. The grid covers the upper bound (count = len);
// the real count comes from `extent`, so invocations past outer * count * inner do nothing.
#include "common/dispatch_grid.wgsl"

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let e = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  let count = extent[0];
  if (e >= params.outer * count * params.inner) {
    return;
  }
  let slice = count * params.inner;
  let o = e / slice;
  let j = (e % slice) / params.inner;
  let i = e % params.inner;
  result[e] = source[(o * params.len + u32(positions[j])) * params.inner + i];
}
