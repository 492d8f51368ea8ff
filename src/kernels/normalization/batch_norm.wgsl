// BatchNormalization in inference mode, elementwise: y = (x - mean[c]) * scale[c] / sqrt(var[c] + epsilon)
// + bias[c], with c = (i / inner) % channels. inner is the spatial size for per-channel statistics; opset 7's
// spatial = 0 (statistics per channel and position) has inner = 1 and channels = C x spatial size.
// (The graph pass folds most BatchNormalizations into the preceding Conv; this is the fallback.)
#include "common/dispatch_grid.wgsl"

struct Params {
  count: u32,
  inner: u32,
  channels: u32,
  _pad0: u32,
  epsilon: f32,
  _pad1: u32,
  _pad2: u32,
  _pad3: u32,
}

@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read> scale: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read> mean: array<f32>;
@group(0) @binding(4) var<storage, read> variance: array<f32>;
@group(0) @binding(5) var<storage, read_write> output: array<f32>;
@group(0) @binding(6) var<uniform> params: Params;

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
