// MeanVarianceNormalization over a set of axes, two stages of one text:
//   STATS  one workgroup per group (a combination of the kept axes' coordinates): the mean of the group's
//          elements, then the mean of squared deviations (two passes over the group, so the variance is never
//          negative), each summed per invocation and reduced in workgroup memory; writes
//          stats[2g] = mean, stats[2g + 1] = 1 / (sqrt(variance) + 1e-9) (ONNX's epsilon, added to the std).
//   APPLY  one invocation per element: (x - mean) * that factor.
// Dims up to 8: `dims` / `strides` describe kept dims (STATS: the group's position) and reduced dims
// (within the group) as mixed radices over element strides.
#include "common/dispatch_grid.wgsl"

const WG_SIZE: u32 = {{WG}}u;

#interface

fn decode(index: u32, rank: u32, dims: array<vec4u, 2>, strides: array<vec4u, 2>) -> u32 {
  var rest = index;
  var offset = 0u;
  for (var k = i32(rank) - 1; k >= 0; k--) {
    let n = dims[k / 4][k % 4];
    offset += (rest % n) * strides[k / 4][k % 4];
    rest = rest / n;
  }
  return offset;
}

#if STATS
var<workgroup> partial: array<f32, WG_SIZE>;

#include "common/workgroup_reduce.wgsl" NAME=tree_sum SLOTS=partial TYPE=f32 COMBINE="a + b"

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let g = linear_workgroup_index(wid, nwg);
  if (g >= params.count) {
    return;  // the whole workgroup: the barriers stay in uniform control flow
  }
  let base = decode(g, params.kept_rank, params.kept_dims, params.kept_strides);
  var sum = 0.0;
  for (var w = lid; w < params.group_size; w += WG_SIZE) {
    sum += source[base + decode(w, params.reduced_rank, params.reduced_dims, params.reduced_strides)];
  }
  let mean = tree_sum(sum, lid) / f32(params.group_size);
  workgroupBarrier();  // every invocation has read the sum before partial is reused
  var squares = 0.0;
  for (var w = lid; w < params.group_size; w += WG_SIZE) {
    let d = source[base + decode(w, params.reduced_rank, params.reduced_dims, params.reduced_strides)] - mean;
    squares += d * d;
  }
  let variance = tree_sum(squares, lid) / f32(params.group_size);
  if (lid == 0u) {
    stats[2u * g] = mean;
    stats[2u * g + 1u] = 1.0 / (sqrt(variance) + 1e-9);
  }
}
#else
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  let g = decode(i, params.rank, params.shape, params.group_strides);
  destination[i] = (source[i] - stats[2u * g]) * stats[2u * g + 1u];
}
#endif
