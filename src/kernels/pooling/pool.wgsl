// MaxPool and AveragePool over 1, 2 or 3 spatial axes (NC + spatial), one invocation per output element.
// Every pool runs as a 3-D one: missing leading spatial axes have size, kernel, stride and dilation 1.
// Padding never contributes a value: MaxPool skips it; AveragePool divides by the taps inside the input, or
// with count_include_pad by the taps inside the padded input (ceil_mode windows can reach past even that).
//
// Variants: MAX (element type T: f32, i32 for int8, u32 for uint8) or average (f32). INDICES (MaxPool's
// optional second output): the flat input index of the maximum, row-major, or column-major within each
// plane with storage_order = 1.
#include "common/dispatch_grid.wgsl"
#include "elementwise/math.wgsl"

alias T = {{TYPE}};

#interface

override WG_SIZE: u32 = 64;

#if MAX
// With FLOAT a NaN beats every number: a window holding one gives NaN (and the first NaN's index), as the
// elementwise Max and ReduceMax do.
fn beats(v: T, best: T) -> bool {
#if FLOAT
  if (wgi_is_nan(v) || wgi_is_nan(best)) {
    return wgi_is_nan(v) && !wgi_is_nan(best);
  }
#endif
  return v > best;
}
#endif

// How many of the taps start + t * dilation (t < kernel) lie in [lo, hi).
fn taps_within(start: i32, kernel: u32, dilation: u32, lo: i32, hi: i32) -> u32 {
  var n = 0u;
  for (var t = 0u; t < kernel; t++) {
    let p = start + i32(t * dilation);
    if (p >= lo && p < hi) {
      n++;
    }
  }
  return n;
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.total) {
    return;
  }
  let out_size = params.out_size;
  let in_size = params.in_size;
  let ow = i % out_size.z;
  var t = i / out_size.z;
  let oh = t % out_size.y;
  t = t / out_size.y;
  let od = t % out_size.x;
  let nc = t / out_size.x;
  let plane = in_size.x * in_size.y * in_size.z;
  let base = nc * plane;
  let start = vec3<i32>(vec3<u32>(od, oh, ow) * params.stride.xyz) - params.pad_begin.xyz;
  let size = vec3<i32>(in_size.xyz);
#if MAX
  var best = bitcast<T>(params.lowest_bits);
  var best_at = vec3<i32>(-1, -1, -1);
#else
  var sum = 0.0;
#endif
  for (var kd = 0u; kd < params.kernel.x; kd++) {
    let d = start.x + i32(kd * params.dilation.x);
    if (d < 0 || d >= size.x) {
      continue;
    }
    for (var kh = 0u; kh < params.kernel.y; kh++) {
      let h = start.y + i32(kh * params.dilation.y);
      if (h < 0 || h >= size.y) {
        continue;
      }
      let row = base + (u32(d) * in_size.y + u32(h)) * in_size.z;
      for (var kw = 0u; kw < params.kernel.z; kw++) {
        let w = start.z + i32(kw * params.dilation.z);
        if (w < 0 || w >= size.z) {
          continue;
        }
        let v = input[row + u32(w)];
#if MAX
        if (best_at.x < 0 || beats(v, best)) {
          best = v;
          best_at = vec3<i32>(d, h, w);
        }
#else
        sum += v;
#endif
      }
    }
  }
#if MAX
  output[i] = best;
#if INDICES
  let at = vec3<u32>(max(best_at, vec3<i32>(0, 0, 0)));
  var within = (at.x * in_size.y + at.y) * in_size.z + at.z;
  if (params.storage_order != 0u) {
    within = (at.z * in_size.y + at.y) * in_size.x + at.x;
  }
  indices[i] = i32(base + within);
#endif
#else
  var lo = vec3<i32>(0, 0, 0);
  var hi = size;
  if (params.count_include_pad != 0u) {
    lo = -params.pad_begin.xyz;
    hi = size + params.pad_end.xyz;
  }
  let count = taps_within(start.x, params.kernel.x, params.dilation.x, lo.x, hi.x) *
              taps_within(start.y, params.kernel.y, params.dilation.y, lo.y, hi.y) *
              taps_within(start.z, params.kernel.z, params.dilation.z, lo.z, hi.z);
  output[i] = sum / f32(count);
#endif
}
