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
// MatMulNBits' codes (all but CODE_TABLE) take the linear path below: the scale and zero point are applied
// once per block part, not per code (add_word_sums, flush_sums). QUAD_ONE_BLOCK: a quad of words lies in one
// block (block_size * BITS >= 128), so they are applied once per quad. PREFETCH_QUAD: each step loads the
// next step's quads first (the planner sets it for 8-bit codes, where it measured faster; 4-bit codes on
// four rows measured slower: docs/performance.md). SPLIT_OUTPUTS: the columns are written to the blocks of
// linear/column_split.wgsl.
// A_LAYER_NORM (a LayerNormalization taken into the product: graph::fuse_layer_norm_into_products): `a` is its
// X, normalised as it is staged (linear/layer_norm_a.wgsl), and workgroup 0 writes the normalised rows to
// `normalized`.
// A_INT8 (4- and 8-bit linear codes, integer zero points, accuracy_level 4; docs/quantized_matmul.md): A is
// quantised to int8 per block of B (scale max|a| / 127, as ONNX Runtime does at that level) while it is
// staged, and a word's codes meet it in integer dot products of four bytes (dot4I8Packed: one instruction
// where the GPU has them) instead of being turned into floats one by one.
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
#if SPLIT_OUTPUTS
#include "linear/column_split.wgsl"
#endif

// The tile is read up to the end of a column's last quad of words (a word's end without B_QUADS, which
// is before it), and is zero from K to there.
const STAGE_ALIGN: u32 = 4u * CODES_PER_WORD;

var<workgroup> partial: array<f32, SUMS * WORKGROUP>;  // [row][thread column][column][lane]
#include "common/group_sums.wgsl" NAME=sum_column_lanes SLOTS=partial VALUES=SUMS STRIDE=WORKGROUP
#if A_INT8
// [row][k - k_base] as int8s, four a word: for 4-bit codes the even elements of each eight, then the odd
// ones (a word of B splits into its even and odd nibbles), for 8-bit codes in order. Zero past K.
var<workgroup> a_codes: array<u32, ROWS * CHUNK4>;
// [row][block of the chunk]: the block's scale.
const CHUNK_BLOCKS: u32 = CHUNK / 16u;  // block_size >= 16 on this path
var<workgroup> a_scales: array<f32, ROWS * CHUNK_BLOCKS>;
alias PartialSum = i32;
#else
alias PartialSum = f32;
// [row][k - k_base], zero past K and M, with one vec4 of padding after every PAD_PERIOD vec4s (128 bytes or
// a quad of words, whichever is longer): a column's lanes read A at the same time one quad of words apart,
// a multiple of 128 bytes or half of it, so without the padding their vec4s fell in the same banks of
// workgroup memory; with it, eight lanes in a row read eight different 16-byte bank groups.
const PAD_PERIOD: u32 = max(CODES_PER_WORD, 8u);
var<workgroup> a_tile: array<vec4<f32>, ROWS * CHUNK4 / PAD_PERIOD * (PAD_PERIOD + 1u)>;

fn a_tile_index(v: u32) -> u32 {
  return v + v / PAD_PERIOD;
}
#endif

