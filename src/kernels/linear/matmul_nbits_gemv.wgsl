// Weight-only quantized matrix-vector products for a handful of rows (decoder steps: M = 1..8, batch dims
// folded into M): bandwidth bound on the packed weight, which is read once per workgroup (see
// quantized_common.wgsl for the layouts and the dequantisation).
//
// A 128-invocation workgroup covers 128 / LANES columns (output features); the LANES threads of a column
// stride through its packed words (four loads in flight per step), each dequantising a word's codes once for
// all ROWS rows and keeping ROWS partial sums in f32 (A read as vec4s where K % 4 == 0). The partial sums of
// a column are added in workgroup memory by a tree, and the column's first thread adds the bias and writes
// the M results.
const ROWS: u32 = {{ROWS}}u;    // compile-time bound on M: 1, 2, 4 or 8
const LANES: u32 = {{LANES}}u;  // threads per column, a power of two from 4 to 128
const WORKGROUP: u32 = 128u;
const COLS: u32 = WORKGROUP / LANES;

#include "linear/quantized_common.wgsl"

var<workgroup> partial: array<f32, ROWS * WORKGROUP>;  // [row][column][lane]

// acc[r] += A[r, k0 ..] . weights for the M rows (the codes at and past K are zero).
fn accumulate(acc: ptr<function, array<f32, ROWS>>, k0: u32, weights: array<f32, CODES_PER_WORD>) {
  let count = min(CODES_PER_WORD, params.K - k0);
  for (var r = 0u; r < ROWS; r++) {
    if (r < params.M) {
      let row = r * params.K + k0;
      var sum = 0.0;
#if A_VEC4
      // count is a multiple of 4 here (K % 4 == 0): whole vec4s of A, none past K.
      for (var q = 0u; q < count / 4u; q++) {
        let w = vec4<f32>(weights[4u * q], weights[4u * q + 1u], weights[4u * q + 2u], weights[4u * q + 3u]);
        sum += dot(a[row / 4u + q], w);
      }
#else
      for (var i = 0u; i < count; i++) {
        sum += a[row + i] * weights[i];
      }
#endif
      (*acc)[r] += sum;
    }
  }
}

@compute @workgroup_size(128, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) flat: u32) {
  let group = linear_workgroup_index(wid, nwg);
  if (group >= params.tiles_n) {
    return;  // uniform: the whole workgroup leaves together
  }
  let lane = flat % LANES;
  let n = group * COLS + flat / LANES;

  var acc: array<f32, ROWS>;
  if (n < params.N) {
    let words = (params.K + CODES_PER_WORD - 1u) / CODES_PER_WORD;
    let column = n * params.col_words;
    var w = lane;
    // Four independent word loads per step keep enough bytes in flight to stream the weight (as gemv.wgsl).
    for (; w + 3u * LANES < words; w += 4u * LANES) {
      var packed: array<u32, 4>;
      for (var u = 0u; u < 4u; u++) {
        packed[u] = b[column + w + u * LANES];
      }
      for (var u = 0u; u < 4u; u++) {
        let k0 = (w + u * LANES) * CODES_PER_WORD;
        accumulate(&acc, k0, dequantize_codes(n, k0, packed[u]));
      }
    }
    for (; w < words; w += LANES) {
      let k0 = w * CODES_PER_WORD;
      accumulate(&acc, k0, dequantize_codes(n, k0, b[column + w]));
    }
  }

  for (var r = 0u; r < ROWS; r++) {
    partial[r * WORKGROUP + flat] = acc[r];
  }
  workgroupBarrier();
  for (var stride = LANES / 2u; stride > 0u; stride /= 2u) {
    if (lane < stride) {
      for (var r = 0u; r < ROWS; r++) {
        partial[r * WORKGROUP + flat] += partial[r * WORKGROUP + flat + stride];
      }
    }
    workgroupBarrier();
  }

  if (lane == 0u && n < params.N) {
    let b = load_bias(n);
    for (var r = 0u; r < ROWS; r++) {
      if (r < params.M) {
        output[r * params.N + n] = partial[r * WORKGROUP + flat] + b;
      }
    }
  }
}
