// Gather along one axis: data viewed as [outer, axis_dim, inner], indices flattened to [index_count], output
// [outer, index_count, inner]. Negative indices count from the end; an index still out of range (an error in
// ONNX, which the host cannot see when indices are computed at run time) is recorded in the run status, and
// its output elements get zero bits rather than a read outside the tensor. T is u32, or vec4<u32> when
// inner % 4 == 0 (inner then counts vec4s).
#include "common/dispatch_grid.wgsl"
#include "common/run_status.wgsl"

alias T = {{TYPE}};

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  let k = i % params.inner;
  let t = i / params.inner;
  let j = t % params.index_count;
  let o = t / params.index_count;
  let given = indices[j];
  var index = given;
  if (index < 0) {
    index += i32(params.axis_dim);
  }
  if (index < 0 || u32(index) >= params.axis_dim) {
    report_index_out_of_range(params.status_tag, 1u, j, given, params.axis_dim);
    destination[i] = T();
    return;
  }
  destination[i] = data[(o * params.axis_dim + u32(index)) * params.inner + k];
}
