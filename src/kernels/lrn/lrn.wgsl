// LRN (local response normalization across channels) of X [N, C, spatial...]:
//   y = x / (bias + alpha / size * sum of x^2 over channels [c - (size - 1) / 2, c + size / 2]) ^ beta
// one invocation per element, its window read directly (size is small: 3 to 5 in AlexNet-era models).
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
  let first = c - min(c, params.before);
  let last = min(c + params.after, params.channels - 1u);
  let channel0 = i - c * params.inner;
  var square_sum = 0.0;
  for (var j = first; j <= last; j++) {
    let v = source[channel0 + j * params.inner];
    square_sum += v * v;
  }
  let base = params.bias + params.alpha_over_size * square_sum;
  destination[i] = source[i] * exp2(-params.beta * log2(base));
}
