// What the three conv kernels share: the bindings and the parameter block (declared and filled by
// src/ops/conv/direct.cpp), and the decoding of a linear output index. Every shape travels in the parameter
// block rather than in the shader text, so one pipeline per kernel variant and fused activation serves every
// conv in a model.
//
// 1-D convs arrive as 2-D ones with in_h = out_h = kernel_h = 1.
#include "common/activation.wgsl"
#include "common/dispatch_grid.wgsl"

#interface

override WG_SIZE: u32 = 64;

// An output element's coordinates in NCHW.
struct OutputIndex {
  n: u32,
  oc: u32,
  oh: u32,
  ow: u32,
}

fn decode_output_index(i: u32) -> OutputIndex {
  var r: OutputIndex;
  r.ow = i % params.out_w;
  var t = i / params.out_w;
  r.oh = t % params.out_h;
  t = t / params.out_h;
  r.oc = t % params.out_channels;
  r.n = t / params.out_channels;
  return r;
}

// Bias, fused residual, fused activation and the store: the epilogue every conv kernel ends with.
fn write_output(i: u32, oc: u32, acc: f32) {
  var v = acc;
  if (params.has_bias != 0u) {
    v = v + bias[oc];
  }
#if RESIDUAL
  v += residual[i];
#endif
  output[i] = fused_activation(v, params.lo, params.hi);
}
