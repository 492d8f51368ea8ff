// Batched 2-D transpose, in[b, m, n] -> out[b, n, m], through a 32x32 tile in workgroup memory so that both
// the reads and the writes are contiguous along a row. 32x8 invocations, 4 rows each. The tile row is padded
// to 33 words so that reading a tile column does not hit one memory bank 32 times.
#include "common/dispatch_grid.wgsl"

const TILE: u32 = 32u;
const ROWS: u32 = 8u;

#interface

var<workgroup> tile: array<array<u32, 33>, 32>;

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let t = linear_workgroup_index(wid, nwg);
  // Not an early return: every invocation must reach the barrier.
  let valid = t < params.tile_count;
  let tn = t % params.tiles_n;
  let tm = (t / params.tiles_n) % params.tiles_m;
  let b = t / (params.tiles_n * params.tiles_m);
  let base = b * params.rows * params.cols;
  let col = tn * TILE + lid.x;
  for (var j = 0u; j < TILE; j += ROWS) {
    let row = tm * TILE + lid.y + j;
    if (valid && row < params.rows && col < params.cols) {
      tile[lid.y + j][lid.x] = source[base + row * params.cols + col];
    }
  }
  workgroupBarrier();
  // Output row = input column, output column = input row.
  let out_col = tm * TILE + lid.x;
  for (var j = 0u; j < TILE; j += ROWS) {
    let out_row = tn * TILE + lid.y + j;
    if (valid && out_row < params.cols && out_col < params.rows) {
      destination[base + out_row * params.rows + out_col] = tile[lid.x][lid.y + j];
    }
  }
}
