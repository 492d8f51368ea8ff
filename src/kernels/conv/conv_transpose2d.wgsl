// Transposed 2-D convolution (ONNX ConvTranspose) in gather form: each invocation owns one output element and
// sums the input elements that the scatter definition would have sent to it, so no two invocations write the
// same element and no atomics are needed. Output row oh receives tap kh of input row
//   ih = (oh + pad_top - kh * dilation_h) / stride_h   when that division is exact and ih is in range,
// and the same for columns. The weight is ONNX's (and torch's) [IC, OC/groups, KH, KW], read unflipped.
#include "conv/conv_common.wgsl"

alias WEIGHT_T = f32;

// The input index that tap `k` maps onto output position `o`, or -1 when no input element lands there.
fn gather_source(o: u32, pad: i32, k: u32, dilation: u32, stride: u32, size: u32) -> i32 {
  let t = i32(o) + pad - i32(k * dilation);
  if (t < 0) {
    return -1;
  }
  let ut = u32(t);
  if (ut % stride != 0u) {
    return -1;
  }
  let s = ut / stride;
  if (s >= size) {
    return -1;
  }
  return i32(s);
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.total) {
    return;
  }
  let o = decode_output_index(i);
  let icpg = params.in_channels_per_group;
  let ocpg = params.out_channels_per_group;
  let group = o.oc / ocpg;
  let plane = params.in_h * params.in_w;
  let input_base = (o.n * params.in_channels + group * icpg) * plane;
  let kernel_area = params.kernel_h * params.kernel_w;
  // Weight [ic][oc % ocpg][kh][kw]: consecutive input channels are ocpg kernels apart.
  let weight_base = ((group * icpg) * ocpg + o.oc % ocpg) * kernel_area;
  let weight_ic_stride = ocpg * kernel_area;

  var acc = 0.0;
  for (var kh = 0u; kh < params.kernel_h; kh++) {
    let ih = gather_source(o.oh, params.pad_top, kh, params.dilation_h, params.stride_h, params.in_h);
    if (ih < 0) {
      continue;
    }
    for (var kw = 0u; kw < params.kernel_w; kw++) {
      let iw = gather_source(o.ow, params.pad_left, kw, params.dilation_w, params.stride_w, params.in_w);
      if (iw < 0) {
        continue;
      }
      var x = input_base + u32(ih) * params.in_w + u32(iw);
      var w = weight_base + kh * params.kernel_w + kw;
      for (var ic = 0u; ic < icpg; ic++) {
        acc += input[x] * weight[w];
        x += plane;
        w += weight_ic_stride;
      }
    }
  }
  write_output(i, o.oc, acc);
}
