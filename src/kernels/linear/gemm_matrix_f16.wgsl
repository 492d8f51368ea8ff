enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
// GEMM on subgroup matrices (tensor cores through WebGPU: Dawn's chromium-experimental-subgroup-matrix),
// f16 operands, f32 accumulation: out[m, n] = epilogue(sum_k A[m, k] B[k, n]) (linear/gemm_common.wgsl), one
// output matrix (a batch folded into M).
//   A  [Mp, Kp] halves, row-major, written by linear/gemm_a_to_f16.wgsl: Mp a multiple of the tile's rows,
//      Kp of the 64-deep K slab (params.a_row_stride = Kp), zeros past M and K; or, with A_CHUNKS, gathered
//      row by row: the float32 activation read directly (A_F32), or a convolution's input (A_CONV).
//   B  [Kp, Np] halves, a constant prepacked at load (src/ops/gemm_matrix_f16.cpp): Np a multiple of the tile
//      (params.b_row_stride = Np), zeros past K and N.
// B's padding means none of its loads is guarded (nor A's when it is cast). 256 invocations = 8 subgroups of
// 32 laid out 2 x 4 over the 128x128 workgroup tile, or with TALL_TILE 512 = 16 laid out 4 x 4 over 256x128
// (for the largest products: a quarter fewer bytes loaded per product, in K slabs of 32 to fit workgroup
// memory); each subgroup owns 64x32 outputs in 4x2 accumulators of 16x16. Each K slab is staged in workgroup
// memory with its rows padded by 8 halves (A's stride 72 or 40, B's 136: 16-byte aligned, and not a multiple
// of 128 bytes, which the matrix loads need to avoid bank conflicts);
// A's global loads are 16 bytes, B's 8 (four halves: consecutive invocations then store consecutive 8-byte
// groups of the slab's row, with fewer workgroup-memory bank conflicts among the 16-bit stores than 16-byte
// groups give), and the next slab's are issued before the current slab's products (WGSL has no asynchronous
// copy: their latency would otherwise stall every slab, docs/devices.md).
// Output: with DIRECT_STORE (an epilogue of at most a row-broadcast bias: the accumulators then start from
// BIAS_ROWS' [16, Np] rows of bias) workgroups whose tile lies inside M x N store their accumulators
// straight to the output; other workgroups, and every workgroup without DIRECT_STORE, copy each accumulator
// out through workgroup memory, in bounds, through gemm_epilogue.
// RESIDUAL_ACC (with RESIDUAL, no DIRECT_STORE; an epilogue of a fused residual and at most a row-broadcast
// bias): the accumulators of workgroups whose tile lies inside M x N start from the residual's tiles, plus,
// with BIAS_SPLIT, the bias through one product: a 16x16 block of ones times the rows [bias_hi; bias_lo]
// (`bias_split`, [32, Np] halves: the ones in rows 0-15, the bias's two float16 parts in rows 16 and 17, so
// that their f32 sum is the bias within 2^-22), and those workgroups store directly; the others bounce
// through gemm_epilogue, which adds both. DIRECT_INTERIOR is DIRECT_STORE or RESIDUAL_ACC.
// OUT_ROW_MAP (no DIRECT_STORE): output row m starts mixed_radix_offset(out_row_extents, out_row_strides, m)
// elements in (DaViT's window reverse, written in place), where the epilogue also reads the residual.
// A_CONV (with A_CHUNKS, OUT_ROW_MAP and OUT_COL_STRIDE): a 2-D convolution as this product (ops/conv/
// matrix_f16.cpp): row m is output pixel (image, oh, ow), column n output channel; A[m, k] is gathered
// (conv/matrix_f16_gather.wgsl: zeros in the padding and past K) from the NCHW float32 input with A_F32, k =
// (c, kh, kw) in the ONNX weight's order, or from the input as float16 NHWC without it, k = (kh, kw, c); B is
// the weight in the same k order, transposed. Element (m, n) is written to mixed_radix_offset(out row map, m)
// + n * out_col_stride (NCHW: the pixel's offset, then channel planes).
// SPLIT_K (with DIRECT_STORE, no bias rows): the grid covers params.k_splits chunks of whole slabs of K, chunk
// by chunk; each workgroup writes its chunk's raw partial sums to `output` as [split][M][N] (directly or
// through the bounce, no epilogue), and gemm_split_reduce.wgsl adds them and applies the epilogue.
#interface

