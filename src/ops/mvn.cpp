// MeanVarianceNormalization: (X - mean) / (std + 1e-9) over `axes` (default [0, 2, 3]), ONNX's function body
// with the variance taken as the mean of squared deviations (two passes: never negative, where
// E[x^2] - mean^2 can round below zero). A statistics launch (a workgroup per group) and an elementwise one
// (kernels/mvn/mvn.wgsl).
#include <algorithm>
#include <limits>

#include "gpu/uniform.h"
#include "kernels/wgsl_library.h"
#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/reduction.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

constexpr size_t kMaxRank = 8;

OpPlan plan_mvn(const PlanContext& ctx) {
  using data_movement::u32x4;
  const TensorDesc& x = ctx.input(0);
  if (x.dtype != DType::Float32) {
    ctx.fail("input 0 has type " + std::string(dtype_name(x.dtype)) +
             "; wgi runs MeanVarianceNormalization on float32 only");
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0 || static_cast<size_t>(rank) > kMaxRank) {
    ctx.fail("input 0 has rank " + std::to_string(rank) + "; wgi's kernel takes 1 to 8 dims");
  }
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t axis : ctx.node.attributes.get_ints("axes", {0, 2, 3})) {
    const size_t a = static_cast<size_t>(data_movement::normalize_axis(ctx, axis, rank, "axes"));
    if (reduced[a]) ctx.fail("attribute 'axes' names axis " + std::to_string(a) + " twice");
    reduced[a] = true;
  }
  require_addressable(ctx, "input 0", x.shape, std::numeric_limits<int32_t>::max());
  OpPlan plan;
  plan.outputs.push_back(x);
  const int64_t count = element_count(x.shape);
  if (count == 0) return plan;

  const std::vector<int64_t> strides = data_movement::row_major_strides(x.shape);
  std::vector<int64_t> kept_dims, kept_strides, reduced_dims, reduced_strides,
      group_strides(x.shape.size(), 0);
  for (size_t d = 0; d < x.shape.size(); ++d) {
    (reduced[d] ? reduced_dims : kept_dims).push_back(x.shape[d]);
    (reduced[d] ? reduced_strides : kept_strides).push_back(strides[d]);
  }
  int64_t groups = 1;
  for (size_t d = x.shape.size(); d-- > 0;) {
    if (reduced[d]) continue;
    group_strides[d] = groups;
    groups *= x.shape[d];
  }
  const int64_t group_size = count / groups;
  const TensorRef stats = plan.add_scratch(static_cast<uint64_t>(groups) * 8);

  auto uniform = [&](int64_t work) {
    return gpu::UniformBuilder()
        .u32(static_cast<uint32_t>(work))
        .u32(static_cast<uint32_t>(group_size))
        .u32(static_cast<uint32_t>(kept_dims.size()))
        .u32(static_cast<uint32_t>(reduced_dims.size()))
        .vec4u(u32x4(kept_dims, 0))
        .vec4u(u32x4(kept_dims, 4))
        .vec4u(u32x4(kept_strides, 0))
        .vec4u(u32x4(kept_strides, 4))
        .vec4u(u32x4(reduced_dims, 0))
        .vec4u(u32x4(reduced_dims, 4))
        .vec4u(u32x4(reduced_strides, 0))
        .vec4u(u32x4(reduced_strides, 4))
        .vec4u(u32x4(x.shape, 0))
        .vec4u(u32x4(x.shape, 4))
        .vec4u(u32x4(group_strides, 0))
        .vec4u(u32x4(group_strides, 4))
        .u32(static_cast<uint32_t>(rank))
        .bytes();
  };

  uint32_t want = 32;
  while (want < 256 && want < group_size) want *= 2;
  const uint32_t wg = pow2_workgroup_size(want, ctx.caps.limits);
  KernelLaunch statistics;
  statistics.program.label = "mvn_stats_wg" + std::to_string(wg);
  statistics.program.wgsl = kernels::load_wgsl("mvn/mvn.wgsl", {{"STATS", "1"}, {"WG", std::to_string(wg)}});
  statistics.program.bindings = {gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::Storage,
                                 gpu::BindingKind::Uniform};
  statistics.bindings = {TensorRef::input(0), stats};
  statistics.uniform = uniform(groups);
  statistics.groups = gpu::fold_workgroups(static_cast<uint64_t>(groups),
                                           ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(statistics));

  const uint32_t apply_wg = pow2_workgroup_size(256, ctx.caps.limits);
  KernelLaunch apply;
  apply.program.label = "mvn_apply";
  apply.program.wgsl = kernels::load_wgsl("mvn/mvn.wgsl", {{"STATS", "0"}, {"WG", std::to_string(apply_wg)}});
  apply.program.bindings = {gpu::BindingKind::ReadOnlyStorage, gpu::BindingKind::ReadOnlyStorage,
                            gpu::BindingKind::Storage, gpu::BindingKind::Uniform};
  apply.bindings = {TensorRef::input(0), stats, TensorRef::output(0)};
  apply.uniform = uniform(count);
  apply.groups = gpu::fold_workgroups((static_cast<uint64_t>(count) + apply_wg - 1) / apply_wg,
                                      ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(apply));
  return plan;
}

}  // namespace

void register_mvn_ops(OpRegistry& registry) {
  OpHandler mvn;
  mvn.plan = plan_mvn;
  registry.add("", "MeanVarianceNormalization", 9, kLatestOpset, std::move(mvn));
}

}  // namespace wgi::ops
