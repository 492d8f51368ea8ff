// The large-tile GEMM: a BM x BN output tile per 256-invocation workgroup (16 x 16 threads, each a TM x TN
// register tile: 128x128 with 8x8, 64x64 with 4x4), K walked in slabs of BK.
//
// - Global -> registers -> workgroup memory: each thread fetches its share of the next K slab into registers
//   before computing on the current one, so global latency hides behind the FMAs. With STAGES = 2 the slab
//   goes into the other half of a double-buffered workgroup array (one barrier per slab); with STAGES = 1 it
//   waits for the computation to finish (two barriers per slab) and needs half the workgroup memory.
// - Workgroup memory holds both operands K-major ([k][m] and [k][n]) as vec4s, so the inner loop reads TM/4 +
//   TN/4 vec4s per k for TM * TN FMAs. Rows carry one vec4 of padding: the transposed scalar stores of a
//   K-contiguous operand then hit 32 distinct banks (row stride = 4 mod 32 words).
// - An operand whose K is contiguous (A [M,K], B [N,K]) is read as vec4 along K and transposed on the way
//   into workgroup memory; one whose M (N) is contiguous (A [K,M], B [K,N]) as vec4 along M (N), stored as
//   is.
//   A_VEC4 / B_VEC4 = 0 reads the same four elements as scalars, for a contiguous extent not divisible by 4.
// - B_QUANT: B is a weight-only quantized [N, K] weight (MatMulNBits, MatMulBnb4), dequantised in fetch_b, so
//   the slab in workgroup memory and everything after it are the float kernel's.
// - A warp (32 invocations) covers 8 x 4 threads, so its workgroup-memory reads touch 8 (B) and 4 (A)
//   distinct consecutive vec4s: no bank conflicts, and few wavefronts per FMA.
// - Any M, N, K: edge tiles are zero-filled when loaded and masked when stored.
// - Strided views (attention's Q, K, V read in place): A's and B's stored rows are params.a_row_stride /
//   b_row_stride apart from a_offset / b_offset, the output's go where output_matrix says; the planner sets
//   A_VEC4 / B_VEC4 / OUT_VEC4 only where those strides and offsets are multiples of 4 (gemm_launch.cpp).
// - Row maps (DaViT's window partition read and window reverse written in place): with A_ROW_MAP, A's row m
//   starts mixed_radix_offset(a_row_extents, a_row_strides, m) into its matrix. A thread's A rows are the
//   same in every slab (a_rk), so it decodes them once before the K loop (a_rows) and fetch_a gets the row's
//   start. With OUT_ROW_MAP the thread's TM output rows are decoded once after the K loop (out_rows), outside
//   the unrolled store loop: anything long in there risks the accumulators going to local memory (see
//   IN_PLACE_EPILOGUE).
// - SPLIT_K: for few output tiles over a long K (mid-size transformer products on a large GPU), workgroups
//   also split K into params.k_splits chunks of whole slabs and write raw partial sums, chunk-major
//   ([split][batch][M][N]); gemm_split_reduce.wgsl adds them and applies the epilogue.
// - The epilogue runs on the register tile: each thread's runs of four columns are written as vec4s where
//   N % 4 == 0 (OUT_VEC4: a warp then writes whole 128-byte lines, against four scalar stores per run
//   spread over 32-byte pieces of them). A long activation (the Gelu forms) or a residual goes to an in-place
//   second pass (IN_PLACE_EPILOGUE, see there). Staging the tile through workgroup memory instead (coalesced
//   stores, the activation once per element in a loop without accumulators) ran DaViT's plain products
//   27-43% slower on the H200 (its barriers and passes outweigh the saved traffic; 2026-11-30).
const TM: u32 = {{TM}}u;  // rows per thread, 4 or 8
const TN: u32 = {{TN}}u;  // columns per thread, 4 or 8
const BK: u32 = {{BK}}u;  // K per slab; BM * BK and BN * BK are multiples of 1024
const STAGES: u32 = {{STAGES}}u;  // 2 with DOUBLE_BUFFER, else 1
const BM: u32 = 16u * TM;
const BN: u32 = 16u * TN;
const GM: u32 = TM / 4u;  // vec4 groups of a thread's rows; group g holds rows g * 64 + ty * 4 + 0..3
const GN: u32 = TN / 4u;
const SA: u32 = BM / 4u + 1u;  // vec4s per k row of a_tile, padding included
const SB: u32 = BN / 4u + 1u;
const A_LOADS: u32 = BM * BK / 1024u;  // vec4s of A per thread per slab
const B_LOADS: u32 = BN * BK / 1024u;

