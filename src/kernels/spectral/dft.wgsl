// A direct DFT along one axis, for DFT and STFT: one invocation per output complex value
//   y[outer, f, k, inner] = scale * sum_n x[outer, f * step + n, inner] * window[n] * e^(-+ 2 pi i k n / length)
// over n < length that fall inside the input (a shorter input is zero-padded). x holds 1 (real) or 2
// (complex, interleaved) floats per value; y holds 2. DFT is one frame (frames = 1, step 0, no window).
// O(length) per output: the transforms these ops see in exported audio front ends are short (<= a few
// thousand points).
#include "common/dispatch_grid.wgsl"
#include "spectral/twiddle.wgsl"

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let e = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (e >= params.count) {
    return;
  }
  let inner_index = e % params.inner;
  let t = e / params.inner;
  let k = t % params.bins;
  let frame = (t / params.bins) % params.frames;
  let outer = t / (params.bins * params.frames);
  let first_step = frame * params.step;
  let stride = params.inner * params.components;
  let base = (outer * params.input_steps + first_step) * stride + inner_index * params.components;
  let available = min(params.length, params.input_steps - first_step);
  var sum = vec2<f32>(0.0);
  var m = 0u;  // k * n mod length, kept exact in integers
  let k_mod = k % params.length;
  for (var n = 0u; n < available; n++) {
    var v = vec2<f32>(x[base + n * stride], 0.0);
    if (params.components == 2u) {
      v.y = x[base + n * stride + 1u];
    }
#if WINDOW
    v *= frame_window[n];
#endif
    var w = twiddle(m, params.length);
    if (params.inverse == 0u) {
      w.y = -w.y;
    }
    sum += vec2<f32>(v.x * w.x - v.y * w.y, v.x * w.y + v.y * w.x);
    m += k_mod;
    if (m >= params.length) {
      m -= params.length;
    }
  }
  y[e] = sum * params.scale;
}
