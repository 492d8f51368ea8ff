// MatMulInteger and QLinearMatMul (src/ops/integer_linear.cpp): output[b] = (A[b] - a_zp) (B[b] - b_zp) with
// exact int32 accumulation (wrapping like ONNX Runtime's int32 on overflow), written as int32 or, with QLINEAR,
// requantized to 8 bits, or with SCALED rescaled to float32 (quantize/integer_epilogue.wgsl). A is [M, K] per
// batch, widened to 32 bits per element as the device stores 8-bit
// tensors; B is a constant prepacked [N, ceil(K / 4)] words of four K-consecutive bytes (B_PACKED) or a
// runtime [K, N] widened tensor. a_zp is per tensor (stride 0) or per row of A, b_zp per tensor or per column.
// Each batch's element offsets into A and B come from a small table (numpy broadcasting resolved when
// planned). A 32 x 32 output tile per workgroup of 8 x 8 invocations, 4 x 4 outputs each, K in slabs of 32.
#include "quantize/unpack.wgsl"

#interface

#include "quantize/integer_epilogue.wgsl"

const TM: u32 = 32u;
const TN: u32 = 32u;
const TK: u32 = 32u;

var<workgroup> a_tile: array<i32, 1024>;  // [TM][TK], zero point subtracted, 0 outside A
var<workgroup> b_tile: array<i32, 1024>;  // [TK][TN], zero point subtracted, 0 outside B

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let a_base = batch_offsets[2u * wid.z];
  let b_base = batch_offsets[2u * wid.z + 1u];
  let row0 = wid.y * TM;
  let col0 = wid.x * TN;
  var acc: array<vec4<i32>, 4>;  // rows 4 lid.y + i, columns 4 lid.x .. + 3
  for (var k0 = 0u; k0 < params.K; k0 += TK) {
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
#if B_PACKED
    // TK / 4 words per column: 256 words, 4 per invocation.
    for (var e = 0u; e < 4u; e++) {
      let idx = li + 64u * e;
      let c = col0 + idx / (TK / 4u);
      let w = idx % (TK / 4u);
      let kk = k0 + 4u * w;
      var word = 0u;
      var zp = 0;
      let inside = c < params.N;
      if (inside && kk < params.K) {
        word = b[b_base + c * params.k_words + k0 / 4u + w];
        zp = b_zero_point[c * params.b_zp_stride];
      }
      for (var j = 0u; j < 4u; j++) {
        var v = 0;
        if (inside && kk + j < params.K) {
          v = unpack_byte(word, j) - zp;
        }
        b_tile[(4u * w + j) * TN + idx / (TK / 4u)] = v;
      }
    }
#else
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
#endif
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
  let out_base = wid.z * params.M * params.N;
  for (var i = 0u; i < 4u; i++) {
    let r = row0 + 4u * lid.y + i;
    for (var j = 0u; j < 4u; j++) {
      let c = col0 + 4u * lid.x + j;
      if (r < params.M && c < params.N) {
        store_integer_result(out_base + r * params.N + c, acc[i][j], c);
      }
    }
  }
}
