// What the three conv kernels share: the parameter block (filled by src/ops/conv/direct.cpp, field for field), the
// bindings, and the decoding of a linear output index. Every shape lives here rather than in the shader text,
// so one pipeline per kernel variant and fused activation serves every conv in a model.
//
// 1-D convs arrive as 2-D ones with in_h = out_h = kernel_h = 1.
#include "common/activation.wgsl"
#include "common/dispatch_grid.wgsl"

struct Params {
  batch: u32,
  in_channels: u32,
  in_h: u32,
  in_w: u32,
  out_channels: u32,
  out_h: u32,
  out_w: u32,
  groups: u32,
  kernel_h: u32,
  kernel_w: u32,
  stride_h: u32,
  stride_w: u32,
  // Signed because the kernels subtract them from output positions in i32 (the first taps fall into padding).
  pad_top: i32,
  pad_left: i32,
  dilation_h: u32,
  dilation_w: u32,
  in_channels_per_group: u32,
  out_channels_per_group: u32,
  total: u32,  // output elements; invocations at or past it have nothing to do
  has_bias: u32,
  lo: f32,  // fused activation clamp bounds
  hi: f32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read> weight: array<WEIGHT_T>;
// The device's zero buffer when the node has no bias: reads are gated on params.has_bias, since that buffer is
// shorter than out_channels.
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> output: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;
#if RESIDUAL
// A fused residual of the output's shape (src/ops/fused_residual.h), added before the activation.
@group(0) @binding(5) var<storage, read> residual: array<f32>;
#endif

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
