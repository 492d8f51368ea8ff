// Weight-only quantized GEMM for many rows (encoders: M = tokens, batch dims folded into M): a 32x32 output
// tile per 8x8 workgroup, each thread a 4x4 register tile accumulated in f32. Per 32-deep slab of K, the
// workgroup stages A's 32x32 block and dequantises B's 32x32 block into workgroup memory once (each packed
// word by one thread, see quantized_common.wgsl), so every dequantised weight is reused by 32 rows.
// Any M, N, K: rows, columns and codes past the edges are zero-filled.
const TILE: u32 = 32u;
const RPT: u32 = 4u;  // rows / columns per thread
const THREADS: u32 = 64u;

#include "linear/quantized_common.wgsl"

const WORDS_PER_SLAB: u32 = TILE / CODES_PER_WORD;  // packed words of one column per slab

var<workgroup> a_tile: array<array<f32, TILE>, TILE>;  // [m][k]
var<workgroup> w_tile: array<array<f32, TILE>, TILE>;  // [k][n]

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>, @builtin(local_invocation_index) flat: u32) {
  let tile = linear_workgroup_index(wid, nwg);
  if (tile >= params.tiles_m * params.tiles_n) {
    return;  // uniform: the whole workgroup leaves together
  }
  let row0 = (tile / params.tiles_n) * TILE;
  let col0 = (tile % params.tiles_n) * TILE;

  var acc: array<array<f32, RPT>, RPT>;
  for (var k0 = 0u; k0 < params.K; k0 += TILE) {
    for (var i = 0u; i < TILE * TILE / THREADS; i++) {
      let e = flat + i * THREADS;
      let r = e / TILE;
      let c = e % TILE;
      let m = row0 + r;
      let k = k0 + c;
      var v = 0.0;
      if (m < params.M && k < params.K) {
        v = a[m * params.K + k];
      }
      a_tile[r][c] = v;
    }
    for (var e = flat; e < TILE * WORDS_PER_SLAB; e += THREADS) {
      let c = e / WORDS_PER_SLAB;
      let kk = (e % WORDS_PER_SLAB) * CODES_PER_WORD;
      let n = col0 + c;
      var weights: array<f32, CODES_PER_WORD>;
      if (n < params.N) {
        weights = dequantize_word(n, k0 + kk);
      }
      for (var i = 0u; i < CODES_PER_WORD; i++) {
        w_tile[kk + i][c] = weights[i];
      }
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TILE; kk++) {
      var w: array<f32, RPT>;
      for (var j = 0u; j < RPT; j++) {
        w[j] = w_tile[kk][lid.x + 8u * j];
      }
      for (var i = 0u; i < RPT; i++) {
        let av = a_tile[lid.y + 8u * i][kk];
        for (var j = 0u; j < RPT; j++) {
          acc[i][j] += av * w[j];
        }
      }
    }
    workgroupBarrier();
  }

  for (var j = 0u; j < RPT; j++) {
    let n = col0 + lid.x + 8u * j;
    if (n < params.N) {
      let b = load_bias(n);
      for (var i = 0u; i < RPT; i++) {
        let m = row0 + lid.y + 8u * i;
        if (m < params.M) {
          output[m * params.N + n] = quantized_epilogue(acc[i][j], m, n, b);
        }
      }
    }
  }
}
