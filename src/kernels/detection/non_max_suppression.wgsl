// NonMaxSuppression in four stages (one text, a flag each); boxes [B, N, 4], scores [B, C, N].
//   IOU     the suppression matrix: bit j of word (b, i, j / 32) is set when boxes i and j of batch b overlap
//           by an IoU above the threshold (ONNX's test: no overlap, or an empty box, never suppresses);
//   RANK    for each (b, c) the candidates (score above score_threshold, if given) in order: best score
//           first, equal scores by lower box index; order[(b, c), rank] = box;
//   SELECT  one workgroup per (b, c): the greedy pass over the candidates in order, keeping a box unless an
//           already kept one suppresses it (the suppressed set as a bitmask in workgroup memory, ORed with
//           the matrix row of each kept box), up to max_output_boxes_per_class;
//   WRITE   one workgroup: an exclusive scan of the kept counts places each (b, c)'s boxes; writes the
//           [count, 3] triples (batch, class, box) packed and the count to `extent` (docs/dynamic_shapes.md).
#include "common/dispatch_grid.wgsl"
#include "common/workgroup_scan.wgsl"

#interface

override WG_SIZE: u32 = 256;

#if IOU
// [x1, y1, x2, y2] with x1 <= x2, y1 <= y2.
fn corners(b: u32, i: u32) -> vec4<f32> {
  let at = (b * params.boxes + i) * 4u;
  let v = vec4<f32>(boxes[at], boxes[at + 1u], boxes[at + 2u], boxes[at + 3u]);
  if (params.center_point_box != 0u) {
    // [x_center, y_center, width, height]
    return vec4<f32>(v.x - v.z * 0.5, v.y - v.w * 0.5, v.x + v.z * 0.5, v.y + v.w * 0.5);
  }
  // [y1, x1, y2, x2], either diagonal
  return vec4<f32>(min(v.y, v.w), min(v.x, v.z), max(v.y, v.w), max(v.x, v.z));
}

fn suppresses(a: vec4<f32>, c: vec4<f32>) -> bool {
  let x_min = max(a.x, c.x);
  let y_min = max(a.y, c.y);
  let x_max = min(a.z, c.z);
  let y_max = min(a.w, c.w);
  if (x_max <= x_min || y_max <= y_min) {
    return false;
  }
  let area_a = (a.z - a.x) * (a.w - a.y);
  let area_c = (c.z - c.x) * (c.w - c.y);
  if (area_a <= 0.0 || area_c <= 0.0) {
    return false;
  }
  let intersection = (x_max - x_min) * (y_max - y_min);
  let union_area = area_a + area_c - intersection;
  if (union_area <= 0.0) {
    return false;
  }
  return intersection / union_area > params.iou_threshold;
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let e = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (e >= params.count) {
    return;
  }
  let w = e % params.words;
  let i = (e / params.words) % params.boxes;
  let b = e / (params.words * params.boxes);
  let a = corners(b, i);
  var bits = 0u;
  for (var k = 0u; k < 32u; k++) {
    let j = w * 32u + k;
    if (j < params.boxes && suppresses(a, corners(b, j))) {
      bits |= 1u << k;
    }
  }
  mask[e] = bits;
}
#endif

#if RANK
fn candidate(s: f32) -> bool {
  return params.has_score_threshold == 0u || s > params.score_threshold;
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let e = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (e >= params.count) {
    return;
  }
  let i = e % params.boxes;
  let row = e - i;  // (b * classes + c) * boxes
  let s = scores[e];
  if (!candidate(s)) {
    return;
  }
  var rank = 0u;
  for (var j = 0u; j < params.boxes; j++) {
    let t = scores[row + j];
    if (candidate(t) && (t > s || (t == s && j < i))) {
      rank++;
    }
  }
  order[row + rank] = i;
}
#endif

#if SELECT
const MAX_WORDS: u32 = 2048u;  // 65536 boxes; the planner checks
const NONE: u32 = 0xffffffffu;
var<workgroup> removed: array<u32, 2048>;
var<workgroup> candidates: atomic<u32>;
var<workgroup> candidate_count: u32;
var<workgroup> chosen: u32;
var<workgroup> kept_count: u32;

fn candidate(s: f32) -> bool {
  return params.has_score_threshold == 0u || s > params.score_threshold;
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  let bc = linear_workgroup_index(wid, nwg);
  if (bc >= params.batches * params.classes) {
    return;  // the whole workgroup: uniform
  }
  let b = bc / params.classes;
  let row = bc * params.boxes;
  for (var w = t; w < params.words; w += WG_SIZE) {
    removed[w] = 0u;
  }
  if (t == 0u) {
    atomicStore(&candidates, 0u);
    kept_count = 0u;
  }
  workgroupBarrier();
  var mine = 0u;
  for (var i = t; i < params.boxes; i += WG_SIZE) {
    if (candidate(scores[row + i])) {
      mine++;
    }
  }
  atomicAdd(&candidates, mine);
  workgroupBarrier();
  if (t == 0u) {
    candidate_count = atomicLoad(&candidates);
  }
  let total = workgroupUniformLoad(&candidate_count);
  // No early break: Dawn's OpenGL ES backend skipped the code after a loop left by a break between
  // workgroupUniformLoads (the kept count never written); once enough are kept the rest of the candidates are
  // only stepped over.
  var done = params.max_selected == 0u;
  for (var r = 0u; r < total; r++) {
    if (done) {
      continue;
    }
    // Invocation 0 decides; the others learn the choice through workgroup memory (which also keeps every
    // barrier in uniform control flow).
    if (t == 0u) {
      let i = order[row + r];
      chosen = NONE;
      if ((removed[i / 32u] & (1u << (i % 32u))) == 0u) {
        chosen = i;
        selected[bc * params.max_selected + kept_count] = i;
        kept_count = kept_count + 1u;
      }
    }
    let c = workgroupUniformLoad(&chosen);
    if (c != NONE) {
      let row_start = (b * params.boxes + c) * params.words;
      for (var w = t; w < params.words; w += WG_SIZE) {
        removed[w] = removed[w] | mask[row_start + w];
      }
    }
    done = workgroupUniformLoad(&kept_count) >= params.max_selected;
  }
  if (t == 0u) {
    kept[bc] = kept_count;
  }
}
#endif

#if WRITE
const WG: u32 = 256u;
var<workgroup> offsets: array<u32, 256>;

fn kept_of(k: u32) -> u32 {
  if (params.max_selected == 0u) {
    return 0u;  // nothing ran before this stage
  }
  return kept[k];
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
  let n = params.batches * params.classes;
  let chunk = (n + WG - 1u) / WG;
  let begin = min(t * chunk, n);
  let end = min(begin + chunk, n);
  var sum = 0u;
  for (var k = begin; k < end; k++) {
    sum += kept_of(k);
  }
  offsets[t] = sum;
  workgroupBarrier();
  if (t == 0u) {
    let total_count = exclusive_scan_256(&offsets);
    extent[0] = total_count;
  }
  workgroupBarrier();
  var at = offsets[t];
  for (var k = begin; k < end; k++) {
    let b = k / params.classes;
    let c = k % params.classes;
    for (var s = 0u; s < kept_of(k); s++) {
      triples[at * 3u] = i32(b);
      triples[at * 3u + 1u] = i32(c);
      triples[at * 3u + 2u] = i32(selected[k * params.max_selected + s]);
      at++;
    }
  }
}
#endif
