// Shared by the GEMM kernels: parameters, batch decoding and the epilogue.
// out[b, m, n] = act(alpha * sum_k A[b, m, k] * B[b, k, n] + beta * C[m, n] + R[b, m, n])
// R, a fused residual of the output's shape (src/ops/fused_residual.h), only with RESIDUAL: the kernel then
// declares `residual` (bound after its uniform).
// A is stored [M, K] or, with A_KM, [K, M]; B is stored [N, K] (B_NK: the prepacked layout) or [K, N].
// Rows as stored are a_row_stride / b_row_stride elements apart and start a_offset / b_offset elements in (the
// fast kernels' strided views; the packed values otherwise, which the seeds' kernels assume); the output's
// rows out_row_stride apart, its matrices at out_batch_strides (gemm_fast.wgsl, gemm_split_reduce.wgsl).
#include "common/dispatch_grid.wgsl"
#include "common/activation.wgsl"
#include "common/mixed_radix.wgsl"

// GemmParams: declared by the launch (gemm_params_members in src/ops/gemm_launch.cpp says what each field is).

// Where the workgroup at `tile_index` of a GEMM grid of `splits` K chunks works, as (K chunk, output matrix,
// tile within the matrix); the chunk is >= splits for a workgroup past the grid.
fn gemm_tile_coords(tile_index: u32, splits: u32) -> vec3<u32> {
  let tiles_per_matrix = params.tiles_n * params.tiles_m;
  let tiles_per_split = tiles_per_matrix * params.batch;
  return vec3<u32>(tile_index / tiles_per_split, (tile_index % tiles_per_split) / tiles_per_matrix,
                   tile_index % tiles_per_matrix);
}

// Element offsets of A's and B's matrices for output matrix `b`.
fn gemm_batch_offsets(b: u32) -> vec2<u32> {
  var rest = b;
  var offsets = vec2<u32>(params.a_offset, params.b_offset);
  for (var d = 3; d >= 0; d--) {
    let extent = params.batch_dims[d];
    let index = rest % extent;
    rest = rest / extent;
    offsets += index * vec2<u32>(params.a_batch_strides[d], params.b_batch_strides[d]);
  }
  return offsets;
}

// Element offset of output matrix `b` (its first element).
fn gemm_output_offset(b: u32) -> u32 {
  return mixed_radix_offset(params.batch_dims, params.out_batch_strides, b);
}

// The scalar epilogue of the kernels that write one element at a time (gemm_fast.wgsl has its own, which
// writes vec4s with OUT_VEC4: then `residual` is an array of vec4s and this function would not compile).
// `i`: the output element's index in [batch][M][N], where R is read.
#if !OUT_VEC4
fn gemm_epilogue(acc: f32, m: u32, n: u32, i: u32) -> f32 {
  var v = params.alpha * acc;
  if (params.has_bias != 0u) {
    v += params.beta * bias[m * params.bias_strides.x + n * params.bias_strides.y];
  }
#if RESIDUAL
  v += residual[i];
#endif
  return fused_activation(v, params.act_lo, params.act_hi);
}
#endif