#include "linear/gemm_common.wgsl"

#if TALL_TILE
const TILE_M: u32 = 256u;  // 16 subgroups laid out 4 x 4
const SLAB: u32 = 32u;     // what fits 48 KiB of workgroup memory with 256 rows
const THREADS: u32 = 512u;
#else
const TILE_M: u32 = 128u;  // 8 subgroups laid out 2 x 4
const SLAB: u32 = 64u;
const THREADS: u32 = 256u;
#endif
const TILE_N: u32 = 128u;
const A_STRIDE: u32 = SLAB + 8u;    // halves
const B_STRIDE: u32 = TILE_N + 8u;  // halves
const A_ROW_CHUNKS: u32 = SLAB / 8u;              // 8-half chunks of A in a slab's row
const A_PASS_ROWS: u32 = THREADS / A_ROW_CHUNKS;  // rows of A the threads stage a chunk each of at once
const B_ROW_CHUNKS: u32 = TILE_N / 4u;            // 4-half chunks of B in a slab's row

var<workgroup> a_slab: array<f16, TILE_M * A_STRIDE>;
var<workgroup> b_slab: array<f16, SLAB * B_STRIDE>;
var<workgroup> bounce: array<f32, THREADS * 8u>;  // one 16x16 accumulator per subgroup of 32

// The eight halves of `w` at a_slab[d ..], the four of B's at b_slab[d ..]. Written out, as the loads below:
// arrays indexed in loops may be kept in local memory by the driver's compiler.
fn put_a(d: u32, w: vec4<u32>) {
  let h0 = bitcast<vec2<f16>>(w.x);
  let h1 = bitcast<vec2<f16>>(w.y);
  let h2 = bitcast<vec2<f16>>(w.z);
  let h3 = bitcast<vec2<f16>>(w.w);
  a_slab[d] = h0.x;
  a_slab[d + 1u] = h0.y;
  a_slab[d + 2u] = h1.x;
  a_slab[d + 3u] = h1.y;
  a_slab[d + 4u] = h2.x;
  a_slab[d + 5u] = h2.y;
  a_slab[d + 6u] = h3.x;
  a_slab[d + 7u] = h3.y;
}

fn put_b(d: u32, w: vec2<u32>) {
  let h0 = bitcast<vec2<f16>>(w.x);
  let h1 = bitcast<vec2<f16>>(w.y);
  b_slab[d] = h0.x;
  b_slab[d + 1u] = h0.y;
  b_slab[d + 2u] = h1.x;
  b_slab[d + 3u] = h1.y;
}

// Index of A's chunk `c` (of 8 halves, a vec4<u32>: TILE_M rows x A_ROW_CHUNKS per slab) and B's (of 4
// halves, a vec2<u32>: SLAB rows x B_ROW_CHUNKS), and where each is staged.
fn a_word(c: u32, k0: u32, tile_row: u32) -> u32 {
  return ((tile_row + c / A_ROW_CHUNKS) * params.a_row_stride + k0 + (c % A_ROW_CHUNKS) * 8u) / 8u;
}

fn b_word(c: u32, k0: u32, tile_col: u32) -> u32 {
  return ((k0 + c / B_ROW_CHUNKS) * params.b_row_stride + tile_col + (c % B_ROW_CHUNKS) * 4u) / 4u;
}

fn a_slot(c: u32) -> u32 {
  return (c / A_ROW_CHUNKS) * A_STRIDE + (c % A_ROW_CHUNKS) * 8u;
}

fn b_slot(c: u32) -> u32 {
  return (c / B_ROW_CHUNKS) * B_STRIDE + (c % B_ROW_CHUNKS) * 4u;
}

