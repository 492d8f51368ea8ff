// Concat of two contiguous inputs in one launch (a decoder step's past and new keys or values): the output
// viewed as [outer, first_len + second_len, inner] (in units of T), element (o, a, n) read from
// first[(o * first_len + a) * inner + n] when a < first_len, else from second[(o * second_len + a -
// first_len) * inner + n]. Every device element is 4 bytes, so u32 moves any dtype's bits; T is vec4<u32>
// when inner is a multiple of 4 elements (the host then passes inner in units of 4). SECOND_PAIR: two Concats
// of one shape in one launch (wgi's ConcatPairs): invocations past the first output's count fill
// destination_1 from first_1 and second_1 likewise.
#include "common/dispatch_grid.wgsl"

alias T = {{TYPE}};

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  var i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
#if SECOND_PAIR
  let second_pair = i >= params.count;
  if (second_pair) {
    i -= params.count;
  }
#endif
  if (i >= params.count) {
    return;
  }
  let n = i % params.inner;
  let rest = i / params.inner;
  let length = params.first_len + params.second_len;
  let a = rest % length;
  let o = rest / length;
  // Only the input the element comes from is read (shader robustness is off: no read past an input).
  let from_first = a < params.first_len;
  let at = select((o * params.second_len + a - params.first_len) * params.inner + n,
                  (o * params.first_len + a) * params.inner + n, from_first);
#if SECOND_PAIR
  if (second_pair) {
    if (from_first) {
      destination_1[i] = first_1[at];
    } else {
      destination_1[i] = second_1[at];
    }
    return;
  }
#endif
  if (from_first) {
    destination[i] = first[at];
  } else {
    destination[i] = second[at];
  }
}
