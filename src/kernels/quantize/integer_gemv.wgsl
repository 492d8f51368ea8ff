// MatMulInteger and QLinearMatMul for a handful of rows (a decoder step's products: M <= 8, A's batch dims
// folded into M) against a constant B prepacked [N, ceil(K / 4)] words of four K-consecutive bytes
// (src/ops/integer_linear.cpp): the exact int32 sums of (a - a_zp)(b - b_zp), written through
// quantize/integer_epilogue.wgsl. Bandwidth bound on B, which is read once.
//
// The bytes are taken as unsigned: an int8 operand's byte with its top bit flipped is a' = a + 128 (A_FLIP /
// B_FLIP: the host flips B's bytes when it packs them, the kernel A's as it stages them), its zero point
// raised by the same 128 (params.a_offset, params.b_offset). With za, zb those zero points and K the reduction
// length,
//   sum_k (a'_k - za)(b'_k - zb) = sum_k a'_k b'_k - zb sum_k a'_k - za sum_k b'_k + K za zb,
// where sum_k b'_k is B's column sum (column_sums, from the host) and the other two sums come four bytes at a
// time (dot4U8Packed with PACKED_DOT, else byte by byte). All of it in u32 arithmetic modulo 2^32, so the
// result wraps exactly as the direct int32 sum does. Bytes past K are zero in A's staged words, so they add
// nothing whatever B's padding holds.
//
// QUANTIZE_A (MatMulInteger with wgi.quantize_a, graph::fuse_dynamic_quantization_into_products): A is the
// float32 tensor a DynamicQuantizeLinear would quantize. Each workgroup reduces its range (all M rows: one
// scale for the tensor), computes the scale and zero point as that op does (quantize/dynamic_scale.wgsl) and
// quantizes A's elements as it stages them (quantize/quantize_step.wgsl): the same bytes, scale and zero
// point, so the same sums, without the op's launch.
// A_LAYER_NORM (with QUANTIZE_A: a LayerNormalization before the quantization taken in too,
// graph::fuse_layer_norm_into_products): `a` is the LayerNormalization's X, normalised (linear/layer_norm_a.wgsl)
// before its range is reduced and as it is staged; workgroup 0 writes the normalised rows to `normalized`.
//
// A 128-invocation workgroup covers 128 / LANES columns, the LANES threads of a column striding through its
// words; A's rows are staged in workgroup memory CHUNK words at a time (every column of the workgroup reads
// them), packed four bytes a word. A column's partial sums meet in a tree in workgroup memory, and its first
// thread adds the zero-point terms and writes the M results.
#include "common/dispatch_grid.wgsl"
#include "quantize/unpack.wgsl"
#include "quantize/byte_dot.wgsl"
#if QUANTIZE_A
#include "quantize/dynamic_scale.wgsl"
#endif

#interface

#include "quantize/integer_epilogue.wgsl"

const ROWS: u32 = {{ROWS}}u;    // compile-time bound on M: 1, 2, 4 or 8
const LANES: u32 = {{LANES}}u;  // threads per column, a power of two from 4 to 64
const WORKGROUP: u32 = 128u;
const COLS: u32 = WORKGROUP / LANES;
const CHUNK: u32 = 1024u / ROWS;  // words of each row staged per step: 4 KiB of A

var<workgroup> a_words: array<u32, ROWS * CHUNK>;
#if QUANTIZE_A
const WG_SIZE: u32 = WORKGROUP;  // the range's tree (common/workgroup_reduce.wgsl): (min, max) pairs
var<workgroup> range_slots: array<vec2<f32>, WORKGROUP>;
#include "common/workgroup_reduce.wgsl" NAME=tree_range SLOTS=range_slots TYPE=vec2<f32> COMBINE="vec2<f32>(min(a.x, b.x), max(a.y, b.y))"
var<private> a_quantization: vec2<f32>;  // A's scale and zero point, the same in every invocation
#endif
var<workgroup> lane_sums: array<u32, ROWS * WORKGROUP>;  // [row][column][lane]
#include "common/group_sums.wgsl" NAME=sum_column_lanes SLOTS=lane_sums VALUES=ROWS STRIDE=WORKGROUP

#if QUANTIZE_A
// Elements k .. k + 3 of row r of the float A, zero past K.
fn a_x4(r: u32, k: u32) -> vec4<f32> {
  var v = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
    if (k + j < params.K) {
      v[j] = a[r * params.K + k + j];
    }
  }
  return v;
}

