// linear/layer_norm_a.wgsl: a LayerNormalization taken into a product of a few rows (A_LAYER_NORM of the GEMVs,
// linear/gemv.wgsl and linear/matmul_nbits_gemv.wgsl; graph::fuse_layer_norm_into_products), whose A is the
// LayerNormalization's X. Before its products the workgroup finds each row's mean and 1 / sqrt(var + epsilon)
// (layer_norm_statistics: two passes over the row, the variance of the centred values, as
// normalization/layer_norm_rows.wgsl does); the kernel then reads A through layer_norm4, and one workgroup
// also writes the normalised rows to `normalized`, the LayerNormalization's output for its other readers.
// The includer declares ROWS (rows at most), LN_THREADS (its workgroup size, a power of two), `partial` (a
// var<workgroup> array of at least ROWS * LN_THREADS floats, free until layer_norm_statistics returns),
// fn ln_x4(r, k) -> vec4<f32> (A[r, k .. k + 3], zero past K), the bindings ln_params (the K scales, then the
// K biases) and normalized, and params.M, params.K, params.ln_epsilon and params.ln_inv_k (1 / K).

var<private> ln_mean: array<f32, ROWS>;
var<private> ln_inv_std: array<f32, ROWS>;

// Scales (at 0) or biases (at params.K) of elements k .. k + 3, zero past K.
fn ln_quad(at: u32, k: u32) -> vec4<f32> {
  var v = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
    if (k + j < params.K) {
      v[j] = ln_params[at + k + j];
    }
  }
  return v;
}

// Elements k .. k + 3 of row r normalised, from their values x; zero past K.
fn layer_norm4(r: u32, x: vec4<f32>, k: u32) -> vec4<f32> {
  return (x - vec4<f32>(ln_mean[r])) * ln_inv_std[r] * ln_quad(0u, k) + ln_quad(params.K, k);
}

// ln_sum_rows(flat, flat, LN_THREADS): partial[r * LN_THREADS] becomes the sum of row r's LN_THREADS partial
// sums, all rows at once.
#include "common/group_sums.wgsl" NAME=ln_sum_rows SLOTS=partial VALUES=ROWS STRIDE=LN_THREADS

// Every invocation of the workgroup calls it (uniform control flow); `write_rows` (the same for the whole
// workgroup): also write the normalised rows.
fn layer_norm_statistics(flat: u32, write_rows: bool) {
  let k_quads = (params.K + 3u) / 4u;
  for (var r = 0u; r < ROWS; r++) {
    var s = 0.0;
    for (var q = flat; r < params.M && q < k_quads; q += LN_THREADS) {
      let v = ln_x4(r, 4u * q);
      s += (v.x + v.y) + (v.z + v.w);
    }
    partial[r * LN_THREADS + flat] = s;
  }
  ln_sum_rows(flat, flat, LN_THREADS);
  for (var r = 0u; r < ROWS; r++) {
    ln_mean[r] = partial[r * LN_THREADS] * params.ln_inv_k;
  }
  workgroupBarrier();  // every invocation has read the sums before they are overwritten
  for (var r = 0u; r < ROWS; r++) {
    var s = 0.0;
    for (var q = flat; r < params.M && q < k_quads; q += LN_THREADS) {
      let k = 4u * q;
      let in_row = vec4<u32>(k, k + 1u, k + 2u, k + 3u) < vec4<u32>(params.K);
      let d = select(vec4<f32>(0.0), ln_x4(r, k) - vec4<f32>(ln_mean[r]), in_row);
      s += dot(d, d);
    }
    partial[r * LN_THREADS + flat] = s;
  }
  ln_sum_rows(flat, flat, LN_THREADS);
  for (var r = 0u; r < ROWS; r++) {
    ln_inv_std[r] = 1.0 / sqrt(partial[r * LN_THREADS] * params.ln_inv_k + params.ln_epsilon);
  }
  workgroupBarrier();  // partial is the kernel's again
  if (write_rows) {
    for (var r = 0u; r < ROWS; r++) {
      for (var q = flat; r < params.M && q < k_quads; q += LN_THREADS) {
        let k = 4u * q;
        let y = layer_norm4(r, ln_x4(r, k), k);
        for (var j = 0u; j < 4u; j++) {
          if (k + j < params.K) {
            normalized[r * params.K + k + j] = y[j];
          }
        }
      }
    }
  }
}
