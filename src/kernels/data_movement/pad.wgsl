// Pad: one invocation per output element. Along each axis the input coordinate is the output one minus the
// leading pad; one outside the input is resolved by the mode: constant (the element is `value`), edge
// (clamped), reflect (mirrored without repeating the edge, periodically for pads longer than the axis) or
// wrap (modulo). Negative pads crop. Bits are copied as u32, so any dtype works.
#include "common/dispatch_grid.wgsl"

const MODE_CONSTANT: u32 = 0u;
const MODE_EDGE: u32 = 1u;
const MODE_REFLECT: u32 = 2u;
const MODE_WRAP: u32 = 3u;

#interface

override WG_SIZE: u32 = 256;

fn resolve(c: i32, n: i32) -> i32 {
  if (params.mode == MODE_EDGE) {
    return clamp(c, 0, n - 1);
  }
  if (params.mode == MODE_WRAP) {
    return ((c % n) + n) % n;
  }
  // Reflect.
  if (n == 1) {
    return 0;
  }
  let period = 2 * (n - 1);
  let r = ((c % period) + period) % period;
  return select(r, period - r, r >= n);
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  var rest = i;
  var s = 0;
  var inside = true;
  for (var k = i32(params.rank) - 1; k >= 0; k--) {
    let n = params.out_shape[k / 4][k % 4];
    var c = i32(rest % n) - params.pad_begin[k / 4][k % 4];
    rest = rest / n;
    let m = params.in_shape[k / 4][k % 4];
    if (c < 0 || c >= m) {
      if (params.mode == MODE_CONSTANT) {
        inside = false;
        continue;
      }
      c = resolve(c, m);
    }
    s += c * params.in_strides[k / 4][k % 4];
  }
  if (inside) {
    destination[i] = source[u32(s)];
  } else {
    destination[i] = params.value;
  }
}
