// An exclusive prefix sum over 256 per-invocation counts in workgroup memory, in place: slots[k] becomes the
// sum of slots[0..k); returns the total. The first invocation runs it alone; the caller holds the barriers.
fn exclusive_scan_256(slots: ptr<workgroup, array<u32, 256>>) -> u32 {
  var running = 0u;
  for (var k = 0u; k < 256u; k++) {
    let c = (*slots)[k];
    (*slots)[k] = running;
    running += c;
  }
  return running;
}
