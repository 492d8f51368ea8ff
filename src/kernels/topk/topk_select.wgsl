// TopK for small K by selection (src/ops/topk.cpp picks it for K <= kSelectMaxK): K rounds, each finding the
// best element that comes after the previous round's winner in TopK's order, by a workgroup tree over its
// threads' candidates. Rows of X are viewed as [outer, len, inner]. Two stages, one text:
//   SELECT  one workgroup per (row, chunk of params.chunk positions): the chunk's best K, written to the
//           outputs when the row is one chunk, else as candidates (rank key, position) for MERGE;
//   MERGE   one workgroup per row: the best K of the row's chunks * K candidates, written to the outputs.
// Order, as the sort path's: larger (LARGEST) or smaller values first, equal values by lower index; NaN above
// every number; -0 equal to +0. Each value maps to a rank key (u32, larger is better) so that one unsigned
// comparison and the index decide; the values written are read back from X at the winners' positions.
#include "common/dispatch_grid.wgsl"

#interface

override WG_SIZE: u32 = 256;

const NONE: u32 = 0xffffffffu;  // a position that marks "no element" (a chunk shorter than K)

var<workgroup> tree_keys: array<u32, WG_SIZE>;
var<workgroup> tree_positions: array<u32, WG_SIZE>;

fn rank_key(bits: u32) -> u32 {
#if FLOAT_KEYS
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return select(0u, NONE, {{LARGEST}});  // NaN: the best when largest, the worst when smallest
  }
  let b = select(bits, 0u, bits == 0x80000000u);  // -0 as +0
  let ordered = b ^ select(0x80000000u, NONE, (b & 0x80000000u) != 0u);
#else
  let ordered = bits ^ 0x80000000u;
#endif
  return select(~ordered, ordered, {{LARGEST}});
}

// Whether (k, p) goes before (best_k, best_p); NONE as a position is never better and always beaten.
fn better(k: u32, p: u32, best_k: u32, best_p: u32) -> bool {
  if (p == NONE) {
    return false;
  }
  return best_p == NONE || k > best_k || (k == best_k && p < best_p);
}

// Whether (k, p) comes after the previous round's winner; in the first round every element does. A round
// that found nothing (after_p == NONE) leaves nothing after it.
fn after(first: bool, k: u32, p: u32, after_k: u32, after_p: u32) -> bool {
  return first || (after_p != NONE && (k < after_k || (k == after_k && p > after_p)));
}

fn source_offset(row: u32, position: u32) -> u32 {
  return (row / params.inner) * params.len * params.inner + row % params.inner + position * params.inner;
}

#if !WRITE_CANDIDATES
fn write_output(row: u32, t: u32, position: u32) {
  let o = ((row / params.inner) * params.k + t) * params.inner + row % params.inner;
  values[o] = source[source_offset(row, position)];
  indices[o] = i32(position);
}
#endif

// The workgroup's best (key, position) of the threads' `k` / `p`, seen by every thread.
fn workgroup_best(lid: u32, k: u32, p: u32) -> vec2<u32> {
  tree_keys[lid] = k;
  tree_positions[lid] = p;
  workgroupBarrier();
  for (var stride = WG_SIZE / 2u; stride > 0u; stride = stride / 2u) {
    if (lid < stride) {
      let ok = tree_keys[lid + stride];
      let op = tree_positions[lid + stride];
      if (better(ok, op, tree_keys[lid], tree_positions[lid])) {
        tree_keys[lid] = ok;
        tree_positions[lid] = op;
      }
    }
    workgroupBarrier();
  }
  let best = vec2<u32>(tree_keys[0], tree_positions[0]);
  workgroupBarrier();  // before the next round writes the tree again
  return best;
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let w = linear_workgroup_index(wid, nwg);
#if MERGE
  if (w >= params.rows) {
    return;
  }
  let row = w;
  let base = row * params.chunks * params.k;
  let count = params.chunks * params.k;
#else
  if (w >= params.rows * params.chunks) {
    return;
  }
  let row = w / params.chunks;
  let chunk = w % params.chunks;
  let start = chunk * params.chunk;
  let end = min(params.len, start + params.chunk);
#endif
  var after_k = 0u;
  var after_p = NONE;
  for (var t = 0u; t < params.k; t++) {
    var best_k = 0u;
    var best_p = NONE;
#if MERGE
    for (var j = lid; j < count; j += WG_SIZE) {
      let k = candidate_keys[base + j];
      let p = candidate_positions[base + j];
#else
    for (var p = start + lid; p < end; p += WG_SIZE) {
      let k = rank_key(source[source_offset(row, p)]);
#endif
      if (after(t == 0u, k, p, after_k, after_p) && better(k, p, best_k, best_p)) {
        best_k = k;
        best_p = p;
      }
    }
    let best = workgroup_best(lid, best_k, best_p);
    after_k = best.x;
    after_p = best.y;
    if (lid == 0u) {
#if WRITE_CANDIDATES
      let c = (row * params.chunks + chunk) * params.k + t;
      candidate_keys[c] = after_k;
      candidate_positions[c] = after_p;
#else
      write_output(row, t, after_p);
#endif
    }
  }
}
