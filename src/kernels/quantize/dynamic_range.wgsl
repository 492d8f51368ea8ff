// DynamicQuantizeLinear (src/ops/quantize.cpp). Each workgroup reduces to (min, max) a contiguous chunk of x
// or, with APPLY, the partials a first launch wrote; then either writes its pair to partials[2 g], [2 g + 1]
// or, with QUANTIZE, computes the uint8 scale and zero point of [min(0, min(x)), max(0, max(x))] exactly as
// ONNX's reference computes them in float32 (quantize/dynamic_scale.wgsl; workgroup 0 writes them) and
// quantizes its chunk of x into y as QuantizeLinear does (quantize/quantize_step.wgsl). So: an x of one chunk
// (a decoder step's activations) in one launch (QUANTIZE), a larger one in two (the pairs, then APPLY and
// QUANTIZE: every workgroup finds the same range, so its final step needs no launch of its own).
// NaN elements are skipped (min / max of WGSL may return either operand for NaN; an explicit test keeps the
// range finite).
#include "quantize/dynamic_scale.wgsl"

#interface

override WG_SIZE: u32 = 256;
const MAX_WG: u32 = 1024u;

var<workgroup> range_slots: array<vec2<f32>, MAX_WG>;  // (min, max) pairs
#include "common/workgroup_reduce.wgsl" NAME=tree_range SLOTS=range_slots TYPE=vec2<f32> COMBINE="vec2<f32>(min(a.x, b.x), max(a.y, b.y))"

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  // 0 is part of every range, so it is also the neutral start.
  var lo = 0.0;
  var hi = 0.0;
  let begin = wid.x * params.chunk;
  let end = min(begin + params.chunk, params.count);
#if APPLY
  for (var j = lid; j < params.groups; j += WG_SIZE) {
    lo = min(lo, partials[2u * j]);
    hi = max(hi, partials[2u * j + 1u]);
  }
#else
  for (var j = begin + lid; j < end; j += WG_SIZE) {
    let v = values[j];
    if (v == v) {
      lo = min(lo, v);
      hi = max(hi, v);
    }
  }
#endif
  let range = tree_range(vec2<f32>(lo, hi), lid);
  lo = range.x;
  hi = range.y;
#if QUANTIZE
  // Every invocation has the same range, so the same scale and zero point.
  let q = dynamic_scale_and_zero_point(lo, hi, params.levels);
  if (wid.x == 0u && lid == 0u) {
    scale_out[0] = q.x;
    zero_point_out[0] = u32(q.y);
  }
  for (var j = begin + lid; j < end; j += WG_SIZE) {
    y[j] = quantize_step(values[j], q.x, q.y, 0.0, params.levels);
  }
#else
  if (lid == 0u) {
    partials[2u * wid.x] = lo;
    partials[2u * wid.x + 1u] = hi;
  }
#endif
}
