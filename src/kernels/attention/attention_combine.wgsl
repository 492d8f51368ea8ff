// The second launch of attention.wgsl with SPLIT_KEYS: each row's parts (a workgroup each over a split of the
// keys) combined into the output, out = sum_s exp(max_s - M) acc_s / sum_s exp(max_s - M) sum_s with M the
// largest max_s, one invocation per output element, written where attention.wgsl writes it (the output view).
// `partials`: [rows * key_splits][Dv] unnormalised sums, then the parts' maxima, then their sums.
#interface

#include "attention/attention_common.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let e = linear_workgroup_index(wid, nwg) * 256u + lid;
  if (e >= params.rows * params.dv) {
    return;
  }
  let row = e / params.dv;
  let c = e % params.dv;
  let parts = params.rows * params.key_splits;
  let first = row * params.key_splits;
  var largest = -3.4028234e38;
  for (var s = 0u; s < params.key_splits; s++) {
    largest = max(largest, partials[parts * params.dv + first + s]);
  }
  var total = 0.0;
  var acc = 0.0;
  for (var s = 0u; s < params.key_splits; s++) {
    let w = exp(partials[parts * params.dv + first + s] - largest);
    total += w * partials[parts * (params.dv + 1u) + first + s];
    acc += w * partials[(first + s) * params.dv + c];
  }
  let bases = attention_bases(row / params.tq);
  output[bases.out + (row % params.tq) * params.out_row_stride + c] = acc / total;
}
