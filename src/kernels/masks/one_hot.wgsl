// OneHot: output[o, d, i] = values[1] (on) where indices[o, i] (made non-negative by adding depth) == d, else
// values[0] (off); an index outside [-depth, depth) gives a row of off values. Indices are read as
// indices of type i32, u32 or f32, truncated towards zero like a cast); values as device words.
#include "common/dispatch_grid.wgsl"

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  let inner = i % params.inner;
  let d = (i / params.inner) % params.depth;
  let outer = i / (params.inner * params.depth);
  let raw = indices[outer * params.inner + inner];
#if FLOAT_INDICES
  // Beyond i32's range the index is out of range anyway; clamp before converting (the cast saturates).
  var index = i32(clamp(trunc(raw), -2147483520.0, 2147483520.0));
#else
  var index = i32(raw);
#endif
  if (index < 0) {
    index += i32(params.depth);
  }
  destination[i] = values[select(0u, 1u, index >= 0 && u32(index) == d)];
}
