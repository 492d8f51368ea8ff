// The run status (src/runtime/run_status.h): a kernel that meets what ONNX makes an error but only the data
// shows, such as an index out of range computed at run time, records it here instead of writing a silently
// wrong answer, and the runtime turns it into a wgi::Error naming the node when the run's outputs are read.
// The including kernel declares the binding `run_status` (ops::KernelInterface::run_status()) and gets its
// node's tag (PlanContext::status_tag, non-zero) through its uniform.
// Words: 0 the kinds of error seen (bits, OR-ed); 1 the tag of the first node that recorded one (dispatches
// run in order, so the first in execution order); 2.. that first error's details, written by the invocation
// that claimed word 1.
const RUN_STATUS_INDEX_OUT_OF_RANGE: u32 = 1u;

// `index` (element `element` of the node's input `input`) is outside [-bound, bound).
fn report_index_out_of_range(tag: u32, input: u32, element: u32, index: i32, bound: u32) {
  atomicOr(&run_status[0], RUN_STATUS_INDEX_OUT_OF_RANGE);
  loop {
    let claim = atomicCompareExchangeWeak(&run_status[1], 0u, tag);
    if (claim.exchanged) {
      atomicStore(&run_status[2], RUN_STATUS_INDEX_OUT_OF_RANGE);
      atomicStore(&run_status[3], input);
      atomicStore(&run_status[4], element);
      atomicStore(&run_status[5], bitcast<u32>(index));
      atomicStore(&run_status[6], bound);
      break;
    }
    if (claim.old_value != 0u) {
      break;  // an earlier error holds the details
    }
  }
}
