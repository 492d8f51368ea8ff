// An elementwise unary op, y = f(x). f is the op's WGSL expression over `x` (the EXPR define), from the op
// table in src/ops/elementwise_unary.cpp. T is the tensor's device element type at the kernel's width (F, I
// or U of elementwise/math.wgsl: f32 / i32 / u32, or vec4 of them); constants in expressions are written
// T(c) so the same text serves both widths. Op parameters are alpha() / beta(), of type P (f32 for float
// ops, the integer type for Clip on integers): from the uniform, or with ALPHA_INPUT / BETA_INPUT from
// one-element tensors computed on the GPU (Clip's min / max inputs).
#include "common/dispatch_grid.wgsl"
#include "elementwise/math.wgsl"

alias T = {{TYPE}};
alias P = {{PARAM_TYPE}};

#interface

fn alpha() -> P {
#if ALPHA_INPUT
  return alpha_input[0];
#else
  return params.alpha;
#endif
}

fn beta() -> P {
#if BETA_INPUT
  return beta_input[0];
#else
  return params.beta;
#endif
}

override WG_SIZE: u32 = 256;

fn apply(x: T) -> T {
  return {{EXPR}};
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  output[i] = apply(input[i]);
}
