// Fused attention, out = softmax(scale * Q K^T + mask) V, one workgroup per query row (attention_tiled.wgsl
// is the variant for many query rows and small heads). The keys are visited in
// chunks with an online softmax (running max and sum, accumulator rescaled when the max grows), so the
// [Tq, Tk] score matrix is never written to memory and any Tk works. SPLIT_KEYS (few rows over many keys: a
// decoder step's one query per head): params.key_splits workgroups per row, each over its part of the keys,
// write their unnormalised sums, maximum and sum for attention_combine.wgsl instead of the output.
//   Q [batch..., Tq, D]; K [batch..., Tk, D], or with K_TRANSPOSED [batch..., D, Tk]; V [batch..., Tk, Dv];
//   mask (optional, additive) broadcast to [batch..., Tq, Tk]; out [batch..., Tq, Dv].
// Batch dims are decoded from the output's (up to 4) with per-operand strides, 0 where an operand broadcasts;
// Q, K, V and the output are strided views (offset, row stride; attention_common.wgsl).
#interface

#include "attention/attention_common.wgsl"

const WG_SIZE: u32 = 64u;
const CHUNK: u32 = 256u;
const MAX_DV_PER_THREAD: u32 = 8u;  // Dv <= 512

var<workgroup> chunk_scores: array<f32, CHUNK>;
// One scratch array per reduction: on Dawn's GL ES backend with Mesa llvmpipe, reusing one array for the max
// and then the sum gave wrong results (a read of the first result appears to move past the barrier that
// follows it); separate arrays are correct everywhere.
var<workgroup> max_scratch: array<f32, WG_SIZE>;
var<workgroup> sum_scratch: array<f32, WG_SIZE>;

#include "common/workgroup_reduce.wgsl" NAME=tree_max SLOTS=max_scratch TYPE=f32 COMBINE="max(a, b)"
#include "common/workgroup_reduce.wgsl" NAME=tree_sum SLOTS=sum_scratch TYPE=f32 COMBINE="a + b"

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let part = linear_workgroup_index(wid, nwg);  // row * key_splits + split
  let row = part / params.key_splits;
  if (row >= params.rows) {
    return;  // uniform: the whole workgroup leaves together
  }
  // The keys of this workgroup: all of them, or with SPLIT_KEYS its split's (never none).
  let key_begin = (part % params.key_splits) * params.keys_per_split;
  let key_end = min(params.tk, key_begin + params.keys_per_split);
  let i = row % params.tq;
  let bases = attention_bases(row / params.tq);
  let q_base = bases.q + i * params.q_row_stride;
  let k_base = bases.k;
  let v_base = bases.v;
  let m_base = bases.mask + i * params.mask_row_stride;

  var running_max = -3.4028234e38;
  var running_sum = 0.0;
  var acc: array<f32, MAX_DV_PER_THREAD>;
  for (var start = key_begin; start < key_end; start += CHUNK) {
    let n = min(CHUNK, key_end - start);
    var local_max = -3.4028234e38;
    for (var jj = lid; jj < n; jj += WG_SIZE) {
      let j = start + jj;
      var s = 0.0;
      for (var c = 0u; c < params.d; c++) {
#if K_TRANSPOSED
        s = fma(q[q_base + c], k[k_base + c * params.k_row_stride + j], s);
#else
        s = fma(q[q_base + c], k[k_base + j * params.k_row_stride + c], s);
#endif
      }
      s = s * params.scale;
      if (params.has_mask != 0u) {
        s += mask[m_base + j * params.mask_col_stride];
      }
      chunk_scores[jj] = s;
      local_max = max(local_max, s);
    }
    let chunk_max = tree_max(local_max, lid);
    workgroupBarrier();  // every invocation has read the maximum before the next chunk writes max_scratch
    let new_max = max(running_max, chunk_max);
    let correction = exp(running_max - new_max);
    var local_sum = 0.0;
    for (var jj = lid; jj < n; jj += WG_SIZE) {
      let p = exp(chunk_scores[jj] - new_max);
      chunk_scores[jj] = p;
      local_sum += p;
    }
    let chunk_sum = tree_sum(local_sum, lid);
    // Every invocation has read the sum before the next chunk writes sum_scratch, and every probability of
    // the chunk is in chunk_scores.
    workgroupBarrier();
    running_sum = running_sum * correction + chunk_sum;
    running_max = new_max;
    for (var slot = 0u; slot < MAX_DV_PER_THREAD; slot++) {
      let c = lid + slot * WG_SIZE;
      if (c < params.dv) {
        var a = acc[slot] * correction;
        for (var jj = 0u; jj < n; jj++) {
          a = fma(chunk_scores[jj], v[v_base + (start + jj) * params.v_row_stride + c], a);
        }
        acc[slot] = a;
      }
    }
    workgroupBarrier();  // chunk_scores is overwritten by the next chunk
  }
#if SPLIT_KEYS
  // This part's sums unnormalised, [rows * key_splits][Dv], then its running maximum and sum after all the
  // parts' sums (attention_combine.wgsl adds the parts up).
  let parts = params.rows * params.key_splits;
  for (var slot = 0u; slot < MAX_DV_PER_THREAD; slot++) {
    let c = lid + slot * WG_SIZE;
    if (c < params.dv) {
      output[part * params.dv + c] = acc[slot];
    }
  }
  if (lid == 0u) {
    output[parts * params.dv + part] = running_max;
    output[parts * (params.dv + 1u) + part] = running_sum;
  }
#else
  let out_base = bases.out + i * params.out_row_stride;
  for (var slot = 0u; slot < MAX_DV_PER_THREAD; slot++) {
    let c = lid + slot * WG_SIZE;
    if (c < params.dv) {
      output[out_base + c] = acc[slot] / running_sum;
    }
  }
#endif
}
