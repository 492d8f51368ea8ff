// GatherND with batch_dims b: output[t, s] = data[batch(t), indices[t], s] for every index tuple t of
// indices [..., q] (the tuples of one batch are consecutive) and every element s of the slice
// data.shape[b + q:]. Negative indices count from the end; a tuple still out of range at run time is recorded
// in the run status and yields zero bits (known indices are checked when planned), as Gather does.
#include "common/dispatch_grid.wgsl"
#include "common/run_status.wgsl"

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  let t = i / params.slice;
  var at = (t / params.tuples_per_batch) * params.batch_stride + i % params.slice;
  var valid = true;
  for (var l = 0u; l < params.q; l++) {
    let n = params.dims[l / 4][l % 4];
    let given = indices[t * params.q + l];
    var index = given;
    if (index < 0) {
      index += i32(n);
    }
    if (index < 0 || u32(index) >= n) {
      report_index_out_of_range(params.status_tag, 1u, t * params.q + l, given, n);
      valid = false;
    }
    at += u32(index) * params.strides[l / 4][l % 4];
  }
  // Not select(): it would read data[at] for an invalid tuple too, outside the tensor.
  if (valid) {
    destination[i] = data[at];
  } else {
    destination[i] = 0u;
  }
}
