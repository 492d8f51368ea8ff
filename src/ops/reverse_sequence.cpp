// ReverseSequence (opset 10): reverses the first sequence_lens[b] steps along time_axis of every batch entry
// b of batch_axis (kernels/reverse_sequence/reverse_sequence.wgsl); any 4-byte device element type.
#include <limits>

#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

OpPlan plan_reverse_sequence(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  data_movement::require_device_elements(ctx, 0);
  const TensorDesc& lengths = ctx.input(1);
  if (lengths.dtype != DType::Int64 && lengths.dtype != DType::Int32) {
    ctx.fail("input 1 (sequence_lens, " + ctx.input_name(1) + ") has type " +
             std::string(dtype_name(lengths.dtype)) + "; expected int64");
  }
  if (x.shape.size() < 2) ctx.fail("input 0 " + shape_to_string(x.shape) + " must have rank >= 2");
  const int64_t time_axis = ctx.node.attributes.get_int("time_axis", 0);
  const int64_t batch_axis = ctx.node.attributes.get_int("batch_axis", 1);
  if (!((time_axis == 0 && batch_axis == 1) || (time_axis == 1 && batch_axis == 0))) {
    ctx.fail("attributes time_axis " + std::to_string(time_axis) + " and batch_axis " +
             std::to_string(batch_axis) + " must be 0 and 1, or 1 and 0");
  }
  const int64_t steps = x.shape[static_cast<size_t>(time_axis)];
  const int64_t batch = x.shape[static_cast<size_t>(batch_axis)];
  if (lengths.shape != Shape{batch}) {
    ctx.fail("input 1 (sequence_lens) " + shape_to_string(lengths.shape) + " must be [" +
             std::to_string(batch) + "], one length per batch entry of input 0 " + shape_to_string(x.shape));
  }
  if (const Tensor* known = ctx.constant(1)) {
    const std::vector<int64_t> v = data_movement::tensor_ints(ctx, *known, "input 1 (sequence_lens)");
    for (size_t k = 0; k < v.size(); ++k) {
      if (v[k] < 0 || v[k] > steps) {
        ctx.fail("input 1 (sequence_lens, " + ctx.input_name(1) + ") has " + std::to_string(v[k]) +
                 " at element " + std::to_string(k) + ", outside [0, " + std::to_string(steps) + "]");
      }
    }
  }
  require_addressable(ctx, "input 0", x.shape, std::numeric_limits<int32_t>::max());

  OpPlan plan;
  plan.outputs.push_back(x);
  const int64_t count = element_count(x.shape);
  if (count == 0) return plan;
  const std::vector<int64_t> strides = data_movement::row_major_strides(x.shape);
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = "reverse_sequence";
  KernelInterface iface;
  iface.read("x", "u32", TensorRef::input(0))
      .read("lengths", "i32", TensorRef::input(1))
      .read_write("y", "u32", TensorRef::output(0))
      .run_status()
      .uniforms({{"count", UniformType::U32},
                 {"steps", UniformType::U32},        // size of the time axis
                 {"time_stride", UniformType::U32},  // element strides of the time and batch axes
                 {"batch_stride", UniformType::U32},
                 {"batch", UniformType::U32},  // size of the batch axis
                 {"status_tag", UniformType::U32}});
  launch.program.wgsl = iface.load_wgsl("reverse_sequence/reverse_sequence.wgsl");
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(count))
                       .u32("steps", static_cast<uint32_t>(steps))
                       .u32("time_stride", static_cast<uint32_t>(strides[static_cast<size_t>(time_axis)]))
                       .u32("batch_stride", static_cast<uint32_t>(strides[static_cast<size_t>(batch_axis)]))
                       .u32("batch", static_cast<uint32_t>(batch))
                       .u32("status_tag", ctx.status_tag)
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_reverse_sequence_ops(OpRegistry& registry) {
  OpHandler reverse_sequence;
  reverse_sequence.plan = plan_reverse_sequence;
  registry.add("", "ReverseSequence", 10, kLatestOpset, std::move(reverse_sequence));
}

}  // namespace wgi::ops
