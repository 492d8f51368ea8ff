// An elementwise op over one to three inputs with numpy broadcasting: out[i] = the EXPR define over a, b, c
// (the inputs at the broadcast position of output element i). Used by src/ops/elementwise_binary.cpp for the
// binary arithmetic, comparison and logic ops, Where, Not, Cast and variadic Sum / Mean / Min / Max.
//
// The host merges adjacent dims that broadcast alike, so most tensors arrive as rank 1 (FLAT: offsets are
// i * stride, no division) or 2-3. With MATH_VEC4 each invocation handles 4 consecutive outputs of the
// innermost dim: an input that is contiguous there is read as vec4 (S<k> = vec4<...>), one broadcast along it as a
// scalar splat (S<k> scalar, its strides in elements). Strides and dims travel in the uniform, never in the
// text.
//
// ACCUMULATE: out = EXPR(a = out, b = input 0), in place, for the third and later inputs of a variadic op.
#include "common/dispatch_grid.wgsl"
#include "elementwise/math.wgsl"

struct Params {
  count: u32,  // invocations: output elements, or output vec4s
  rank: u32,   // collapsed dims, 1..8
  scale: f32,  // Mean's divisor
  _pad: u32,
  // Per collapsed dim, outermost first: xyz = the strides of inputs 0, 1, 2 (0 where broadcast, in their
  // S<k> elements), w = the dim's size (in vec4s for the innermost dim with MATH_VEC4).
  dims: array<vec4<u32>, 8>,
}

@group(0) @binding(0) var<storage, read> in0: array<{{S0}}>;
#if ARITY2
@group(0) @binding(1) var<storage, read> in1: array<{{S1}}>;
#endif
#if ARITY3
@group(0) @binding(2) var<storage, read> in2: array<{{S2}}>;
#endif
@group(0) @binding({{OUT_BINDING}}) var<storage, read_write> output: array<{{SOUT}}>;
@group(0) @binding({{UNIFORM_BINDING}}) var<uniform> params: Params;

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