// A[r, k .. k + 3] as given, zero past K (rows past M are never read).
fn load_x4(r: u32, k: u32) -> vec4<f32> {
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

#if A_LAYER_NORM
const LN_THREADS: u32 = WORKGROUP;

fn ln_x4(r: u32, k: u32) -> vec4<f32> {
  return load_x4(r, k);
}
#include "linear/layer_norm_a.wgsl"
#endif

// A[r, k .. k + 3] for the tile (normalised with A_LAYER_NORM), zero past K.
fn load_a4(r: u32, k: u32) -> vec4<f32> {
#if A_LAYER_NORM
  return layer_norm4(r, load_x4(r, k), k);
#else
  return load_x4(r, k);
#endif
}

#if CODE_TABLE
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
#endif

#if B_QUADS
// Quad q of words of each of the thread's columns.
fn column_quads(read_n: array<u32, THREAD_COLS>, q: u32) -> array<vec4<u32>, THREAD_COLS> {
  var quads: array<vec4<u32>, THREAD_COLS>;
  for (var c = 0u; c < THREAD_COLS; c++) {
    quads[c] = b[read_n[c] * params.col_words / 4u + q];
  }
  return quads;
}
#endif

#if !CODE_TABLE
#if A_INT8
// For the word of each of the thread's columns at offset `offset` of the chunk (a multiple of
// CODES_PER_WORD): sums[r][c] += sum_i a_i * code_i and a_sums[r] += sum_i a_i in int8s, 8-bit codes shifted
// to signed bytes (code - 128, the top bit flipped; flush_sums adds the 128 back). Codes past K meet zeros.
const INT8_ONES: u32 = 0x01010101u;

fn add_word_sums(sums: ptr<function, array<PartialSum, SUMS>>, a_sums: ptr<function, array<PartialSum, ROWS>>,
                 offset: u32, words: array<u32, THREAD_COLS>) {
  for (var r = 0u; r < ROWS; r++) {
    if (r < params.M) {
      let at = (r * CHUNK + offset) / 4u;
      if (BITS == 4u) {
        (*a_sums)[r] += dot4I8Packed(INT8_ONES, a_codes[at]) + dot4I8Packed(INT8_ONES, a_codes[at + 1u]);
      } else {
        (*a_sums)[r] += dot4I8Packed(INT8_ONES, a_codes[at]);
      }
      for (var c = 0u; c < THREAD_COLS; c++) {
        var d: i32;
        if (BITS == 4u) {
          d = dot4I8Packed(words[c] & 0x0F0F0F0Fu, a_codes[at]) +
              dot4I8Packed((words[c] >> 4u) & 0x0F0F0F0Fu, a_codes[at + 1u]);
        } else {
          d = dot4I8Packed(words[c] ^ 0x80808080u, a_codes[at]);
        }
        (*sums)[r * THREAD_COLS + c] += d;
      }
    }
  }
}

const CODE_SIGN_OFFSET: f32 = select(0.0, 128.0, BITS == 8u);

// acc[r][c] += scale * a_scale * (sums[r][c] + (CODE_SIGN_OFFSET - zero) * a_sums[r]) for the block holding
// element k of each column, then the sums start again from zero. Both terms are integers below 2^24 (a block
// of at most 256 codes), exact in f32.
fn flush_sums(acc: ptr<function, array<f32, SUMS>>, sums: ptr<function, array<PartialSum, SUMS>>,
              a_sums: ptr<function, array<PartialSum, ROWS>>, read_n: array<u32, THREAD_COLS>, k: u32) {
  let block = (k % CHUNK) >> countTrailingZeros(params.block_size);
  for (var c = 0u; c < THREAD_COLS; c++) {
    let q = block_quant(read_n[c], k);
    let code_offset = CODE_SIGN_OFFSET - block_zero(q);
    for (var r = 0u; r < ROWS; r++) {
      if (r < params.M) {
        let s = r * THREAD_COLS + c;
        let a_scale = a_scales[r * CHUNK_BLOCKS + block];
        (*acc)[s] += q.scale * a_scale * (f32((*sums)[s]) + code_offset * f32((*a_sums)[r]));
        (*sums)[s] = 0;
      }
    }
  }
  for (var r = 0u; r < ROWS; r++) {
    (*a_sums)[r] = 0;
  }
}

// Stages A[:, k_base ..] for the chunk as int8s, `stage` elements of it (whole blocks): a thread per row and
// block finds the block's largest magnitude, then writes its int8s (round to nearest even of a * 127 / max)
// and its scale, both passes reading A from global memory (the second from cache). Staging a float32 tile
// first and quantising it after a barrier measured slower (docs/performance.md). Rows past M are never read.
fn stage_a_int8(k_base: u32, stage: u32, flat: u32) {
  let block_size = params.block_size;
  let blocks = stage / block_size;
  for (var i = flat; i < params.M * blocks; i += WORKGROUP) {
    let r = i / blocks;
    let first = (i % blocks) * block_size;  // within the chunk
    var largest = 0.0;
    for (var e = 0u; e < block_size; e += 4u) {
      let a = abs(load_a4(r, k_base + first + e));
      largest = max(largest, max(max(a.x, a.y), max(a.z, a.w)));
    }
    let to_int8 = select(0.0, 127.0 / largest, largest > 0.0);
    for (var e = 0u; e < block_size; e += 8u) {
      let lo = vec4<i32>(round(load_a4(r, k_base + first + e) * to_int8));
      let hi = vec4<i32>(round(load_a4(r, k_base + first + e + 4u) * to_int8));
      let at = (r * CHUNK + first + e) / 4u;
      if (BITS == 4u) {
        a_codes[at] = pack4xI8(vec4<i32>(lo.x, lo.z, hi.x, hi.z));
        a_codes[at + 1u] = pack4xI8(vec4<i32>(lo.y, lo.w, hi.y, hi.w));
      } else {
        a_codes[at] = pack4xI8(lo);
        a_codes[at + 1u] = pack4xI8(hi);
      }
    }
    a_scales[r * CHUNK_BLOCKS + first / block_size] = largest / 127.0;
  }
}
#else
// W = (code - zero) * scale is linear in the code, so a word's part of row r's sum is scale * (sum_i a_i code_i
// - zero * sum_i a_i), with a_i = A[r, k0 + i]: the thread sums a_i * code_i and a_i over the words of one
// block, then applies the block's scale and zero point once (flush_sums), instead of dequantising every code
// (a subtraction, a multiplication and a select each). A code becomes a float in two instructions, a shift
// and an and-or, as the top BITS bits of the mantissa of 1.0: v_i = 1 + code_i / 2^BITS, so sum_i a_i code_i =
// 2^BITS * (sum_i a_i v_i - sum_i a_i). The subtraction cancels a few bits of the f32 sums (relative error
// ~1e-6 against float64, tests/gpu/test_matmul_nbits.cpp); an infinite A gives NaN where per-code
// dequantisation would give an infinity.
const MANTISSA_SHIFT: u32 = 23u - BITS;  // where a code's lowest bit goes in the mantissa
const CODE_MANTISSA: u32 = CODE_MASK << MANTISSA_SHIFT;
const ONE_BITS: u32 = 0x3F800000u;  // the bits of 1.0
const CODE_STEP: f32 = f32(1u << BITS);

// 1 + code_i / 2^BITS for the i-th code of the word. `i` is a constant once the callers' loops unroll, so
// the select folds and one shift remains.
fn code_plus_one(word: u32, i: u32) -> f32 {
  let at = i * BITS;
  let moved = select(word >> (at - MANTISSA_SHIFT), word << (MANTISSA_SHIFT - at), at <= MANTISSA_SHIFT);
  return bitcast<f32>((moved & CODE_MANTISSA) | ONE_BITS);
}

// For the word of each of the thread's columns at tile offset `offset` (a multiple of CODES_PER_WORD):
// sums[r][c] += sum_i a_i v_i, a_sums[r] += sum_i a_i. The tile is zero past K and M, so codes there add
// nothing (v_i is finite whatever the padding holds).
fn add_word_sums(sums: ptr<function, array<PartialSum, SUMS>>, a_sums: ptr<function, array<PartialSum, ROWS>>,
                 offset: u32, words: array<u32, THREAD_COLS>) {
  // The codes as floats once for all rows.
  var v: array<array<vec4<f32>, CODES_PER_WORD / 4u>, THREAD_COLS>;
  for (var c = 0u; c < THREAD_COLS; c++) {
    for (var q = 0u; q < CODES_PER_WORD / 4u; q++) {
      v[c][q] = vec4<f32>(code_plus_one(words[c], 4u * q), code_plus_one(words[c], 4u * q + 1u),
                          code_plus_one(words[c], 4u * q + 2u), code_plus_one(words[c], 4u * q + 3u));
    }
  }
  for (var r = 0u; r < ROWS; r++) {
    if (r < params.M) {
      for (var q = 0u; q < CODES_PER_WORD / 4u; q++) {
        let a4 = a_tile[a_tile_index(r * CHUNK4 + offset / 4u + q)];
        (*a_sums)[r] += dot(a4, vec4<f32>(1.0));
        for (var c = 0u; c < THREAD_COLS; c++) {
          (*sums)[r * THREAD_COLS + c] += dot(a4, v[c][q]);
        }
      }
    }
  }
}

// acc[r][c] += scale * (2^BITS * sums[r][c] - (2^BITS + zero) * a_sums[r]) with the scale and zero point of
// the block holding element k of each column, then the sums start again from zero.
fn flush_sums(acc: ptr<function, array<f32, SUMS>>, sums: ptr<function, array<PartialSum, SUMS>>,
              a_sums: ptr<function, array<PartialSum, ROWS>>, read_n: array<u32, THREAD_COLS>, k: u32) {
  for (var c = 0u; c < THREAD_COLS; c++) {
    let q = block_quant(read_n[c], k);
    let code_offset = CODE_STEP + block_zero(q);
    for (var r = 0u; r < ROWS; r++) {
      let s = r * THREAD_COLS + c;
      (*acc)[s] += q.scale * (CODE_STEP * (*sums)[s] - code_offset * (*a_sums)[r]);
      (*sums)[s] = 0.0;
    }
  }
  for (var r = 0u; r < ROWS; r++) {
    (*a_sums)[r] = 0.0;
  }
}
#endif
#endif

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

#if A_LAYER_NORM
  layer_norm_statistics(flat, group == 0u);
#endif
  var acc: array<f32, SUMS>;
  for (var k_base = 0u; k_base < params.K; k_base += CHUNK) {  // uniform: the same steps for every thread
    workgroupBarrier();  // the previous chunk's reads are done
#if A_INT8
    // Whole blocks, as far as the columns' quads of words reach (words past K meet zeros).
    let align = max(STAGE_ALIGN, params.block_size);
    stage_a_int8(k_base, min(CHUNK, (params.K + align - 1u) / align * align - k_base), flat);
#else
    // Only as much of the chunk as the columns' quads of words reach (K rounded up to a quad): a short K
    // (768 of a 2048-element chunk) stages a third of the tile, in fewer serial loads per thread.
    let stage4 = min(CHUNK, (params.K + STAGE_ALIGN - 1u) / STAGE_ALIGN * STAGE_ALIGN - k_base) / 4u;
    for (var i = flat; i < ROWS * stage4; i += WORKGROUP) {
      let r = i / stage4;
      let v = i % stage4;
      a_tile[a_tile_index(r * CHUNK4 + v)] = select(vec4<f32>(0.0), load_a4(r, k_base + 4u * v), r < params.M);
    }
#endif
    workgroupBarrier();
#if CODE_TABLE
    var weights: array<array<f32, CODES_PER_WORD>, THREAD_COLS>;
#else
    var sums: array<PartialSum, SUMS>;
    var a_sums: array<PartialSum, ROWS>;
#endif
#if B_QUADS
    let per_quad = 4u * CODES_PER_WORD;
    let q_end = min((words + 3u) / 4u, (k_base + CHUNK) / per_quad);
#if PREFETCH_QUAD
    // The next step's quads are loaded before this step's are summed.
    var q = k_base / per_quad + lane;
    var next: array<vec4<u32>, THREAD_COLS>;
    if (q < q_end) {
      next = column_quads(read_n, q);
    }
    for (; q < q_end; q += LANES) {
      let quads = next;
      if (q + LANES < q_end) {
        next = column_quads(read_n, q + LANES);
      }
#else
    for (var q = k_base / per_quad + lane; q < q_end; q += LANES) {
      let quads = column_quads(read_n, q);
#endif
#if !CODE_TABLE
      // Words past K (a quad's or a block's padding) lie inside the chunk's tile, where A is zero, and
      // inside the column's blocks, so their scales exist: no test needed.
      for (var j = 0u; j < 4u; j++) {
        var quad_words: array<u32, THREAD_COLS>;
        for (var c = 0u; c < THREAD_COLS; c++) {
          quad_words[c] = quads[c][j];
        }
        let k0 = q * per_quad + j * CODES_PER_WORD;
        add_word_sums(&sums, &a_sums, k0 - k_base, quad_words);
#if !QUAD_ONE_BLOCK
        flush_sums(&acc, &sums, &a_sums, read_n, k0);
#endif
      }
#if QUAD_ONE_BLOCK
      flush_sums(&acc, &sums, &a_sums, read_n, q * per_quad);
#endif
#else
      for (var j = 0u; j < 4u; j++) {
        let k0 = q * per_quad + j * CODES_PER_WORD;
        if (k0 < params.K) {
          for (var c = 0u; c < THREAD_COLS; c++) {
            weights[c] = dequantize_codes(read_n[c], k0, quads[c][j]);
          }
          accumulate(&acc, k0 - k_base, weights);
        }
      }
#endif
    }
#else
    let w_end = min(words, (k_base + CHUNK) / CODES_PER_WORD);
    for (var w = k_base / CODES_PER_WORD + lane; w < w_end; w += LANES) {
      let k0 = w * CODES_PER_WORD;
#if CODE_TABLE
      for (var c = 0u; c < THREAD_COLS; c++) {
        weights[c] = dequantize_codes(read_n[c], k0, b[read_n[c] * params.col_words + w]);
      }
      accumulate(&acc, k0 - k_base, weights);
#else
      var column_words: array<u32, THREAD_COLS>;
      for (var c = 0u; c < THREAD_COLS; c++) {
        column_words[c] = b[read_n[c] * params.col_words + w];
      }
      add_word_sums(&sums, &a_sums, k0 - k_base, column_words);
      flush_sums(&acc, &sums, &a_sums, read_n, k0);
#endif
    }
#endif
  }

  for (var s = 0u; s < SUMS; s++) {
    partial[s * WORKGROUP + flat] = acc[s];
  }
  sum_column_lanes(flat, lane, LANES);

  if (lane == 0u) {
    for (var c = 0u; c < THREAD_COLS; c++) {
      let n = first_n + c * COLS;
      if (n < params.N) {
        let b = load_bias(n);
        for (var r = 0u; r < ROWS; r++) {
          if (r < params.M) {
            let sum = partial[(r * THREAD_COLS + c) * WORKGROUP + flat];
#if SPLIT_OUTPUTS
            store_split_column(r, n, quantized_epilogue(sum, r, n, b));
#else
            output[r * params.N + n] = quantized_epilogue(sum, r, n, b);
#endif
          }
        }
      }
    }
  }
}
