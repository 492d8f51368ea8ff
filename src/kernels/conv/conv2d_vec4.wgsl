// Direct 2-D convolution for in_channels_per_group % 4 == 0: the input-channel loop advances four channels
// at a time with one vec4 dot product. NCHW puts consecutive channels a whole plane apart, so the four input
// values are separate scalar loads packed into a vec4; the win is a 4x shorter loop and a single vec4 weight
// load per step.
//
// The weight is prepacked at plan time (src/ops/conv/direct.cpp, prepack_weight_ohwi) from ONNX's
// [OC, IC/groups, KH, KW] into [OC, KH, KW, IC/groups] ("OHWI"), read here as vec4s: the weights of four
// consecutive input channels at one tap are one vec4, and a tap's channel loop walks consecutive vec4s.
#include "conv/conv_common.wgsl"

alias WEIGHT_T = vec4<f32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.total) {
    return;
  }
  let o = decode_output_index(i);
  let icpg = params.in_channels_per_group;
  let quads = icpg / 4u;
  let group = o.oc / params.out_channels_per_group;
  let plane = params.in_h * params.in_w;
  let input_base = (o.n * params.in_channels + group * icpg) * plane;
  let ih0 = i32(o.oh * params.stride_h) - params.pad_top;
  let iw0 = i32(o.ow * params.stride_w) - params.pad_left;

  var acc = 0.0;
  for (var kh = 0u; kh < params.kernel_h; kh++) {
    let ih = ih0 + i32(kh * params.dilation_h);
    if (ih < 0 || ih >= i32(params.in_h)) {
      continue;
    }
    for (var kw = 0u; kw < params.kernel_w; kw++) {
      let iw = iw0 + i32(kw * params.dilation_w);
      if (iw < 0 || iw >= i32(params.in_w)) {
        continue;
      }
      var x = input_base + u32(ih) * params.in_w + u32(iw);
      var w = ((o.oc * params.kernel_h + kh) * params.kernel_w + kw) * quads;
      for (var q = 0u; q < quads; q++) {
        let xv = vec4<f32>(input[x], input[x + plane], input[x + 2u * plane], input[x + 3u * plane]);
        acc += dot(xv, weight[w]);
        x += 4u * plane;
        w += 1u;
      }
    }
  }
  write_output(i, o.oc, acc);
}
