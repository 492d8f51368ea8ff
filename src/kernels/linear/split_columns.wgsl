// A product computed whole ([rows][N] in `product`) copied into the column blocks its output is split into
// (linear/column_split.wgsl): the kernels other than the GEMVs, which write the blocks themselves.
#interface

#include "common/dispatch_grid.wgsl"
#include "linear/column_split.wgsl"

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) flat: u32) {
  let i = linear_workgroup_index(wid, nwg) * 256u + flat;
  if (i >= params.count) {
    return;
  }
  store_split_column(i / params.N, i % params.N, product[i]);
}
