// Control flow (src/ops/control_flow.cpp): ONNX's If, Loop and Scan. If: every opset (1, 11, 13, 16, 19, 21
// differ only in the element types, optional and sequence values, and from 11 on in allowing branches of
// different shapes).
//
// An If is not a kernel: the runtime plans the branch its condition takes inline, in the If's place, when the
// condition is known when planning (a constant, a value folded on the host, a small graph input given by
// value), so a replayed plan runs that branch's dispatches with no host round trip
// (runtime/execution_plan.cpp, docs/control_flow.md). A condition computed on the GPU is read back by the
// staged runner first (docs/dynamic_shapes.md); where nothing reads it back, if_condition refuses it, and the
// registered plan function is only reached then. Loop and Scan are unrolled the same way, each iteration's
// body planned in their place, when the iteration count is known when planning; a Loop whose body condition
// the GPU computes runs iteration by iteration in stages.
#pragma once

#include <optional>
#include <vector>

#include "ops/op.h"

namespace wgi::ops {

inline constexpr const char* kIfThenBranch = "then_branch";
inline constexpr const char* kIfElseBranch = "else_branch";

// True: the If takes then_branch. Its condition (input 0) must be known when planning and hold one boolean
// element; otherwise fails naming the node and what was found.
bool if_condition(const PlanContext& ctx);

// ---- Loop and Scan: unrolled when planning (runtime/loop_unrolling.cpp, docs/control_flow.md) ----

inline constexpr const char* kLoopBody = "body";  // Loop's and Scan's graph attribute

// Loop's trip count M (input 0) and condition (input 1), both optional, as known when planning. Fails naming
// the node when one is given but computed on the GPU, or is not a single int64 / bool element.
struct LoopBounds {
  std::optional<int64_t> trip_count;  // absent: no M input (loop while the condition holds)
  std::optional<bool> condition;      // absent: no cond input (the body's cond output is then ignored)
};
LoopBounds loop_bounds(const PlanContext& ctx);

// Scan's attributes, one entry per scan input and per scan output, as written (axes may be negative; the
// unroller normalises them by rank). Opset 8 has only `directions` (its scan axis is 1, after the batch
// axis): read as the input directions, with every axis 0 of a batch element. Fails naming the node on counts
// or directions that do not fit.
struct ScanAttributes {
  size_t scan_inputs = 0;  // num_scan_inputs
  std::vector<int64_t> input_axes, output_axes;
  std::vector<bool> input_reversed, output_reversed;
};
ScanAttributes scan_attributes(const PlanContext& ctx, size_t scan_outputs);

}  // namespace wgi::ops
