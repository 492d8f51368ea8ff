// Weight-only quantized matrix-vector products for a handful of rows (decoder steps: M = 1..8, batch dims
// folded into M): bandwidth bound on the packed weight, which is read once per workgroup (see
// quantized_common.wgsl for the layouts and the dequantisation).
//
// A 128-invocation workgroup covers THREAD_COLS * 128 / LANES columns (output features): each thread
// serves THREAD_COLS columns, COLS apart, and the LANES threads of a column stride through its packed words,
// each dequantising a word's codes once for all ROWS rows and keeping ROWS x THREAD_COLS partial sums in f32
// (a value of A read from workgroup memory serves all of the thread's columns). A is staged in workgroup
// memory CHUNK elements of K at a time: every column of the workgroup reads the same A, and a word of B
// (CODES_PER_WORD codes, 2-16 of them) needs as many floats of A, so reading A from global memory per column
// costs several times the bytes of the weight itself. The partial sums of a column are added in workgroup
// memory by a tree, and the column's first thread writes the M results through quantized_epilogue (bias,
// fused residual and activation).
// B_QUADS (a column's words a multiple of 4): B is read as vec4<u32>s, four words (a whole 32-element block
// of 4-bit codes) per load, so each thread issues a quarter of the loads for the same bytes; the planner
// gives a column only as many lanes as one chunk has quads (matmul_nbits.cpp).
const ROWS: u32 = {{ROWS}}u;    // compile-time bound on M: 1, 2, 4 or 8
const LANES: u32 = {{LANES}}u;  // threads per column, a power of two from 4 to 128
const THREAD_COLS: u32 = {{THREAD_COLS}}u;  // columns per thread: 1, 2 or 4, ROWS * THREAD_COLS <= 8
const WORKGROUP: u32 = 128u;
const COLS: u32 = WORKGROUP / LANES;  // columns per thread slot: the workgroup covers COLS * THREAD_COLS
const SUMS: u32 = ROWS * THREAD_COLS;
// Elements of K staged per step: a multiple of four words of every CODES_PER_WORD (16 at most), and ROWS *
// CHUNK floats (8 KiB: 2048 / ROWS; 10 KiB at most with the tile's padding) plus the partial sums stay
// within a compat device's 16 KiB of workgroup memory.
const CHUNK: u32 = {{CHUNK}}u;
const CHUNK4: u32 = CHUNK / 4u;

#include "linear/quantized_common.wgsl"

var<workgroup> partial: array<f32, SUMS * WORKGROUP>;  // [row][thread column][column][lane]
// [row][k - k_base], zero past K and M, with one vec4 of padding after every PAD_PERIOD vec4s (128 bytes or
// a quad of words, whichever is longer): a column's lanes read A at the same time one quad of words apart,
// a multiple of 128 bytes or half of it, so without the padding their vec4s fell in the same banks of
// workgroup memory; with it, eight lanes in a row read eight different 16-byte bank groups.
const PAD_PERIOD: u32 = max(CODES_PER_WORD, 8u);
var<workgroup> a_tile: array<vec4<f32>, ROWS * CHUNK4 / PAD_PERIOD * (PAD_PERIOD + 1u)>;

fn a_tile_index(v: u32) -> u32 {
  return v + v / PAD_PERIOD;
}

// A[r, k .. k + 3] for the tile, zero past K (rows past M are never read).
fn load_a4(r: u32, k: u32) -> vec4<f32> {
  let row = r * params.K;
#if A_VEC4
  // K % 4 == 0: k < K means the whole vec4 is inside the row.
  return select(vec4<f32>(0.0), a[(row + k) / 4u], k < params.K);
#else
  var v = vec4<f32>(0.0);
  for (var i = 0u; i < 4u; i++) {
    if (k + i < params.K) {
      v[i] = a[row + k + i];
    }
  }
  return v;
#endif
}