#if A_F32
struct AChunk {  // 8 values of A's row: lo = k .. k + 3, hi = k + 4 .. k + 7
  lo: vec4<f32>,
  hi: vec4<f32>,
}
#else
alias AChunk = vec4<u32>;  // 8 halves
#endif
#if !A_CHUNKS
alias ARows = vec4<u32>;  // unused: A's chunks come from a_word
#endif

// One thread's share of a K slab, loaded from global memory: chunks THREADS apart, 4 of A and 8 of B (2 and 2
// with TALL_TILE). Members, not arrays: arrays indexed in loops may be kept in local memory.
struct SlabChunks {
  a0: AChunk,
  a1: AChunk,
  b0: vec2<u32>,
  b1: vec2<u32>,
#if !TALL_TILE
  a2: AChunk,
  a3: AChunk,
  b2: vec2<u32>,
  b3: vec2<u32>,
  b4: vec2<u32>,
  b5: vec2<u32>,
  b6: vec2<u32>,
  b7: vec2<u32>,
#endif
}

#if A_CHUNKS
// A_CHUNKS: each thread stages the same four rows of A (two with TALL_TILE) in every slab (`rows`: where each
// starts, kNoRow past M), 8 values of a row a chunk (a_chunk; zeros past K): the convolution's gathers
// (A_CONV), or with A_F32 alone the float32 activation itself (K a multiple of 8), rows params.a_row_stride
// apart or through A's row map. A_F32's chunks are converted to f16 (saturating at +-65504) as they are
// stored.
const kNoRow: u32 = 0xFFFFFFFFu;

#if A_CONV
#include "conv/matrix_f16_gather.wgsl"
#else
alias ARows = vec4<u32>;

fn a_row_start(m: u32) -> u32 {
  if (m >= params.M) {
    return kNoRow;
  }
#if A_ROW_MAP
  return mixed_radix_offset(params.a_row_extents, params.a_row_strides, m);
#else
  return m * params.a_row_stride;
#endif
}

fn a_chunk(row: u32, k: u32) -> AChunk {
  if (row == kNoRow || k >= params.K) {
    return AChunk(vec4<f32>(0.0), vec4<f32>(0.0));
  }
  let q = (row + k) / 4u;
  return AChunk(a[q], a[q + 1u]);
}
#endif
#endif

// The global loads of the K slab at k0 of the tile at (tile_row, tile_col), all issued together; they
// are stored into workgroup memory by put_slab after the previous slab's products (so their latency is
// hidden behind them).
fn fetch_slab(k0: u32, lid: u32, tile_row: u32, tile_col: u32, rows: ARows) -> SlabChunks {
  var s: SlabChunks;
#if A_CHUNKS
  let k = k0 + (lid % A_ROW_CHUNKS) * 8u;
  s.a0 = a_chunk(rows.x, k);
  s.a1 = a_chunk(rows.y, k);
#if !TALL_TILE
  s.a2 = a_chunk(rows.z, k);
  s.a3 = a_chunk(rows.w, k);
#endif
#else
  s.a0 = a[a_word(lid, k0, tile_row)];
  s.a1 = a[a_word(lid + THREADS, k0, tile_row)];
#if !TALL_TILE
  s.a2 = a[a_word(lid + 2u * THREADS, k0, tile_row)];
  s.a3 = a[a_word(lid + 3u * THREADS, k0, tile_row)];
#endif
#endif
  s.b0 = b[b_word(lid, k0, tile_col)];
  s.b1 = b[b_word(lid + THREADS, k0, tile_col)];
#if !TALL_TILE
  s.b2 = b[b_word(lid + 2u * THREADS, k0, tile_col)];
  s.b3 = b[b_word(lid + 3u * THREADS, k0, tile_col)];
  s.b4 = b[b_word(lid + 4u * THREADS, k0, tile_col)];
  s.b5 = b[b_word(lid + 5u * THREADS, k0, tile_col)];
  s.b6 = b[b_word(lid + 6u * THREADS, k0, tile_col)];
  s.b7 = b[b_word(lid + 7u * THREADS, k0, tile_col)];
#endif
  return s;
}

