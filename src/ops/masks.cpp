// Mask-building ops: Trilu (the triangle of every matrix of the last two dims; GPT-style causal masks are
// Trilu of a ones tensor), EyeLike (an identity-like matrix), OneHot and Hardmax (one-hot rows of the
// maxima). One kernel per op under src/kernels/masks/, moving 4-byte device elements, so every element type
// the device stores runs the same pipeline.
#include <algorithm>
#include <limits>

#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/reduction.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

constexpr uint32_t kWorkgroupSize = 256;

// ---- Trilu ----

OpPlan plan_trilu(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  data_movement::require_device_elements(ctx, 0);
  if (x.shape.size() < 2) {
    ctx.fail("input 0 " + shape_to_string(x.shape) + " has rank " + std::to_string(x.shape.size()) +
             "; Trilu needs rank >= 2 (matrices in the last two dims)");
  }
  const int64_t upper = ctx.node.attributes.get_int("upper", 1);
  if (upper != 0 && upper != 1)
    ctx.fail("attribute 'upper' is " + std::to_string(upper) + "; expected 0 or 1");
  const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  const int64_t count = element_count(x.shape);
  require_addressable(ctx, "input 0", x.shape);

  // k: absent = 0; known at plan time = the uniform (clamped: past [-rows, cols] the triangle is empty or
  // full, and a clamped k keeps j - i - k within i32); else read by the kernel from its tensor.
  int64_t k = 0;
  bool k_input = false;
  if (ctx.has_input(1)) {
    const TensorDesc& kd = ctx.input(1);
    if (kd.dtype != DType::Int64 && kd.dtype != DType::Int32) {
      ctx.fail("input 1 (k, " + ctx.input_name(1) + ") has type " + std::string(dtype_name(kd.dtype)) +
               "; expected int64");
    }
    if (element_count(kd.shape) != 1) {
      ctx.fail("input 1 (k, " + ctx.input_name(1) + ") has shape " + shape_to_string(kd.shape) +
               "; expected a single value");
    }
    if (const Tensor* known = ctx.constant(1)) {
      k = data_movement::tensor_ints(ctx, *known, "input 1 (k)")[0];
    } else {
      k_input = true;
    }
  }
  k = std::clamp<int64_t>(k, -rows, cols);

  OpPlan plan;
  plan.outputs.push_back(x);
  if (count == 0) return plan;
  if (rows > std::numeric_limits<int32_t>::max() || cols > std::numeric_limits<int32_t>::max()) {
    ctx.fail("matrices of " + std::to_string(rows) + " x " + std::to_string(cols) +
             " are beyond the 32-bit indexing of wgi's Trilu kernel");
  }
  gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(static_cast<uint64_t>(count), kWorkgroupSize, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = std::string("trilu_") + (upper ? "upper" : "lower") + (k_input ? "_k_input" : "");
  KernelInterface iface;
  iface.read("source", "u32", TensorRef::input(0)).read_write("destination", "u32", TensorRef::output(0));
  if (k_input) iface.read("k_input", "i32", TensorRef::input(1));
  iface.uniforms(
      {{"count", UniformType::U32},  // elements
       {"rows", UniformType::U32},
       {"cols", UniformType::U32},
       // when known at plan time (clamped to [-rows, cols]: past that the result no longer changes)
       {"k", UniformType::I32}});
  launch.program.wgsl =
      iface.load_wgsl("masks/trilu.wgsl", {{"UPPER", upper ? "1" : "0"}, {"K_INPUT", k_input ? "1" : "0"}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(count))
                       .u32("rows", static_cast<uint32_t>(rows))
                       .u32("cols", static_cast<uint32_t>(cols))
                       .i32("k", static_cast<int32_t>(k))
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

// ---- EyeLike ----

// TensorProto.DataType -> DType for EyeLike's 'dtype' (the types the device stores as 4-byte words).
DType eye_like_dtype(const PlanContext& ctx) {
  if (!ctx.node.attributes.has("dtype")) return ctx.input(0).dtype;
  const int64_t t = ctx.node.attributes.get_int("dtype", 0);
  const std::optional<DType> dtype = dtype_from_tensor_proto(t);
  if (!dtype || *dtype == DType::Float16) {
    ctx.fail("attribute 'dtype' is TensorProto data type " + std::to_string(t) +
             "; wgi's EyeLike writes float32, int64, int32, int8, uint8 or bool");
  }
  return *dtype;
}

OpPlan plan_eye_like(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  if (x.shape.size() != 2) {
    ctx.fail("input 0 " + shape_to_string(x.shape) + " has rank " + std::to_string(x.shape.size()) +
             "; EyeLike takes a matrix (rank 2)");
  }
  const DType dtype = eye_like_dtype(ctx);
  if (dtype == DType::Float16) ctx.fail("wgi's EyeLike does not write float16 yet");
  const int64_t rows = x.shape[0], cols = x.shape[1];
  require_addressable(ctx, "input 0", x.shape, std::numeric_limits<int32_t>::max());
  // Past the matrix the diagonal is empty; clamped so the kernel's i32 comparison holds.
  const int64_t k = std::clamp<int64_t>(ctx.node.attributes.get_int("k", 0), -rows - 1, cols + 1);
  OpPlan plan;
  plan.outputs.push_back({dtype, x.shape});
  const int64_t count = rows * cols;
  if (count == 0) return plan;
  gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(static_cast<uint64_t>(count), kWorkgroupSize, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = "eye_like";
  KernelInterface iface;
  iface.read_write("destination", "u32", TensorRef::output(0))
      .uniforms({{"count", UniformType::U32},
                 {"cols", UniformType::U32},
                 {"k", UniformType::I32},
                 // 1 in the output's device representation (1.0f bits for float32)
                 {"one", UniformType::U32}});
  launch.program.wgsl = iface.load_wgsl("masks/eye_like.wgsl");
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(count))
                       .u32("cols", static_cast<uint32_t>(cols))
                       .i32("k", static_cast<int32_t>(k))
                       .u32("one", data_movement::device_bits(dtype, 1.0))
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

// ---- OneHot ----

OpPlan plan_one_hot(const PlanContext& ctx) {
  const TensorDesc& indices = ctx.input(0);
  const char* index_type = nullptr;
  switch (indices.dtype) {
    case DType::Float32:
      index_type = "f32";
      break;
    case DType::Int64:
    case DType::Int32:
    case DType::Int8:
      index_type = "i32";
      break;
    case DType::UInt8:
      index_type = "u32";
      break;
    default:
      ctx.fail("input 0 (indices) has type " + std::string(dtype_name(indices.dtype)) +
               "; wgi's OneHot reads float32 and integer indices");
  }
  // depth sets the output's shape: it must be known when planned.
  const Tensor* depth_tensor = ctx.constant(1);
  ctx.input(1);
  if (!depth_tensor)
    ctx.fail("input 1 (depth, " + ctx.input_name(1) + ") must be known when the model is planned");
  if (depth_tensor->element_count() != 1) ctx.fail("input 1 (depth) must hold a single value");
  double depth_value = 0;
  switch (depth_tensor->dtype()) {
    case DType::Float32:
      depth_value = depth_tensor->data<float>()[0];
      break;
    case DType::Int64:
    case DType::Int32:
      depth_value = static_cast<double>(data_movement::tensor_ints(ctx, *depth_tensor, "input 1 (depth)")[0]);
      break;
    default:
      ctx.fail("input 1 (depth) has type " + std::string(dtype_name(depth_tensor->dtype())) +
               "; expected float32, int64 or int32");
  }
  const int64_t depth = static_cast<int64_t>(depth_value);  // ONNX casts depth to int64
  if (depth < 1) ctx.fail("input 1 (depth) is " + std::to_string(depth_value) + "; expected >= 1");
  const TensorDesc& values = ctx.input(2);
  data_movement::require_device_elements(ctx, 2);
  if (element_count(values.shape) != 2) {
    ctx.fail("input 2 (values, " + ctx.input_name(2) + ") has shape " + shape_to_string(values.shape) +
             "; expected [off_value, on_value]");
  }
  const int64_t rank = static_cast<int64_t>(indices.shape.size()) + 1;
  const size_t axis = static_cast<size_t>(
      data_movement::normalize_axis(ctx, ctx.node.attributes.get_int("axis", -1), rank, "axis"));
  Shape out_shape = indices.shape;
  out_shape.insert(out_shape.begin() + static_cast<std::ptrdiff_t>(axis), depth);
  require_addressable(ctx, "the output", out_shape, std::numeric_limits<int32_t>::max());
  OpPlan plan;
  plan.outputs.push_back({values.dtype, out_shape});
  const int64_t count = element_count(out_shape);
  if (count == 0) return plan;
  int64_t inner = 1;
  for (size_t d = axis; d < indices.shape.size(); ++d) inner *= indices.shape[d];
  gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(static_cast<uint64_t>(count), kWorkgroupSize, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = std::string("one_hot_") + index_type;
  KernelInterface iface;
  iface.read("indices", index_type, TensorRef::input(0))
      .read("values", "u32", TensorRef::input(2))
      .read_write("destination", "u32", TensorRef::output(0))
      .uniforms({{"count", UniformType::U32},  // output elements
                 {"depth", UniformType::U32},
                 {"inner", UniformType::U32}});  // elements of indices.shape[axis:]
  launch.program.wgsl =
      iface.load_wgsl("masks/one_hot.wgsl", {{"FLOAT_INDICES", indices.dtype == DType::Float32 ? "1" : "0"}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(count))
                       .u32("depth", static_cast<uint32_t>(depth))
                       .u32("inner", static_cast<uint32_t>(inner))
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

// ---- Hardmax ----

OpPlan plan_hardmax(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  if (x.dtype != DType::Float32) {
    ctx.fail("input 0 has type " + std::string(dtype_name(x.dtype)) + "; wgi runs Hardmax on float32 only");
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) ctx.fail("input 0 is a scalar; Hardmax needs rank >= 1");
  require_addressable(ctx, "input 0", x.shape, std::numeric_limits<int32_t>::max());
  // Opset 13 on: rows along one axis. Before: the input flattened to 2-D at axis (default 1), rows of the
  // trailing block, as Softmax did.
  const bool single_axis = ctx.node.opset >= 13;
  const size_t axis = static_cast<size_t>(data_movement::normalize_axis(
      ctx, ctx.node.attributes.get_int("axis", single_axis ? -1 : 1), rank, "axis"));
  int64_t len = 1, inner = 1;
  for (size_t d = axis; d < x.shape.size(); ++d) (d == axis || !single_axis ? len : inner) *= x.shape[d];
  OpPlan plan;
  plan.outputs.push_back(x);
  const int64_t count = element_count(x.shape);
  if (count == 0) return plan;
  const int64_t rows = count / len;
  uint32_t want = 32;
  while (want < 256 && want < len) want *= 2;
  const uint32_t wg = pow2_workgroup_size(want, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = "hardmax_wg" + std::to_string(wg);
  KernelInterface iface;
  iface.read("source", "u32", TensorRef::input(0))
      .read_write("destination", "f32", TensorRef::output(0))
      .uniforms({{"rows", UniformType::U32}, {"len", UniformType::U32}, {"inner", UniformType::U32}});
  launch.program.wgsl = iface.load_wgsl("masks/hardmax.wgsl", {{"WG", std::to_string(wg)}});
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("rows", static_cast<uint32_t>(rows))
                       .u32("len", static_cast<uint32_t>(len))
                       .u32("inner", static_cast<uint32_t>(inner))
                       .bytes();
  launch.groups =
      gpu::fold_workgroups(static_cast<uint64_t>(rows), ctx.caps.limits.max_compute_workgroups_per_dimension);
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_mask_ops(OpRegistry& registry) {
  OpHandler trilu;
  trilu.plan = plan_trilu;
  registry.add("", "Trilu", 14, kLatestOpset, std::move(trilu));
  OpHandler eye_like;
  eye_like.plan = plan_eye_like;
  registry.add("", "EyeLike", 9, kLatestOpset, std::move(eye_like));
  OpHandler one_hot;
  one_hot.plan = plan_one_hot;
  registry.add("", "OneHot", 9, kLatestOpset, std::move(one_hot));
  OpHandler hardmax;
  hardmax.plan = plan_hardmax;
  registry.add("", "Hardmax", 1, kLatestOpset, std::move(hardmax));
}

}  // namespace wgi::ops
