// LRN: local response normalization across channels (AlexNet / GoogLeNet-era CNNs), one elementwise kernel
// reading each element's channel window (kernels/lrn/lrn.wgsl).
#include <limits>

#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

OpPlan plan_lrn(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  if (x.dtype != DType::Float32) {
    ctx.fail("input 0 has type " + std::string(dtype_name(x.dtype)) + "; wgi runs LRN on float32 only");
  }
  if (x.shape.size() < 2) {
    ctx.fail("input 0 " + shape_to_string(x.shape) + " must be [N, C, ...] (rank >= 2)");
  }
  const Attributes& a = ctx.node.attributes;
  if (!a.has("size")) ctx.fail("attribute 'size' is required");
  const int64_t size = a.get_int("size", 0);
  if (size < 1) ctx.fail("attribute 'size' is " + std::to_string(size) + "; expected >= 1");
  const float alpha = a.get_float("alpha", 1e-4f), beta = a.get_float("beta", 0.75f),
              bias = a.get_float("bias", 1.0f);
  // (bias + alpha/size * sum)^beta goes through log2: the base must stay positive.
  if (!(bias > 0) || alpha < 0) {
    ctx.fail("wgi's LRN needs bias > 0 and alpha >= 0 (got bias " + std::to_string(bias) + ", alpha " +
             std::to_string(alpha) + ")");
  }
  require_addressable(ctx, "input 0", x.shape, std::numeric_limits<int32_t>::max());
  OpPlan plan;
  plan.outputs.push_back(x);
  const int64_t count = element_count(x.shape);
  if (count == 0) return plan;
  int64_t inner = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t clamped = std::min<int64_t>(size, 2 * x.shape[1] + 1);  // a wider window sees every channel
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = "lrn";
  KernelInterface iface;
  iface.read("source", "f32", TensorRef::input(0))
      .read_write("destination", "f32", TensorRef::output(0))
      .uniforms(
          {{"count", UniformType::U32},
           {"channels", UniformType::U32},
           {"inner", UniformType::U32},   // elements per channel of one image (the spatial dims' product)
           {"before", UniformType::U32},  // (size - 1) / 2 channels below c
           {"after", UniformType::U32},   // size / 2 channels above c (ceil((size - 1) / 2))
           {"alpha_over_size", UniformType::F32},
           {"beta", UniformType::F32},
           {"bias", UniformType::F32}});
  launch.program.wgsl = iface.load_wgsl("lrn/lrn.wgsl");
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(count))
                       .u32("channels", static_cast<uint32_t>(x.shape[1]))
                       .u32("inner", static_cast<uint32_t>(inner))
                       .u32("before", static_cast<uint32_t>((clamped - 1) / 2))
                       .u32("after", static_cast<uint32_t>(clamped / 2))
                       .f32("alpha_over_size", alpha / static_cast<float>(size))
                       .f32("beta", beta)
                       .f32("bias", bias)
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_lrn_ops(OpRegistry& registry) {
  OpHandler lrn;
  lrn.plan = plan_lrn;
  registry.add("", "LRN", 1, kLatestOpset, std::move(lrn));
}

}  // namespace wgi::ops