// acc[r][c] += A[r, k0 ..] . weights[c] for the M rows and the thread's columns, A read from the tile at
// offset k0 - k_base (a multiple of 4: both are multiples of CODES_PER_WORD). Codes past K are zero
// (dequantize_codes), as is the tile there.
fn accumulate(acc: ptr<function, array<f32, SUMS>>, offset: u32,
              weights: array<array<f32, CODES_PER_WORD>, THREAD_COLS>) {
  for (var r = 0u; r < ROWS; r++) {
    if (r < params.M) {
      var sums = array<f32, THREAD_COLS>();  // explicitly: SwiftShader kept the last row's sums without it
      for (var q = 0u; q < CODES_PER_WORD / 4u; q++) {
        let a4 = a_tile[a_tile_index(r * CHUNK4 + offset / 4u + q)];
        for (var c = 0u; c < THREAD_COLS; c++) {
          sums[c] += dot(a4, vec4<f32>(weights[c][4u * q], weights[c][4u * q + 1u], weights[c][4u * q + 2u],
                                       weights[c][4u * q + 3u]));
        }
      }
      for (var c = 0u; c < THREAD_COLS; c++) {
        (*acc)[r * THREAD_COLS + c] += sums[c];
      }
    }
  }
}

@compute @workgroup_size(128, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) flat: u32) {
  let group = linear_workgroup_index(wid, nwg);
  if (group >= params.tiles_n) {
    return;  // uniform: the whole workgroup leaves together
  }
  let lane = flat % LANES;
  let first_n = group * COLS * THREAD_COLS + flat / LANES;  // thread column c is first_n + c * COLS
  let words = (params.K + CODES_PER_WORD - 1u) / CODES_PER_WORD;
  // Columns past N (the last workgroup's) read column N - 1 and write nothing.
  var read_n: array<u32, THREAD_COLS>;
  for (var c = 0u; c < THREAD_COLS; c++) {
    read_n[c] = min(first_n + c * COLS, params.N - 1u);
  }

  var acc: array<f32, SUMS>;
  for (var k_base = 0u; k_base < params.K; k_base += CHUNK) {  // uniform: the same steps for every thread
    workgroupBarrier();  // the previous chunk's reads are done
    for (var i = flat; i < ROWS * CHUNK4; i += WORKGROUP) {
      let r = i / CHUNK4;
      a_tile[a_tile_index(i)] = select(vec4<f32>(0.0), load_a4(r, k_base + 4u * (i % CHUNK4)), r < params.M);
    }
    workgroupBarrier();
    var weights: array<array<f32, CODES_PER_WORD>, THREAD_COLS>;
#if B_QUADS
    let per_quad = 4u * CODES_PER_WORD;
    let q_end = min((words + 3u) / 4u, (k_base + CHUNK) / per_quad);
    for (var q = k_base / per_quad + lane; q < q_end; q += LANES) {
      var quads: array<vec4<u32>, THREAD_COLS>;
      for (var c = 0u; c < THREAD_COLS; c++) {
        quads[c] = b[read_n[c] * params.col_words / 4u + q];
      }
      for (var j = 0u; j < 4u; j++) {
        let k0 = q * per_quad + j * CODES_PER_WORD;
        if (k0 < params.K) {
          for (var c = 0u; c < THREAD_COLS; c++) {
            weights[c] = dequantize_codes(read_n[c], k0, quads[c][j]);
          }
          accumulate(&acc, k0 - k_base, weights);
        }
      }
    }
#else
    let w_end = min(words, (k_base + CHUNK) / CODES_PER_WORD);
    for (var w = k_base / CODES_PER_WORD + lane; w < w_end; w += LANES) {
      let k0 = w * CODES_PER_WORD;
      for (var c = 0u; c < THREAD_COLS; c++) {
        weights[c] = dequantize_codes(read_n[c], k0, b[read_n[c] * params.col_words + w]);
      }
      accumulate(&acc, k0 - k_base, weights);
    }
#endif
  }

  for (var s = 0u; s < SUMS; s++) {
    partial[s * WORKGROUP + flat] = acc[s];
  }
  workgroupBarrier();
  for (var stride = LANES / 2u; stride > 0u; stride /= 2u) {
    if (lane < stride) {
      for (var s = 0u; s < SUMS; s++) {
        partial[s * WORKGROUP + flat] += partial[s * WORKGROUP + flat + stride];
      }
    }
    workgroupBarrier();
  }

  if (lane == 0u) {
    for (var c = 0u; c < THREAD_COLS; c++) {
      let n = first_n + c * COLS;
      if (n < params.N) {
        let b = load_bias(n);
        for (var r = 0u; r < ROWS; r++) {
          if (r < params.M) {
            let sum = partial[(r * THREAD_COLS + c) * WORKGROUP + flat];
            output[r * params.N + n] = quantized_epilogue(sum, r, n, b);
          }
        }
      }
    }
  }
}
