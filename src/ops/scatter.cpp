// The scatter family: ScatterND, ScatterElements and opset 9's Scatter (ScatterElements without reductions).
// Each is one launch, an invocation per output element that starts from data and applies, in the updates'
// row-major order, every update addressing it (kernels/scatter/*.wgsl). That makes duplicate indices
// deterministic (reduction none: the last one wins; add / mul / max / min: all of them are applied, in
// order) without atomics, which WGSL lacks for f32. docs/new_ops.md has the semantics and the cost.
#include <limits>
#include <string>

#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

constexpr uint32_t kWorkgroupSize = 256;
constexpr size_t kMaxRank = 8;  // the uniform's shape arrays

using data_movement::u32x4;

// The WGSL element type and the reduction's expression over the current value v and the update u.
struct ScatterKernelTypes {
  const char* element;
  std::string combine;
};

ScatterKernelTypes scatter_types(const PlanContext& ctx, const std::string& reduction) {
  const DType dtype = ctx.input(0).dtype;
  data_movement::require_device_elements(ctx, 0);
  if (ctx.input(2).dtype != dtype) {
    ctx.fail("input 2 (updates, " + ctx.input_name(2) + ") has type " +
             std::string(dtype_name(ctx.input(2).dtype)) + " but data has type " +
             std::string(dtype_name(dtype)));
  }
  // The reductions that exist at this opset: add / mul from 16, max / min from 18.
  const int opset = ctx.node.opset;
  if (reduction != "none") {
    const bool known = reduction == "add" || reduction == "mul" || reduction == "max" || reduction == "min";
    if (!known) {
      ctx.fail("attribute 'reduction' is '" + reduction + "'; expected none, add, mul, max or min");
    }
    const int since = reduction == "add" || reduction == "mul" ? 16 : 18;
    if (opset < since) {
      ctx.fail("reduction '" + reduction + "' exists from opset " + std::to_string(since) +
               " on; this node has opset " + std::to_string(opset));
    }
    if (dtype == DType::Bool) ctx.fail("reduction '" + reduction + "' is not defined for bool data");
  }
  // Device elements are 4 bytes: int64 / int32 / int8 as i32 (reductions wrap at 32 bits, see
  // runtime/device_tensor.h), bool / uint8 as u32.
  const char* element = dtype == DType::Float32                                                  ? "f32"
                        : dtype == DType::Int64 || dtype == DType::Int32 || dtype == DType::Int8 ? "i32"
                                                                                                 : "u32";
  std::string combine = reduction == "add"   ? "v + u"
                        : reduction == "mul" ? "v * u"
                        : reduction == "max" ? "max(v, u)"
                        : reduction == "min" ? "min(v, u)"
                                             : "u";
  // 8-bit results wrap to their type, as the elementwise kernels do.
  if (dtype == DType::Int8 && reduction != "none") combine = "((" + combine + ") << 24u) >> 24u";
  if (dtype == DType::UInt8 && reduction != "none") combine = "(" + combine + ") & 255u";
  return {element, combine};
}

void require_indices(const PlanContext& ctx) {
  const DType t = ctx.input(1).dtype;
  if (t != DType::Int64 && t != DType::Int32) {
    ctx.fail("input 1 (indices, " + ctx.input_name(1) + ") has type " + std::string(dtype_name(t)) +
             "; expected int64 or int32");
  }
}

std::string reduction_attribute(const PlanContext& ctx) {
  return ctx.node.attributes.get_string("reduction", "none");
}

// The interface of scatter_elements.wgsl and scatter_nd.wgsl: data, indices, updates, the output, the run
// status, then each kernel's own uniforms `params`.
KernelInterface scatter_interface(const ScatterKernelTypes& types, std::vector<UniformMember> params) {
  KernelInterface iface;
  iface.read("data", types.element, TensorRef::input(0))
      .read("indices", "i32", TensorRef::input(1))
      .read("updates", types.element, TensorRef::input(2))
      .read_write("destination", types.element, TensorRef::output(0))
      .run_status()
      .uniforms(std::move(params));
  return iface;
}

