// ReverseSequence: y[.., t, .., b, ..] = x[.., len[b] - 1 - t, .., b, ..] for t < len[b], else x unchanged,
// for any 4-byte device element. One invocation per element; the time and batch axes are addressed through
// their element strides. A length outside [0, time steps] is recorded in the run status and leaves that
// batch entry unreversed.
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
  let t = (i / params.time_stride) % params.steps;
  let b = (i / params.batch_stride) % params.batch;
  let sequence_length = lengths[b];
  var source = i;
  if (sequence_length < 0 || u32(sequence_length) > params.steps) {
    if (t == 0u) {
      report_index_out_of_range(params.status_tag, 1u, b, sequence_length, params.steps + 1u);
    }
  } else if (t < u32(sequence_length)) {
    source = i + (u32(sequence_length) - 1u - 2u * t) * params.time_stride;
  }
  y[i] = x[source];
}
