enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
// Fused attention on subgroup matrices (tensor cores through WebGPU), for sessions that compute in f16:
// out = softmax(scale * Q K^T + mask) V with Q, K, V rounded to f16 as they are staged, the scores and the
// output accumulated in f32 (16x16x16 products), the softmax in f32 and its weights P rounded to f16 for P V.
// Each subgroup owns 16 query rows, SUBGROUPS of them a workgroup (one head's rows; the planner picks the
// count that wastes fewest padded rows per staged key). The keys are walked in chunks of KC (32 or 64, what
// workgroup memory allows), staged by the whole workgroup (K and V, zeros past Tk and past the head dims,
// which are padded to whole 16s; with VEC4 read 16 bytes at a time, the next chunk's loads in flight during
// this chunk's products), with an online softmax (running max and sum per row):
//   S = Q K^T            KC / 16 results of 16x16 per subgroup (K staged [key][c] is K^T read column-major)
//   scores -> P          two lanes per row, each over every other key: mask, chunk max (a shuffle joins the
//                        pair), P = exp(s - max) rounded to f16, and the row's accumulator rescaled in place
//   O += P V             the accumulators loaded from workgroup memory, multiplied, stored back
// O stays in workgroup memory between chunks so that the rescale is a lane's plain multiply (WGSL cannot
// address a subgroup matrix's elements). Values beyond f16's range saturate at +-65504 when staged.
// Operands, views, batch decoding and the mask's broadcast as in attention.wgsl (attention_common.wgsl);
// HEAD_DIM and VALUE_DIM (at most 64) are compiled in. VEC4 (no K_TRANSPOSED; head dims, row strides,
// offsets and batch strides multiples of 4): q, k and v are bound as vec4<f32>.
#interface

#include "attention/attention_common.wgsl"

const SG: u32 = {{SUBGROUPS}}u;  // subgroups per workgroup, 16 query rows each
const THREADS: u32 = SG * 32u;
const ROWS: u32 = SG * 16u;
const D: u32 = {{HEAD_DIM}}u;
const DV: u32 = {{VALUE_DIM}}u;
const D16: u32 = (D + 15u) / 16u * 16u;
const DV16: u32 = (DV + 15u) / 16u * 16u;
const KC: u32 = {{KEYS_PER_CHUNK}}u;  // keys per chunk: 32 or 64
// Row strides in workgroup memory: 16-byte aligned and not a multiple of 128 bytes (the matrix loads' bank
// conflicts; linear/gemm_matrix_f16.wgsl).
const KV_STRIDE: u32 = max(D16, DV16) + 8u;  // halves per staged key (and query) row
const P_STRIDE: u32 = KC + 8u;               // halves per row of P
const S_STRIDE: u32 = KC + 4u;               // floats per row of scores
const O_STRIDE: u32 = DV16 + 4u;             // floats per row of the accumulator
const V_BASE: u32 = KC * KV_STRIDE;
const NO_SCORE: f32 = -3.4028234e38;

// The chunk's K [KC][KV_STRIDE], then its V [KC][KV_STRIDE]; before the first chunk, the workgroup's Q rows.
var<workgroup> kv_s: array<f16, 2u * KC * KV_STRIDE>;
var<workgroup> p_s: array<f16, SG * 16u * P_STRIDE>;  // per subgroup: P [16][P_STRIDE]
var<workgroup> s_s: array<f32, SG * 16u * S_STRIDE>;  // per subgroup: scores [16][S_STRIDE]
var<workgroup> o_s: array<f32, SG * 16u * O_STRIDE>;  // per subgroup: the accumulator [16][O_STRIDE]

fn to_f16(v: f32) -> f16 {
  return f16(clamp(v, -65504.0, 65504.0));
}

