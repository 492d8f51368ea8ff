// Depthwise 2-D convolution (group == in_channels, one input channel per group, any channel multiplier
// out_channels / in_channels), NCHW, any kernel size, stride, dilation and padding. Bandwidth bound, so each
// input element should cross the memory bus once and cost few instructions:
// - A workgroup computes a TY x (4 * TX) tile of one output plane. It first copies the input window that the
//   tile reads (the tile's rows and columns times the stride plus the dilated kernel's halo, zeros in the
//   padding) into workgroup memory with consecutive invocations on consecutive columns, so the global reads
//   are coalesced and each element is read once per tile instead of once per tap.
// - Each thread then computes 4 outputs of one row, at columns tx + TX * j (not 4 adjacent ones), so that a
//   warp's workgroup-memory reads and its global stores are each one run of consecutive elements; the weight
//   of a tap is loaded once (uniform across the workgroup) for the 4 outputs.
// The window size depends on the kernel's geometry; the host sizes TILE_ELEMS for it (rounded up to a power
// of two, so that convs of similar geometry share a pipeline) within the device's workgroup memory.
#include "common/activation.wgsl"
#include "common/dispatch_grid.wgsl"

const TX: u32 = {{TX}}u;  // threads along the width; each computes 4 columns
const TY: u32 = {{TY}}u;  // threads along the height; each computes 1 row
const TILE_ELEMS: u32 = {{TILE_ELEMS}}u;

#interface

var<workgroup> window: array<f32, TILE_ELEMS>;

@compute @workgroup_size(TX, TY, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) local: vec3<u32>, @builtin(local_invocation_index) flat: u32) {
  let index = linear_workgroup_index(wid, nwg);
  let tiles = params.tiles_x * params.tiles_y;
  if (index >= tiles * params.planes) {
    return;  // uniform: the whole workgroup leaves together
  }
  let plane = index / tiles;  // n * out_channels + oc
  let tile = index % tiles;
  let oh0 = (tile / params.tiles_x) * TY;
  let ow0 = (tile % params.tiles_x) * (4u * TX);
  let oc = plane % params.out_channels;
  let image = plane / params.out_channels;
  let in_plane = params.in_h * params.in_w;
  let in_base = (image * params.in_channels + oc / params.multiplier) * in_plane;
  let ih0 = i32(oh0 * params.stride_h) - params.pad_top;
  let iw0 = i32(ow0 * params.stride_w) - params.pad_left;

  let count = params.window_h * params.window_w;
  for (var e = flat; e < count; e += TX * TY) {
    let r = e / params.window_w;
    let c = e - r * params.window_w;
    let ih = ih0 + i32(r);
    let iw = iw0 + i32(c);
    var v = 0.0;
    // Negative positions wrap to huge unsigned values: one comparison per axis covers both sides.
    if (u32(ih) < params.in_h && u32(iw) < params.in_w) {
      v = input[in_base + u32(ih) * params.in_w + u32(iw)];
    }
    window[e] = v;
  }
  workgroupBarrier();

  let tx = local.x;
  let ty = local.y;
  var acc = vec4<f32>(0.0);
  let w_base = oc * params.kernel_h * params.kernel_w;
  let col0 = tx * params.stride_w;
  let col_step = TX * params.stride_w;
  for (var kh = 0u; kh < params.kernel_h; kh++) {
    let row = (ty * params.stride_h + kh * params.dilation_h) * params.window_w + col0;
    for (var kw = 0u; kw < params.kernel_w; kw++) {
      let w = weight[w_base + kh * params.kernel_w + kw];
      let at = row + kw * params.dilation_w;
      acc += w * vec4<f32>(window[at], window[at + col_step], window[at + 2u * col_step],
                           window[at + 3u * col_step]);
    }
  }

  let oh = oh0 + ty;
  if (oh >= params.out_h) {
    return;
  }
  var b = 0.0;
  if (params.has_bias != 0u) {
    b = bias[oc];
  }
  let out_row = (plane * params.out_h + oh) * params.out_w;
  for (var j = 0u; j < 4u; j++) {
    let ow = ow0 + tx + j * TX;
    if (ow < params.out_w) {
#if RESIDUAL
      output[out_row + ow] = fused_activation(acc[j] + b + residual[out_row + ow], params.lo, params.hi);
#else
      output[out_row + ow] = fused_activation(acc[j] + b, params.lo, params.hi);
#endif
    }
  }
}
