// MaxUnpool's scatter, into an output the host filled with zeros first: for every input element k,
// indices[k] is a flat position in the unpooled shape [N, C, inferred...] (MaxPool's Indices output, flat
// over N and C too); its coordinates land at the same coordinates of the output [N, C, out...], which an
// output_shape input may make larger (the rest stays zero, as in the ONNX reference). An index outside
// [0, unpooled elements) is recorded in the run status and skipped. Duplicate indices (overlapping pooling
// windows) come from one input element, so whichever write lands last writes the same value.
#include "common/dispatch_grid.wgsl"
#include "common/run_status.wgsl"

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let k = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (k >= params.count) {
    return;
  }
  let index = indices[k];
  if (index < 0 || u32(index) >= params.unpooled_count) {
    report_index_out_of_range(params.status_tag, 1u, k, index, params.unpooled_count);
    return;
  }
  var rest = u32(index);
  var at = 0u;
  var stride = 1u;
  for (var d = i32(params.spatial_rank) - 1; d >= 0; d--) {
    at += (rest % params.inferred[d]) * stride;
    rest /= params.inferred[d];
    stride *= params.out_dims[d];
  }
  y[at + rest * stride] = x[k];
}
