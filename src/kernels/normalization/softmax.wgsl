// Softmax and LogSoftmax along one axis, numerically stable (the row's maximum is subtracted before exp),
// accumulated in f32. The tensor is viewed as [outer, length, inner]: a row is one (outer, inner) pair and
// its elements are `inner` apart, so the same kernel serves the last axis (inner = 1), an inner axis
// (opset 13+), and opset < 13's flattened [outer, rest] view (inner = 1, length = the product of the rest).
//
// Variants: ROW_PER_WORKGROUP (one workgroup per row, shared-memory trees for the maximum and the sum) or one
// invocation per row (short rows). LOG writes x - max - log(sum) instead of exp(x - max) / sum.
#include "common/dispatch_grid.wgsl"
#include "elementwise/math.wgsl"

#interface

override WG_SIZE: u32 = 64;

fn row_start(row: u32) -> u32 {
  return (row / params.inner) * params.length * params.inner + row % params.inner;
}

// A row whose maximum is not finite (a NaN in the row, a +inf, or every element -inf) is NaN throughout, as
// in onnxruntime (x - max is NaN for the maximum, and so is the sum); tested here rather than left to
// exp(NaN), which is not NaN on every adapter.
fn result(x: f32, m: f32, sum: f32) -> f32 {
  if ((bitcast<u32>(m) & 0x7fffffffu) >= 0x7f800000u) {
    return wgi_nan();
  }
#if LOG
  return x - m - log(sum);
#else
  return exp(x - m) / sum;
#endif
}

#if ROW_PER_WORKGROUP
// One array per tree: the maximum is read after its tree's last barrier, and with a shared array some
// compilers (Mesa llvmpipe through Dawn's GL ES backend) let that read slip past the sum tree's first writes.
var<workgroup> partial_max: array<f32, WG_SIZE>;
var<workgroup> partial_sum: array<f32, WG_SIZE>;

#include "common/workgroup_reduce.wgsl" NAME=tree_max SLOTS=partial_max TYPE=f32 COMBINE="wgi_max(a, b)"
#include "common/workgroup_reduce.wgsl" NAME=tree_sum SLOTS=partial_sum TYPE=f32 COMBINE="a + b"

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = linear_workgroup_index(wid, nwg);
  if (row >= params.rows) {
    return;
  }
  let start = row_start(row);
  let step = params.inner;
  let n = params.length;
  // The first element rather than -inf starts the maximum: WGSL constants cannot be infinite.
  var m = input[start];
  for (var k = lid; k < n; k += WG_SIZE) {
    m = wgi_max(m, input[start + k * step]);  // a NaN makes the whole row NaN, as in ONNX Runtime
  }
  m = tree_max(m, lid);
  var s = 0.0;
  for (var k = lid; k < n; k += WG_SIZE) {
    s += exp(input[start + k * step] - m);
  }
  s = tree_sum(s, lid);
  for (var k = lid; k < n; k += WG_SIZE) {
    let i = start + k * step;
    output[i] = result(input[i], m, s);
  }
}

#else

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (row >= params.rows) {
    return;
  }
  let start = row_start(row);
  let step = params.inner;
  let n = params.length;
  var m = input[start];
  for (var k = 1u; k < n; k++) {
    m = wgi_max(m, input[start + k * step]);  // a NaN makes the whole row NaN, as in ONNX Runtime
  }
  var s = 0.0;
  for (var k = 0u; k < n; k++) {
    s += exp(input[start + k * step] - m);
  }
  for (var k = 0u; k < n; k++) {
    let i = start + k * step;
    output[i] = result(input[i], m, s);
  }
}

#endif
