// TopK by a bitonic sort of every row in scratch buffers, then a copy of the first K: rows of X viewed as
// [outer, len, inner] are padded to `padded` (a power of two) slots of (key bits, index); padding slots sort
// last. One text, three stages:
//   INIT   slot p of row r = (x[r, p], p), or padding past len;
//   STEP   one compare-exchange pass (block `block`, distance `distance`) of the bitonic network;
//   WRITE  values[o] and indices[o] from slot t < K of the row.
// Order: the best first, i.e. larger (LARGEST) or smaller values first, equal values by lower index (the
// ONNX rule); NaN counts as larger than every number. O(len log^2 len) work in log2(padded) (log2(padded) + 1)
// / 2 passes, any K.
#include "common/dispatch_grid.wgsl"

#interface

override WG_SIZE: u32 = 256;

fn is_nan(bits: u32) -> bool {
  return (bits & 0x7fffffffu) > 0x7f800000u;
}

// Whether slot content (a, ia) goes before (b, ib).
fn before(a: u32, ia: u32, b: u32, ib: u32) -> bool {
  if (ia >= params.len || ib >= params.len) {
    return ib >= params.len && ia < params.len;  // padding last
  }
#if FLOAT_KEYS
  if (is_nan(a) || is_nan(b)) {
    let nan_first = {{LARGEST}};
    if (is_nan(a) && is_nan(b)) {
      return ia < ib;
    }
    return is_nan(a) == nan_first;
  }
  let va = bitcast<f32>(a);
  let vb = bitcast<f32>(b);
#else
  let va = bitcast<i32>(a);
  let vb = bitcast<i32>(b);
#endif
  if (va == vb) {
    return ia < ib;
  }
  return select((va < vb), (va > vb), {{LARGEST}});
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
#if INIT
  let row = i / params.padded;
  let p = i % params.padded;
  var key = 0u;
  if (p < params.len) {
    key = source[(row / params.inner) * params.len * params.inner + row % params.inner + p * params.inner];
  }
  keys[i] = key;
  slots[i] = p;
#endif
#if STEP
  // Invocation i handles pair (a, a ^ distance) with a the i-th index whose `distance` bit is clear.
  let row = i / (params.padded / 2u);
  let pair = i % (params.padded / 2u);
  let a = (pair / params.distance) * params.distance * 2u + pair % params.distance;
  let b = a + params.distance;
  let best_first = (a & params.block) == 0u;
  let ka = keys[row * params.padded + a];
  let kb = keys[row * params.padded + b];
  let ia = slots[row * params.padded + a];
  let ib = slots[row * params.padded + b];
  if (before(kb, ib, ka, ia) == best_first) {
    keys[row * params.padded + a] = kb;
    keys[row * params.padded + b] = ka;
    slots[row * params.padded + a] = ib;
    slots[row * params.padded + b] = ia;
  }
#endif
#if WRITE
  let t = (i / params.inner) % params.k;
  let row = (i / (params.k * params.inner)) * params.inner + i % params.inner;
  values[i] = keys[row * params.padded + t];
  indices[i] = i32(slots[row * params.padded + t]);
#endif
}
