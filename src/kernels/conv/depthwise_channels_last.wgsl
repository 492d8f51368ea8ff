// Depthwise 2-D convolution of a channels-last tensor X [B, H * W, C] (src/ops/conv_channels_last.cpp), with
// bias, fused activation and an optional residual R [B, Ho * Wo, C] in the epilogue:
//   out[b, oh, ow, c] = act(bias[c] + sum_{i, j} x[b, oh * SH + i - pad_top, ow * SW + j - pad_left, c]
//                                                * w[i * KW + j, c]) + r[b, oh, ow, c]
// with zeros outside the image. Bandwidth bound; no workgroup memory, no barrier:
// - Each invocation computes one unit of channels (a vec4 when VEC4, else one channel) for PIXELS
//   consecutive output pixels of one output row. Consecutive invocations take consecutive channel units of
//   the same pixels, so a warp's loads and stores are runs of consecutive addresses.
// - For each kernel row it loads the COLS input columns that its PIXELS outputs read once into registers
//   and accumulates every tap from them: (PIXELS - 1) * SW + KW loads per kernel row instead of
//   PIXELS * KW.
// - The weight is prepacked to [KH * KW + 1, C]: one load gives a tap's channel unit; the last row is the
//   bias (zeros when the node has none).
#include "common/activation.wgsl"
#include "common/dispatch_grid.wgsl"

const WG: u32 = {{WG}}u;
const KH: u32 = {{KH}}u;
const KW: u32 = {{KW}}u;
const SH: u32 = {{SH}}u;
const SW: u32 = {{SW}}u;
const PIXELS: u32 = {{PIXELS}}u;  // output pixels per invocation, along W
const COLS: u32 = (PIXELS - 1u) * SW + KW;

#if VEC4
alias Unit = vec4<f32>;
#else
alias Unit = f32;
#endif

#interface

fn activate(v: Unit) -> Unit {
#if VEC4
  return vec4<f32>(fused_activation(v.x, params.lo, params.hi), fused_activation(v.y, params.lo, params.hi),
                   fused_activation(v.z, params.lo, params.hi), fused_activation(v.w, params.lo, params.hi));
#else
  return fused_activation(v, params.lo, params.hi);
#endif
}

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = linear_invocation_index(wid, nwg, lid, WG);
  if (t >= params.invocations) {
    return;
  }
  let c = t % params.lanes;
  let pixel_group = t / params.lanes;  // (b * out_h + oh) * groups_w + group
  let row = pixel_group / params.groups_w;  // b * out_h + oh
  let ow0 = (pixel_group - row * params.groups_w) * PIXELS;
  let oh = row % params.out_h;
  let b = row / params.out_h;

  var acc: array<Unit, PIXELS>;
  for (var p = 0u; p < PIXELS; p++) {
    acc[p] = Unit(0.0);
  }
  let ih0 = i32(oh * SH) - params.pad_top;
  let iw0 = i32(ow0 * SW) - params.pad_left;
  for (var i = 0u; i < KH; i++) {
    let ih = ih0 + i32(i);
    // Negative positions wrap to huge unsigned values: one comparison covers both borders.
    if (u32(ih) >= params.height) {
      continue;
    }
    let row_base = (b * params.height + u32(ih)) * params.width;
    // Every element is written on every iteration, zeros for the padding (SwiftShader may keep a previous
    // iteration's values in an array declared in a loop).
    var cols: array<Unit, COLS>;
    for (var j = 0u; j < COLS; j++) {
      let iw = iw0 + i32(j);
      var v = Unit(0.0);
      if (u32(iw) < params.width) {
        v = input[(row_base + u32(iw)) * params.lanes + c];
      }
      cols[j] = v;
    }
    for (var j = 0u; j < KW; j++) {
      let w = weight[(i * KW + j) * params.lanes + c];
      for (var p = 0u; p < PIXELS; p++) {
        acc[p] += w * cols[p * SW + j];
      }
    }
  }

  let bias = weight[KH * KW * params.lanes + c];
  for (var p = 0u; p < PIXELS; p++) {
    let ow = ow0 + p;
    if (ow < params.out_w) {
      let at = (row * params.out_w + ow) * params.lanes + c;
      var v = activate(acc[p] + bias);
      if (params.has_residual != 0u) {
        v += residual[at];
      }
      output[at] = v;
    }
  }
}
