// Normalisation over rows of contiguous elements: LayerNormalization (a row = the trailing axes from `axis`),
// InstanceNormalization (a row = one (n, c) plane), GroupNormalization (a row = one (n, group) block). One
// workgroup per row computes the mean, then the variance of the centred values (two passes over the row, as
// the float64 reference does, instead of E[x^2] - E[x]^2, which cancels badly), in f32, with shared-memory
// trees; then y = (x - mean) / sqrt(var + epsilon) * scale + bias.
//
// Where a row element's scale and bias come from differs per op, so it is parameterised:
//   index = (row % row_mod) * row_mul + (pos / pos_div) % pos_mod      (pos: the element's place in its row)
// LayerNorm: row_mod = 1, pos_div = 1, pos_mod = the parameter's size (it broadcasts over trailing axes).
// InstanceNorm: row_mod = C, row_mul = 1, pos_mod = 1. GroupNorm (opset 21, per channel): row_mod = groups,
// row_mul = pos_mod = C / groups, pos_div = the spatial size.
// STATS also writes each row's mean and 1 / sqrt(var + epsilon) (LayerNormalization's optional outputs).
#include "common/dispatch_grid.wgsl"

#interface

override WG_SIZE: u32 = 64;

// One array per tree: a tree's result is read after its last barrier, and with a shared array some compilers
// (Mesa llvmpipe through Dawn's GL ES backend) let that read slip past the next tree's first writes.
var<workgroup> partial_sum: array<f32, WG_SIZE>;
var<workgroup> partial_squares: array<f32, WG_SIZE>;

#include "common/workgroup_reduce.wgsl" NAME=tree_sum SLOTS=partial_sum TYPE=f32 COMBINE="a + b"
#include "common/workgroup_reduce.wgsl" NAME=tree_sum_squares SLOTS=partial_squares TYPE=f32 COMBINE="a + b"

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = linear_workgroup_index(wid, nwg);
  if (row >= params.rows) {
    return;
  }
  let n = params.length;
  let start = row * n;
  var s = 0.0;
  for (var k = lid; k < n; k += WG_SIZE) {
    s += input[start + k];
  }
  let mean = tree_sum(s, lid) * params.inv_length;
  var q = 0.0;
  for (var k = lid; k < n; k += WG_SIZE) {
    let d = input[start + k] - mean;
    q += d * d;
  }
  let variance = tree_sum_squares(q, lid) * params.inv_length;
  let inv_std = 1.0 / sqrt(variance + params.epsilon);
  let param_row = (row % params.row_mod) * params.row_mul;
  for (var k = lid; k < n; k += WG_SIZE) {
    let p = k / params.pos_div;
    var y = (input[start + k] - mean) * inv_std * scale[param_row + p % params.scale_pos_mod];
    if (params.has_bias != 0u) {
      y += bias[param_row + p % params.bias_pos_mod];
    }
    output[start + k] = y;
  }
#if STATS
  if (lid == 0u) {
    mean_out[row] = mean;
    inv_std_out[row] = inv_std;
  }
#endif
}
