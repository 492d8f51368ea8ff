// Matrix-vector products for a handful of rows (decoder steps: M = 1..8) against a weight stored [N, K]:
// out[b, m, n] = act(alpha * sum_k A[b, m, k] * B[b, n, k] + beta * C), bandwidth bound on B.
//
// A 256-invocation workgroup covers 256 / LANES columns; the LANES threads of a column stride through its row
// of B in vec4s (LANES * 16 contiguous bytes per step, so every fetched line is used whole), each keeping
// ROWS partial sums, four vec4s of B in flight per step. The partial sums of a column are then added in
// workgroup memory by a tree, and the column's first thread writes the M results through the GEMM epilogue.
// More LANES means fewer columns per workgroup: more workgroups for a narrow N, more reduction steps.
// A_VEC4 / B_VEC4 = 0 (K % 4 != 0) reads the same elements as scalars. SPLIT_OUTPUTS: the columns are
// written to the blocks of linear/column_split.wgsl.
// A_LAYER_NORM (a LayerNormalization taken into the product: graph::fuse_layer_norm_into_products, one
// matrix, batch 1): `a` is the LayerNormalization's X, normalised as linear/layer_norm_a.wgsl says; workgroup 0
// writes the normalised rows to `normalized`.
const ROWS: u32 = {{ROWS}}u;    // compile-time bound on M: 1, 2, 4 or 8
const LANES: u32 = {{LANES}}u;  // threads per column, a power of two from 4 to 256
const COLS: u32 = 256u / LANES;  // columns per workgroup

#include "linear/gemm_bindings.wgsl"

#include "linear/gemm_common.wgsl"
#if SPLIT_OUTPUTS
#include "linear/column_split.wgsl"
#endif

var<workgroup> partial: array<f32, ROWS * 256u>;  // [row][column][lane]

// A column's LANES lanes add their partial sums of every row (sum_column_lanes(flat, lane, LANES)).
#include "common/group_sums.wgsl" NAME=sum_column_lanes SLOTS=partial VALUES=ROWS STRIDE=256u

#if A_LAYER_NORM
const LN_THREADS: u32 = 256u;

// Batch 1 only (gemv_normalizes_a): row r of A starts at a_offset + r * K.
fn ln_x4(r: u32, k: u32) -> vec4<f32> {
  return fetch_a(params.a_offset + r * params.K + k, k);
}
#include "linear/layer_norm_a.wgsl"
#endif

// Elements i .. i + 3 of A (one row's K run), zero past K; `k` is the first one's position in the row.
fn fetch_a(i: u32, k: u32) -> vec4<f32> {
#if A_VEC4
  return a[i / 4u];
#else
  var v = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
    if (k + j < params.K) {
      v[j] = a[i + j];
    }
  }
  return v;
#endif
}

// Elements k .. k + 3 of row r of A (at i), normalised with A_LAYER_NORM.
fn row_a(r: u32, i: u32, k: u32) -> vec4<f32> {
#if A_LAYER_NORM
  return layer_norm4(r, fetch_a(i, k), k);
#else
  return fetch_a(i, k);
#endif
}

fn fetch_b(i: u32, k: u32) -> vec4<f32> {
#if B_VEC4
#if B_F16
  return b_quad(i / 4u);
#else
  return b[i / 4u];
#endif
#else
  var v = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
    if (k + j < params.K) {
#if B_F16
      v[j] = b_elem(i + j);
#else
      v[j] = b[i + j];
#endif
    }
  }
  return v;
#endif
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) flat: u32) {
  let block_index = linear_workgroup_index(wid, nwg);
  if (block_index >= params.tiles_n * params.batch) {
    return;  // uniform: the whole workgroup leaves together
  }
  let batch = block_index / params.tiles_n;
  let lane = flat % LANES;
  let n = (block_index % params.tiles_n) * COLS + flat / LANES;
  let offsets = gemm_batch_offsets(batch);
  let k_quads = (params.K + 3u) / 4u;

#if A_LAYER_NORM
  layer_norm_statistics(flat, block_index == 0u);
#endif

  var acc: array<f32, ROWS>;
  if (n < params.N) {
    let b_row = offsets.y + n * params.K;
    var q = lane;
    // Four independent loads of B per step keep enough bytes in flight to stream the weight.
    for (; q + 3u * LANES < k_quads; q += 4u * LANES) {
      var bv: array<vec4<f32>, 4>;
      for (var u = 0u; u < 4u; u++) {
        let k = (q + u * LANES) * 4u;
        bv[u] = fetch_b(b_row + k, k);
      }
      for (var r = 0u; r < ROWS; r++) {
        if (r < params.M) {
          let a_row = offsets.x + r * params.K;
          for (var u = 0u; u < 4u; u++) {
            let k = (q + u * LANES) * 4u;
            acc[r] += dot(row_a(r, a_row + k, k), bv[u]);
          }
        }
      }
    }
    for (; q < k_quads; q += LANES) {
      let k = q * 4u;
      let bv = fetch_b(b_row + k, k);
      for (var r = 0u; r < ROWS; r++) {
        if (r < params.M) {
          acc[r] += dot(row_a(r, offsets.x + r * params.K + k, k), bv);
        }
      }
    }
  }

  for (var r = 0u; r < ROWS; r++) {
    partial[r * 256u + flat] = acc[r];
  }
  sum_column_lanes(flat, lane, LANES);

  if (lane == 0u && n < params.N) {
    let out_base = batch * params.M * params.N;
    for (var r = 0u; r < ROWS; r++) {
      if (r < params.M) {
        let at = out_base + r * params.N + n;
#if SPLIT_OUTPUTS
        store_split_column(batch * params.M + r, n, gemm_epilogue(partial[r * 256u + flat], r, n, at));
#else
        output[at] = gemm_epilogue(partial[r * 256u + flat], r, n, at);
#endif
      }
    }
  }
}
