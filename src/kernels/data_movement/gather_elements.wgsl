// GatherElements: output[c] = data[c with c[axis] replaced by indices[c]], for every multi-index c of the
// indices' (= the output's) shape, up to 8-D. Negative indices count from the end; one still out of range
// is recorded in the run status and yields zero bits (see gather.wgsl).
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
  let given = indices[i];
  var index = given;
  if (index < 0) {
    index += i32(params.axis_dim);
  }
  if (index < 0 || u32(index) >= params.axis_dim) {
    report_index_out_of_range(params.status_tag, 1u, i, given, params.axis_dim);
    destination[i] = 0u;
    return;
  }
  var rest = i;
  var s = 0u;
  for (var k = i32(params.rank) - 1; k >= 0; k--) {
    let n = params.shape[k / 4][k % 4];
    var c = rest % n;
    rest = rest / n;
    if (u32(k) == params.axis) {
      c = u32(index);
    }
    s += c * params.data_strides[k / 4][k % 4];
  }
  destination[i] = data[s];
}
