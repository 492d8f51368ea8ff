// NonMaxSuppression (kernels/detection/non_max_suppression.wgsl): the IoU test of every pair of boxes as a
// bit matrix, the candidates of every (batch, class) ranked by score, a greedy selection per (batch, class)
// in one workgroup, and the selected triples packed with their count. The output's row count depends on the
// data (docs/dynamic_shapes.md): planned at its upper bound, batches x classes x min(max boxes per class,
// boxes). max_output_boxes_per_class, iou_threshold and score_threshold are needed when planning: a value
// computed on the GPU is read back first (ops/data_dependent.h).
#include <limits>

#include "kernels/wgsl_library.h"
#include "ops/data_dependent.h"
#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

constexpr int64_t kMaxBoxes = 65536;  // the selection's bitmask of suppressed boxes in workgroup memory

// Input `i`'s single value as a double, or `fallback` when the input is not given.
double optional_scalar(const PlanContext& ctx, size_t i, const char* what, double fallback) {
  if (!ctx.has_input(i)) return fallback;
  const Tensor* t = ctx.constant(i);
  if (!t) ctx.fail("input " + std::to_string(i) + " (" + what + ") must be known when planning");
  if (t->element_count() != 1) {
    ctx.fail("input " + std::to_string(i) + " (" + what + ") has shape " + shape_to_string(t->shape()) +
             "; expected a single value");
  }
  switch (t->dtype()) {
    case DType::Float32:
      return t->data<float>()[0];
    case DType::Int64:
      return static_cast<double>(t->data<int64_t>()[0]);
    case DType::Int32:
      return t->data<int32_t>()[0];
    default:
      ctx.fail("input " + std::to_string(i) + " (" + what + ") has type " +
               std::string(dtype_name(t->dtype())));
  }
}

// What NonMaxSuppression is asked, read and checked from its inputs and attributes.
struct NmsProblem {
  int64_t batches = 0, count = 0, classes = 0;
  int64_t center_point_box = 0;
  int64_t per_class = 0;  // boxes selected at most per (batch, class)
  int64_t words = 0;      // (count + 31) / 32: one bit per box in a mask row
  float iou_threshold = 0, score_threshold = 0;
  bool has_score_threshold = false;
  int64_t rows() const { return batches * classes; }
};

NmsProblem parse_non_max_suppression(const PlanContext& ctx) {
  const TensorDesc& boxes = ctx.input(0);
  const TensorDesc& scores = ctx.input(1);
  if (boxes.dtype != DType::Float32 || scores.dtype != DType::Float32) {
    ctx.fail("boxes and scores must be float32 (found " + std::string(dtype_name(boxes.dtype)) + " and " +
             std::string(dtype_name(scores.dtype)) + ")");
  }
  if (boxes.shape.size() != 3 || boxes.shape[2] != 4) {
    ctx.fail("input 0 (boxes) has shape " + shape_to_string(boxes.shape) + "; expected [batches, boxes, 4]");
  }
  NmsProblem p;
  p.batches = boxes.shape[0];
  p.count = boxes.shape[1];
  if (scores.shape.size() != 3 || scores.shape[0] != p.batches || scores.shape[2] != p.count) {
    ctx.fail("input 1 (scores) has shape " + shape_to_string(scores.shape) + "; expected [" +
             std::to_string(p.batches) + ", classes, " + std::to_string(p.count) + "] for boxes " +
             shape_to_string(boxes.shape));
  }
  if (p.count > kMaxBoxes) {
    ctx.fail("has " + std::to_string(p.count) + " boxes per batch; wgi's NonMaxSuppression takes up to " +
             std::to_string(kMaxBoxes));
  }
  p.classes = scores.shape[1];
  p.center_point_box = ctx.node.attributes.get_int("center_point_box", 0);
  if (p.center_point_box != 0 && p.center_point_box != 1)
    ctx.fail("attribute center_point_box is " + std::to_string(p.center_point_box) + "; expected 0 or 1");
  const double max_output = optional_scalar(ctx, 2, "max_output_boxes_per_class", 0);
  p.iou_threshold = static_cast<float>(optional_scalar(ctx, 3, "iou_threshold", 0));
  p.has_score_threshold = ctx.has_input(4);
  p.score_threshold = static_cast<float>(optional_scalar(ctx, 4, "score_threshold", 0));
  p.per_class =
      max_output <= 0 ? 0 : static_cast<int64_t>(std::min<double>(max_output, static_cast<double>(p.count)));
  p.words = (p.count + 31) / 32;
  if (p.rows() * p.count > std::numeric_limits<int32_t>::max() ||
      p.batches * p.count * p.words > std::numeric_limits<int32_t>::max()) {
    ctx.fail("boxes " + shape_to_string(boxes.shape) + " and scores " + shape_to_string(scores.shape) +
             " exceed wgi's 32-bit indexing");
  }
  return p;
}