fn put_a_chunk(d: u32, v: AChunk) {
#if A_F32
  let lo = vec4<f16>(clamp(v.lo, vec4<f32>(-65504.0), vec4<f32>(65504.0)));
  let hi = vec4<f16>(clamp(v.hi, vec4<f32>(-65504.0), vec4<f32>(65504.0)));
  put_a(d, vec4<u32>(bitcast<u32>(lo.xy), bitcast<u32>(lo.zw), bitcast<u32>(hi.xy), bitcast<u32>(hi.zw)));
#else
  put_a(d, v);
#endif
}

fn put_slab(s: SlabChunks, lid: u32) {
  put_a_chunk(a_slot(lid), s.a0);
  put_a_chunk(a_slot(lid + THREADS), s.a1);
#if !TALL_TILE
  put_a_chunk(a_slot(lid + 2u * THREADS), s.a2);
  put_a_chunk(a_slot(lid + 3u * THREADS), s.a3);
#endif
  put_b(b_slot(lid), s.b0);
  put_b(b_slot(lid + THREADS), s.b1);
#if !TALL_TILE
  put_b(b_slot(lid + 2u * THREADS), s.b2);
  put_b(b_slot(lid + 3u * THREADS), s.b3);
  put_b(b_slot(lid + 4u * THREADS), s.b4);
  put_b(b_slot(lid + 5u * THREADS), s.b5);
  put_b(b_slot(lid + 6u * THREADS), s.b6);
  put_b(b_slot(lid + 7u * THREADS), s.b7);
#endif
}

// One accumulator of the subgroup written to the output's [row, row + 16) x [col, col + 16), in bounds, by its
// lanes through its 16x16 slot of `bounce`: read after a barrier (WGSL has no subgroup-scope memory barrier),
// overwritten only after the next. Called by every subgroup alike (uniform control flow).
fn bounce_out(acc: subgroup_matrix_result<f32, 16, 16>, sid: u32, lane: u32, lanes: u32, row: u32, col: u32,
              out_base: u32) {
  let base = sid * 256u;
#if OUT_COL_STRIDE
  // Consecutive lanes take consecutive rows: the output's columns are planes apart, its rows adjacent.
  subgroupMatrixStore(&bounce, base, acc, true, 16u);
  workgroupBarrier();
  for (var e = lane; e < 256u; e += lanes) {
    let m = row + e % 16u;
    let n = col + e / 16u;
#else
  subgroupMatrixStore(&bounce, base, acc, false, 16u);
  workgroupBarrier();
  for (var e = lane; e < 256u; e += lanes) {
    let m = row + e / 16u;
    let n = col + e % 16u;
#endif
    if (m < params.M && n < params.N) {
#if OUT_ROW_MAP
#if OUT_COL_STRIDE
      let i = mixed_radix_offset(params.out_row_extents, params.out_row_strides, m) + n * params.out_col_stride;
#else
      let i = mixed_radix_offset(params.out_row_extents, params.out_row_strides, m) + n;
#endif
#else
      let i = m * params.N + n;
#endif
#if DIRECT_STORE
      output[out_base + i] = bounce[base + e];  // the bias is in the accumulator already, or the reduction adds it
#else
      output[i] = gemm_epilogue(bounce[base + e], m, n, i);
#endif
    }
  }
  workgroupBarrier();
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) workgroup_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sid: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) lanes: u32) {
  let tiles = params.tiles_m * params.tiles_n;
  let index = linear_workgroup_index(workgroup_id, num_workgroups);
#if SPLIT_K
  let splits = params.k_splits;
#else
  let splits = 1u;
#endif
  if (index >= tiles * splits) {
    return;
  }
  let tile = index % tiles;
  let split = index / tiles;
  // This workgroup's K chunk: whole slabs (empty past K for a late chunk: it stores zeros).
  let all_slabs = (params.K + SLAB - 1u) / SLAB;
  let slabs_per_chunk = (all_slabs + splits - 1u) / splits;
  let k_begin = min(all_slabs, split * slabs_per_chunk) * SLAB;
  let k_end = min(all_slabs * SLAB, k_begin + slabs_per_chunk * SLAB);
  let out_base = split * params.M * params.N;
  let tile_row = (tile / params.tiles_n) * TILE_M;
  let tile_col = (tile % params.tiles_n) * TILE_N;
  let srow = (sid / 4u) * 64u;  // the subgroup's rows and columns within the tile
  let scol = (sid % 4u) * 32u;
  let row0 = tile_row + srow;
#if A_CHUNKS
  let a_row = tile_row + lid / A_ROW_CHUNKS;
#if TALL_TILE
  let a_rows = ARows(a_row_start(a_row), a_row_start(a_row + A_PASS_ROWS), a_row_start(kNoRow),
                     a_row_start(kNoRow));
#else
  let a_rows = ARows(a_row_start(a_row), a_row_start(a_row + A_PASS_ROWS), a_row_start(a_row + 2u * A_PASS_ROWS),
                     a_row_start(a_row + 3u * A_PASS_ROWS));
#endif
#else
  let a_rows = vec4<u32>(0u);
#endif
  let col0 = tile_col + scol;
#if BIAS_ROWS
  var acc0_0 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&bias_rows, col0, false, params.b_row_stride);
  var acc0_1 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&bias_rows, col0 + 16u, false, params.b_row_stride);
  var acc1_0 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&bias_rows, col0, false, params.b_row_stride);
  var acc1_1 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&bias_rows, col0 + 16u, false, params.b_row_stride);
  var acc2_0 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&bias_rows, col0, false, params.b_row_stride);
  var acc2_1 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&bias_rows, col0 + 16u, false, params.b_row_stride);
  var acc3_0 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&bias_rows, col0, false, params.b_row_stride);
  var acc3_1 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&bias_rows, col0 + 16u, false, params.b_row_stride);
