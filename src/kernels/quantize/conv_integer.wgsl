// ConvInteger and QLinearConv (src/ops/integer_linear.cpp), 1-D and 2-D NCHW with groups, strides,
// dilations and pads: out = sum (x - x_zp) (w - w_zp) over a group's input channels and the kernel window,
// exact int32 accumulation; padding contributes 0 (the spec subtracts the zero point before padding). With
// QLINEAR the int32 bias is added and the sum requantized to 8 bits; with SCALED (ConvInteger with
// wgi.scaled_output) it is rescaled to float32 (quantize/integer_epilogue.wgsl). x is widened to 32 bits per
// element; the weight is a constant prepacked [M, ceil(R / 4)] words (R = C / group * KH * KW, ONNX's
// order), four consecutive bytes per word (W_PACKED), or a runtime one read widened. One invocation per
// output element.
#include "common/dispatch_grid.wgsl"
#include "quantize/unpack.wgsl"

#interface

#include "quantize/integer_epilogue.wgsl"

override WG_SIZE: u32 = 64;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let idx = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (idx >= params.count) {
    return;
  }
  let ow = idx % params.out_width;
  let oh = (idx / params.out_width) % params.out_height;
  let m = (idx / (params.out_width * params.out_height)) % params.out_channels;
  let n = idx / (params.out_width * params.out_height * params.out_channels);
  let c0 = (m / params.group_out_channels) * params.group_channels;
  let window = params.kernel_h * params.kernel_w;
  let zx = x_zero_point[0];
  let zw = w_zero_point[m * params.w_zp_stride];
  // Signed so that positions in the padding come out negative.
  let ih0 = i32(oh * params.stride_h) - i32(params.pad_h);
  let iw0 = i32(ow * params.stride_w) - i32(params.pad_w);
  var acc = 0;
  for (var rw = 0u; rw < params.reduce_words; rw++) {
#if W_PACKED
    let word = w[m * params.reduce_words + rw];
#endif
    for (var j = 0u; j < 4u; j++) {
      let r = 4u * rw + j;
      if (r >= params.reduce) {
        break;
      }
#if W_PACKED
      let wv = unpack_byte(word, j);
#else
      let wv = w[m * params.reduce + r];
#endif
      let c = r / window;
      let kh = (r % window) / params.kernel_w;
      let kw = r % params.kernel_w;
      let ih = ih0 + i32(kh * params.dilation_h);
      let iw = iw0 + i32(kw * params.dilation_w);
      if (ih >= 0 && ih < i32(params.height) && iw >= 0 && iw < i32(params.width)) {
        let xv = x[((n * params.channels + c0 + c) * params.height + u32(ih)) * params.width + u32(iw)];
        acc += (xv - zx) * (wv - zw);
      }
    }
  }
#if QLINEAR
  if (params.has_bias != 0u) {
    acc += bias[m];
  }
#endif
  store_integer_result(idx, acc, m);
}
