// Unique (kernels/unique/unique.wgsl): the slices ranked by value (every pair compared: O(n^2) comparisons
// of a slice each, which suits the sizes models feed it), groups of equal slices numbered by one workgroup's
// scan, then the four outputs. The number of unique slices depends on the data (docs/dynamic_shapes.md):
// Y, indices and counts are planned at the upper bound (every slice unique) and cut to the real count once it
// is read back; inverse_indices has a static shape.
#include <limits>

#include "kernels/wgsl_library.h"
#include "ops/data_dependent.h"
#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

OpPlan plan_unique(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  data_movement::require_device_elements(ctx, 0);
  require_addressable(ctx, "input 0", x.shape, std::numeric_limits<int32_t>::max());
  const bool has_axis = ctx.node.attributes.has("axis");
  const bool sorted = ctx.node.attributes.get_int("sorted", 1) != 0;
  // Without an axis, X is read flattened: n slices of one element.
  const Shape shape = has_axis ? x.shape : Shape{element_count(x.shape)};
  const int64_t axis = has_axis ? data_movement::normalize_axis(ctx, ctx.node.attributes.get_int("axis", 0),
                                                                static_cast<int64_t>(x.shape.size()), "axis")
                                : 0;
  const int64_t n = shape[static_cast<size_t>(axis)];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];

  OpPlan plan;
  plan.outputs.push_back({x.dtype, shape});     // Y
  plan.outputs.push_back({DType::Int64, {n}});  // indices
  plan.outputs.push_back({DType::Int64, {n}});  // inverse_indices
  plan.outputs.push_back({DType::Int64, {n}});  // counts
  plan.outputs.push_back(extent_desc());
  const TensorRef extent = TensorRef::output(4);
  const bool is_float = x.dtype == DType::Float32;

  // `writes`: how many of the last bindings the stage writes.
  auto launch = [&](const char* stage, const std::vector<StorageBinding>& bindings, size_t writes,
                    uint64_t work, bool one_workgroup) {
    const gpu::DispatchGrid grid =
        gpu::compute_dispatch_grid(std::max<uint64_t>(work, 1), 256, ctx.caps.limits);
    KernelLaunch l;
    l.program.label =
        std::string("unique_") + stage + (is_float ? "_f32" : "_i32") + (sorted ? "" : "_unsorted");
    kernels::Defines defines{{"FLOAT", is_float ? "1" : "0"}, {"SORTED", sorted ? "1" : "0"}};
    for (const char* s : {"RANK", "GROUP", "COUNTS", "INVERSE", "GATHER"})
      defines[s] = std::string(s) == stage ? "1" : "0";
    defines["COMPARE"] = std::string(stage) == "RANK" || std::string(stage) == "GROUP" ? "1" : "0";
    KernelInterface iface;
    iface.storage_list(bindings, writes);
    iface.uniforms({{"outer", UniformType::U32},
                    {"n", UniformType::U32},
                    {"inner", UniformType::U32},
                    {"count", UniformType::U32}});  // invocations that do work (at the upper bound)
    l.program.wgsl = iface.load_wgsl("unique/unique.wgsl", defines);
    l.program.constants = {{"WG_SIZE", one_workgroup ? 256u : grid.workgroup_size}};
    iface.bind(l);
    l.uniform = iface.values()
                    .u32("outer", static_cast<uint32_t>(outer))
                    .u32("n", static_cast<uint32_t>(n))
                    .u32("inner", static_cast<uint32_t>(inner))
                    .u32("count", static_cast<uint32_t>(work))
                    .bytes();
    l.groups = one_workgroup ? gpu::WorkgroupCount{1, 1, 1} : grid.groups;
    plan.launches.push_back(std::move(l));
  };
  const uint64_t words = static_cast<uint64_t>(std::max<int64_t>(n, 1)) * 4;
  const TensorRef order = plan.add_scratch(words);
  const TensorRef start = plan.add_scratch(words);
  const TensorRef group_of = plan.add_scratch(words);
  const TensorRef place = plan.add_scratch(words);
  const TensorRef x_ref = TensorRef::input(0);
  if (n > 0)
    launch("RANK", {{"source", "u32", x_ref}, {"order", "u32", order}}, 1, static_cast<uint64_t>(n), false);
  // Always: it writes the count, 0 for an empty X.
  launch("GROUP",
         {{"source", "u32", x_ref},
          {"order", "u32", order},
          {"start", "u32", start},
          {"group_of", "u32", group_of},
          {"extent", "u32", extent}},
         3, static_cast<uint64_t>(n), true);
  if (n == 0) return plan;
  launch("COUNTS",
         {{"order", "u32", order},
          {"start", "u32", start},
          {"extent", "u32", extent},
          {"place", "u32", place},
          {"indices", "i32", TensorRef::output(1)},
          {"counts", "i32", TensorRef::output(3)}},
         3, static_cast<uint64_t>(n), false);
  launch("INVERSE",
         {{"group_of", "u32", group_of}, {"place", "u32", place}, {"inverse", "i32", TensorRef::output(2)}},
         1, static_cast<uint64_t>(n), false);
  if (element_count(shape) > 0) {
    launch("GATHER",
           {{"source", "u32", x_ref},
            {"indices", "i32", TensorRef::output(1)},
            {"extent", "u32", extent},
            {"result", "u32", TensorRef::output(0)}},
           1, static_cast<uint64_t>(element_count(shape)), false);
  }
  return plan;
}

}  // namespace

void register_unique_ops(OpRegistry& registry) {
  registry.add("", "Unique", 11, kLatestOpset, {plan_unique, nullptr});
  DataDependence unique;
  // Y along the axis (0 without one: Y is 1-D), indices and counts; inverse_indices has X's size.
  unique.outputs = [](const NodeInfo& node, std::span<const TensorDesc> outputs) {
    int64_t axis = node.attributes.get_int("axis", 0);
    if (axis < 0) axis += static_cast<int64_t>(outputs[0].shape.size());
    return std::vector<DataDependentOutput>{{0, static_cast<uint32_t>(axis)}, {1, 0}, {3, 0}};
  };
  unique.extent_output = 4;
  declare_data_dependence("", "Unique", std::move(unique));
}

}  // namespace wgi::ops