// Elements 4 w .. 4 w + 3 of row r of A as the product quantizes them: normalised with A_LAYER_NORM.
fn a_quad(r: u32, w: u32) -> vec4<f32> {
#if A_LAYER_NORM
  return layer_norm4(r, a_x4(r, 4u * w), 4u * w);
#else
  return a_x4(r, 4u * w);
#endif
}
#endif
#if A_LAYER_NORM
const LN_THREADS: u32 = WORKGROUP;
var<workgroup> partial: array<f32, ROWS * LN_THREADS>;  // the row statistics' sums

fn ln_x4(r: u32, k: u32) -> vec4<f32> {
  return a_x4(r, k);
}
#include "linear/layer_norm_a.wgsl"
#endif


// Word w of row r of A: elements 4 w .. 4 w + 3 (zero past K) as bytes, flipped to unsigned with A_FLIP.
fn a_word(r: u32, w: u32) -> u32 {
  var word = 0u;
#if QUANTIZE_A
  let v = a_quad(r, w);
#endif
  for (var j = 0u; j < 4u; j++) {
    let k = 4u * w + j;
    if (k < params.K) {
#if QUANTIZE_A
      var byte = u32(quantize_step(v[j], a_quantization.x, a_quantization.y, 0.0, params.levels));
#else
      var byte = u32(a[r * params.K + k]) & 0xFFu;
#endif
#if A_FLIP
      byte ^= 0x80u;
#endif
      word |= byte << (8u * j);
    }
  }
  return word;
}

@compute @workgroup_size(128, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) flat: u32) {
  let group = linear_workgroup_index(wid, nwg);
  if (group >= params.tiles) {
    return;  // uniform: the whole workgroup leaves together
  }
  let lane = flat % LANES;
  let n = group * COLS + flat / LANES;
  let read_n = min(n, params.N - 1u);  // columns past N (the last workgroup's) write nothing
  let zb = u32(b_zero_point[read_n * params.b_zp_stride]) + params.b_offset;

#if QUANTIZE_A
  // A's range, 0 included (DynamicQuantizeLinear's), NaNs skipped.
#if A_LAYER_NORM
  layer_norm_statistics(flat, group == 0u);
#endif
  var lo = 0.0;
  var hi = 0.0;
  let k_quads = (params.K + 3u) / 4u;
  for (var q = flat; q < params.M * k_quads; q += WORKGROUP) {
    let v = a_quad(q / k_quads, q % k_quads);
    for (var j = 0u; j < 4u; j++) {
      if (4u * (q % k_quads) + j < params.K && v[j] == v[j]) {
        lo = min(lo, v[j]);
        hi = max(hi, v[j]);
      }
    }
  }
  let range = tree_range(vec2<f32>(lo, hi), flat);
  a_quantization = dynamic_scale_and_zero_point(range.x, range.y, params.levels);
#endif

  var sums: array<u32, ROWS>;  // sum a' b' - zb sum a', per row
  for (var w_base = 0u; w_base < params.k_words; w_base += CHUNK) {  // uniform: the same steps everywhere
    workgroupBarrier();  // the previous chunk's reads are done
    let stage = min(CHUNK, params.k_words - w_base);
    for (var i = flat; i < ROWS * stage; i += WORKGROUP) {
      let r = i / stage;
      let w = i % stage;
      var word = 0u;  // rows past M (ROWS is a bound) are zeros, their A never read
      if (r < params.M) {
        word = a_word(r, w_base + w);
      }
      a_words[r * CHUNK + w] = word;
    }
    workgroupBarrier();
    for (var w = lane; w < stage; w += LANES) {
      let bw = b[read_n * params.k_words + w_base + w];
      for (var r = 0u; r < ROWS; r++) {
        let aw = a_words[r * CHUNK + w];
        sums[r] += byte_dot(aw, bw) - zb * byte_dot(aw, ONES);
      }
    }
  }

  for (var r = 0u; r < ROWS; r++) {
    lane_sums[r * WORKGROUP + flat] = sums[r];
  }
  sum_column_lanes(flat, lane, LANES);

  if (lane == 0u && n < params.N) {
    for (var r = 0u; r < ROWS; r++) {
      if (r < params.M) {
#if QUANTIZE_A
        let za = u32(a_quantization.y);
#else
        let za = u32(a_zero_point[r * params.a_zp_stride]) + params.a_offset;
#endif
        let acc = lane_sums[r * WORKGROUP + flat] - za * column_sums[n] + params.K * za * zb;
        store_integer_result(r * params.N + n, i32(acc), n);
      }
    }
  }
}
