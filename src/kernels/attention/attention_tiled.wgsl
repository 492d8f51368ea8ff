// Fused attention for many query rows and small heads (window attention: 144 queries and keys per window,
// head size 32): out = softmax(scale * Q K^T + mask) V with one query row per invocation and BQ rows per
// workgroup. The workgroup stages BKV keys and their values in workgroup memory, and every invocation runs
// its own online softmax over them (running max and sum in registers; no cross-invocation reduction, so one
// barrier pair per chunk instead of attention.wgsl's several per row). All invocations of a workgroup read
// the same K / V element at once: a broadcast, no bank conflicts.
//   HEAD_DIM = D and VALUE_DIM = Dv are compiled in (at most 64 each), so q and the accumulator live in
//   registers. Operands and batch decoding as in attention.wgsl (attention_common.wgsl).
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> mask: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;
@group(0) @binding(5) var<uniform> params: Params;

#include "attention/attention_common.wgsl"

const BQ: u32 = 64u;   // query rows per workgroup, one per invocation
const BKV: u32 = 32u;  // keys staged per chunk
const D: u32 = {{HEAD_DIM}}u;
const DV: u32 = {{VALUE_DIM}}u;

var<workgroup> k_tile: array<array<f32, D>, BKV>;
var<workgroup> v_tile: array<array<f32, DV>, BKV>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let blocks_per_matrix = (params.tq + BQ - 1u) / BQ;
  let block = linear_workgroup_index(wid, nwg);
  if (block >= blocks_per_matrix * (params.rows / params.tq)) {
    return;  // uniform: the whole workgroup leaves together
  }
  let batch = block / blocks_per_matrix;
  let i = (block % blocks_per_matrix) * BQ + lid;  // this invocation's query row
  let has_row = i < params.tq;
  let bases = attention_bases(batch);

  var q_row: array<f32, D>;
  if (has_row) {
    for (var c = 0u; c < D; c++) {
      q_row[c] = q[bases.q + i * params.q_row_stride + c] * params.scale;
    }
  }
  var acc: array<f32, DV>;
  var running_max = -3.4028234e38;
  var running_sum = 0.0;
  let m_base = bases.mask + i * params.mask_row_stride;

  for (var start = 0u; start < params.tk; start += BKV) {
    let n = min(BKV, params.tk - start);
    // Stage the chunk: 64 invocations copy n x D keys and n x Dv values (zeros past the last key).
    for (var e = lid; e < BKV * D; e += BQ) {
      let j = e / D;
      let c = e % D;
      var value = 0.0;
      if (j < n) {
#if K_TRANSPOSED
        value = k[bases.k + c * params.k_row_stride + start + j];
#else
        value = k[bases.k + (start + j) * params.k_row_stride + c];
#endif
      }
      k_tile[j][c] = value;
    }
    for (var e = lid; e < BKV * DV; e += BQ) {
      let j = e / DV;
      let c = e % DV;
      var value = 0.0;
      if (j < n) {
        value = v[bases.v + (start + j) * params.v_row_stride + c];
      }
      v_tile[j][c] = value;
    }
    workgroupBarrier();
    if (has_row) {
      var scores: array<f32, BKV>;
      var chunk_max = -3.4028234e38;
      for (var j = 0u; j < n; j++) {
        var s = 0.0;
        for (var c = 0u; c < D; c++) {
          s = fma(q_row[c], k_tile[j][c], s);
        }
        if (params.has_mask != 0u) {
          s += mask[m_base + (start + j) * params.mask_col_stride];
        }
        scores[j] = s;
        chunk_max = max(chunk_max, s);
      }
      let new_max = max(running_max, chunk_max);
      let correction = exp(running_max - new_max);
      running_sum *= correction;
      for (var c = 0u; c < DV; c++) {
        acc[c] *= correction;
      }
      for (var j = 0u; j < n; j++) {
        let p = exp(scores[j] - new_max);
        running_sum += p;
        for (var c = 0u; c < DV; c++) {
          acc[c] = fma(p, v_tile[j][c], acc[c]);
        }
      }
      running_max = new_max;
    }
    workgroupBarrier();  // the next chunk overwrites the tiles
  }
  if (has_row) {
    let out_base = bases.out + i * params.out_row_stride;
    for (var c = 0u; c < DV; c++) {
      output[out_base + c] = acc[c] / running_sum;
    }
  }
}
