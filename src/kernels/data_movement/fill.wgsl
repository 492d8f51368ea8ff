// Fills a tensor with one 4-byte device value (ConstantOfShape, Dropout's all-true mask).
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
  destination[i] = params.value;
}
