// Det: determinants of a batch of square matrices [..., M, M] -> [...], one invocation per matrix
// (kernels/det/det.wgsl, Gaussian elimination with partial pivoting in a scratch copy).
#include <algorithm>

#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

OpPlan plan_det(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  if (x.dtype != DType::Float32) {
    ctx.fail("input 0 has type " + std::string(dtype_name(x.dtype)) +
             "; wgi runs Det on float32 and float16");
  }
  const size_t rank = x.shape.size();
  if (rank < 2 || x.shape[rank - 1] != x.shape[rank - 2]) {
    ctx.fail("input 0 " + shape_to_string(x.shape) + " must be [..., M, M] (square matrices)");
  }
  require_addressable(ctx, "input 0", x.shape);
  const Shape out(x.shape.begin(), x.shape.end() - 2);
  OpPlan plan;
  plan.outputs.push_back({DType::Float32, out});
  const int64_t batch = element_count(out), m = x.shape[rank - 1];
  if (batch == 0) return plan;
  // m = 0: the kernel's loops run no step and write 1, the determinant of an empty matrix.
  const TensorRef work =
      plan.add_scratch(static_cast<uint64_t>(std::max<int64_t>(element_count(x.shape), 1)) * 4);
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(batch), 64, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = "det";
  KernelInterface iface;
  iface.read("x", "f32", TensorRef::input(0))
      .read_write("work", "f32", work)
      .read_write("y", "f32", TensorRef::output(0))
      .uniforms({{"batch", UniformType::U32}, {"m", UniformType::U32}});
  launch.program.wgsl = iface.load_wgsl("det/det.wgsl");
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform =
      iface.values().u32("batch", static_cast<uint32_t>(batch)).u32("m", static_cast<uint32_t>(m)).bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_det_ops(OpRegistry& registry) {
  OpHandler det;
  det.plan = plan_det;
  registry.add("", "Det", 11, kLatestOpset, std::move(det));
}

}  // namespace wgi::ops