// One stage of the kernel file; `writes`: how many of the last bindings the stage writes (it reads the
// others); `work`: the invocations that do work (IOU, RANK).
KernelLaunch stage_launch(const NmsProblem& p, const char* stage, const std::vector<StorageBinding>& bindings,
                          size_t writes, uint64_t work, uint32_t wg_size, gpu::WorkgroupCount groups) {
  KernelLaunch l;
  l.program.label = std::string("non_max_suppression_") + stage;
  kernels::Defines flags;
  for (const char* s : {"IOU", "RANK", "SELECT", "WRITE"}) flags[s] = std::string(s) == stage ? "1" : "0";
  KernelInterface iface;
  iface.storage_list(bindings, writes);
  iface.uniforms({{"batches", UniformType::U32},
                  {"classes", UniformType::U32},
                  {"boxes", UniformType::U32},
                  {"words", UniformType::U32},
                  {"max_selected", UniformType::U32},  // per class
                  {"center_point_box", UniformType::U32},
                  {"has_score_threshold", UniformType::U32},
                  {"count", UniformType::U32},
                  {"iou_threshold", UniformType::F32},
                  {"score_threshold", UniformType::F32},
                  {"_pad0", UniformType::Pad},
                  {"_pad1", UniformType::Pad}});
  l.program.wgsl = iface.load_wgsl("detection/non_max_suppression.wgsl", flags);
  l.program.constants = {{"WG_SIZE", wg_size}};
  iface.bind(l);
  l.uniform = iface.values()
                  .u32("batches", static_cast<uint32_t>(p.batches))
                  .u32("classes", static_cast<uint32_t>(p.classes))
                  .u32("boxes", static_cast<uint32_t>(p.count))
                  .u32("words", static_cast<uint32_t>(p.words))
                  .u32("max_selected", static_cast<uint32_t>(p.per_class))
                  .u32("center_point_box", static_cast<uint32_t>(p.center_point_box))
                  .u32("has_score_threshold", p.has_score_threshold ? 1 : 0)
                  .u32("count", static_cast<uint32_t>(work))
                  .f32("iou_threshold", p.iou_threshold)
                  .f32("score_threshold", p.score_threshold)
                  .bytes();
  l.groups = groups;
  return l;
}

// A stage with one invocation per work item, writing its last binding.
KernelLaunch grid_stage_launch(const PlanContext& ctx, const NmsProblem& p, const char* stage,
                               const std::vector<StorageBinding>& bindings, uint64_t work) {
  const gpu::DispatchGrid grid = gpu::compute_dispatch_grid(work, 256, ctx.caps.limits);
  return stage_launch(p, stage, bindings, 1, work, grid.workgroup_size, grid.groups);
}

OpPlan plan_non_max_suppression(const PlanContext& ctx) {
  const NmsProblem p = parse_non_max_suppression(ctx);
  const int64_t rows = p.rows();
  OpPlan plan;
  plan.outputs.push_back({DType::Int64, {rows * p.per_class, 3}});
  plan.outputs.push_back(extent_desc());
  // Nothing can be selected without boxes to keep: only the write stage runs, and still writes the count
  // (0), its inputs bound to any buffer.
  TensorRef selected = TensorRef::zero(), kept = TensorRef::zero();
  if (p.per_class > 0 && rows > 0) {
    const TensorRef mask = plan.add_scratch(static_cast<uint64_t>(p.batches * p.count * p.words) * 4);
    const TensorRef order = plan.add_scratch(static_cast<uint64_t>(rows * p.count) * 4);
    selected = plan.add_scratch(static_cast<uint64_t>(rows * p.per_class) * 4);
    kept = plan.add_scratch(static_cast<uint64_t>(rows) * 4);
    plan.launches.push_back(grid_stage_launch(ctx, p, "IOU",
                                              {{"boxes", "f32", TensorRef::input(0)}, {"mask", "u32", mask}},
                                              static_cast<uint64_t>(p.batches * p.count * p.words)));
    plan.launches.push_back(
        grid_stage_launch(ctx, p, "RANK", {{"scores", "f32", TensorRef::input(1)}, {"order", "u32", order}},
                          static_cast<uint64_t>(rows * p.count)));
    // A workgroup per (batch, class), folded like any grid past the per-dimension limit.
    const gpu::DispatchGrid groups =
        gpu::compute_dispatch_grid(static_cast<uint64_t>(rows), 1, ctx.caps.limits);
    plan.launches.push_back(stage_launch(p, "SELECT",
                                         {{"scores", "f32", TensorRef::input(1)},
                                          {"mask", "u32", mask},
                                          {"order", "u32", order},
                                          {"selected", "u32", selected},  // [B * C, max_selected]
                                          {"kept", "u32", kept}},         // [B * C]
                                         2, static_cast<uint64_t>(rows), 256, groups.groups));
  }
  plan.launches.push_back(stage_launch(p, "WRITE",
                                       {{"selected", "u32", selected},
                                        {"kept", "u32", kept},
                                        {"triples", "i32", TensorRef::output(0)},
                                        {"extent", "u32", TensorRef::output(1)}},
                                       2, 0, 256, {1, 1, 1}));
  return plan;
}

}  // namespace

void register_detection_ops(OpRegistry& registry) {
  registry.add("", "NonMaxSuppression", 10, kLatestOpset, {plan_non_max_suppression, nullptr});
  DataDependence nms;
  nms.outputs = [](const NodeInfo&, std::span<const TensorDesc>) {
    return std::vector<DataDependentOutput>{{0, 0}};
  };
  nms.extent_output = 1;
  nms.value_inputs = {2, 3, 4};
  declare_data_dependence("", "NonMaxSuppression", std::move(nms));
}

}  // namespace wgi::ops
