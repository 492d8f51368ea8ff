// Turns an op's plan into bound dispatches once buffers exist for its inputs, outputs, scratch and constants.
#pragma once

#include <span>
#include <vector>

#include "gpu/commands.h"
#include "gpu/device.h"
#include "ops/op.h"

namespace wgi::runtime {

struct PlanBuffers {
  std::span<const gpu::BufferSlice> inputs;  // absent optional inputs: {nullptr}
  std::span<const gpu::BufferSlice> outputs;
  std::span<const gpu::BufferSlice> scratch;
  std::span<const gpu::BufferSlice> constants;
  gpu::BufferSlice run_status;  // for launches that bind TensorRef::run_status()
};

// The buffer slices of one launch's storage bindings, in binding order. Throws wgi::Error naming the node if
// the launch refers to a buffer the plan does not have.
std::vector<gpu::BufferSlice> launch_slices(gpu::Device& device, const ops::NodeInfo& node,
                                            const ops::KernelLaunch& launch, const PlanBuffers& buffers);

// Creates (or reuses from the cache) each launch's pipeline and binds it. Throws wgi::Error naming the node
// if a launch refers to a buffer the plan does not have.
std::vector<gpu::BoundDispatch> bind_plan(gpu::Device& device, const ops::NodeInfo& node,
                                          const ops::OpPlan& plan, const PlanBuffers& buffers);

}  // namespace wgi::runtime
