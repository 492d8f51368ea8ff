// Fused attention for many query rows and small heads (window attention: 144 queries and keys per window,
// head size 32): out = softmax(scale * Q K^T + mask) V with one query row per invocation and BQ rows per
// workgroup. The workgroup stages BKV keys (KEYS_PER_CHUNK, from src/ops/attention.cpp) and their values in
// workgroup memory, and every invocation runs its own online softmax over them (running max and sum in
// registers; no cross-invocation reduction, so one barrier pair per chunk instead of attention.wgsl's
// several per row). All invocations of a workgroup read the same K / V element at once: a broadcast, no bank
// conflicts.
// - BQ (a multiple of 32, at most 256) covers a head's queries in one workgroup where they fit, so its keys
//   and values are staged once per head, not once per 64 queries (DaViT: 144 queries, BQ 160).
// - Head dims are padded to whole vec4s (D4, DV4: zeros), so a workgroup-memory read serves four FMAs, and
//   a chunk's scores loop runs to the constant BKV (keys past Tk score -3.4e38, weight 0): unrolled, the
//   scores stay in registers (with the chunk's key count as the bound they went to local memory).
//   HEAD_DIM = D and VALUE_DIM = Dv are compiled in (at most 64 each), so q and the accumulator live in
//   registers. Operands and batch decoding as in attention.wgsl (attention_common.wgsl).
#interface

#include "attention/attention_common.wgsl"

const BQ: u32 = {{QUERIES_PER_WORKGROUP}}u;  // query rows per workgroup, one per invocation
const BKV: u32 = {{KEYS_PER_CHUNK}}u;         // keys staged per chunk
const D: u32 = {{HEAD_DIM}}u;
const DV: u32 = {{VALUE_DIM}}u;
const D4: u32 = max((D + 3u) / 4u, 1u);  // vec4s per key row, zero-padded (a head of size 0: one of zeros)
const DV4: u32 = (DV + 3u) / 4u;  // DV >= 1: an empty V plans no launch
const NO_SCORE: f32 = -3.4028234e38;

var<workgroup> k_tile: array<array<vec4<f32>, D4>, BKV>;
var<workgroup> v_tile: array<array<vec4<f32>, DV4>, BKV>;

// K's element (key start + j, head dim c) of the matrix at `base`; 0 past the chunk's n keys and past D. The
// staging builds each vec4 from four of these (rather than writing a vector's components by a loop index).
fn key_element(base: u32, start: u32, j: u32, c: u32, n: u32) -> f32 {
  if (j >= n || c >= D) {
    return 0.0;
  }
#if K_TRANSPOSED
  return k[base + c * params.k_row_stride + start + j];
#else
  return k[base + (start + j) * params.k_row_stride + c];
#endif
}

// V's likewise; 0 past the chunk's n keys and past Dv.
fn value_element(base: u32, start: u32, j: u32, c: u32, n: u32) -> f32 {
  if (j >= n || c >= DV) {
    return 0.0;
  }
  return v[base + (start + j) * params.v_row_stride + c];
}

@compute @workgroup_size(BQ)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let qb = query_block(wid, nwg, BQ);
  if (qb.x >= params.rows / params.tq) {
    return;  // uniform: the whole workgroup leaves together
  }
  let i = qb.y + lid;  // this invocation's query row
  let has_row = i < params.tq;
  let bases = attention_bases(qb.x);

  var q_row: array<vec4<f32>, D4>;
  if (has_row) {
    for (var c = 0u; c < D; c++) {
      q_row[c / 4u][c % 4u] = q[bases.q + i * params.q_row_stride + c] * params.scale;
    }
  }
  var acc: array<vec4<f32>, DV4>;
  var running_max = NO_SCORE;
  var running_sum = 0.0;
  let m_base = bases.mask + i * params.mask_row_stride;

  for (var start = 0u; start < params.tk; start += BKV) {
    let n = min(BKV, params.tk - start);
    // Stage the chunk: BQ invocations copy n x D keys and n x Dv values, zeros past the last key and in the
    // padding.
    for (var e = lid; e < BKV * D4; e += BQ) {
      let j = e / D4;
      let c0 = (e % D4) * 4u;
      let kb = bases.k;
      k_tile[j][c0 / 4u] = vec4<f32>(key_element(kb, start, j, c0, n), key_element(kb, start, j, c0 + 1u, n),
                                     key_element(kb, start, j, c0 + 2u, n), key_element(kb, start, j, c0 + 3u, n));
    }
    for (var e = lid; e < BKV * DV4; e += BQ) {
      let j = e / DV4;
      let c0 = (e % DV4) * 4u;
      let vb = bases.v;
      v_tile[j][c0 / 4u] = vec4<f32>(value_element(vb, start, j, c0, n), value_element(vb, start, j, c0 + 1u, n),
                                     value_element(vb, start, j, c0 + 2u, n),
                                     value_element(vb, start, j, c0 + 3u, n));
    }
    workgroupBarrier();
    if (has_row) {
      var scores: array<f32, BKV>;
      var chunk_max = NO_SCORE;
      for (var j = 0u; j < BKV; j++) {
        // Four independent FMA chains (a dot per vec4 then an add would be five dependent instructions).
        var d = vec4<f32>(0.0);
        for (var c = 0u; c < D4; c++) {
          d = fma(q_row[c], k_tile[j][c], d);
        }
        var s = (d.x + d.y) + (d.z + d.w);
        if (j >= n) {
          s = NO_SCORE;
        } else if (params.has_mask != 0u) {
          s += mask[m_base + (start + j) * params.mask_col_stride];
        }
        scores[j] = s;
        chunk_max = max(chunk_max, s);
      }
      let new_max = max(running_max, chunk_max);
      let correction = exp(running_max - new_max);
      running_sum *= correction;
      for (var c = 0u; c < DV4; c++) {
        acc[c] *= correction;
      }
      for (var j = 0u; j < BKV; j++) {
        let p = exp(scores[j] - new_max);  // 0 past the last key
        running_sum += p;
        for (var c = 0u; c < DV4; c++) {
          acc[c] = fma(vec4<f32>(p), v_tile[j][c], acc[c]);
        }
      }
      running_max = new_max;
    }
    workgroupBarrier();  // the next chunk overwrites the tiles
  }
  if (has_row) {
    let out_base = bases.out + i * params.out_row_stride;
    for (var c = 0u; c < DV; c++) {
      output[out_base + c] = acc[c / 4u][c % 4u] / running_sum;
    }
  }
}
