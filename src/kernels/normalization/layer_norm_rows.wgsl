// LayerNormalization's common case: scale (and bias) hold exactly one value per row element, the row length
// is a multiple of 4 and at most the host's cap (normalization.cpp `layer_norm_rows_applies`). Every other
// case (and Instance / GroupNorm) runs row_norm.wgsl.
//
// A 256-invocation workgroup normalises ROWS_PER_WG = 256 / THREADS_PER_ROW rows. The THREADS_PER_ROW
// invocations of a row each hold up to VALUES_PER_THREAD vec4s of it in registers (vec4 k of the row lives in
// invocation k % THREADS_PER_ROW), so the row is read from global memory once and written once. The mean comes
// first, then the variance of the centred values from the registers (two passes, as the float64 reference
// does, instead of E[x^2] - E[x]^2, which cancels badly), in f32; then
// y = (x - mean) / sqrt(var + epsilon) * scale + bias.
// Each reduction is one barrier: every invocation writes its partial, then sums its row's THREADS_PER_ROW
// partials itself (the same order in every invocation of the row, so they agree bit for bit).
// Rows past params.rows (the last workgroup, folded-grid padding) still reach both barriers; their loads
// and stores are skipped.
// STATS also writes each row's mean and 1 / sqrt(var + epsilon) (LayerNormalization's optional outputs).
#include "common/dispatch_grid.wgsl"

const THREADS_PER_ROW: u32 = {{THREADS_PER_ROW}}u;
const VALUES_PER_THREAD: u32 = {{VALUES_PER_THREAD}}u;
const WG_SIZE: u32 = 256u;
const ROWS_PER_WG: u32 = WG_SIZE / THREADS_PER_ROW;

#interface

// One array per reduction: with a shared array some compilers (Mesa llvmpipe through Dawn's GL ES backend)
// let the first sum's reads slip past the second reduction's writes (see row_norm.wgsl).
var<workgroup> partial_sum: array<f32, WG_SIZE>;
var<workgroup> partial_squares: array<f32, WG_SIZE>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let slot = lid / THREADS_PER_ROW;  // the row's place in the workgroup
  let t = lid % THREADS_PER_ROW;     // the invocation's place in its row
  let first = slot * THREADS_PER_ROW;  // the row's first partial
  let row = linear_workgroup_index(wid, nwg) * ROWS_PER_WG + slot;
  let live = row < params.rows;
  let n4 = params.length4;
  let start = row * n4;

  var values: array<vec4<f32>, VALUES_PER_THREAD>;
  var s = vec4<f32>(0.0);
  for (var j = 0u; j < VALUES_PER_THREAD; j++) {
    let k = t + j * THREADS_PER_ROW;
    var v = vec4<f32>(0.0);
    if (live && k < n4) {
      v = input[start + k];
    }
    values[j] = v;
    s += v;
  }
  partial_sum[lid] = (s.x + s.y) + (s.z + s.w);
  workgroupBarrier();
  var total = 0.0;
  for (var i = 0u; i < THREADS_PER_ROW; i++) {
    total += partial_sum[first + i];
  }
  let mean = total * params.inv_length;

  var q = vec4<f32>(0.0);
  for (var j = 0u; j < VALUES_PER_THREAD; j++) {
    if (t + j * THREADS_PER_ROW < n4) {  // slots past the row hold 0, not a value to centre
      let d = values[j] - vec4<f32>(mean);
      q += d * d;
    }
  }
  partial_squares[lid] = (q.x + q.y) + (q.z + q.w);
  workgroupBarrier();
  var squares = 0.0;
  for (var i = 0u; i < THREADS_PER_ROW; i++) {
    squares += partial_squares[first + i];
  }
  let inv_std = 1.0 / sqrt(squares * params.inv_length + params.epsilon);

  if (live) {
    for (var j = 0u; j < VALUES_PER_THREAD; j++) {
      let k = t + j * THREADS_PER_ROW;
      if (k < n4) {
        var y = (values[j] - vec4<f32>(mean)) * inv_std * scale[k];
        if (params.has_bias != 0u) {
          y += bias[k];
        }
        output[start + k] = y;
      }
    }
#if STATS
    if (t == 0u) {
      mean_out[row] = mean;
      inv_std_out[row] = inv_std;
    }
#endif
  }
}
