// Unique over n slices of X viewed as [outer, n, inner] (slice k = X[:, k, :], compared lexicographically in
// row-major order; without an axis outer = inner = 1). One text, five stages:
//   RANK     order[rank(k)] = k, slices ranked by value, equal slices by lower index (n x n comparisons);
//   GROUP    one workgroup: an exclusive scan over the ranked slices of "differs from the previous one"
//            numbers the groups of equal slices in value order; start[g] = the first rank of group g,
//            group_of[k] = g, and the group count to `extent` (docs/dynamic_shapes.md);
//   COUNTS   per group g: its output place (g sorted, else its rank by first occurrence), the index of its
//            first occurrence (order[start[g]], the lowest index of equal slices) and its size;
//   INVERSE  inverse_indices[k] = place of group_of[k];
//   GATHER   Y [outer, U, inner] from the first occurrences.
// The grids of COUNTS and GATHER cover the upper bound (U = n); the real U comes from `extent`.
#include "common/dispatch_grid.wgsl"
#include "common/workgroup_scan.wgsl"

#interface

override WG_SIZE: u32 = 256;

#if COMPARE
fn less(a: u32, b: u32) -> bool {
#if FLOAT
  return bitcast<f32>(a) < bitcast<f32>(b);
#else
  return bitcast<i32>(a) < bitcast<i32>(b);
#endif
}

// -1, 0 or 1 as slice j is before, equal to or after slice k in value order.
fn compare(j: u32, k: u32) -> i32 {
  let elements = params.outer * params.inner;
  for (var e = 0u; e < elements; e++) {
    let at = (e / params.inner) * params.n * params.inner + e % params.inner;
    let a = source[at + j * params.inner];
    let b = source[at + k * params.inner];
    if (a == b) {
      continue;
    }
    if (less(a, b)) {
      return -1;
    }
    if (less(b, a)) {
      return 1;
    }
    // equal values with other bits (-0.0 and 0.0)
  }
  return 0;
}
#endif

#if RANK
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let k = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (k >= params.n) {
    return;
  }
  var rank = 0u;
  for (var j = 0u; j < params.n; j++) {
    let c = compare(j, k);
    if (c < 0 || (c == 0 && j < k)) {
      rank++;
    }
  }
  order[rank] = k;
}
#endif

#if GROUP
const WG: u32 = 256u;
var<workgroup> offsets: array<u32, 256>;

fn starts_group(r: u32) -> bool {
  return r == 0u || compare(order[r - 1u], order[r]) != 0;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
  let n = params.n;
  let chunk = (n + WG - 1u) / WG;
  let begin = min(t * chunk, n);
  let end = min(begin + chunk, n);
  var found = 0u;
  for (var r = begin; r < end; r++) {
    if (starts_group(r)) {
      found++;
    }
  }
  offsets[t] = found;
  workgroupBarrier();
  if (t == 0u) {
    let total_count = exclusive_scan_256(&offsets);
    extent[0] = total_count;
  }
  workgroupBarrier();
  var g = offsets[t];  // groups started before this chunk
  for (var r = begin; r < end; r++) {
    if (starts_group(r)) {
      start[g] = r;
      g++;
    }
    group_of[order[r]] = g - 1u;
  }
}
#endif

#if COUNTS
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let g = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  let groups = extent[0];
  if (g >= groups) {
    return;
  }
  let first = order[start[g]];
  var end = params.n;
  if (g + 1u < groups) {
    end = start[g + 1u];
  }
#if SORTED
  let p = g;
#else
  var p = 0u;
  for (var h = 0u; h < groups; h++) {
    if (order[start[h]] < first) {
      p++;
    }
  }
#endif
  place[g] = p;
  indices[p] = i32(first);
  counts[p] = i32(end - start[g]);
}
#endif

#if INVERSE
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let k = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (k >= params.n) {
    return;
  }
  inverse[k] = i32(place[group_of[k]]);
}
#endif

#if GATHER
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let e = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  let groups = extent[0];
  if (e >= params.outer * groups * params.inner) {
    return;
  }
  let slice = groups * params.inner;
  let o = e / slice;
  let u = (e % slice) / params.inner;
  let i = e % params.inner;
  result[e] = source[(o * params.n + u32(indices[u])) * params.inner + i];
}
#endif
