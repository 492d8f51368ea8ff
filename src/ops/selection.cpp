// NonZero and Compress: outputs whose size depends on the data (docs/dynamic_shapes.md). Each plans its
// output at the upper bound (every element non-zero, every position selected) and declares it
// data-dependent (ops/data_dependent.h); one workgroup scans the elements (kernels/selection/nonzero.wgsl)
// and writes the real count to the extent output, which the runtime reads back before planning the node's
// readers for the real shape. Compress then gathers the selected slices (compress_gather.wgsl).
#include <limits>

#include "ops/data_dependent.h"
#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

constexpr size_t kMaxNonZeroRank = 8;  // the kernel's uniform holds 8 dims

// The scan of `x` (bound as `source`) writing its non-zero coordinates as [rank, count] to `coords` and the
// count to `extent`.
KernelLaunch nonzero_launch(const TensorDesc& x, TensorRef source, TensorRef coords, TensorRef extent) {
  Shape shape = x.shape.empty() ? Shape{1} : x.shape;  // a scalar counts as [1], as numpy's nonzero does
  std::vector<int64_t> dims(shape.begin(), shape.end());
  KernelLaunch launch;
  const bool is_float = x.dtype == DType::Float32;
  launch.program.label = std::string("nonzero") + (is_float ? "_f32" : "_bits");
  KernelInterface iface;
  iface.read("source", "u32", source)
      .read_write("coords", "i32", coords)
      .read_write("extent", "u32", extent)
      .uniforms({{"count", UniformType::U32},  // elements of X
                 {"rank", UniformType::U32},
                 {"_pad0", UniformType::Pad},
                 {"_pad1", UniformType::Pad},
                 {"dims", UniformType::Vec4U, 2}});  // X's shape, up to rank 8
  launch.program.wgsl = iface.load_wgsl("selection/nonzero.wgsl", {{"FLOAT", is_float ? "1" : "0"}});
  iface.bind(launch);
  launch.uniform =
      iface.values()
          .u32("count", static_cast<uint32_t>(element_count(shape)))
          .u32("rank", static_cast<uint32_t>(shape.size()))
          .vec4u_array("dims", std::array{data_movement::u32x4(dims, 0), data_movement::u32x4(dims, 4)})
          .bytes();
  launch.groups = {1, 1, 1};
  return launch;
}

OpPlan plan_nonzero(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  if (x.shape.size() > kMaxNonZeroRank) {
    ctx.fail("input 0 has rank " + std::to_string(x.shape.size()) + "; wgi's NonZero takes rank <= 8");
  }
  require_addressable(ctx, "input 0", x.shape, std::numeric_limits<int32_t>::max());
  const int64_t n = element_count(x.shape);
  const int64_t rank = x.shape.empty() ? 1 : static_cast<int64_t>(x.shape.size());
  OpPlan plan;
  plan.outputs.push_back({DType::Int64, {rank, n}});
  plan.outputs.push_back(extent_desc());
  plan.launches.push_back(nonzero_launch(x, TensorRef::input(0), TensorRef::output(0), TensorRef::output(1)));
  return plan;
}

OpPlan plan_compress(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& condition = ctx.input(1);
  if (condition.dtype != DType::Bool) {
    ctx.fail("input 1 (condition) has type " + std::string(dtype_name(condition.dtype)) + "; expected bool");
  }
  if (condition.shape.size() != 1) {
    ctx.fail("input 1 (condition) has shape " + shape_to_string(condition.shape) + "; expected rank 1");
  }
  require_addressable(ctx, "input 0", x.shape, std::numeric_limits<int32_t>::max());
  // Without an axis, X is read flattened.
  const bool has_axis = ctx.node.attributes.has("axis");
  Shape out_shape = has_axis ? x.shape : Shape{element_count(x.shape)};
  const int64_t axis = has_axis ? data_movement::normalize_axis(ctx, ctx.node.attributes.get_int("axis", 0),
                                                                static_cast<int64_t>(x.shape.size()), "axis")
                                : 0;
  const int64_t len = out_shape[static_cast<size_t>(axis)];
  // A shorter condition selects among the first slices only (ONNX); a longer one has no slice to select.
  const int64_t considered = condition.shape[0];
  if (considered > len) {
    ctx.fail("input 1 (condition) has " + std::to_string(considered) + " elements, more than the " +
             std::to_string(len) + " slices of input 0 along the axis");
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < out_shape.size(); ++d) inner *= out_shape[d];
  out_shape[static_cast<size_t>(axis)] = considered;
  OpPlan plan;
  plan.outputs.push_back({x.dtype, out_shape});
  plan.outputs.push_back(extent_desc());
  const TensorRef positions = plan.add_scratch(static_cast<uint64_t>(std::max<int64_t>(considered, 1)) * 4);
  plan.launches.push_back(nonzero_launch(condition, TensorRef::input(1), positions, TensorRef::output(1)));
  const int64_t bound = element_count(out_shape);
  if (bound == 0) return plan;
  const gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(static_cast<uint64_t>(bound), 256, ctx.caps.limits);
  KernelLaunch gather;
  gather.program.label = "compress_gather";
  KernelInterface iface;
  iface.read("source", "u32", TensorRef::input(0))
      .read("positions", "i32", positions)
      .read("extent", "u32", TensorRef::output(1))
      .read_write("result", "u32", TensorRef::output(0))
      .uniforms({{"outer", UniformType::U32},
                 {"len", UniformType::U32},
                 {"inner", UniformType::U32},
                 {"_pad", UniformType::Pad}});
  gather.program.wgsl = iface.load_wgsl("selection/compress_gather.wgsl", {});
  gather.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(gather);
  gather.uniform = iface.values()
                       .u32("outer", static_cast<uint32_t>(outer))
                       .u32("len", static_cast<uint32_t>(len))
                       .u32("inner", static_cast<uint32_t>(inner))
                       .bytes();
  gather.groups = grid.groups;
  plan.launches.push_back(std::move(gather));
  return plan;
}

// Compress's axis in its output (0 without the attribute: the output is 1-D).
std::vector<DataDependentOutput> compress_extents(const NodeInfo& node, std::span<const TensorDesc> outputs) {
  int64_t axis = node.attributes.get_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(outputs[0].shape.size());
  return {{0, static_cast<uint32_t>(axis)}};
}

}  // namespace

void register_selection_ops(OpRegistry& registry) {
  registry.add("", "NonZero", 9, kLatestOpset, {plan_nonzero, nullptr});
  registry.add("", "Compress", 9, kLatestOpset, {plan_compress, nullptr});
  DataDependence nonzero;
  nonzero.outputs = [](const NodeInfo&, std::span<const TensorDesc>) {
    return std::vector<DataDependentOutput>{{0, 1}};
  };
  nonzero.extent_output = 1;
  declare_data_dependence("", "NonZero", std::move(nonzero));
  declare_data_dependence("", "Compress", {compress_extents, 1, {}});
}

}  // namespace wgi::ops