#include "linear/gemm_bindings.wgsl"

#include "linear/gemm_common.wgsl"

var<workgroup> a_tile: array<vec4<f32>, STAGES * BK * SA>;  // [stage][k][m / 4]
var<workgroup> b_tile: array<vec4<f32>, STAGES * BK * SB>;  // [stage][k][n / 4]

// Four consecutive elements of A along its contiguous dimension, zero past the edges. `base` is the batch
// offset in elements; (m, k) is the first element.
fn fetch_a(base: u32, m: u32, k: u32) -> vec4<f32> {
#if A_KM
  // A stored [K, M]: the four run along M.
  if (k >= params.K) {
    return vec4<f32>(0.0);
  }
  let i = base + k * params.a_row_stride + m;
#if A_VEC4
  if (m >= params.M) {
    return vec4<f32>(0.0);
  }
  return a[i / 4u];
#else
  var v = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
    if (m + j < params.M) {
      v[j] = a[i + j];
    }
  }
  return v;
#endif
#else
  // A stored [M, K]: the four run along K.
  if (m >= params.M) {
    return vec4<f32>(0.0);
  }
#if A_ROW_MAP
  let i = base + k;  // base: where row m starts (a_rows in main)
#else
  let i = base + m * params.a_row_stride + k;
#endif
#if A_VEC4
  if (k >= params.K) {
    return vec4<f32>(0.0);
  }
  return a[i / 4u];
#else
  var v = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
    if (k + j < params.K) {
      v[j] = a[i + j];
    }
  }
  return v;
#endif
#endif
}

// Four consecutive elements of B along its contiguous dimension, zero past the edges.
fn fetch_b(base: u32, n: u32, k: u32) -> vec4<f32> {
#if B_QUANT
  // A weight-only quantized B [N, K] (B_NK): the four weights of column n from k (a multiple of 4) lie in one
  // word (4 to 16 codes a word, words never straddle a block), dequantised here on their way to the slab.
  if (n >= params.N || k >= params.K) {
    return vec4<f32>(0.0);
  }
  let word = b[n * params.col_words + k / CODES_PER_WORD] >> ((k % CODES_PER_WORD) * BITS);
  var q = block_quant(n, k);
  var v = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
#if SCALE_PER_CODE
    q = block_quant(n, min(k + j, params.K - 1u));
#endif
    v[j] = select(0.0, dequantize((word >> (j * BITS)) & CODE_MASK, q), k + j < params.K);
  }
  return v;
#else
#if B_NK
  // B stored [N, K] (the prepacked weight): the four run along K.
  if (n >= params.N) {
    return vec4<f32>(0.0);
  }
  let i = base + n * params.b_row_stride + k;
#if B_VEC4
  if (k >= params.K) {
    return vec4<f32>(0.0);
  }
#if B_F16
  return b_quad(i / 4u);
#else
  return b[i / 4u];
#endif
#else
  var v = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
    if (k + j < params.K) {
#if B_F16
      v[j] = b_elem(i + j);
#else
      v[j] = b[i + j];
#endif
    }
  }
  return v;
#endif
#else
  // B stored [K, N]: the four run along N.
  if (k >= params.K) {
    return vec4<f32>(0.0);
  }
  let i = base + k * params.b_row_stride + n;
#if B_VEC4
  if (n >= params.N) {
    return vec4<f32>(0.0);
  }
#if B_F16
  return b_quad(i / 4u);
#else
  return b[i / 4u];
#endif
#else
  var v = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
    if (n + j < params.N) {
#if B_F16
      v[j] = b_elem(i + j);
#else
      v[j] = b[i + j];
#endif
    }
  }
  return v;
