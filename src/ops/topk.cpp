// TopK: a bitonic sort of every row in two scratch buffers (keys, original positions), then the first K slots
// copied out (kernels/topk/topk.wgsl). Works for any row length and K (rows padded to a power of two), in
// log2(P) (log2(P) + 1) / 2 + 2 launches for rows padded to P: 138 for 50k-wide rows. Outputs are always
// sorted (sorted = 0 allows any order); equal values keep the lower index first, as ONNX asks.
#include <limits>

#include "ops/data_dependent.h"
#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

OpPlan plan_topk(const PlanContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const bool float_keys = x.dtype == DType::Float32;
  if (!float_keys && x.dtype != DType::Int64 && x.dtype != DType::Int32) {
    ctx.fail("input 0 has type " + std::string(dtype_name(x.dtype)) +
             "; wgi runs TopK on float32, int64 and int32");
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) ctx.fail("input 0 is a scalar; TopK needs rank >= 1");
  const size_t axis = static_cast<size_t>(
      data_movement::normalize_axis(ctx, ctx.node.attributes.get_int("axis", -1), rank, "axis"));
  // K: an attribute before opset 10, an input since; it sets the outputs' shape, so it must be known.
  int64_t k = 0;
  if (ctx.node.opset < 10) {
    if (!ctx.node.attributes.has("k")) ctx.fail("attribute 'k' is required");
    k = ctx.node.attributes.get_int("k", 0);
  } else {
    const std::vector<int64_t> v = data_movement::known_ints(ctx, 1, "K");
    if (v.size() != 1) ctx.fail("input 1 (K) must hold a single value");
    k = v[0];
  }
  const int64_t len = x.shape[axis];
  if (k < 0 || k > len) {
    ctx.fail("K is " + std::to_string(k) + "; expected 0 to the axis' length " + std::to_string(len));
  }
  const int64_t largest = ctx.node.attributes.get_int("largest", 1);
  require_addressable(ctx, "input 0", x.shape, std::numeric_limits<int32_t>::max());
  Shape out_shape = x.shape;
  out_shape[axis] = k;
  OpPlan plan;
  plan.outputs.push_back({x.dtype, out_shape});
  plan.outputs.push_back({DType::Int64, out_shape});
  if (element_count(out_shape) == 0) return plan;

  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t rows = element_count(x.shape) / len;
  int64_t padded = 1;
  while (padded < len) padded *= 2;
  const int64_t slots = rows * padded;
  if (slots > std::numeric_limits<int32_t>::max()) {
    ctx.fail("rows padded to " + std::to_string(padded) + " slots exceed wgi's 32-bit indexing of the sort");
  }
  const TensorRef keys = plan.add_scratch(static_cast<uint64_t>(slots) * 4);
  const TensorRef positions = plan.add_scratch(static_cast<uint64_t>(slots) * 4);

  auto launch_for = [&](const char* stage, int64_t count, uint32_t block, uint32_t distance) {
    gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
    KernelLaunch launch;
    const bool write = std::string(stage) == "WRITE";
    launch.program.label =
        std::string("topk_") + stage + (float_keys ? "_f32" : "_i32") + (largest ? "_largest" : "_smallest");
    KernelInterface iface;
    iface
        .read("source", "u32", TensorRef::input(0))  // X (bound in every stage, read by INIT)
        .read_write("keys", "u32", keys)
        .read_write("slots", "u32", positions);
    if (write)
      iface.read_write("values", "u32", TensorRef::output(0))
          .read_write("indices", "i32", TensorRef::output(1));
    iface.uniforms({{"rows", UniformType::U32},
                    {"len", UniformType::U32},
                    {"inner", UniformType::U32},
                    {"padded", UniformType::U32},
                    {"k", UniformType::U32},
                    {"block", UniformType::U32},
                    {"distance", UniformType::U32},
                    {"count", UniformType::U32}});  // invocations that do work in this stage
    launch.program.wgsl =
        iface.load_wgsl("topk/topk.wgsl", {{"INIT", stage == std::string("INIT") ? "1" : "0"},
                                           {"STEP", stage == std::string("STEP") ? "1" : "0"},
                                           {"WRITE", write ? "1" : "0"},
                                           {"FLOAT_KEYS", float_keys ? "1" : "0"},
                                           {"LARGEST", largest ? "true" : "false"}});
    launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
    iface.bind(launch);
    launch.uniform = iface.values()
                         .u32("rows", static_cast<uint32_t>(rows))
                         .u32("len", static_cast<uint32_t>(len))
                         .u32("inner", static_cast<uint32_t>(inner))
                         .u32("padded", static_cast<uint32_t>(padded))
                         .u32("k", static_cast<uint32_t>(k))
                         .u32("block", block)
                         .u32("distance", distance)
                         .u32("count", static_cast<uint32_t>(count))
                         .bytes();
    launch.groups = grid.groups;
    plan.launches.push_back(std::move(launch));
  };
  launch_for("INIT", slots, 0, 0);
  for (int64_t block = 2; block <= padded; block *= 2) {
    for (int64_t distance = block / 2; distance > 0; distance /= 2) {
      launch_for("STEP", slots / 2, static_cast<uint32_t>(block), static_cast<uint32_t>(distance));
    }
  }
  launch_for("WRITE", element_count(out_shape), 0, 0);
  return plan;
}

}  // namespace

void register_topk_ops(OpRegistry& registry) {
  OpHandler topk;
  topk.plan = plan_topk;
  registry.add("", "TopK", 1, kLatestOpset, std::move(topk));
  // K sets the outputs' shape: one computed on the GPU is read back first (docs/dynamic_shapes.md).
  DataDependence k_by_value;
  k_by_value.value_inputs = {1};
  declare_data_dependence("", "TopK", std::move(k_by_value));
}

}  // namespace wgi::ops
