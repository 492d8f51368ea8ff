// `index` written in the mixed radix `extents` (outermost first), each digit times its element stride in
// `strides`: where output matrix `index` starts (linear/gemm_common.wgsl's gemm_output_offset), or where row
// `index` of a row-mapped matrix starts in it (the GEMMs' ROW_MAPS, linear/gemm_a_to_f16.wgsl's A_ROW_MAP). A
// fixed count of steps, no data-dependent exit (gemm_fast.wgsl's output_matrix says why).
fn mixed_radix_offset(extents: vec4<u32>, strides: vec4<u32>, index: u32) -> u32 {
  var rest = index;
  var offset = 0u;
  for (var d = 3; d >= 0; d--) {
    offset += (rest % extents[d]) * strides[d];
    rest = rest / extents[d];
  }
  return offset;
}
