// The seeds' scalar tiled GEMM (the correctness baseline and the always-available fallback): a 32x32 output
// tile per 8x8 workgroup, each thread a 4x4 register tile, A and B tiles staged in workgroup memory so every
// loaded value is reused 32 times. Any M, N, K (edges are zero-filled), A as [M,K] or [K,M] (A_KM), B as
// [N,K] (B_NK) or [K,N].
// SPLIT_K: for few output tiles and a long K, which would leave most of the GPU idle. Workgroups also split K
// into params.k_splits chunks (whole tiles each) and write raw partial sums, chunk-major
// ([split][batch][M][N]); gemm_split_reduce.wgsl adds them and applies the epilogue.
const TILE: u32 = 32u;
const RPT: u32 = 4u;  // rows / columns per thread

#interface
#if B_F16
#include "linear/gemm_b_f16.wgsl"
#endif

#include "linear/gemm_common.wgsl"

var<workgroup> a_tile: array<array<f32, TILE>, TILE>;  // [m][k]
var<workgroup> b_tile: array<array<f32, TILE>, TILE>;  // [k][n]

fn load_a(base: u32, m: u32, k: u32, k_end: u32) -> f32 {
  if (m >= params.M || k >= k_end) {
    return 0.0;
  }
#if A_KM
  return a[base + k * params.M + m];
#else
  return a[base + m * params.K + k];
#endif
}

fn load_b(base: u32, k: u32, n: u32, k_end: u32) -> f32 {
  if (k >= k_end || n >= params.N) {
    return 0.0;
  }
#if B_F16
#if B_NK
  return b_elem(base + n * params.K + k);
#else
  return b_elem(base + k * params.N + n);
#endif
#else
#if B_NK
  return b[base + n * params.K + k];
#else
  return b[base + k * params.N + n];
#endif
#endif
}

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>, @builtin(local_invocation_index) flat: u32) {
  let tile_index = linear_workgroup_index(wid, nwg);
#if SPLIT_K
  let splits = params.k_splits;
#else
  let splits = 1u;
#endif
  let coords = gemm_tile_coords(tile_index, splits);
  if (coords.x >= splits) {
    return;  // uniform: the whole workgroup leaves together
  }
  let split = coords.x;
  let batch = coords.y;
  let in_matrix = coords.z;
  let row0 = (in_matrix / params.tiles_n) * TILE;
  let col0 = (in_matrix % params.tiles_n) * TILE;
  let offsets = gemm_batch_offsets(batch);

  var acc: array<array<f32, RPT>, RPT>;
  let k_tiles = (params.K + TILE - 1u) / TILE;
  let tiles_per_chunk = (k_tiles + splits - 1u) / splits;
  let k_end = min(params.K, (split + 1u) * tiles_per_chunk * TILE);
  for (var t = split * tiles_per_chunk; t < min(k_tiles, (split + 1u) * tiles_per_chunk); t++) {
    let k0 = t * TILE;
    // 64 threads load the 1024 elements of each tile, 16 each.
    for (var i = 0u; i < 16u; i++) {
      let e = flat + i * 64u;
      let r = e / TILE;
      let c = e % TILE;
      a_tile[r][c] = load_a(offsets.x, row0 + r, k0 + c, k_end);
      b_tile[r][c] = load_b(offsets.y, k0 + r, col0 + c, k_end);
    }
    workgroupBarrier();
    for (var k = 0u; k < TILE; k++) {
      var a_reg: array<f32, RPT>;
      var b_reg: array<f32, RPT>;
      for (var i = 0u; i < RPT; i++) {
        a_reg[i] = a_tile[lid.y * RPT + i][k];
        b_reg[i] = b_tile[k][lid.x * RPT + i];
      }
      for (var i = 0u; i < RPT; i++) {
        for (var j = 0u; j < RPT; j++) {
          acc[i][j] = fma(a_reg[i], b_reg[j], acc[i][j]);
        }
      }
    }
    workgroupBarrier();
  }

  let out_base = (split * params.batch + batch) * params.M * params.N;
  for (var i = 0u; i < RPT; i++) {
    let m = row0 + lid.y * RPT + i;
    for (var j = 0u; j < RPT; j++) {
      let n = col0 + lid.x * RPT + j;
      if (m < params.M && n < params.N) {
#if SPLIT_K
        output[out_base + m * params.N + n] = acc[i][j];
#else
        output[out_base + m * params.N + n] = gemm_epilogue(acc[i][j], m, n, out_base + m * params.N + n);
#endif
      }
    }
  }
}
