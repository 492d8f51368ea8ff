// common/workgroup_reduce.wgsl: one tree reduction over a workgroup, instantiated per tree by an #include with
// parameters (src/kernels/wgsl_library.h), e.g.
//   #include "common/workgroup_reduce.wgsl" NAME=tree_sum SLOTS=partial_sum TYPE=f32 COMBINE="a + b"
// defines fn NAME(value: TYPE, lid: u32) -> TYPE: each invocation stores its value in SLOTS[lid] and gets back
// the combination of all WG_SIZE of them, merged pairwise by COMBINE (an expression over a = SLOTS[lid] and
// b = SLOTS[lid + s], in that order): log2(WG_SIZE) halvings, each followed by a barrier, so every invocation
// of the workgroup must make the call (uniform control flow).
// The includer declares WG_SIZE (a power of two, const or override) and SLOTS, its own var<workgroup>
// array<TYPE, WG_SIZE>: the tree names the array instead of taking a pointer to it (Tint rejects a pointer to
// an array of an override's size), so the kernel keeps its own slot count.
// The result is read after the last barrier, with no barrier after it: a caller that writes SLOTS again (a
// loop) places one itself. Two trees in one kernel take an array each: with one array shared by two
// reductions some compilers (Mesa llvmpipe through Dawn's GL ES backend) let a read of the first result slip
// past the second's first writes.
fn {{NAME}}(value: {{TYPE}}, lid: u32) -> {{TYPE}} {
  {{SLOTS}}[lid] = value;
  workgroupBarrier();
  for (var s = WG_SIZE / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) {
      let a = {{SLOTS}}[lid];
      let b = {{SLOTS}}[lid + s];
      {{SLOTS}}[lid] = {{COMBINE}};
    }
    workgroupBarrier();
  }
  return {{SLOTS}}[0];
}