#else
  var acc0_0 = subgroup_matrix_result<f32, 16, 16>();
  var acc0_1 = subgroup_matrix_result<f32, 16, 16>();
  var acc1_0 = subgroup_matrix_result<f32, 16, 16>();
  var acc1_1 = subgroup_matrix_result<f32, 16, 16>();
  var acc2_0 = subgroup_matrix_result<f32, 16, 16>();
  var acc2_1 = subgroup_matrix_result<f32, 16, 16>();
  var acc3_0 = subgroup_matrix_result<f32, 16, 16>();
  var acc3_1 = subgroup_matrix_result<f32, 16, 16>();
#endif
  let interior = tile_row + TILE_M <= params.M && tile_col + TILE_N <= params.N;
#if RESIDUAL_ACC
  if (interior) {
    let r = row0 * params.N + col0;
    acc0_0 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&residual, r, false, params.N);
    acc0_1 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&residual, r + 16u, false, params.N);
    acc1_0 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&residual, r + 16u * params.N, false, params.N);
    acc1_1 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&residual, r + 16u * params.N + 16u, false, params.N);
    acc2_0 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&residual, r + 32u * params.N, false, params.N);
    acc2_1 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&residual, r + 32u * params.N + 16u, false, params.N);
    acc3_0 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&residual, r + 48u * params.N, false, params.N);
    acc3_1 = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>>(&residual, r + 48u * params.N + 16u, false, params.N);
#if BIAS_SPLIT
    let ones = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&bias_split, 0u, false, params.b_row_stride);
    let b0 = 16u * params.b_row_stride + col0;
    let bias0 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&bias_split, b0, false, params.b_row_stride);
    let bias1 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&bias_split, b0 + 16u, false, params.b_row_stride);
    acc0_0 = subgroupMatrixMultiplyAccumulate(ones, bias0, acc0_0);
    acc0_1 = subgroupMatrixMultiplyAccumulate(ones, bias1, acc0_1);
    acc1_0 = subgroupMatrixMultiplyAccumulate(ones, bias0, acc1_0);
    acc1_1 = subgroupMatrixMultiplyAccumulate(ones, bias1, acc1_1);
    acc2_0 = subgroupMatrixMultiplyAccumulate(ones, bias0, acc2_0);
    acc2_1 = subgroupMatrixMultiplyAccumulate(ones, bias1, acc2_1);
    acc3_0 = subgroupMatrixMultiplyAccumulate(ones, bias0, acc3_0);
    acc3_1 = subgroupMatrixMultiplyAccumulate(ones, bias1, acc3_1);
