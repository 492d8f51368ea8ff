// The seeds' vec4 GEMM, for K % 4 == 0 with A as [M,K] and B as [N,K] (K contiguous in both): A and B are
// read as vec4 over K (16-byte loads), tiles are [32][8] vec4s, and the inner product is dot(). Same tiling
// as gemm_tiled.wgsl: 32x32 output per 8x8 workgroup, 4x4 per thread.
const TILE: u32 = 32u;
const TILE4: u32 = 8u;  // TILE / 4 vec4s along K
const RPT: u32 = 4u;

#interface
#if B_F16
#include "linear/gemm_b_f16.wgsl"
#endif

#include "linear/gemm_common.wgsl"

var<workgroup> a_tile: array<array<vec4<f32>, TILE4>, TILE>;  // [m][k/4]
var<workgroup> b_tile: array<array<vec4<f32>, TILE4>, TILE>;  // [n][k/4]

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>, @builtin(local_invocation_index) flat: u32) {
  let tile_index = linear_workgroup_index(wid, nwg);
  let tiles_per_matrix = params.tiles_n * params.tiles_m;
  if (tile_index >= tiles_per_matrix * params.batch) {
    return;
  }
  let batch = tile_index / tiles_per_matrix;
  let in_matrix = tile_index % tiles_per_matrix;
  let row0 = (in_matrix / params.tiles_n) * TILE;
  let col0 = (in_matrix % params.tiles_n) * TILE;
  let offsets = gemm_batch_offsets(batch) / 4u;  // batch strides are multiples of K, hence of 4
  let K4 = params.K / 4u;

  var acc: array<array<f32, RPT>, RPT>;
  let k_tiles = (K4 + TILE4 - 1u) / TILE4;
  for (var t = 0u; t < k_tiles; t++) {
    let k40 = t * TILE4;
    // 256 vec4s per tile, 4 per thread.
    for (var i = 0u; i < 4u; i++) {
      let e = flat + i * 64u;
      let r = e / TILE4;
      let c = e % TILE4;
      let k4 = k40 + c;
      var av = vec4<f32>(0.0);
      var bv = vec4<f32>(0.0);
      if (row0 + r < params.M && k4 < K4) {
        av = a[offsets.x + (row0 + r) * K4 + k4];
      }
      if (col0 + r < params.N && k4 < K4) {
#if B_F16
        bv = b_quad(offsets.y + (col0 + r) * K4 + k4);
#else
        bv = b[offsets.y + (col0 + r) * K4 + k4];
#endif
      }
      a_tile[r][c] = av;
      b_tile[r][c] = bv;
    }
    workgroupBarrier();
    for (var k = 0u; k < TILE4; k++) {
      for (var i = 0u; i < RPT; i++) {
        let av = a_tile[lid.y * RPT + i][k];
        for (var j = 0u; j < RPT; j++) {
          acc[i][j] += dot(av, b_tile[lid.x * RPT + j][k]);
        }
      }
    }
    workgroupBarrier();
  }

  let out_base = batch * params.M * params.N;
  for (var i = 0u; i < RPT; i++) {
    let m = row0 + lid.y * RPT + i;
    for (var j = 0u; j < RPT; j++) {
      let n = col0 + lid.x * RPT + j;
      if (m < params.M && n < params.N) {
        output[out_base + m * params.N + n] = gemm_epilogue(acc[i][j], m, n, out_base + m * params.N + n);
      }
    }
  }
}
