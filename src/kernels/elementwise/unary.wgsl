// An elementwise unary op, y = f(x), over f32 or vec4<f32> elements (T). f is the op's WGSL expression over
// `x`, given as {{EXPR}} by the op table in src/ops/elementwise_unary.cpp; constants in it are written T(c) so
// that the same text serves both element types. Op parameters arrive in params.alpha / beta.
#include "common/dispatch_grid.wgsl"

alias T = {{TYPE}};

struct Params {
  count: u32,  // number of T elements
  alpha: f32,
  beta: f32,
  _pad: u32,
}

@group(0) @binding(0) var<storage, read> input: array<T>;
@group(0) @binding(1) var<storage, read_write> output: array<T>;
@group(0) @binding(2) var<uniform> params: Params;

override WG_SIZE: u32 = 256;

fn apply(x: T) -> T {
  return {{EXPR}};
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  output[i] = apply(input[i]);
}
