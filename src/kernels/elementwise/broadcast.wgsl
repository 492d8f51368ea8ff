// An elementwise op over one to three inputs with numpy broadcasting: out[i] = the EXPR define over a, b, c
// (the inputs at the broadcast position of output element i). Used by src/ops/elementwise_binary.cpp for the
// binary arithmetic, comparison and logic ops, Where, Not, Cast and variadic Sum / Mean / Min / Max.
//
// The host merges adjacent dims that broadcast alike, so most tensors arrive as rank 1 (FLAT: offsets are
// i * stride, no division) or 2-3. With MATH_VEC4 each invocation handles 4 consecutive outputs of the
// innermost dim: an input that is contiguous there is read as vec4 (in<k>: array<vec4<...>>), one broadcast along it
// as a scalar splat (in<k> of scalars, its strides in elements). Strides and dims travel in the uniform, never in the
// text.
//
// ACCUMULATE: out = EXPR(a = out, b = input 0), in place, for the third and later inputs of a variadic op.
#include "common/dispatch_grid.wgsl"
#include "elementwise/math.wgsl"

#interface

override WG_SIZE: u32 = 256;

fn input_offsets(i: u32) -> vec3<u32> {
#if FLAT
  return i * params.dims[0].xyz;
#else
  var rest = i;
  var offsets = vec3<u32>(0u);
  for (var d = i32(params.rank) - 1; d >= 0; d--) {
    let dim = params.dims[d];
    offsets += (rest % dim.w) * dim.xyz;
    rest = rest / dim.w;
  }
  return offsets;
#endif
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  let offsets = input_offsets(i);
#if ACCUMULATE
  let a = {{T0}}(output[i]);
  let b = {{T1}}(in0[offsets.x]);
#else
  let a = {{T0}}(in0[offsets.x]);
#if ARITY2
  let b = {{T1}}(in1[offsets.y]);
#endif
#if ARITY3
  let c = {{T2}}(in2[offsets.z]);
#endif
#endif
  output[i] = {{TOUT}}({{EXPR}});
}
