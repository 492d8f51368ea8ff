// MelWeightMatrix [spectrogram bins, mel bins]: column i is the triangle rising from edge i to edge i + 1 and
// falling to edge i + 2 (the edges are spectrogram-bin indices the host computed from the mel scale, as the
// ONNX reference does); a triangle whose rising side is empty puts 1 at its centre.
#include "common/dispatch_grid.wgsl"

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let e = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (e >= params.count) {
    return;
  }
  let i = e % params.mel_bins;
  let j = i32(e / params.mel_bins);
  let low = edges[i];
  let center = edges[i + 1u];
  let high = edges[i + 2u];
  var value = 0.0;
  if (center == low) {
    if (j == center) {
      value = 1.0;
    }
  } else if (j >= low && j <= center) {
    value = f32(j - low) / f32(center - low);
  }
  if (high > center && j >= center && j < high) {
    value = f32(high - j) / f32(high - center);
  }
  y[e] = value;
}