#endif
#endif
#endif
}

// Which four elements of a slab the thread's load number `l` covers, as (row or column, k) within the slab.
// K-contiguous operand: consecutive invocations pair up on one row (two vec4s along K, 32 bytes) and a warp
// spans 16 rows, which makes the transposed stores conflict-free. Otherwise a warp reads one k row.
fn slab_coords(flat: u32, l: u32, extent: u32, k_contiguous: bool) -> vec2<u32> {
  let e = flat + l * 256u;
  if (k_contiguous) {
    let pair = e >> 1u;
    return vec2<u32>(pair % extent, 4u * ((e & 1u) + 2u * (pair / extent)));
  }
  return vec2<u32>(4u * (e % (extent / 4u)), e / (extent / 4u));
}

// Stores four fetched elements, the first at (row, k) = rk of the slab, into the K-major tile of `stage`.
fn store_a(stage: u32, rk: vec2<u32>, v: vec4<f32>) {
  let base = stage * (BK * SA);
#if A_KM
  a_tile[base + rk.y * SA + rk.x / 4u] = v;
#else
  let i = base + rk.y * SA + rk.x / 4u;
  let c = rk.x % 4u;
  a_tile[i][c] = v.x;
  a_tile[i + SA][c] = v.y;
  a_tile[i + 2u * SA][c] = v.z;
  a_tile[i + 3u * SA][c] = v.w;
#endif
}

fn store_b(stage: u32, rk: vec2<u32>, v: vec4<f32>) {
  let base = stage * (BK * SB);
#if B_NK
  let i = base + rk.y * SB + rk.x / 4u;
  let c = rk.x % 4u;
  b_tile[i][c] = v.x;
  b_tile[i + SB][c] = v.y;
  b_tile[i + 2u * SB][c] = v.z;
  b_tile[i + 3u * SB][c] = v.w;
#else
  b_tile[base + rk.y * SB + rk.x / 4u] = v;
#endif
}

// Where output matrix `batch` starts and how far apart its rows are, in elements: packed ([batch][M][N];
// with SPLIT_K K chunk `split`'s partial sums, [split][batch][M][N]: gemm_split_reduce.wgsl writes a view),
// or with OUT_VIEW the output view's (gemm_output_offset, out_row_stride). Packed outputs skip the view's
// batch decoding: with its loop in the kernel, DaViT's one-wave products (72-120 tiles of 128) ran 1.3x
// slower on the H200 (2026-11-30).
fn output_matrix(split: u32, batch: u32) -> vec2<u32> {
#if OUT_VIEW
  return vec2<u32>(gemm_output_offset(batch), params.out_row_stride);
#else
  return vec2<u32>((split * params.batch + batch) * params.M * params.N, params.N);
#endif
}

