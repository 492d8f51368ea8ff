// common/group_sums.wgsl: sums of several values over groups of a workgroup's invocations (a column's lanes,
// or the whole workgroup), instantiated per use by an #include with parameters (src/kernels/wgsl_library.h):
//   #include "common/group_sums.wgsl" NAME=sum_column_lanes SLOTS=partial VALUES=ROWS STRIDE=WORKGROUP
// defines fn NAME(flat: u32, lane: u32, width: u32): after a barrier, each group of `width` consecutive
// invocations (a power of two; `lane` is the invocation's place in its group) adds its values v = 0 ..
// VALUES - 1, held at SLOTS[v * STRIDE + flat], into the group's first invocation's slots, a tree with a
// barrier a level. Every invocation of the workgroup calls it (uniform control flow); the includer declares
// SLOTS, a var<workgroup> array of at least VALUES * STRIDE elements of a type with +=.
fn {{NAME}}(flat: u32, lane: u32, width: u32) {
  workgroupBarrier();
  for (var stride = width / 2u; stride > 0u; stride /= 2u) {
    if (lane < stride) {
      for (var v = 0u; v < {{VALUES}}; v++) {
        {{SLOTS}}[v * {{STRIDE}} + flat] += {{SLOTS}}[v * {{STRIDE}} + flat + stride];
      }
    }
    workgroupBarrier();
  }
}
