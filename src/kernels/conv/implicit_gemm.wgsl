// Implicit-GEMM convolution (no im2col buffer), NCHW in and out, per group g:
//   out[n, g * M + m, oh, ow] = act(bias + sum_k W[g][k][m] * X[n, g * ICg + ic, oh * s - p + kh * d, ...])
// a GEMM with M = output channels per group, N = batch * out_h * out_w (the output pixels), and
// K = ICg * KH * KW in ONNX's order (ic, kh, kw). A workgroup computes a BM x BN tile of it for one group.
//
// The structure is linear/gemm_fast.wgsl's (see there for the reasoning): 256 invocations in 16 x 16 threads,
// each a TM x TN register tile of vec4 accumulators, both operands K-major in workgroup memory as vec4s, K
// walked in slabs of BK with the next slab fetched into registers while the current one is multiplied, one or
// two workgroup buffers (STAGES), the same warp arrangement (8 x 4 threads per warp, conflict-free reads).
// What differs is where the operands come from:
// - A, the weight, prepacked at plan time (src/ops/conv/implicit_gemm.cpp) into [group][K][M rounded up to 4]: each
//   thread reads whole vec4s along M and stores them as they are; the padding rows are zeros.
// - B, the activations, gathered while loading: a thread owns one output pixel (column) of the tile for the
//   whole K loop, so the pixel's decoding (image, oh, ow -> first input row and column) happens once; per
//   element it reads a tap table (k -> offset of (ic, kh * d, kw * d) in the image, row and column shift;
//   plan-time constant, identical for every column, so a warp reads one entry) and tests the padding. A warp
//   covers 32 consecutive pixels of one k: its global reads are consecutive for stride 1 and its scalar
//   stores into workgroup memory hit 32 distinct banks.
// - Tiles are ordered row tiles first: the workgroups that share one tile of pixels (and so the same gathered
//   activations) run side by side and hit L2.
// - SPLIT_K: for few tiles over a long K (ResNet-50's last stages: 8 tiles of 64x64 over K = 4608 on a 132-SM
//   GPU), workgroups also split K into params.k_splits chunks of whole slabs and store raw partial sums, chunk
//   after chunk in the output's NCHW order; linear/gemm_split_reduce.wgsl adds them, the bias and the
//   activation.
// - RESIDUAL: a fused residual of the output's shape (src/ops/fused_residual.h) is added before the
//   activation, one read per output element (with SPLIT_K, by the reduction).
#include "common/activation.wgsl"
#include "common/dispatch_grid.wgsl"

const TM: u32 = {{TM}}u;  // rows per thread, 4 or 8
const TN: u32 = {{TN}}u;  // columns per thread, 4 or 8
const BK: u32 = {{BK}}u;  // K per slab
const STAGES: u32 = {{STAGES}}u;
const BM: u32 = 16u * TM;
const BN: u32 = 16u * TN;
const GM: u32 = TM / 4u;
const GN: u32 = TN / 4u;
const SA: u32 = BM / 4u;  // vec4s per k row of a_tile
const SB: u32 = BN / 4u;
const A_LOADS: u32 = BM * BK / 1024u;  // vec4s of the weight per thread per slab
const A_K_STEP: u32 = 256u / SA;       // k rows between a thread's weight loads
const B_LOADS: u32 = BN * BK / 256u;   // gathered scalars per thread per slab
const B_K_STEP: u32 = 256u / BN;       // k rows between a thread's gathers

#interface
#if W_F16
// A float16 weight, packed as the device stores float16 (four halves per vec2<u32>), unpacked as loaded
// (in integer arithmetic, common/f16_bits.wgsl).
#include "common/f16_bits.wgsl"
#endif

var<workgroup> a_tile: array<vec4<f32>, STAGES * BK * SA>;  // [stage][k][m / 4]
var<workgroup> b_tile: array<vec4<f32>, STAGES * BK * SB>;  // [stage][k][n / 4]

