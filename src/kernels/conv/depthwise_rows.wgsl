// Depthwise 2-D convolution with the window in registers (group == in_channels, one input channel per group,
// any channel multiplier), NCHW, stride 1 or 2, the kernel's geometry fixed at compile time. Bandwidth bound:
// the goal is that each input element crosses the memory bus once and that a thread keeps many independent
// loads in flight, with no workgroup memory and no barrier:
// - Each invocation computes 4 adjacent output columns of ROWS consecutive output rows of one plane.
//   Consecutive invocations take consecutive column groups of a row, so a warp's loads and stores are runs
//   of consecutive addresses.
// - It walks the IN_ROWS input rows those outputs read, top to bottom; each row's SPAN columns are loaded
//   once into registers and added into every output row that reads it (r * SH + kh * DH == i: with the
//   loops' constant trip counts the compiler resolves which ones). The horizontal overlap between
//   neighbouring invocations and the vertical overlap between row blocks come from L1/L2, not DRAM.
// - VEC4 (input and output widths multiples of 4): rows are loaded as aligned vec4s starting LEFT columns
//   (the left padding rounded up to 4) before the first needed one, and outputs are stored as vec4s. Every
//   vec4 then lies wholly inside or wholly outside the image, so one comparison decides it.
// Weights are read in ONNX's layout [out_channels, 1, KH, KW], so they may be computed at run time.
#include "common/activation.wgsl"
#include "common/dispatch_grid.wgsl"

const WG: u32 = {{WG}}u;
const KH: u32 = {{KH}}u;
const KW: u32 = {{KW}}u;
const SH: u32 = {{SH}}u;
const SW: u32 = {{SW}}u;
const DH: u32 = {{DH}}u;
const DW: u32 = {{DW}}u;
const ROWS: u32 = {{ROWS}}u;  // output rows per invocation
const IN_ROWS: u32 = (ROWS - 1u) * SH + (KH - 1u) * DH + 1u;
#if VEC4
const LEFT: u32 = {{LEFT}}u;   // pad_left rounded up to a multiple of 4
const VECS: u32 = {{VECS}}u;   // vec4s per input row: ceil((LEFT - pad_left + SPAN) / 4)
const COLS: u32 = 4u * VECS;
const SHIFT: u32 = {{SHIFT}}u;  // LEFT - pad_left: the first needed column within the loaded row
#else
const COLS: u32 = 3u * SW + (KW - 1u) * DW + 1u;  // SPAN: the input columns of 4 adjacent outputs
const SHIFT: u32 = 0u;
#endif

#interface

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t = linear_invocation_index(wid, nwg, lid, WG);
  let per_plane = params.groups_x * params.blocks_y;
  if (t >= per_plane * params.planes) {
    return;
  }
  let plane = t / per_plane;  // n * out_channels + oc
  let rest = t - plane * per_plane;
  let block = rest / params.groups_x;
  let oh0 = block * ROWS;
  let ow0 = (rest - block * params.groups_x) * 4u;
  let oc = plane % params.out_channels;
  let image = plane / params.out_channels;
  let in_base = (image * params.in_channels + oc / params.multiplier) * params.in_h * params.in_w;

  var w: array<f32, KH * KW>;
  for (var i = 0u; i < KH * KW; i++) {
    w[i] = weight[oc * KH * KW + i];
  }
  var acc: array<vec4<f32>, ROWS>;
  let ih0 = i32(oh0 * SH) - params.pad_top;
#if VEC4
  let iw0 = i32(ow0 * SW) - i32(LEFT);  // a multiple of 4
#else
  let iw0 = i32(ow0 * SW) - params.pad_left;
#endif
  for (var i = 0u; i < IN_ROWS; i++) {
    let ih = ih0 + i32(i);
    // Every element is written on every iteration, zeros for the padding: SwiftShader (Chromium 156) keeps
    // the previous iteration's values in an array declared in the loop instead of zero-initialising it again.
    var row: array<f32, COLS>;
    // Negative positions wrap to huge unsigned values: one comparison per axis covers both sides.
    let row_inside = u32(ih) < params.in_h;
    let row_base = in_base + u32(ih) * params.in_w;
#if VEC4
    for (var v = 0u; v < VECS; v++) {
      let iw = iw0 + i32(4u * v);
      var q = vec4<f32>(0.0);
      if (row_inside && u32(iw) < params.in_w) {
        q = input[(row_base + u32(iw)) / 4u];
      }
      row[4u * v] = q.x;
      row[4u * v + 1u] = q.y;
      row[4u * v + 2u] = q.z;
      row[4u * v + 3u] = q.w;
    }
#else
    for (var c = 0u; c < COLS; c++) {
      let iw = iw0 + i32(c);
      var x = 0.0;
      if (row_inside && u32(iw) < params.in_w) {
        x = input[row_base + u32(iw)];
      }
      row[c] = x;
    }
#endif
    for (var kh = 0u; kh < KH; kh++) {
      // Output row r reads input row r * SH + kh * DH.
      let d = i32(i) - i32(kh * DH);
      if (d >= 0 && u32(d) % SH == 0u && u32(d) / SH < ROWS) {
        let r = u32(d) / SH;
        for (var kw = 0u; kw < KW; kw++) {
          let c = SHIFT + kw * DW;
          acc[r] += w[kh * KW + kw] * vec4<f32>(row[c], row[c + SW], row[c + 2u * SW], row[c + 3u * SW]);
        }
      }
    }
  }

  var b = 0.0;
  if (params.has_bias != 0u) {
    b = bias[oc];
  }
  for (var r = 0u; r < ROWS; r++) {
    let oh = oh0 + r;
    if (oh < params.out_h) {
      let at = (plane * params.out_h + oh) * params.out_w + ow0;
#if VEC4
#if RESIDUAL
      let v = acc[r] + b + residual[at / 4u];
#else
      let v = acc[r] + b;
#endif
      output[at / 4u] = vec4<f32>(fused_activation(v.x, params.lo, params.hi),
                                  fused_activation(v.y, params.lo, params.hi),
                                  fused_activation(v.z, params.lo, params.hi),
                                  fused_activation(v.w, params.lo, params.hi));
#else
      let v = acc[r] + b;
      for (var j = 0u; j < 4u; j++) {
        if (ow0 + j < params.out_w) {
#if RESIDUAL
          output[at + j] = fused_activation(v[j] + residual[at + j], params.lo, params.hi);
#else
          output[at + j] = fused_activation(v[j], params.lo, params.hi);
#endif
        }
      }
#endif
    }
  }
}