#endif
  }
#endif
  // One slab in workgroup memory; the next one's global loads are in flight while it is multiplied.
  if (k_begin < k_end) {
    put_slab(fetch_slab(k_begin, lid, tile_row, tile_col, a_rows), lid);
  }
  workgroupBarrier();
  for (var k0 = k_begin; k0 < k_end; k0 += SLAB) {
    let more = k0 + SLAB < k_end;
    var next: SlabChunks;
    if (more) {
      next = fetch_slab(k0 + SLAB, lid, tile_row, tile_col, a_rows);
    }
    for (var kk = 0u; kk < SLAB; kk += 16u) {
      let l0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&a_slab, srow * A_STRIDE + kk, false, A_STRIDE);
      let l1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&a_slab, (srow + 16u) * A_STRIDE + kk, false, A_STRIDE);
      let l2 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&a_slab, (srow + 32u) * A_STRIDE + kk, false, A_STRIDE);
      let l3 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&a_slab, (srow + 48u) * A_STRIDE + kk, false, A_STRIDE);
      let r0 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&b_slab, kk * B_STRIDE + scol, false, B_STRIDE);
      let r1 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&b_slab, kk * B_STRIDE + scol + 16u, false, B_STRIDE);
      acc0_0 = subgroupMatrixMultiplyAccumulate(l0, r0, acc0_0);
      acc0_1 = subgroupMatrixMultiplyAccumulate(l0, r1, acc0_1);
      acc1_0 = subgroupMatrixMultiplyAccumulate(l1, r0, acc1_0);
      acc1_1 = subgroupMatrixMultiplyAccumulate(l1, r1, acc1_1);
      acc2_0 = subgroupMatrixMultiplyAccumulate(l2, r0, acc2_0);
      acc2_1 = subgroupMatrixMultiplyAccumulate(l2, r1, acc2_1);
      acc3_0 = subgroupMatrixMultiplyAccumulate(l3, r0, acc3_0);
      acc3_1 = subgroupMatrixMultiplyAccumulate(l3, r1, acc3_1);
    }
    workgroupBarrier();
    if (more) {
      put_slab(next, lid);
    }
    workgroupBarrier();
  }
#if DIRECT_INTERIOR
  if (interior) {
    let o = out_base + row0 * params.N + col0;
    subgroupMatrixStore(&output, o, acc0_0, false, params.N);
    subgroupMatrixStore(&output, o + 16u, acc0_1, false, params.N);
    subgroupMatrixStore(&output, o + 16u * params.N, acc1_0, false, params.N);
    subgroupMatrixStore(&output, o + 16u * params.N + 16u, acc1_1, false, params.N);
    subgroupMatrixStore(&output, o + 32u * params.N, acc2_0, false, params.N);
    subgroupMatrixStore(&output, o + 32u * params.N + 16u, acc2_1, false, params.N);
    subgroupMatrixStore(&output, o + 48u * params.N, acc3_0, false, params.N);
    subgroupMatrixStore(&output, o + 48u * params.N + 16u, acc3_1, false, params.N);
    return;
  }
#endif
  bounce_out(acc0_0, sid, lane, lanes, row0, col0, out_base);
  bounce_out(acc0_1, sid, lane, lanes, row0, col0 + 16u, out_base);
  bounce_out(acc1_0, sid, lane, lanes, row0 + 16u, col0, out_base);
  bounce_out(acc1_1, sid, lane, lanes, row0 + 16u, col0 + 16u, out_base);
  bounce_out(acc2_0, sid, lane, lanes, row0 + 32u, col0, out_base);
  bounce_out(acc2_1, sid, lane, lanes, row0 + 32u, col0 + 16u, out_base);
  bounce_out(acc3_0, sid, lane, lanes, row0 + 48u, col0, out_base);
  bounce_out(acc3_1, sid, lane, lanes, row0 + 48u, col0 + 16u, out_base);
}
