// NonZero: the coordinates of X's non-zero elements in row-major order, written as [rank, count] (packed for
// the real count, which only this kernel knows) with the count to `extent` (docs/dynamic_shapes.md). One
// workgroup: each invocation counts a contiguous chunk, an exclusive scan of the 256 counts gives each chunk
// its first output column, then each invocation writes its chunk's coordinates. Compress uses it on its
// condition (rank 1) for the selected positions.
#include "common/workgroup_scan.wgsl"

#interface

const WG: u32 = 256u;
var<workgroup> offsets: array<u32, 256>;
var<workgroup> total: u32;

fn is_nonzero(i: u32) -> bool {
  let bits = source[i];
#if FLOAT
  return (bits & 0x7fffffffu) != 0u;  // -0.0 is zero; NaN is not
#else
  return bits != 0u;
#endif
}

fn dim(d: u32) -> u32 {
  return params.dims[d / 4u][d % 4u];
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
  let n = params.count;
  let chunk = (n + WG - 1u) / WG;
  let begin = min(t * chunk, n);
  let end = min(begin + chunk, n);
  var found = 0u;
  for (var i = begin; i < end; i++) {
    if (is_nonzero(i)) {
      found++;
    }
  }
  offsets[t] = found;
  workgroupBarrier();
  if (t == 0u) {
    let total_count = exclusive_scan_256(&offsets);
    total = total_count;
    extent[0] = total_count;
  }
  workgroupBarrier();
  let columns = total;
  var column = offsets[t];
  for (var i = begin; i < end; i++) {
    if (!is_nonzero(i)) {
      continue;
    }
    var rest = i;
    for (var d = i32(params.rank) - 1; d >= 0; d--) {
      let size = dim(u32(d));
      coords[u32(d) * columns + column] = i32(rest % size);
      rest = rest / size;
    }
    column++;
  }
}
