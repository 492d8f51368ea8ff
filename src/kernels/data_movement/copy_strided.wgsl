// The generic data-movement kernel: one invocation per element of an up-to-8-D iteration space. Element c
// (a multi-index) is read at src_offset + sum(c[d] * src_strides[d]) and written at dst_offset +
// sum(c[d] * dst_strides[d]). Transpose, Slice (negative strides for negative steps), Concat (one launch per
// input into its slice of the output), Split, Expand (stride 0), Tile and Depth/SpaceToDepth are all such
// copies (src/ops/data_movement_copy.cpp builds them). Every device element is 4 bytes, so u32 moves any
// dtype's bits. T is u32, or vec4<u32> when the innermost dim is contiguous on both sides and everything is
// a multiple of 4 elements (the host then passes shape, strides and offsets in units of 4 elements).
#include "common/dispatch_grid.wgsl"

alias T = {{TYPE}};

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  var rest = i;
  var s = params.src_offset;
  var d = params.dst_offset;
  for (var k = i32(params.rank) - 1; k >= 0; k--) {
    let n = params.shape[k / 4][k % 4];
    let c = i32(rest % n);
    rest = rest / n;
    s += c * params.src_strides[k / 4][k % 4];
    d += c * params.dst_strides[k / 4][k % 4];
  }
  destination[u32(d)] = source[u32(s)];
}
