#include "runtime/plan_binding.h"

namespace wgi::runtime {

std::vector<gpu::BufferSlice> launch_slices(gpu::Device& device, const ops::NodeInfo& node,
                                            const ops::KernelLaunch& launch, const PlanBuffers& buffers) {
  std::vector<gpu::BufferSlice> slices;
  slices.reserve(launch.bindings.size());
  for (const ops::TensorRef& ref : launch.bindings) {
    std::span<const gpu::BufferSlice> pool;
    const char* kind = "";
    switch (ref.kind) {
      case ops::TensorRef::Kind::Input:
        pool = buffers.inputs;
        kind = "input";
        break;
      case ops::TensorRef::Kind::Output:
        pool = buffers.outputs;
        kind = "output";
        break;
      case ops::TensorRef::Kind::Scratch:
        pool = buffers.scratch;
        kind = "scratch";
        break;
      case ops::TensorRef::Kind::Constant:
        pool = buffers.constants;
        kind = "constant";
        break;
      case ops::TensorRef::Kind::Zero:
        slices.push_back({&device.zero_buffer()});
        continue;
      case ops::TensorRef::Kind::RunStatus:
        if (!buffers.run_status.buffer) {
          throw Error(node.describe() + ": internal: kernel '" + launch.program.label +
                      "' binds the run status, which this plan has not made");
        }
        slices.push_back(buffers.run_status);
        continue;
    }
    if (ref.index >= pool.size() || !pool[ref.index].buffer) {
      throw Error(node.describe() + ": kernel '" + launch.program.label + "' binds " + kind + " " +
                  std::to_string(ref.index) + ", which has no buffer");
    }
    gpu::BufferSlice slice = pool[ref.index];
    if (ref.byte_offset != 0) {
      if (ref.byte_offset >= slice.resolved_size()) {
        throw Error(node.describe() + ": internal: kernel '" + launch.program.label + "' binds " + kind +
                    " " + std::to_string(ref.index) + " from byte " + std::to_string(ref.byte_offset) +
                    " of " + std::to_string(slice.resolved_size()));
      }
      if (slice.size != gpu::kWholeBuffer) slice.size -= ref.byte_offset;
      slice.offset += ref.byte_offset;
    }
    slices.push_back(slice);
  }
  return slices;
}

std::vector<gpu::BoundDispatch> bind_plan(gpu::Device& device, const ops::NodeInfo& node,
                                          const ops::OpPlan& plan, const PlanBuffers& buffers) {
  std::vector<gpu::BoundDispatch> out;
  out.reserve(plan.launches.size());
  for (const ops::KernelLaunch& launch : plan.launches) {
    std::vector<gpu::BufferSlice> slices = launch_slices(device, node, launch, buffers);
    const gpu::ComputePipeline& pipeline = device.pipelines().get(launch.program);
    out.push_back(gpu::bind_dispatch(device, pipeline, slices, launch.uniform, launch.groups));
  }
  return out;
}

}  // namespace wgi::runtime
