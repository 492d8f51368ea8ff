// A float32 GEMM operand [M, K] (row-major) as the float16 matrix linear/gemm_matrix_f16.wgsl reads:
// [rows, k_padded] halves, two per u32 word, zeros past M and K. One invocation per output word. Values
// beyond the float16 range saturate to +-65504 (pack2x16float leaves them undefined). With A_ROW_MAP, row m of
// A starts mixed_radix_offset(a_row_extents, a_row_strides, m) elements in (DaViT's window partition, read in
// place): the rows come out packed.
#include "common/dispatch_grid.wgsl"
#include "common/mixed_radix.wgsl"

#interface

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>,
        @builtin(local_invocation_index) local_index: u32) {
  let w = linear_invocation_index(workgroup_id, num_workgroups, local_index, 256u);
  let words_per_row = params.k_padded / 2u;
  if (w >= params.rows * words_per_row) {
    return;
  }
  let m = w / words_per_row;
  let k = (w % words_per_row) * 2u;
  var v = vec2<f32>(0.0);
  if (m < params.M) {
#if A_ROW_MAP
    let row = mixed_radix_offset(params.a_row_extents, params.a_row_strides, m);
#else
    let row = m * params.K;
#endif
    if (k < params.K) {
      v.x = a[row + k];
    }
    if (k + 1u < params.K) {
      v.y = a[row + k + 1u];
    }
  }
  a16[w] = pack2x16float(clamp(v, vec2<f32>(-65504.0), vec2<f32>(65504.0)));
}