// Writes the four sums of output row m, columns n..n + 3 (those before N), at element index `i`: raw with
// SPLIT_K (the reduction applies the epilogue), else alpha * sum + beta * bias, activated here unless the
// in-place pass does it. One vec4 with OUT_VEC4 (N % 4 == 0: a run that starts before N ends before it).
fn store_sums(i: u32, m: u32, n: u32, sums: vec4<f32>) {
#if SPLIT_K
  let v = sums;
#else
  var v = params.alpha * sums;
  if (params.has_bias != 0u) {
    for (var j = 0u; j < 4u; j++) {
      v[j] += params.beta * bias[m * params.bias_strides.x + min(n + j, params.N - 1u) * params.bias_strides.y];
    }
  }
#if !IN_PLACE_EPILOGUE
  for (var j = 0u; j < 4u; j++) {
    v[j] = fused_activation(v[j], params.act_lo, params.act_hi);
  }
#endif
#endif
#if OUT_VEC4
  output[i / 4u] = v;
#else
  for (var j = 0u; j < 4u; j++) {
    if (n + j < params.N) {
      output[i + j] = v[j];
    }
  }
#endif
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) flat: u32) {
  let tile_index = linear_workgroup_index(wid, nwg);
#if SPLIT_K
  let splits = params.k_splits;
#else
  let splits = 1u;
#endif
  let coords = gemm_tile_coords(tile_index, splits);
  if (coords.x >= splits) {
    return;  // uniform: the whole workgroup leaves together
  }
  let split = coords.x;
  let batch = coords.y;
  let in_matrix = coords.z;
  let row0 = (in_matrix / params.tiles_n) * BM;
  let col0 = (in_matrix % params.tiles_n) * BN;
  let offsets = gemm_batch_offsets(batch);

  // Warp w covers threads tx in (w % 2) * 8 + 0..7, ty in (w / 2) * 4 + 0..3.
  let lane = flat % 32u;
  let warp = flat / 32u;
  let tx = (warp % 2u) * 8u + lane % 8u;
  let ty = (warp / 2u) * 4u + lane / 8u;

#if A_KM
  let a_k_contiguous = false;
#else
  let a_k_contiguous = true;
#endif
#if B_NK
  let b_k_contiguous = true;
#else
  let b_k_contiguous = false;
#endif
  var a_rk: array<vec2<u32>, A_LOADS>;
  var b_rk: array<vec2<u32>, B_LOADS>;
  for (var l = 0u; l < A_LOADS; l++) {
    a_rk[l] = slab_coords(flat, l, BM, a_k_contiguous);
  }
  for (var l = 0u; l < B_LOADS; l++) {
    b_rk[l] = slab_coords(flat, l, BN, b_k_contiguous);
  }
#if A_ROW_MAP
  var a_rows: array<u32, A_LOADS>;  // where each load's A row starts (fetch_a skips rows past M)
  for (var l = 0u; l < A_LOADS; l++) {
    let m = row0 + a_rk[l].x;
    a_rows[l] = offsets.x + mixed_radix_offset(params.a_row_extents, params.a_row_strides, m);
  }
#endif

  var acc: array<vec4<f32>, TM * GN>;  // row r, column group g at acc[r * GN + g]; zero-initialised
  var a_next: array<vec4<f32>, A_LOADS>;
  var b_next: array<vec4<f32>, B_LOADS>;

  // This workgroup's K chunk: whole slabs, so chunks never share one (empty past K for a late chunk).
  let all_slabs = (params.K + BK - 1u) / BK;
  let slabs_per_chunk = (all_slabs + splits - 1u) / splits;
  let slab_begin = min(all_slabs, split * slabs_per_chunk);
  let k_slabs = min(all_slabs, slab_begin + slabs_per_chunk) - slab_begin;
  let k_first = slab_begin * BK;
  if (k_slabs > 0u) {
    for (var l = 0u; l < A_LOADS; l++) {
#if A_ROW_MAP
      store_a(0u, a_rk[l], fetch_a(a_rows[l], row0 + a_rk[l].x, k_first + a_rk[l].y));
#else
      store_a(0u, a_rk[l], fetch_a(offsets.x, row0 + a_rk[l].x, k_first + a_rk[l].y));
#endif
    }
    for (var l = 0u; l < B_LOADS; l++) {
      store_b(0u, b_rk[l], fetch_b(offsets.y, col0 + b_rk[l].x, k_first + b_rk[l].y));
    }
  }
  workgroupBarrier();

  for (var s = 0u; s < k_slabs; s++) {
    let more = s + 1u < k_slabs;
    if (more) {
      let k0 = k_first + (s + 1u) * BK;
      for (var l = 0u; l < A_LOADS; l++) {
#if A_ROW_MAP
        a_next[l] = fetch_a(a_rows[l], row0 + a_rk[l].x, k0 + a_rk[l].y);
#else
        a_next[l] = fetch_a(offsets.x, row0 + a_rk[l].x, k0 + a_rk[l].y);
#endif
      }
      for (var l = 0u; l < B_LOADS; l++) {
        b_next[l] = fetch_b(offsets.y, col0 + b_rk[l].x, k0 + b_rk[l].y);
      }
    }

#include "common/register_tile_fma.wgsl"

#if DOUBLE_BUFFER
    // The other half was last read in slab s - 1, which every thread finished before the last barrier.
    if (more) {
      for (var l = 0u; l < A_LOADS; l++) {
        store_a((s + 1u) % 2u, a_rk[l], a_next[l]);
      }
      for (var l = 0u; l < B_LOADS; l++) {
        store_b((s + 1u) % 2u, b_rk[l], b_next[l]);
      }
    }
    workgroupBarrier();
#else
    workgroupBarrier();
    if (more) {
      for (var l = 0u; l < A_LOADS; l++) {
        store_a(0u, a_rk[l], a_next[l]);
      }
      for (var l = 0u; l < B_LOADS; l++) {
        store_b(0u, b_rk[l], b_next[l]);
      }
    }
    workgroupBarrier();
#endif
  }

  let out_matrix = output_matrix(split, batch);
#if OUT_ROW_MAP
  var out_rows: array<u32, TM>;  // where each of the thread's output rows starts (rows past M: unused)
  for (var r = 0u; r < TM; r++) {
    let m = min(row0 + (r / 4u) * 64u + ty * 4u + r % 4u, params.M - 1u);
    out_rows[r] = out_matrix.x + mixed_radix_offset(params.out_row_extents, params.out_row_strides, m);
  }
#endif
  for (var gi = 0u; gi < GM; gi++) {
    for (var i = 0u; i < 4u; i++) {
      let m = row0 + gi * 64u + ty * 4u + i;
      if (m < params.M) {
#if OUT_ROW_MAP
        let out_row = out_rows[gi * 4u + i];
#else
        let out_row = out_matrix.x + m * out_matrix.y;
#endif
        for (var gj = 0u; gj < GN; gj++) {
          let n = col0 + gj * 64u + tx * 4u;
          if (n < params.N) {
            store_sums(out_row + n, m, n, acc[(gi * 4u + i) * GN + gj]);
          }
        }
      }
    }
  }
#if IN_PLACE_EPILOGUE
  // A long activation (erf, exp: the Gelu forms) inlined TM * TN times made the loop above too big for the
  // driver to unroll on the H200; acc, indexed by loop counters then, went to local memory for the whole
  // kernel (docs/performance.md, "Measurements behind the planner's rules"). A residual read there did the
  // same (DaViT's MLP-down on the 128 tile), and loading it into acc before the K loop made DaViT-base 8%
  // slower (docs/performance.md, "The wave tail; ..."). So that loop stores plain values, and this one, which
  // reads no accumulator, adds the residual and activates this thread's outputs in place (cache-hot: it wrote
  // them just now). A row's loads are all issued before its first store: a load that follows a store to the same
  // buffer waits for it, and one load-activate-store per run cost a memory latency per run.
  for (var r = 0u; r < TM; r++) {
    let m = row0 + (r / 4u) * 64u + ty * 4u + r % 4u;
    if (m < params.M) {
#if OUT_ROW_MAP
      let out_row = out_rows[r];
#else
      let out_row = out_matrix.x + m * out_matrix.y;
#endif
#if OUT_VEC4
      var vals: array<vec4<f32>, GN>;
      for (var g = 0u; g < GN; g++) {
        let at = (out_row + min(col0 + g * 64u + tx * 4u, params.N - 4u)) / 4u;  // no branch
        vals[g] = output[at];
#if RESIDUAL
        vals[g] += residual[at];
#endif
      }
      for (var g = 0u; g < GN; g++) {
        let n = col0 + g * 64u + tx * 4u;
        if (n < params.N) {
          for (var j = 0u; j < 4u; j++) {
            vals[g][j] = fused_activation(vals[g][j], params.act_lo, params.act_hi);
          }
          output[(out_row + n) / 4u] = vals[g];
        }
      }
#else
      var vals: array<f32, TN>;
      for (var c = 0u; c < TN; c++) {
        let at = out_row + min(col0 + (c / 4u) * 64u + tx * 4u + c % 4u, params.N - 1u);
        vals[c] = output[at];
#if RESIDUAL
        vals[c] += residual[at];
#endif
      }
      for (var c = 0u; c < TN; c++) {
        let n = col0 + (c / 4u) * 64u + tx * 4u + c % 4u;
        if (n < params.N) {
          output[out_row + n] = fused_activation(vals[c], params.act_lo, params.act_hi);
        }
      }
#endif
    }
  }
#endif
}
