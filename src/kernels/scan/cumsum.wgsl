// CumSum along one axis of a tensor viewed as [outer, len, inner]: one workgroup per row (outer x inner
// rows, elements `inner` apart). The row is scanned in chunks of WG x ITEMS elements: each invocation sums
// its ITEMS consecutive elements serially, the workgroup scans the WG partial sums in workgroup memory
// (Hillis-Steele, log2 WG steps), and a running carry joins the chunks. `reverse` scans from the row's end;
// `exclusive` leaves each element out of its own sum. Accumulates in the element type (f32 or i32).
#include "common/dispatch_grid.wgsl"

const WG: u32 = {{WG}}u;
const ITEMS: u32 = 4u;

#interface

var<workgroup> partial: array<{{TYPE}}, WG>;

// The element at logical position p of the row (counted from the end when reversed).
fn element_index(base: u32, p: u32) -> u32 {
  let j = select(p, params.len - 1u - p, params.reverse != 0u);
  return base + j * params.inner;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = linear_workgroup_index(wid, nwg);
  if (row >= params.rows) {
    return;  // the whole workgroup: the barriers below stay in uniform control flow
  }
  let base = (row / params.inner) * params.len * params.inner + row % params.inner;
  var carry = {{TYPE}}(0);
  for (var start = 0u; start < params.len; start += WG * ITEMS) {
    var before: array<{{TYPE}}, ITEMS>;  // this invocation's exclusive sums within its items
    var values: array<{{TYPE}}, ITEMS>;
    var sum = {{TYPE}}(0);
    for (var e = 0u; e < ITEMS; e++) {
      let p = start + lid * ITEMS + e;
      var v = {{TYPE}}(0);
      if (p < params.len) {
        v = source[element_index(base, p)];
      }
      before[e] = sum;
      values[e] = v;
      sum += v;
    }
    partial[lid] = sum;
    workgroupBarrier();
    for (var offset = 1u; offset < WG; offset *= 2u) {
      var left = {{TYPE}}(0);
      if (lid >= offset) {
        left = partial[lid - offset];
      }
      workgroupBarrier();
      partial[lid] += left;
      workgroupBarrier();
    }
    var prefix = carry;
    if (lid > 0u) {
      prefix += partial[lid - 1u];
    }
    for (var e = 0u; e < ITEMS; e++) {
      let p = start + lid * ITEMS + e;
      if (p < params.len) {
        var s = prefix + before[e];
        if (params.exclusive == 0u) {
          s += values[e];
        }
        destination[element_index(base, p)] = s;
      }
    }
    carry += partial[WG - 1u];
    workgroupBarrier();  // every invocation has read partial before the next chunk writes it
  }
}