KernelLaunch scatter_launch(const PlanContext& ctx, const KernelInterface& iface, const char* kernel,
                            const ScatterKernelTypes& types, int64_t count) {
  gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(static_cast<uint64_t>(count), kWorkgroupSize, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label =
      std::string(kernel) + "_" + types.element + "_" + ctx.node.attributes.get_string("reduction", "none");
  launch.program.wgsl = iface.load_wgsl(std::string("scatter/") + kernel + ".wgsl",
                                        {{"TYPE", types.element}, {"COMBINE", types.combine}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.groups = grid.groups;
  return launch;
}

// ---- ScatterElements / Scatter ----

OpPlan plan_scatter_elements(const PlanContext& ctx) {
  const TensorDesc& data = ctx.input(0);
  require_indices(ctx);
  const Shape& indices = ctx.input(1).shape;
  const Shape& updates = ctx.input(2).shape;
  const ScatterKernelTypes types = scatter_types(ctx, reduction_attribute(ctx));
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  if (rank == 0) ctx.fail("cannot scatter into a scalar (input 0 has rank 0)");
  if (static_cast<size_t>(rank) > kMaxRank) {
    ctx.fail("data has rank " + std::to_string(rank) + "; wgi's kernel takes up to " +
             std::to_string(kMaxRank));
  }
  if (indices != updates) {
    ctx.fail("indices " + shape_to_string(indices) + " and updates " + shape_to_string(updates) +
             " must have the same shape");
  }
  if (indices.size() != data.shape.size()) {
    ctx.fail("indices " + shape_to_string(indices) + " must have the rank of data " +
             shape_to_string(data.shape));
  }
  const size_t axis = static_cast<size_t>(
      data_movement::normalize_axis(ctx, ctx.node.attributes.get_int("axis", 0), rank, "axis"));
  for (size_t d = 0; d < indices.size(); ++d) {
    if (d != axis && indices[d] > data.shape[d]) {
      ctx.fail("updates " + shape_to_string(updates) + " are larger than data " +
               shape_to_string(data.shape) + " along axis " + std::to_string(d) +
               " (only the scattered axis " + std::to_string(axis) + " may differ)");
    }
  }
  const int64_t axis_dim = data.shape[axis];
  if (const Tensor* known = ctx.constant(1)) {
    const std::vector<int64_t> v = data_movement::tensor_ints(ctx, *known, "input 1 (indices)");
    for (size_t k = 0; k < v.size(); ++k) {
      if (v[k] < -axis_dim || v[k] >= axis_dim) {
        ctx.fail("input 1 (indices, " + ctx.input_name(1) + ") has " + std::to_string(v[k]) + " at element " +
                 std::to_string(k) + ", outside [" + std::to_string(-axis_dim) + ", " +
                 std::to_string(axis_dim - 1) + "] for axis " + std::to_string(axis) + " of " +
                 std::to_string(axis_dim));
      }
    }
  }
  require_addressable(ctx, "input 0 (data)", data.shape, std::numeric_limits<int32_t>::max());
  require_addressable(ctx, "input 2 (updates)", updates, std::numeric_limits<int32_t>::max());

  OpPlan plan;
  plan.outputs.push_back(data);
  const int64_t count = element_count(data.shape);
  if (count == 0) return plan;
  // No updates: the kernel copies data (the scan has nothing to visit; index and update bindings must still
  // be non-empty buffers, which the runtime gives every tensor).
  const KernelInterface iface =
      scatter_interface(types, {{"count", UniformType::U32},  // output (= data) elements
                                {"rank", UniformType::U32},
                                {"axis", UniformType::U32},
                                {"axis_dim", UniformType::U32},  // data.shape[axis]
                                {"data_shape", UniformType::Vec4U, 2},
                                {"updates_shape", UniformType::Vec4U, 2},
                                // row-major strides of updates (= of indices)
                                {"updates_strides", UniformType::Vec4U, 2},
                                {"status_tag", UniformType::U32}});
  KernelLaunch launch = scatter_launch(ctx, iface, "scatter_elements", types, count);
  const std::vector<int64_t> updates_strides = data_movement::row_major_strides(updates);
  launch.uniform =
      iface.values()
          .u32("count", static_cast<uint32_t>(count))
          .u32("rank", static_cast<uint32_t>(rank))
          .u32("axis", static_cast<uint32_t>(axis))
          .u32("axis_dim", static_cast<uint32_t>(axis_dim))
          .vec4u_array("data_shape", std::array{u32x4(data.shape, 0), u32x4(data.shape, 4)})
          .vec4u_array("updates_shape", std::array{u32x4(updates, 0), u32x4(updates, 4)})
          .vec4u_array("updates_strides", std::array{u32x4(updates_strides, 0), u32x4(updates_strides, 4)})
          .u32("status_tag", ctx.status_tag)
          .bytes();
  plan.launches.push_back(std::move(launch));
  return plan;
}

// ---- ScatterND ----

OpPlan plan_scatter_nd(const PlanContext& ctx) {
  const TensorDesc& data = ctx.input(0);
  require_indices(ctx);
  const Shape& indices = ctx.input(1).shape;
  const Shape& updates = ctx.input(2).shape;
  const ScatterKernelTypes types = scatter_types(ctx, reduction_attribute(ctx));
  const size_t rank = data.shape.size();
  if (rank == 0) ctx.fail("cannot scatter into a scalar (input 0 has rank 0)");
  if (indices.empty()) ctx.fail("indices must have rank >= 1 (index tuples in the last dim), got a scalar");
  const int64_t q = indices.back();
  if (q < 1 || static_cast<size_t>(q) > rank) {
    ctx.fail("indices " + shape_to_string(indices) + " address " + std::to_string(q) +
             " dims per tuple; expected 1 to data's rank " + std::to_string(rank));
  }
  if (rank > kMaxRank) {
    ctx.fail("data has rank " + std::to_string(rank) + "; wgi's kernel takes up to " +
             std::to_string(kMaxRank));
  }
  Shape expected_updates(indices.begin(), indices.end() - 1);
  expected_updates.insert(expected_updates.end(), data.shape.begin() + q, data.shape.end());
  if (updates != expected_updates) {
    ctx.fail("updates " + shape_to_string(updates) + " must have shape indices.shape[:-1] + data.shape[" +
             std::to_string(q) + ":] = " + shape_to_string(expected_updates));
  }
  const Shape dims(data.shape.begin(), data.shape.begin() + q);
  const Shape slice_shape(data.shape.begin() + q, data.shape.end());
  if (const Tensor* known = ctx.constant(1)) {
    const std::vector<int64_t> v = data_movement::tensor_ints(ctx, *known, "input 1 (indices)");
    for (size_t k = 0; k < v.size(); ++k) {
      const int64_t n = dims[k % static_cast<size_t>(q)];
      if (v[k] < -n || v[k] >= n) {
        ctx.fail("input 1 (indices, " + ctx.input_name(1) + ") has " + std::to_string(v[k]) + " at element " +
                 std::to_string(k) + ", outside [" + std::to_string(-n) + ", " + std::to_string(n - 1) +
                 "] for axis " + std::to_string(k % static_cast<size_t>(q)) + " of data " +
                 shape_to_string(data.shape));
      }
    }
  }
  require_addressable(ctx, "input 0 (data)", data.shape, std::numeric_limits<int32_t>::max());
  require_addressable(ctx, "input 1 (indices)", indices, std::numeric_limits<int32_t>::max());
  require_addressable(ctx, "input 2 (updates)", updates, std::numeric_limits<int32_t>::max());

  OpPlan plan;
  plan.outputs.push_back(data);
  const int64_t count = element_count(data.shape);
  if (count == 0) return plan;
  const int64_t slice = element_count(slice_shape);
  const int64_t tuples = element_count(Shape(indices.begin(), indices.end() - 1));
  const KernelInterface iface =
      scatter_interface(types, {{"count", UniformType::U32},   // output (= data) elements
                                {"slice", UniformType::U32},   // elements of data.shape[q:]
                                {"tuples", UniformType::U32},  // index tuples: elements of indices.shape[:-1]
                                {"q", UniformType::U32},       // indices.shape[-1]
                                {"dims", UniformType::Vec4U, 2},  // data.shape[:q]
                                // row-major strides of data.shape[:q], in slices
                                {"prefix_strides", UniformType::Vec4U, 2},
                                {"status_tag", UniformType::U32}});
  KernelLaunch launch = scatter_launch(ctx, iface, "scatter_nd", types, count);
  const std::vector<int64_t> prefix_strides = data_movement::row_major_strides(dims);
  launch.uniform =
      iface.values()
          .u32("count", static_cast<uint32_t>(count))
          .u32("slice", static_cast<uint32_t>(slice))
          .u32("tuples", static_cast<uint32_t>(tuples))
          .u32("q", static_cast<uint32_t>(q))
          .vec4u_array("dims", std::array{u32x4(dims, 0), u32x4(dims, 4)})
          .vec4u_array("prefix_strides", std::array{u32x4(prefix_strides, 0), u32x4(prefix_strides, 4)})
          .u32("status_tag", ctx.status_tag)
          .bytes();
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_scatter_ops(OpRegistry& registry) {
  OpHandler scatter_nd;
  scatter_nd.plan = plan_scatter_nd;
  registry.add("", "ScatterND", 11, kLatestOpset, std::move(scatter_nd));
  OpHandler scatter_elements;
  scatter_elements.plan = plan_scatter_elements;
  registry.add("", "ScatterElements", 11, kLatestOpset, scatter_elements);
  // Opset 9's Scatter is ScatterElements without reductions (deprecated at 11, where ScatterElements takes
  // over).
  registry.add("", "Scatter", 9, 10, std::move(scatter_elements));
}

}  // namespace wgi::ops
