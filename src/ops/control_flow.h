// Control flow (src/ops/control_flow.cpp): ONNX's If, every opset (1, 11, 13, 16, 19, 21 differ only in the
// element types, optional and sequence values, and from 11 on in allowing branches of different shapes).
//
// An If is not a kernel: the runtime plans the branch its condition takes inline, in the If's place, when the
// condition is known when planning (a constant, a value folded on the host, a small graph input given by
// value), so a replayed plan runs that branch's dispatches with no host round trip
// (runtime/execution_plan.cpp, docs/control_flow.md). A condition computed on the GPU is refused when
// planning (if_condition says so); the registered plan function is only reached then.
#pragma once

#include "ops/op.h"

namespace wgi::ops {

inline constexpr const char* kIfThenBranch = "then_branch";
inline constexpr const char* kIfElseBranch = "else_branch";

// True: the If takes then_branch. Its condition (input 0) must be known when planning and hold one boolean
// element; otherwise fails naming the node and what was found.
bool if_condition(const PlanContext& ctx);

}  // namespace wgi::ops