// Four values rounded to f16 at kv_s[at ..].
fn put4(at: u32, v: vec4<f32>) {
  let h = vec4<f16>(clamp(v, vec4<f32>(-65504.0), vec4<f32>(65504.0)));
  kv_s[at] = h.x;
  kv_s[at + 1u] = h.y;
  kv_s[at + 2u] = h.z;
  kv_s[at + 3u] = h.w;
}

// The scores of the subgroup's 16 queries against the chunk's keys 16 jb .. 16 jb + 15: the sum over the
// head dim's 16-wide blocks of Q (left) times K^T (K's staged rows read column-major).
fn block_scores(jb: u32, ql0: subgroup_matrix_left<f16, 16, 16>, ql1: subgroup_matrix_left<f16, 16, 16>,
                ql2: subgroup_matrix_left<f16, 16, 16>,
                ql3: subgroup_matrix_left<f16, 16, 16>) -> subgroup_matrix_result<f32, 16, 16> {
  let base = jb * 16u * KV_STRIDE;
  var s = subgroupMatrixMultiplyAccumulate(
      ql0, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kv_s, base, true, KV_STRIDE),
      subgroup_matrix_result<f32, 16, 16>());
  if (D16 > 16u) {
    s = subgroupMatrixMultiplyAccumulate(
        ql1, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kv_s, base + 16u, true, KV_STRIDE), s);
  }
  if (D16 > 32u) {
    s = subgroupMatrixMultiplyAccumulate(
        ql2, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kv_s, base + 32u, true, KV_STRIDE), s);
  }
  if (D16 > 48u) {
    s = subgroupMatrixMultiplyAccumulate(
        ql3, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kv_s, base + 48u, true, KV_STRIDE), s);
  }
  return s;
}

// A chunk's K and V on their way into kv_s (zeros past Tk and in the head dims' padding). With VEC4 the
// workgroup's loads of the next chunk are issued before this chunk's products and stored after them, so
// their latency hides behind the products (WGSL has no asynchronous copy); otherwise put_chunk loads and
// stores element by element when it is called.
#if VEC4
const K_QUADS: u32 = KC * D16 / 4u;
const V_QUADS: u32 = KC * DV16 / 4u;
const K_LOADS: u32 = (K_QUADS + THREADS - 1u) / THREADS;
const V_LOADS: u32 = (V_QUADS + THREADS - 1u) / THREADS;

struct Chunk {
  k: array<vec4<f32>, K_LOADS>,
  v: array<vec4<f32>, V_LOADS>,
}

fn fetch_chunk(start: u32, lid: u32, k_base: u32, v_base: u32) -> Chunk {
  var chunk: Chunk;
  let n = min(KC, params.tk - start);
  for (var l = 0u; l < K_LOADS; l++) {
    let e = lid + l * THREADS;
    let j = e / (D16 / 4u);
    let c = (e % (D16 / 4u)) * 4u;
    if (e < K_QUADS && j < n && c < D) {
      chunk.k[l] = k[(k_base + (start + j) * params.k_row_stride + c) / 4u];
    }
  }
  for (var l = 0u; l < V_LOADS; l++) {
    let e = lid + l * THREADS;
    let j = e / (DV16 / 4u);
    let c = (e % (DV16 / 4u)) * 4u;
    if (e < V_QUADS && j < n && c < DV) {
      chunk.v[l] = v[(v_base + (start + j) * params.v_row_stride + c) / 4u];
    }
  }
  return chunk;
}

fn put_chunk(chunk: Chunk, lid: u32, k_base: u32, v_base: u32) {
  for (var l = 0u; l < K_LOADS; l++) {
    let e = lid + l * THREADS;
    if (e < K_QUADS) {
      put4((e / (D16 / 4u)) * KV_STRIDE + (e % (D16 / 4u)) * 4u, chunk.k[l]);
    }
  }
  for (var l = 0u; l < V_LOADS; l++) {
    let e = lid + l * THREADS;
    if (e < V_QUADS) {
      put4(V_BASE + (e / (DV16 / 4u)) * KV_STRIDE + (e % (DV16 / 4u)) * 4u, chunk.v[l]);
    }
  }
}
#else
struct Chunk {
  start: u32,
}

