// Included by linear/gemm_matrix_f16.wgsl with A_CONV (ops/conv/matrix_f16.cpp): a 2-D convolution's A
// gathered from the input `a` as the product stages it. Row m is output pixel (image, oh, ow); A[m, k] is the
// input under tap (kh, kw) of channel c in the pixel's window, zero in the padding and past K. Two layouts:
//   A_F32: `a` is the NCHW float32 input itself and k = (c, kh, kw) in the ONNX weight's order; a chunk's 8
//          values are 8 scalar loads, converted as they are staged.
//   else:  `a` is the input as float16 NHWC (conv/nchw_to_nhwc_f16.wgsl, C a multiple of 8) and k = (kh, kw,
//          c), channels fastest: a chunk is 8 channels under one tap, one 16-byte load.
// Defines ARows (a thread's four rows), a_row_start and a_chunk (8 consecutive k of one row) for the
// product's staging.

// A row of the convolution's A: where its image starts in `a`, and its window's top-left corner (negative in
// the padding); base kNoRow past M.
struct ConvRow {
  base: u32,
  ih: i32,
  iw: i32,
}

struct ARows {
  x: ConvRow,
  y: ConvRow,
  z: ConvRow,
  w: ConvRow,
}

// params.conv_input: C, H, W, H * W; conv_kernel: KH, KW, dilation h, w; conv_step: stride h, w, pad h, w;
// conv_output: OH, OW, OH * OW, KH * KW.
fn a_row_start(m: u32) -> ConvRow {
  if (m >= params.M) {
    return ConvRow(kNoRow, 0, 0);
  }
  let image = m / params.conv_output.z;
  let p = m % params.conv_output.z;
  let oh = p / params.conv_output.y;
  let ow = p % params.conv_output.y;
  return ConvRow(image * params.conv_input.x * params.conv_input.w,
                 i32(oh * params.conv_step.x) - i32(params.conv_step.z),
                 i32(ow * params.conv_step.y) - i32(params.conv_step.w));
}

#if A_F32
// A kernel tap (channel, row, column), stepped along k.
struct Tap {
  c: u32,
  kh: u32,
  kw: u32,
}

fn next_tap(t: Tap) -> Tap {
  var n = t;
  n.kw += 1u;
  if (n.kw == params.conv_kernel.y) {
    n.kw = 0u;
    n.kh += 1u;
    if (n.kh == params.conv_kernel.x) {
      n.kh = 0u;
      n.c += 1u;
    }
  }
  return n;
}

fn conv_value(r: ConvRow, t: Tap, k: u32) -> f32 {
  let ih = r.ih + i32(t.kh * params.conv_kernel.z);
  let iw = r.iw + i32(t.kw * params.conv_kernel.w);
  if (r.base == kNoRow || k >= params.K || ih < 0 || iw < 0 || ih >= i32(params.conv_input.y) ||
      iw >= i32(params.conv_input.z)) {
    return 0.0;
  }
  return a[r.base + t.c * params.conv_input.w + u32(ih) * params.conv_input.z + u32(iw)];
}

// A[m, k .. k + 7] of row `r`: one division for the first tap, then steps.
fn a_chunk(r: ConvRow, k: u32) -> AChunk {
  let taps = params.conv_output.w;
  var t = Tap(k / taps, (k % taps) / params.conv_kernel.y, k % params.conv_kernel.y);
  let v0 = conv_value(r, t, k);
  t = next_tap(t);
  let v1 = conv_value(r, t, k + 1u);
  t = next_tap(t);
  let v2 = conv_value(r, t, k + 2u);
  t = next_tap(t);
  let v3 = conv_value(r, t, k + 3u);
  t = next_tap(t);
  let v4 = conv_value(r, t, k + 4u);
  t = next_tap(t);
  let v5 = conv_value(r, t, k + 5u);
  t = next_tap(t);
  let v6 = conv_value(r, t, k + 6u);
  t = next_tap(t);
  let v7 = conv_value(r, t, k + 7u);
  return AChunk(vec4<f32>(v0, v1, v2, v3), vec4<f32>(v4, v5, v6, v7));
}
#else
// A[m, k .. k + 7] of row `r`: channels c .. c + 7 under tap (kh, kw), where k = (kh * KW + kw) * C + c.
fn a_chunk(r: ConvRow, k: u32) -> AChunk {
  let channels = params.conv_input.x;
  let tap = k / channels;
  let ih = r.ih + i32((tap / params.conv_kernel.y) * params.conv_kernel.z);
  let iw = r.iw + i32((tap % params.conv_kernel.y) * params.conv_kernel.w);
  if (r.base == kNoRow || k >= params.K || ih < 0 || iw < 0 || ih >= i32(params.conv_input.y) ||
      iw >= i32(params.conv_input.z)) {
    return vec4<u32>(0u);
  }
  return a[(r.base + (u32(ih) * params.conv_input.z + u32(iw)) * channels + k % channels) / 8u];
}
#endif
