// The second half of a split-K GEMM (gemm_tiled.wgsl or gemm_fast.wgsl with SPLIT_K): adds the params.k_splits partial
// products of every output element, in chunk order, and applies the GEMM's epilogue (alpha, beta * C, the
// fused residual with RESIDUAL, the fused activation). One invocation per output element.
// partials [split][batch][M][N]; output [batch][M][N], or with OUT_VIEW a view (out_row_stride,
// out_batch_strides); residual [batch][M][N] (gemm_split_reduce_launch declares them).
#interface

#include "linear/gemm_common.wgsl"

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
  let i = linear_invocation_index(wid, nwg, local, 64u);
  let per_matrix = params.M * params.N;
  let total = per_matrix * params.batch;
  if (i >= total) {
    return;
  }
  var acc = 0.0;
  for (var s = 0u; s < params.k_splits; s++) {
    acc += partials[s * total + i];
  }
  let in_matrix = i % per_matrix;
  let m = in_matrix / params.N;
  let n = in_matrix % params.N;
#if OUT_ROW_MAP
  // A row-mapped output's residual is laid out like the output: read where the element goes.
  let row = mixed_radix_offset(params.out_row_extents, params.out_row_strides, m);
  let at = gemm_output_offset(i / per_matrix) + row + n;
  output[at] = gemm_epilogue(acc, m, n, at);
#else
  // The residual stays at i: the planner rejects a residual with a strided output.
#if OUT_VIEW
  output[gemm_output_offset(i / per_matrix) + m * params.out_row_stride + n] = gemm_epilogue(acc, m, n, i);
#else
  output[i] = gemm_epilogue(acc, m, n, i);  // packed: no batch decoding (gemm_fast.wgsl's output_matrix)
#endif
#endif
}
