// A float32 NCHW convolution input as the float16 NHWC tensor the subgroup-matrix convolution gathers from
// (linear/gemm_matrix_f16.wgsl, A_CONV without A_F32; ops/conv/matrix_f16.cpp): [images, H, W, C] halves,
// two per u32 word, C a multiple of 8, so that a pixel's 8 consecutive channels are one 16-byte load there.
// One invocation per 8 channels of a pixel, pixels fastest: its 8 reads, one per channel plane, are
// coalesced across a subgroup; its one 16-byte write lands C halves from its neighbour's. Values beyond the
// float16 range saturate to +-65504 (pack2x16float leaves them undefined).
#include "common/dispatch_grid.wgsl"

#interface

fn half_pair(x: f32, y: f32) -> u32 {
  return pack2x16float(clamp(vec2<f32>(x, y), vec2<f32>(-65504.0), vec2<f32>(65504.0)));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>,
        @builtin(local_invocation_index) local_index: u32) {
  let i = linear_invocation_index(workgroup_id, num_workgroups, local_index, 256u);
  let groups = params.channels / 8u;  // 8-channel groups per pixel
  if (i >= params.images * groups * params.plane) {
    return;
  }
  let p = i % params.plane;
  let g = (i / params.plane) % groups;
  let image = i / (params.plane * groups);
  let s = (image * params.channels + g * 8u) * params.plane + p;
  let plane = params.plane;
  output[(image * plane + p) * groups + g] =
      vec4<u32>(half_pair(input[s], input[s + plane]), half_pair(input[s + 2u * plane], input[s + 3u * plane]),
                half_pair(input[s + 4u * plane], input[s + 5u * plane]),
                half_pair(input[s + 6u * plane], input[s + 7u * plane]));
}
