// MatMulInteger and QLinearMatMul (src/ops/integer_linear.cpp): output[b] = (A[b] - a_zp) (B[b] - b_zp) with
// exact int32 accumulation (wrapping like ONNX Runtime's int32 on overflow), written as int32 or, with QLINEAR,
// requantized to 8 bits, or with SCALED rescaled to float32 (quantize/integer_epilogue.wgsl). A is [M, K] per
// batch, widened to 32 bits per element as the device stores 8-bit
// tensors; B is a constant prepacked [N, ceil(K / 4)] words of four K-consecutive bytes (B_PACKED) or a
// runtime [K, N] widened tensor. a_zp is per tensor (stride 0) or per row of A, b_zp per tensor or per column.
// Each batch's element offsets into A and B come from a small table (numpy broadcasting resolved when
// planned). A 32 x 32 output tile per workgroup of 8 x 8 invocations, 4 x 4 outputs each, K in slabs of 32.
// With a constant B (B_PACKED) the tile's operands stay packed four bytes a word in workgroup memory, taken
// as unsigned bytes (A_FLIP flips an int8 A's top bit as it is staged; the host packed an int8 B flipped), and
// an invocation's 4 x 4 sums come from byte_dot (dot4U8Packed where the device has it): with za, zb the zero
// points raised by those 128s (params.a_offset, params.b_offset) and K the reduction length,
//   sum_k (a'_k - za)(b'_k - zb) = sum_k a'_k b'_k - zb sum_k a'_k - za sum_k b'_k + K za zb,
// the row and column sums also from byte_dot, all in u32 arithmetic modulo 2^32 (integer_gemv.wgsl's scheme;
// bytes past K or M / N are zero). A runtime B is read widened, element by element, zero points subtracted.
#include "quantize/unpack.wgsl"
#include "quantize/byte_dot.wgsl"

#interface

#include "quantize/integer_epilogue.wgsl"

const TM: u32 = 32u;
const TN: u32 = 32u;
const TK: u32 = 32u;

#if B_PACKED
const TKW: u32 = TK / 4u;                      // words of K per slab
var<workgroup> a_words: array<u32, TM * TKW>;  // [TM][TKW] unsigned bytes, 0 outside A
var<workgroup> b_words: array<u32, TN * TKW>;  // [TN][TKW] unsigned bytes, 0 outside B

// Stages word w0 + idx % TKW of row / column idx / TKW of the tile (4 per invocation: 256 words each).
fn stage_packed(a_base: u32, b_base: u32, row0: u32, col0: u32, w0: u32, li: u32) {
  for (var e = 0u; e < 4u; e++) {
    let idx = li + 64u * e;
    let r = row0 + idx / TKW;
    let w = w0 + idx % TKW;
    var word = 0u;
    if (r < params.M && w < params.k_words) {
      for (var j = 0u; j < 4u; j++) {
        let kk = 4u * w + j;
        if (kk < params.K) {
          var byte = u32(a[a_base + r * params.K + kk]) & 0xFFu;
#if A_FLIP
          byte ^= 0x80u;
#endif
          word |= byte << (8u * j);
        }
      }
    }
    a_words[idx] = word;
    let c = col0 + idx / TKW;
    var b_word = 0u;
    if (c < params.N && w < params.k_words) {
      b_word = b[b_base + c * params.k_words + w];
    }
    b_words[idx] = b_word;
  }
}
#else
var<workgroup> a_tile: array<i32, 1024>;  // [TM][TK], zero point subtracted, 0 outside A
var<workgroup> b_tile: array<i32, 1024>;  // [TK][TN], zero point subtracted, 0 outside B

// Stages the slab at k0 of the tile, widened, zero points subtracted (16 elements of each per invocation).
fn stage_widened(a_base: u32, b_base: u32, row0: u32, col0: u32, k0: u32, li: u32) {
  for (var e = 0u; e < 16u; e++) {
    let idx = li + 64u * e;
    let r = row0 + idx / TK;
    let kk = k0 + idx % TK;
    var v = 0;
    if (r < params.M && kk < params.K) {
      v = a[a_base + r * params.K + kk] - a_zero_point[r * params.a_zp_stride];
    }
    a_tile[idx] = v;
  }
  for (var e = 0u; e < 16u; e++) {
    let idx = li + 64u * e;
    let kk = k0 + idx / TN;
    let c = col0 + idx % TN;
    var v = 0;
    if (kk < params.K && c < params.N) {
      v = b[b_base + kk * params.N + c] - b_zero_point[c * params.b_zp_stride];
    }
    b_tile[idx] = v;
  }
}
#endif

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let a_base = batch_offsets[2u * wid.z];
  let b_base = batch_offsets[2u * wid.z + 1u];
  let row0 = wid.y * TM;
  let col0 = wid.x * TN;
#if B_PACKED
  var acc: array<vec4<u32>, 4>;  // sum a' b': rows 4 lid.y + i, columns 4 lid.x .. + 3
  var row_sums = vec4<u32>(0u);  // sum a' of the four rows
  var col_sums = vec4<u32>(0u);  // sum b' of the four columns
  for (var w0 = 0u; w0 < params.k_words; w0 += TKW) {
    stage_packed(a_base, b_base, row0, col0, w0, li);
    workgroupBarrier();
    for (var w = 0u; w < TKW; w++) {
      var bw: vec4<u32>;
      for (var j = 0u; j < 4u; j++) {
        bw[j] = b_words[(4u * lid.x + j) * TKW + w];
        col_sums[j] += byte_dot(bw[j], ONES);
      }
      for (var i = 0u; i < 4u; i++) {
        let aw = a_words[(4u * lid.y + i) * TKW + w];
        row_sums[i] += byte_dot(aw, ONES);
        acc[i] += vec4<u32>(byte_dot(aw, bw[0]), byte_dot(aw, bw[1]), byte_dot(aw, bw[2]), byte_dot(aw, bw[3]));
      }
    }
    workgroupBarrier();
  }
#else
  var acc: array<vec4<i32>, 4>;  // rows 4 lid.y + i, columns 4 lid.x .. + 3
  for (var k0 = 0u; k0 < params.K; k0 += TK) {
    stage_widened(a_base, b_base, row0, col0, k0, li);
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      let b0 = kk * TN + 4u * lid.x;
      let bv = vec4<i32>(b_tile[b0], b_tile[b0 + 1u], b_tile[b0 + 2u], b_tile[b0 + 3u]);
      for (var i = 0u; i < 4u; i++) {
        acc[i] += a_tile[(4u * lid.y + i) * TK + kk] * bv;
      }
    }
    workgroupBarrier();
  }
#endif
  let out_base = wid.z * params.M * params.N;
  for (var i = 0u; i < 4u; i++) {
    let r = row0 + 4u * lid.y + i;
    for (var j = 0u; j < 4u; j++) {
      let c = col0 + 4u * lid.x + j;
      if (r < params.M && c < params.N) {
#if B_PACKED
        let za = u32(a_zero_point[r * params.a_zp_stride]) + params.a_offset;
        let zb = u32(b_zero_point[c * params.b_zp_stride]) + params.b_offset;
        let sum = i32(acc[i][j] - zb * row_sums[i] - za * col_sums[j] + params.K * za * zb);
#else
        let sum = acc[i][j];
#endif
        store_integer_result(out_base + r * params.N + c, sum, c);
      }
    }
  }
}
