// common/workgroup_reduce_f32.wgsl: common/workgroup_reduce.wgsl over f32, with its ops REDUCE_SUM and
// REDUCE_MAX (WGSL's max: which of a NaN and a number it keeps is the adapter's; normalization/softmax.wgsl,
// whose maximum must be NaN when one is, brings its own combine). The includer declares WG_SIZE and the slots.
alias ReduceValue = f32;
const REDUCE_SUM: u32 = 0u;
const REDUCE_MAX: u32 = 1u;

fn reduce_pair(op: u32, a: f32, b: f32) -> f32 {
  if (op == REDUCE_MAX) {
    return max(a, b);
  }
  return a + b;
}

#include "common/workgroup_reduce.wgsl"
