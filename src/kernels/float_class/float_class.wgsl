// IsNaN / IsInf from the float32 bit patterns (exponent all ones; a zero or non-zero mantissa; the sign), so
// no float comparison is involved that a compiler could assume NaN-free. Writes bools as 0 / 1 words.
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
  let bits = source[i];
  let all_ones_exponent = (bits & 0x7f800000u) == 0x7f800000u;
  let mantissa = bits & 0x007fffffu;
#if IS_NAN
  let hit = all_ones_exponent && mantissa != 0u;
#else
  let negative = (bits & 0x80000000u) != 0u;
  let wanted = select(params.detect_positive != 0u, params.detect_negative != 0u, negative);
  let hit = all_ones_exponent && mantissa == 0u && wanted;
#endif
  destination[i] = select(0u, 1u, hit);
}