// Four output channels of the weight at row k, zero past the edges; m4 is a multiple of 4.
fn fetch_a(group: u32, m4: u32, k: u32) -> vec4<f32> {
  if (k >= params.K || m4 >= params.a_row * 4u) {
    return vec4<f32>(0.0);
  }
#if W_F16
  let w = weight[(group * params.K + k) * params.a_row + m4 / 4u];
  return vec4<f32>(unpack_f16x2(w.x), unpack_f16x2(w.y));
#else
  return weight[(group * params.K + k) * params.a_row + m4 / 4u];
#endif
}

// The thread's output pixel, decoded once: where its taps start in the input, and whether it exists.
struct Pixel {
  base: i32,  // element index of (image, first channel of the group, ih0, iw0); may point before the image
  ih0: i32,
  iw0: i32,
  valid: bool,
}

fn decode_pixel(group: u32, j: u32) -> Pixel {
  var px: Pixel;
  px.valid = j < params.N;
  let jj = min(j, params.N - 1u);
  let image = jj / params.out_plane;
  let p = jj % params.out_plane;
  px.ih0 = i32((p / params.out_w) * params.stride_h) - params.pad_top;
  px.iw0 = i32((p % params.out_w) * params.stride_w) - params.pad_left;
  px.base = i32(image * params.in_image + group * params.in_group) + px.ih0 * i32(params.in_w) + px.iw0;
  return px;
}

// One element of the implicit im2col matrix: tap k of pixel px, zero in the padding and past the edges.
fn gather(px: Pixel, k: u32) -> f32 {
  if (!px.valid || k >= params.K) {
    return 0.0;
  }
  let tap = taps[k];
  // Negative positions wrap to huge unsigned values, so one comparison per axis covers both sides.
  if (u32(px.ih0 + tap.y) >= params.in_h || u32(px.iw0 + tap.z) >= params.in_w) {
    return 0.0;
  }
  return input[u32(px.base + tap.x)];
}

