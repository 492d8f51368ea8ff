// common/workgroup_reduce.wgsl: a tree reduction over a workgroup in workgroup memory. Every invocation gives
// one value and gets back the combination of all WG_SIZE of them: log2(WG_SIZE) halvings, each followed by a
// barrier, so every invocation of the workgroup must make the call (uniform control flow). A last barrier
// after the result is read lets the caller run the same reduction again (in a loop, or on the same slots).
// The includer declares
//   WG_SIZE               its workgroup size, a power of two (const or override);
//   alias ReduceValue     the values' type (a scalar, vector or struct);
//   fn reduce_pair(op: u32, a: ReduceValue, b: ReduceValue) -> ReduceValue
//                         the combine for each `op` it passes (an includer with one combine ignores op);
// and one var<workgroup> array<ReduceValue, WORKGROUP_REDUCE_SLOTS> per reduction, passed as `slots`: with
// one array shared by two reductions some compilers (Mesa llvmpipe through Dawn's GL ES backend) let a read
// of the first result slip past the second's first writes.
// The slots are sized for the largest workgroup the includers run (WG_SIZE <= 256), not WG_SIZE: a pointer
// to an array of an override's size stops Tint (an internal compiler error).
const WORKGROUP_REDUCE_SLOTS: u32 = 256u;

fn workgroup_reduce(slots: ptr<workgroup, array<ReduceValue, WORKGROUP_REDUCE_SLOTS>>, op: u32,
                    value: ReduceValue, lid: u32) -> ReduceValue {
  (*slots)[lid] = value;
  workgroupBarrier();
  for (var s = WG_SIZE / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) {
      (*slots)[lid] = reduce_pair(op, (*slots)[lid], (*slots)[lid + s]);
    }
    workgroupBarrier();
  }
  let result = (*slots)[0];
  workgroupBarrier();
  return result;
}
