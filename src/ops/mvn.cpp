// MeanVarianceNormalization: (X - mean) / (std + 1e-9) over `axes` (default [0, 2, 3]), ONNX's function body
// with the variance taken as the mean of squared deviations (two passes: never negative, where
// E[x^2] - mean^2 can round below zero). A statistics launch (a workgroup per group) and an elementwise one
// (kernels/mvn/mvn.wgsl).
#include <algorithm>
#include <limits>

#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
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

  // STATS reads the source and writes the statistics; APPLY reads both and writes the output.
  auto interface = [&](bool statistics) {
    KernelInterface iface;
    iface.read("source", "f32", TensorRef::input(0));
    if (statistics) {
      iface.read_write("stats", "f32", stats);
    } else {
      iface.read("stats", "f32", stats).read_write("destination", "f32", TensorRef::output(0));
    }
    iface.uniforms(
        {{"count", UniformType::U32},       // STATS: groups; APPLY: elements
         {"group_size", UniformType::U32},  // elements per group
         {"kept_rank", UniformType::U32},
         {"reduced_rank", UniformType::U32},
         {"kept_dims", UniformType::Vec4U, 2},
         {"kept_strides", UniformType::Vec4U, 2},
         {"reduced_dims", UniformType::Vec4U, 2},
         {"reduced_strides", UniformType::Vec4U, 2},
         {"shape", UniformType::Vec4U, 2},          // APPLY: the full shape, row-major
         {"group_strides", UniformType::Vec4U, 2},  // APPLY: per dim, its stride in the group index
         {"rank", UniformType::U32}});
    return iface;
  };
  auto dims8 = [](const std::vector<int64_t>& v) { return std::array{u32x4(v, 0), u32x4(v, 4)}; };
  auto uniform = [&](const KernelInterface& iface, int64_t work) {
    return iface.values()
        .u32("count", static_cast<uint32_t>(work))
        .u32("group_size", static_cast<uint32_t>(group_size))
        .u32("kept_rank", static_cast<uint32_t>(kept_dims.size()))
        .u32("reduced_rank", static_cast<uint32_t>(reduced_dims.size()))
        .vec4u_array("kept_dims", dims8(kept_dims))
        .vec4u_array("kept_strides", dims8(kept_strides))
        .vec4u_array("reduced_dims", dims8(reduced_dims))
        .vec4u_array("reduced_strides", dims8(reduced_strides))
        .vec4u_array("shape", dims8(x.shape))
        .vec4u_array("group_strides", dims8(group_strides))
        .u32("rank", static_cast<uint32_t>(rank))
        .bytes();
  };

  uint32_t want = 32;
  while (want < 256 && want < group_size) want *= 2;
  const uint32_t wg = pow2_workgroup_size(want, ctx.caps.limits);
  KernelLaunch statistics;
  statistics.program.label = "mvn_stats_wg" + std::to_string(wg);
  const KernelInterface statistics_interface = interface(true);
  statistics.program.wgsl =
      statistics_interface.load_wgsl("mvn/mvn.wgsl", {{"STATS", "1"}, {"WG", std::to_string(wg)}});
  statistics_interface.bind(statistics);
  statistics.uniform = uniform(statistics_interface, groups);
  statistics.groups = gpu::fold_workgroups(static_cast<uint64_t>(groups),
                                           ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(statistics));

  const uint32_t apply_wg = pow2_workgroup_size(256, ctx.caps.limits);
  KernelLaunch apply;
  apply.program.label = "mvn_apply";
  const KernelInterface apply_interface = interface(false);
  apply.program.wgsl =
      apply_interface.load_wgsl("mvn/mvn.wgsl", {{"STATS", "0"}, {"WG", std::to_string(apply_wg)}});
  apply_interface.bind(apply);
  apply.uniform = uniform(apply_interface, count);
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
