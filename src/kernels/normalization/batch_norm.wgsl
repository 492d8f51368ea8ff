// BatchNormalization in inference mode, elementwise: y = (x - mean[c]) * scale[c] / sqrt(var[c] + epsilon)
// + bias[c], with c = (i / inner) % channels. inner is the spatial size for per-channel statistics; opset 7's
// spatial = 0 (statistics per channel and position) has inner = 1 and channels = C x spatial size.
// (The graph pass folds most BatchNormalizations into the preceding Conv; this is the fallback.)
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
  let c = (i / params.inner) % params.channels;
  output[i] = (input[i] - mean[c]) * (scale[c] / sqrt(variance[c] + params.epsilon)) + bias[c];
}