fn store_b(stage: u32, k: u32, n: u32, v: f32) {
  b_tile[stage * (BK * SB) + k * SB + n / 4u][n % 4u] = v;
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) flat: u32) {
  let tile_index = linear_workgroup_index(wid, nwg);
  let tiles = params.tiles_m * params.tiles_n;
#if SPLIT_K
  let splits = params.k_splits;
#else
  let splits = 1u;
#endif
  if (tile_index >= tiles * params.groups * splits) {
    return;  // uniform: the whole workgroup leaves together
  }
  let split = tile_index / (tiles * params.groups);
  let group = tile_index % (tiles * params.groups) / tiles;
  let in_group = tile_index % tiles;
  let row0 = (in_group % params.tiles_m) * BM;
  let col0 = (in_group / params.tiles_m) * BN;

  let lane = flat % 32u;
  let warp = flat / 32u;
  let tx = (warp % 2u) * 8u + lane % 8u;
  let ty = (warp / 2u) * 4u + lane / 8u;

  // Load assignments: weight vec4 column a_m (fixed) at k rows a_k + l * A_K_STEP; activation column b_n
  // (fixed) at k rows b_k + l * B_K_STEP.
  let a_m = 4u * (flat % SA);
  let a_k = flat / SA;
  let b_n = flat % BN;
  let b_k = flat / BN;
  let px = decode_pixel(group, col0 + b_n);

  var acc: array<vec4<f32>, TM * GN>;  // row r, column group g at acc[r * GN + g]; zero-initialised
  var a_next: array<vec4<f32>, A_LOADS>;
  var b_next: array<f32, B_LOADS>;

  // This workgroup's K chunk: whole slabs (none past K for a late chunk, whose loads then read zeros).
  let all_slabs = (params.K + BK - 1u) / BK;
  let slabs_per_chunk = (all_slabs + splits - 1u) / splits;
  let slab_begin = min(all_slabs, split * slabs_per_chunk);
  let k_slabs = min(all_slabs, slab_begin + slabs_per_chunk) - slab_begin;
  let k_first = slab_begin * BK;
  for (var l = 0u; l < A_LOADS; l++) {
    a_tile[(a_k + l * A_K_STEP) * SA + a_m / 4u] = fetch_a(group, row0 + a_m, k_first + a_k + l * A_K_STEP);
  }
  for (var l = 0u; l < B_LOADS; l++) {
    store_b(0u, b_k + l * B_K_STEP, b_n, gather(px, k_first + b_k + l * B_K_STEP));
  }
  workgroupBarrier();

  for (var s = 0u; s < k_slabs; s++) {
    let more = s + 1u < k_slabs;
    if (more) {
      let k0 = k_first + (s + 1u) * BK;
      for (var l = 0u; l < A_LOADS; l++) {
        a_next[l] = fetch_a(group, row0 + a_m, k0 + a_k + l * A_K_STEP);
      }
      for (var l = 0u; l < B_LOADS; l++) {
        b_next[l] = gather(px, k0 + b_k + l * B_K_STEP);
      }
    }

#include "common/register_tile_fma.wgsl"

    // With two stages the other half was last read in slab s - 1, which every thread finished before the
    // last barrier; with one, the slab must be fully read before it is overwritten.
    if (STAGES == 1u) {
      workgroupBarrier();
    }
    if (more) {
      let stage = (s + 1u) % STAGES;
      for (var l = 0u; l < A_LOADS; l++) {
        a_tile[stage * (BK * SA) + (a_k + l * A_K_STEP) * SA + a_m / 4u] = a_next[l];
      }
      for (var l = 0u; l < B_LOADS; l++) {
        store_b(stage, b_k + l * B_K_STEP, b_n, b_next[l]);
      }
    }
    workgroupBarrier();
  }

  // Epilogue: the thread's columns are pixels gi * 64 + tx * 4 + 0..3 of the tile; each decodes once into
  // its output offset without the channel term.
  var col_offset: array<u32, TN>;
  for (var c = 0u; c < TN; c++) {
    let j = min(col0 + (c / 4u) * 64u + tx * 4u + c % 4u, params.N - 1u);
    col_offset[c] = (j / params.out_plane) * params.out_channels * params.out_plane + j % params.out_plane;
  }
  for (var gi = 0u; gi < GM; gi++) {
    for (var i = 0u; i < 4u; i++) {
      let m = row0 + gi * 64u + ty * 4u + i;
      if (m < params.M) {
        let oc = group * params.M + m;
        var b = 0.0;
        if (params.has_bias != 0u) {
          b = bias[oc];
        }
        for (var gj = 0u; gj < GN; gj++) {
          let v = acc[(gi * 4u + i) * GN + gj];
          for (var jj = 0u; jj < 4u; jj++) {
            let c = gj * 4u + jj;
            if (col0 + gj * 64u + tx * 4u + jj < params.N) {
#if SPLIT_K
              // The raw sum, in chunk `split`'s copy of the output (the reduction adds the bias).
              output[split * params.N * params.out_channels + col_offset[c] + oc * params.out_plane] = v[jj];
#else
              let at = col_offset[c] + oc * params.out_plane;
              let sum = v[jj] + b;
#if IN_PLACE_EPILOGUE
              output[at] = sum;  // residual and activation in the loop below
#else
              output[at] = fused_activation(sum, params.lo, params.hi);
#endif
#endif
            }
          }
        }
      }
    }
  }
#if IN_PLACE_EPILOGUE
  // As in linear/gemm_fast.wgsl: a long activation or a residual read inlined TM * TN times would stop the
  // driver unrolling the loop above and send acc to local memory; this loop, reading no accumulator, adds the
  // residual and activates in place, a row's loads all issued before its first store.
  for (var r = 0u; r < TM; r++) {
    let m = row0 + (r / 4u) * 64u + ty * 4u + r % 4u;
    if (m < params.M) {
      let row_offset = (group * params.M + m) * params.out_plane;
      var vals: array<f32, TN>;
      for (var c = 0u; c < TN; c++) {
        vals[c] = output[col_offset[c] + row_offset];  // col_offset is in range for columns past N too
#if RESIDUAL
        vals[c] += residual[col_offset[c] + row_offset];
#endif
      }
      for (var c = 0u; c < TN; c++) {
        if (col0 + (c / 4u) * 64u + tx * 4u + c % 4u < params.N) {
          output[col_offset[c] + row_offset] = fused_activation(vals[c], params.lo, params.hi);
        }
      }
    }
  }
#endif
}
