// Cast from or to float16, which the device stores packed, two halves per u32 word (runtime/device_tensor.h).
// Plain WGSL, no shader-f16: halves unpack with unpack2x16float; packing rounds in integer arithmetic, since
// pack2x16float is indeterminate for values beyond the half range (which must become inf).
//
// FROM_F16: one invocation per output element; out = the EXPR define over a: f32 (the half's value).
// Otherwise: one invocation per output word, packing elements 2j and 2j + 1; a = f32(input element).
#include "common/dispatch_grid.wgsl"
#include "elementwise/math.wgsl"

#interface

override WG_SIZE: u32 = 256;

// Round to nearest even; beyond 65504 (after rounding) inf; NaN stays a quiet NaN.
fn f32_to_f16_bits(v: f32) -> u32 {
  let bits = bitcast<u32>(v);
  let sign = (bits >> 16u) & 0x8000u;
  let a = bits & 0x7fffffffu;
  if (a >= 0x7f800000u) {
    return sign | 0x7c00u | select(0u, 0x200u, a > 0x7f800000u);
  }
  if (a >= 0x477ff000u) {
    return sign | 0x7c00u;
  }
  var h: u32;
  var rest: u32;
  var half: u32;
  if (a < 0x38800000u) {  // a half subnormal (or zero): units of 2^-24
    if (a < 0x33000000u) {
      return sign;
    }
    let mantissa = (a & 0x7fffffu) | 0x800000u;
    let shift = 126u - (a >> 23u);
    h = mantissa >> shift;
    rest = mantissa & ((1u << shift) - 1u);
    half = 1u << (shift - 1u);
  } else {
    h = (a >> 13u) - (112u << 10u);
    rest = a & 0x1fffu;
    half = 0x1000u;
  }
  if (rest > half || (rest == half && (h & 1u) == 1u)) {
    h += 1u;
  }
  return sign | h;
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
#if FROM_F16
  let a = unpack2x16float(input[i >> 1u])[i & 1u];
  output[i] = {{TOUT}}({{EXPR}});
#else
  let first = 2u * i;
  var word = f32_to_f16_bits(f32(input[first]));
  if (first + 1u < params.elements) {
    word |= f32_to_f16_bits(f32(input[first + 1u])) << 16u;
  }
  output[i] = word;
#endif
}