fn fetch_chunk(start: u32, lid: u32, k_base: u32, v_base: u32) -> Chunk {
  return Chunk(start);
}

fn put_chunk(chunk: Chunk, lid: u32, k_base: u32, v_base: u32) {
  let start = chunk.start;
  let n = min(KC, params.tk - start);
  for (var e = lid; e < KC * D16; e += THREADS) {
    let j = e / D16;
    let c = e % D16;
    var value = 0.0;
    if (j < n && c < D) {
#if K_TRANSPOSED
      value = k[k_base + c * params.k_row_stride + start + j];
#else
      value = k[k_base + (start + j) * params.k_row_stride + c];
#endif
    }
    kv_s[j * KV_STRIDE + c] = to_f16(value);
  }
  for (var e = lid; e < KC * DV16; e += THREADS) {
    let j = e / DV16;
    let c = e % DV16;
    var value = 0.0;
    if (j < n && c < DV) {
      value = v[v_base + (start + j) * params.v_row_stride + c];
    }
    kv_s[V_BASE + j * KV_STRIDE + c] = to_f16(value);
  }
}
#endif

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sid: u32,
        @builtin(subgroup_invocation_id) lane: u32) {
  let qb = query_block(wid, nwg, ROWS);
  if (qb.x >= params.rows / params.tq) {
    return;  // uniform: the whole workgroup leaves together
  }
  let q0 = qb.y;  // the workgroup's first query row
  let bases = attention_bases(qb.x);

  // Q's rows, scaled, into kv_s (zeros past Tq and D); the accumulators zeroed.
#if VEC4
  for (var e = lid; e < ROWS * D16 / 4u; e += THREADS) {
    let r = e / (D16 / 4u);
    let c = (e % (D16 / 4u)) * 4u;
    var value = vec4<f32>(0.0);
    if (q0 + r < params.tq && c < D) {
      value = q[(bases.q + (q0 + r) * params.q_row_stride + c) / 4u] * params.scale;
    }
    put4(r * KV_STRIDE + c, value);
  }
#else
  for (var e = lid; e < ROWS * D16; e += THREADS) {
    let r = e / D16;
    let c = e % D16;
    var value = 0.0;
    if (q0 + r < params.tq && c < D) {
      value = q[bases.q + (q0 + r) * params.q_row_stride + c] * params.scale;
    }
    kv_s[r * KV_STRIDE + c] = to_f16(value);
  }
#endif
  for (var e = lid; e < ROWS * O_STRIDE; e += THREADS) {
    o_s[e] = 0.0;
  }
  workgroupBarrier();
  let qbase = sid * 16u * KV_STRIDE;
  let ql0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&kv_s, qbase, false, KV_STRIDE);
  var ql1 = subgroup_matrix_left<f16, 16, 16>();
  var ql2 = subgroup_matrix_left<f16, 16, 16>();
  var ql3 = subgroup_matrix_left<f16, 16, 16>();
  if (D16 > 16u) {
    ql1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&kv_s, qbase + 16u, false, KV_STRIDE);
  }
  if (D16 > 32u) {
    ql2 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&kv_s, qbase + 32u, false, KV_STRIDE);
  }
  if (D16 > 48u) {
    ql3 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&kv_s, qbase + 48u, false, KV_STRIDE);
  }
  workgroupBarrier();  // the chunks overwrite kv_s

  let sbase = sid * 16u * S_STRIDE;
  let pbase = sid * 16u * P_STRIDE;
  let obase = sid * 16u * O_STRIDE;
  let row = lane / 2u;  // this lane's row of the subgroup's 16, and which of its keys (every other one)
  let half = lane % 2u;
  let i = q0 + sid * 16u + row;  // its query row
  let m_base = bases.mask + i * params.mask_row_stride;
  var running_max = NO_SCORE;  // the row's, the same in both of its lanes
  var running_sum = 0.0;

  var chunk = fetch_chunk(0u, lid, bases.k, bases.v);
  put_chunk(chunk, lid, bases.k, bases.v);
  workgroupBarrier();
  for (var start = 0u; start < params.tk; start += KC) {
    let n = min(KC, params.tk - start);
    let more = start + KC < params.tk;
    if (more) {
      chunk = fetch_chunk(start + KC, lid, bases.k, bases.v);
    }

    // S = Q K^T, 16 keys at a time.
    subgroupMatrixStore(&s_s, sbase, block_scores(0u, ql0, ql1, ql2, ql3), false, S_STRIDE);
    subgroupMatrixStore(&s_s, sbase + 16u, block_scores(1u, ql0, ql1, ql2, ql3), false, S_STRIDE);
    if (KC > 32u) {
      subgroupMatrixStore(&s_s, sbase + 32u, block_scores(2u, ql0, ql1, ql2, ql3), false, S_STRIDE);
      subgroupMatrixStore(&s_s, sbase + 48u, block_scores(3u, ql0, ql1, ql2, ql3), false, S_STRIDE);
    }
    workgroupBarrier();  // WGSL has no subgroup-scope barrier: the lanes read what the matrix store wrote

    // The lane's KC / 2 keys (2t + half): masked, the chunk's max joined across the row's two lanes.
    var scores: array<f32, KC / 2u>;
    var chunk_max = NO_SCORE;
    for (var t = 0u; t < KC / 2u; t++) {
      let key = 2u * t + half;
      var s = s_s[sbase + row * S_STRIDE + key];
      if (key >= n) {
        s = NO_SCORE;
      } else if (params.has_mask != 0u && i < params.tq) {
        s += mask[m_base + (start + key) * params.mask_col_stride];
      }
      scores[t] = s;
      chunk_max = max(chunk_max, s);
    }
    chunk_max = max(chunk_max, subgroupShuffleXor(chunk_max, 1u));
    let new_max = max(running_max, chunk_max);
    let correction = exp(running_max - new_max);
    var chunk_sum = 0.0;
    for (var t = 0u; t < KC / 2u; t++) {
      let p = exp(scores[t] - new_max);  // 0 past the chunk's last key
      chunk_sum += p;
      p_s[pbase + row * P_STRIDE + 2u * t + half] = f16(p);
    }
    chunk_sum += subgroupShuffleXor(chunk_sum, 1u);
    running_sum = running_sum * correction + chunk_sum;
    running_max = new_max;
    for (var c = half; c < DV16; c += 2u) {
      o_s[obase + row * O_STRIDE + c] *= correction;
    }
    workgroupBarrier();

    // O += P V, 16 value columns at a time.
    for (var c = 0u; c < DV16; c += 16u) {
      var o = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&o_s, obase + c, false, O_STRIDE);
      for (var jb = 0u; jb < KC / 16u; jb++) {
        o = subgroupMatrixMultiplyAccumulate(
            subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&p_s, pbase + jb * 16u, false, P_STRIDE),
            subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kv_s, V_BASE + jb * 16u * KV_STRIDE + c, false,
                                                                   KV_STRIDE),
            o);
      }
      subgroupMatrixStore(&o_s, obase + c, o, false, O_STRIDE);
    }
    workgroupBarrier();  // every subgroup is done with kv_s; the lanes see o_s
    if (more) {
      put_chunk(chunk, lid, bases.k, bases.v);
    }
    workgroupBarrier();
  }

  if (i < params.tq) {
    let out_base = bases.out + i * params.out_row_stride;
    for (var c = half; c < DV; c += 2u) {
      output[out_base + c] = o_s[obase + row * O_STRIDE + c] / running_sum;
    }
  }
}
