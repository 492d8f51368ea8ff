// TopK, two algorithms with the same order and outputs (always sorted; sorted = 0 allows any order; equal
// values keep the lower index first, as ONNX asks; NaN above every number):
// - K <= kSelectMaxK (a decoder's next tokens, detection's best boxes): selection (kernels/topk/
//   topk_select.wgsl), K rounds of a workgroup tree per chunk of the row, then the same over the chunks'
//   candidates: one or two launches whatever the row's length.
// - larger K: a bitonic sort of every row in two scratch buffers (keys, original positions), then the first K
//   slots copied out (kernels/topk/topk.wgsl). Any row length and K (rows padded to a power of two), in
//   log2(P) (log2(P) + 1) / 2 + 2 launches for rows padded to P: 138 for 50k-wide rows.
#include <limits>

#include "ops/data_dependent.h"
#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/reduction.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

// K up to which TopK selects (K rounds) instead of sorting the rows.
constexpr int64_t kSelectMaxK = 16;
// Positions of a row per SELECT thread (a workgroup takes this many times its size).
constexpr int64_t kSelectChunkPerThread = 4;

// Rows of X viewed as [outer, len, inner]; rows = outer * inner.
struct TopkLayout {
  int64_t k = 0, len = 0, inner = 1, rows = 0;
  bool float_keys = true, largest = true;
};

std::string topk_label(const char* stage, const TopkLayout& t) {
  return std::string("topk_") + stage + (t.float_keys ? "_f32" : "_i32") +
         (t.largest ? "_largest" : "_smallest");
}

void plan_topk_select(const PlanContext& ctx, const TopkLayout& t, OpPlan& plan) {
  const uint32_t wg = pow2_workgroup_size(256, ctx.caps.limits);
  const int64_t chunk = int64_t{kSelectChunkPerThread} * wg;
  const int64_t chunks = (t.len + chunk - 1) / chunk;
  const bool merge = chunks > 1;
  if (t.rows * chunks * t.k > std::numeric_limits<int32_t>::max()) {
    ctx.fail("rows of " + std::to_string(t.len) +
             " values exceed wgi's 32-bit indexing of TopK's candidates");
  }
  TensorRef candidate_keys, candidate_positions;
  if (merge) {
    candidate_keys = plan.add_scratch(static_cast<uint64_t>(t.rows * chunks * t.k) * 4);
    candidate_positions = plan.add_scratch(static_cast<uint64_t>(t.rows * chunks * t.k) * 4);
  }
  const auto add = [&](bool merge_stage, bool write_candidates, int64_t workgroups) {
    KernelLaunch launch;
    launch.program.label = topk_label(merge_stage ? "merge" : "select", t);
    KernelInterface iface;
    iface.read("source", "u32", TensorRef::input(0));
    if (merge) {
      iface.read_write("candidate_keys", "u32", candidate_keys)
          .read_write("candidate_positions", "u32", candidate_positions);
    }
    if (!write_candidates) {
      iface.read_write("values", "u32", TensorRef::output(0))
          .read_write("indices", "i32", TensorRef::output(1));
    }
    iface.uniforms({{"rows", UniformType::U32},
                    {"len", UniformType::U32},
                    {"inner", UniformType::U32},
                    {"k", UniformType::U32},
                    {"chunk", UniformType::U32},   // positions per SELECT workgroup
                    {"chunks", UniformType::U32},  // SELECT workgroups per row
                    {"_pad0", UniformType::Pad},
                    {"_pad1", UniformType::Pad}});
    launch.program.wgsl =
        iface.load_wgsl("topk/topk_select.wgsl", {{"MERGE", merge_stage ? "1" : "0"},
                                                  {"WRITE_CANDIDATES", write_candidates ? "1" : "0"},
                                                  {"FLOAT_KEYS", t.float_keys ? "1" : "0"},
                                                  {"LARGEST", t.largest ? "true" : "false"}});
    launch.program.constants = {{"WG_SIZE", wg}};
    iface.bind(launch);
    launch.uniform = iface.values()
                         .u32("rows", static_cast<uint32_t>(t.rows))
                         .u32("len", static_cast<uint32_t>(t.len))
                         .u32("inner", static_cast<uint32_t>(t.inner))
                         .u32("k", static_cast<uint32_t>(t.k))
                         .u32("chunk", static_cast<uint32_t>(chunk))
                         .u32("chunks", static_cast<uint32_t>(chunks))
                         .bytes();
    launch.groups = gpu::fold_workgroups(static_cast<uint64_t>(workgroups),
                                         ctx.caps.limits.max_compute_workgroups_per_dimension);
    plan.launches.push_back(std::move(launch));
  };
  add(false, merge, t.rows * chunks);
  if (merge) add(true, false, t.rows);
}

void plan_topk_sort(const PlanContext& ctx, const TopkLayout& t, OpPlan& plan) {
  int64_t padded = 1;
  while (padded < t.len) padded *= 2;
  const int64_t slots = t.rows * padded;
  if (slots > std::numeric_limits<int32_t>::max()) {
    ctx.fail("rows padded to " + std::to_string(padded) + " slots exceed wgi's 32-bit indexing of the sort");
  }
  const TensorRef keys = plan.add_scratch(static_cast<uint64_t>(slots) * 4);
  const TensorRef positions = plan.add_scratch(static_cast<uint64_t>(slots) * 4);
  const int64_t out_count = t.rows * t.k;

  auto launch_for = [&](const char* stage, int64_t count, uint32_t block, uint32_t distance) {
    gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
    KernelLaunch launch;
    const bool write = std::string(stage) == "WRITE";
    launch.program.label = topk_label(stage, t);
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
                                           {"FLOAT_KEYS", t.float_keys ? "1" : "0"},
                                           {"LARGEST", t.largest ? "true" : "false"}});
    launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
    iface.bind(launch);
    launch.uniform = iface.values()
                         .u32("rows", static_cast<uint32_t>(t.rows))
                         .u32("len", static_cast<uint32_t>(t.len))
                         .u32("inner", static_cast<uint32_t>(t.inner))
                         .u32("padded", static_cast<uint32_t>(padded))
                         .u32("k", static_cast<uint32_t>(t.k))
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
  launch_for("WRITE", out_count, 0, 0);
}

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

  TopkLayout layout;
  layout.k = k;
  layout.len = len;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) layout.inner *= x.shape[d];
  layout.rows = element_count(x.shape) / len;
  layout.float_keys = float_keys;
  layout.largest = largest != 0;
  if (k <= kSelectMaxK) {
    plan_topk_select(ctx, layout, plan);
  } else {
    plan_topk_sort(ctx, layout, plan);
  }
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
