// Reductions over any set of axes (ReduceSum, ReduceMean, ..., ArgMax, ArgMin, the global pools), planned by
// src/ops/normalization.cpp. The host collapses the input into alternating groups of kept and reduced axes
// (adjacent axes of the same kind merged, unit axes dropped): an output index decodes into kept-group
// coordinates, a reduction index into reduced-group coordinates, and each group has an input stride. So one
// pipeline serves contiguous last-axis reductions and strided ones alike.
//
// Variants: ROW_PER_WORKGROUP (one workgroup per output, a shared-memory tree over its threads' partial
// results; for long reductions) or one invocation per output (short reductions, many outputs). ARG tracks the
// index of the best value along a single axis; LOG_SUM_EXP subtracts the maximum before exponentiating.
// The element type T is f32 or i32; the op's per-element map, combine and finishing step are the PRE,
// COMBINE and POST substitutions, written over x, a, b and acc.
#include "common/dispatch_grid.wgsl"
#include "elementwise/math.wgsl"

alias T = {{TYPE}};

#interface

override WG_SIZE: u32 = 64;

fn input_base(o: u32) -> u32 {
  var rest = o;
  var offset = 0u;
  for (var k = params.kept_count; k > 0u; k--) {
    let g = k - 1u;
    let size = params.kept_sizes[g >> 2u][g & 3u];
    offset += (rest % size) * params.kept_strides[g >> 2u][g & 3u];
    rest = rest / size;
  }
  return offset;
}

fn reduced_offset(r: u32) -> u32 {
  if (params.reduced_count <= 1u) {
    return r * params.reduced_strides[0].x;
  }
  var rest = r;
  var offset = 0u;
  for (var k = params.reduced_count; k > 0u; k--) {
    let g = k - 1u;
    let size = params.reduced_sizes[g >> 2u][g & 3u];
    offset += (rest % size) * params.reduced_strides[g >> 2u][g & 3u];
    rest = rest / size;
  }
  return offset;
}

fn identity() -> T {
  return bitcast<T>(params.init_bits);
}

#if ARG
const NONE: u32 = 0xffffffffu;

// Whether (v, i) beats the best so far (bv, bi); an index of NONE marks "nothing seen yet". With FLOAT a
// NaN beats every number (numpy's and PyTorch's argmax / argmin: the first NaN), and NaNs tie.
fn better(v: T, i: u32, bv: T, bi: u32) -> bool {
  if (i == NONE) {
    return false;
  }
  if (bi == NONE) {
    return true;
  }
#if FLOAT
  let v_nan = wgi_is_nan(v);
  let b_nan = wgi_is_nan(bv);
  if (v_nan != b_nan) {
    return v_nan;
  }
  if (v_nan) {
    return select((i < bi), (i > bi), params.select_last != 0u);
  }
#endif
  if (v {{CMP}} bv) {
    return true;
  }
  if (v == bv) {
    return select((i < bi), (i > bi), params.select_last != 0u);
  }
  return false;
}
#endif

#if !ARG
#if !LOG_SUM_EXP
fn pre(x: T) -> T {
  return {{PRE}};
}

fn combine(a: T, b: T) -> T {
  return {{COMBINE}};
}

fn finish(acc: T) -> T {
  return {{POST}};
}
#endif
#endif

#if LOG_SUM_EXP
// The shift subtracted before exp: the maximum, or 0 when that is infinite (all -inf, or a +inf present).
fn shift_of(m: f32) -> f32 {
  return select(0.0, m, abs(m) <= 3.4028234663852886e38);
}
#endif

#if ROW_PER_WORKGROUP
var<workgroup> partial: array<T, WG_SIZE>;
#if ARG
var<workgroup> partial_index: array<u32, WG_SIZE>;
#endif

#if !ARG
#if LOG_SUM_EXP
// Its own array: the maximum is read after the tree's last barrier, and with a shared array some compilers
// (Mesa llvmpipe through Dawn's GL ES backend) let that read slip past the sum tree's first writes.
var<workgroup> partial_max: array<f32, WG_SIZE>;

#include "common/workgroup_reduce.wgsl" NAME=tree_max SLOTS=partial_max TYPE=f32 COMBINE="max(a, b)"
#include "common/workgroup_reduce.wgsl" NAME=tree_sum SLOTS=partial TYPE=f32 COMBINE="a + b"
#else
#include "common/workgroup_reduce.wgsl" NAME=tree_combine SLOTS=partial TYPE=T COMBINE="combine(a, b)"
#endif
#endif

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let o = linear_workgroup_index(wid, nwg);
  if (o >= params.outputs) {
    return;
  }
  let base = input_base(o);
  let n = params.reduce_size;
#if ARG
  var best = identity();
  var best_index = NONE;
  for (var r = lid; r < n; r += WG_SIZE) {
    let v = input[base + reduced_offset(r)];
    if (better(v, r, best, best_index)) {
      best = v;
      best_index = r;
    }
  }
  partial[lid] = best;
  partial_index[lid] = best_index;
  workgroupBarrier();
  for (var s = WG_SIZE / 2u; s > 0u; s = s >> 1u) {
    if (lid < s && better(partial[lid + s], partial_index[lid + s], partial[lid], partial_index[lid])) {
      partial[lid] = partial[lid + s];
      partial_index[lid] = partial_index[lid + s];
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    output[o] = i32(select(partial_index[0], 0u, partial_index[0] == NONE));
  }
#else
#if LOG_SUM_EXP
  var m = identity();
  for (var r = lid; r < n; r += WG_SIZE) {
    m = max(m, input[base + reduced_offset(r)]);
  }
  let shift = shift_of(tree_max(m, lid));
  var s = 0.0;
  for (var r = lid; r < n; r += WG_SIZE) {
    s += exp(input[base + reduced_offset(r)] - shift);
  }
  let total = tree_sum(s, lid);
  if (lid == 0u) {
    output[o] = log(total) + shift;
  }
#else
  var acc = identity();
  for (var r = lid; r < n; r += WG_SIZE) {
    acc = combine(acc, pre(input[base + reduced_offset(r)]));
  }
  let total = tree_combine(acc, lid);
  if (lid == 0u) {
    output[o] = finish(total);
  }
#endif
#endif
}

#else

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let o = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (o >= params.outputs) {
    return;
  }
  let base = input_base(o);
  let n = params.reduce_size;
#if ARG
  var best = identity();
  var best_index = NONE;
  for (var r = 0u; r < n; r++) {
    let v = input[base + reduced_offset(r)];
    if (better(v, r, best, best_index)) {
      best = v;
      best_index = r;
    }
  }
  output[o] = i32(select(best_index, 0u, best_index == NONE));
#else
#if LOG_SUM_EXP
  var m = identity();
  for (var r = 0u; r < n; r++) {
    m = max(m, input[base + reduced_offset(r)]);
  }
  let shift = shift_of(m);
  var s = 0.0;
  for (var r = 0u; r < n; r++) {
    s += exp(input[base + reduced_offset(r)] - shift);
  }
  output[o] = log(s) + shift;
#else
  var acc = identity();
  for (var r = 0u; r < n; r++) {
    acc = combine(acc, pre(input[base + reduced_offset(r)]));
  }
  output[o] = finish(acc);
#endif
#endif
}

#endif
