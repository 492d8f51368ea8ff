// ScatterND: output = data, then for every index tuple t of indices [..., q] in row-major order, the slice
// output[indices[t]] (data.shape[q:] elements) = COMBINE(that slice, updates[t]).
// One invocation per output element scans every tuple in order and applies those that address its slice, so
// duplicate tuples resolve deterministically (the last one wins without a reduction; every one is applied
// with one) and no atomics are needed. The cost is output elements x tuples x q index reads: right for the
// masks exports build (a few tuples, or slices of a few elements), quadratic for a scatter of many single
// elements (docs/new_ops.md). Negative indices count from the end; a tuple still out of range at run time
// addresses nothing and is recorded in the run status (known indices are checked when planned).
#include "common/dispatch_grid.wgsl"

#include "scatter/scatter_common.wgsl"

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  let slice_index = i / params.slice;
  let within = i % params.slice;
  var v = data[i];
  for (var t = 0u; t < params.tuples; t++) {
    var at = 0u;
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
      at += u32(index) * params.prefix_strides[l / 4][l % 4];
    }
    if (valid && at == slice_index) {
      v = combine(v, updates[t * params.slice + within]);
    }
  }
  destination[i] = v;
}
