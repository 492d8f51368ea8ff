// Direct 2-D convolution, general path: any groups, strides, dilations, padding. One invocation per output
// element (n, oc, oh, ow). The weight is read in ONNX's layout [OC, IC/groups, KH, KW], so it may be a runtime
// tensor, not only an initializer.
#include "conv/conv_common.wgsl"

alias WEIGHT_T = f32;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.total) {
    return;
  }
  let o = decode_output_index(i);
  let icpg = params.in_channels_per_group;
  let group = o.oc / params.out_channels_per_group;
  let plane = params.in_h * params.in_w;
  let input_base = (o.n * params.in_channels + group * icpg) * plane;
  let kernel_area = params.kernel_h * params.kernel_w;
  let weight_base = o.oc * icpg * kernel_area;
  let ih0 = i32(o.oh * params.stride_h) - params.pad_top;
  let iw0 = i32(o.ow * params.stride_w) - params.pad_left;

  var acc = 0.0;
  // Taps outside, channels inside: the padding test runs once per tap instead of once per multiply.
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
      var w = weight_base + kh * params.kernel_w + kw;
      for (var ic = 0u; ic < icpg; ic++) {
        acc += input[x] * weight[w];
        x += plane;
        w += kernel_area;
      }
    }
  }
  write_output(i, o.oc, acc);
}
