// ScatterElements (and opset 9's Scatter): output = data, then for every element u of updates in row-major
// order, output[c(u) with c[axis] = indices[u]] = COMBINE(output[...], updates[u]).
// One invocation per output element scans the updates that can land on it (those sharing its coordinates off
// the axis: updates.shape[axis] of them) in order, so duplicate indices resolve deterministically (the last
// one wins without a reduction; every one is applied with one) and no atomics are needed. Negative indices
// count from the end; an index still out of range at run time matches no element and is recorded in the run
// status (known indices are checked when planned).
#include "common/dispatch_grid.wgsl"

#include "scatter/scatter_common.wgsl"

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  var v = data[i];
  // This element's coordinates; the first update at the same coordinates off the axis.
  var rest = i;
  var base = 0u;
  var reachable = true;
  var axis_coord = 0u;
  for (var k = i32(params.rank) - 1; k >= 0; k--) {
    let n = params.data_shape[k / 4][k % 4];
    let c = rest % n;
    rest = rest / n;
    if (u32(k) == params.axis) {
      axis_coord = c;
    } else {
      reachable = reachable && c < params.updates_shape[k / 4][k % 4];
      base += c * params.updates_strides[k / 4][k % 4];
    }
  }
  if (reachable) {
    let along = params.updates_shape[params.axis / 4][params.axis % 4];
    let step = params.updates_strides[params.axis / 4][params.axis % 4];
    for (var j = 0u; j < along; j++) {
      let u = base + j * step;
      let given = indices[u];
      var index = given;
      if (index < 0) {
        index += i32(params.axis_dim);
      }
      if (index < 0 || u32(index) >= params.axis_dim) {
        report_index_out_of_range(params.status_tag, 1u, u, given, params.axis_dim);
      }
      if (index >= 0 && u32(index) == axis_coord) {
        v = combine(v, updates[u]);
      }
    }
  }
  destination[i] = v;
}
