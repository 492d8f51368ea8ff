// The data-movement family, part 2: ops that are strided copies (see StridedCopy in
// data_movement_internal.h). Each op here only works out its output shapes and copies from the node; the
// shared handler launches copy_strided.wgsl (or transpose_tile.wgsl for batched 2-D transposes) per copy, or
// runs the copies on the host when the inputs are known; a Concat of two inputs is one launch of
// concat_pair.wgsl.
#include <algorithm>
#include <numeric>

#include "gpu/dispatch_grid.h"
#include "ops/data_movement_internal.h"
#include "ops/kernel_interface.h"

namespace wgi::ops::data_movement {

namespace {

// Input viewed with shape `view` (contiguous), axes permuted: output dim i is view dim perm[i].
StridedCopy permuted_view(const Shape& view, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> strides = row_major_strides(view);
  Shape out_shape;
  std::vector<int64_t> src_strides;
  for (int64_t p : perm) {
    out_shape.push_back(view[static_cast<size_t>(p)]);
    src_strides.push_back(strides[static_cast<size_t>(p)]);
  }
  return gather_view(out_shape, src_strides);
}

CopyLayout transpose_layout(const PlanContext& ctx) {
  const TensorDesc& in = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  std::vector<int64_t> reversed(static_cast<size_t>(rank));
  std::iota(reversed.rbegin(), reversed.rend(), int64_t{0});
  const std::vector<int64_t> perm = ctx.node.attributes.get_ints("perm", reversed);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    valid = valid && p >= 0 && p < rank && !seen[static_cast<size_t>(p)];
    if (valid) seen[static_cast<size_t>(p)] = true;
  }
  if (!valid) {
    ctx.fail("perm " + shape_to_string(perm) + " is not a permutation of the " + std::to_string(rank) +
             " axes of input " + shape_to_string(in.shape));
  }
  StridedCopy copy = permuted_view(in.shape, perm);
  return {{{in.dtype, copy.shape}}, {copy}};
}

CopyLayout concat_layout(const PlanContext& ctx) {
  if (!ctx.node.attributes.has("axis")) ctx.fail("the axis attribute is required");
  if (ctx.input_count() == 0) ctx.fail("needs at least one input");
  const TensorDesc& first = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  if (rank == 0) ctx.fail("cannot concatenate scalars (input 0 has rank 0)");
  const int64_t axis = normalize_axis(ctx, ctx.node.attributes.get_int("axis", 0), rank, "axis");
  Shape out_shape = first.shape;
  out_shape[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const TensorDesc& in = ctx.input(i);
    if (in.dtype != first.dtype) {
      ctx.fail(ctx.input_name(i) + " has type " + std::string(dtype_name(in.dtype)) + "; input 0 has " +
               std::string(dtype_name(first.dtype)));
    }
    bool match = in.shape.size() == first.shape.size();
    for (size_t d = 0; match && d < in.shape.size(); ++d) {
      match = d == static_cast<size_t>(axis) || in.shape[d] == first.shape[d];
    }
    if (!match) {
      ctx.fail(ctx.input_name(i) + " has shape " + shape_to_string(in.shape) +
               ", which does not match input 0 " + shape_to_string(first.shape) + " outside axis " +
               std::to_string(axis));
    }
    out_shape[static_cast<size_t>(axis)] += in.shape[static_cast<size_t>(axis)];
  }
  CopyLayout layout;
  layout.outputs.push_back({first.dtype, out_shape});
  const std::vector<int64_t> out_strides = row_major_strides(out_shape);
  int64_t offset = 0;
  // One copy per input into its slice of the output: a kernel binds two tensors however many inputs there
  // are (WebGPU allows only a few storage buffers per shader stage).
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const Shape& s = ctx.input(i).shape;
    StridedCopy c;
    c.shape = s;
    c.src_strides = row_major_strides(s);
    c.dst_strides = out_strides;
    c.dst_offset = offset * out_strides[static_cast<size_t>(axis)];
    c.src = TensorRef::input(static_cast<uint32_t>(i));
    layout.copies.push_back(std::move(c));
    offset += s[static_cast<size_t>(axis)];
  }
  return layout;
}

// A Concat of two non-empty inputs as concat_pair.wgsl sees it: the output viewed as [outer, first_len +
// second_len, inner] in units of T (vec4<u32> where inner is a multiple of 4 elements).
struct ConcatPairShape {
  TensorDesc output;
  uint32_t units = 0, inner = 0, first_len = 0, second_len = 0;
  bool vec4 = false;
  bool operator==(const ConcatPairShape&) const = default;
};

// nullopt for other Concats (more inputs, an empty one, sizes past u32 indexing).
std::optional<ConcatPairShape> concat_pair_shape(const PlanContext& ctx) {
  if (ctx.input_count() != 2) return std::nullopt;
  const CopyLayout layout = concat_layout(ctx);  // validates the inputs
  const Shape& out = layout.outputs[0].shape;
  const size_t axis = static_cast<size_t>(
      normalize_axis(ctx, ctx.node.attributes.get_int("axis", 0), static_cast<int64_t>(out.size()), "axis"));
  const int64_t first_len = ctx.input(0).shape[axis], second_len = ctx.input(1).shape[axis];
  const int64_t count = element_count(out);
  if (first_len == 0 || second_len == 0 || count == 0 || count > int64_t{UINT32_MAX}) return std::nullopt;
  int64_t inner = 1;
  for (size_t d = axis + 1; d < out.size(); ++d) inner *= out[d];
  require_device_elements(ctx, 0);
  require_device_elements(ctx, 1);
  ConcatPairShape shape;
  shape.output = layout.outputs[0];
  shape.vec4 = inner % 4 == 0;
  const int64_t unit = shape.vec4 ? 4 : 1;
  shape.units = static_cast<uint32_t>(count / unit);
  shape.inner = static_cast<uint32_t>(inner / unit);
  shape.first_len = static_cast<uint32_t>(first_len);
  shape.second_len = static_cast<uint32_t>(second_len);
  return shape;
}

// One launch of concat_pair.wgsl for `pairs` (1 or 2) Concats of the same shape: pair p reads inputs 2p and
// 2p + 1 and writes output p.
KernelLaunch concat_pair_launch(const PlanContext& ctx, const ConcatPairShape& shape, uint32_t pairs) {
  KernelLaunch launch;
  launch.program.label =
      std::string(pairs == 2 ? "concat_pairs" : "concat_pair") + (shape.vec4 ? "_vec4" : "");
  KernelInterface iface;
  iface.read("first", "T", TensorRef::input(0))
      .read("second", "T", TensorRef::input(1))
      .read_write("destination", "T", TensorRef::output(0));
  if (pairs == 2) {
    iface.read("first_1", "T", TensorRef::input(2))
        .read("second_1", "T", TensorRef::input(3))
        .read_write("destination_1", "T", TensorRef::output(1));
  }
  iface.uniforms({{"count", UniformType::U32},  // T elements of each output
                  {"inner", UniformType::U32},  // T elements per index of the axis
                  {"first_len", UniformType::U32},
                  {"second_len", UniformType::U32}});
  const gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(uint64_t{shape.units} * pairs, 256, ctx.caps.limits);
  launch.program.wgsl =
      iface.load_wgsl("data_movement/concat_pair.wgsl",
                      {{"TYPE", shape.vec4 ? "vec4<u32>" : "u32"}, {"SECOND_PAIR", pairs == 2 ? "1" : "0"}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", shape.units)
                       .u32("inner", shape.inner)
                       .u32("first_len", shape.first_len)
                       .u32("second_len", shape.second_len)
                       .bytes();
  launch.groups = grid.groups;
  return launch;
}

// Concat of two non-empty inputs as one launch of concat_pair.wgsl instead of a copy per input; nullopt for
// other Concats.
std::optional<OpPlan> plan_concat_pair(const PlanContext& ctx) {
  const std::optional<ConcatPairShape> shape = concat_pair_shape(ctx);
  if (!shape) return std::nullopt;
  OpPlan plan;
  plan.outputs = {shape->output};
  plan.launches.push_back(concat_pair_launch(ctx, *shape, 1));
  return plan;
}

// wgi's ConcatPairs (graph::merge_past_concats): Concat(input 0, input 1) into output 0 and Concat(input 2,
// input 3) into output 1 along the same axis (a decoder layer's past and new keys, its past and new values).
// Pairs of one shape (every step after the first) take one launch; otherwise each Concat is planned as one.
OpPlan plan_concat_pairs(const PlanContext& ctx) {
  if (ctx.input_count() != 4)
    ctx.fail("takes 4 inputs (two Concats of two), not " + std::to_string(ctx.input_count()));
  std::vector<ops::NodeInfo> halves(2, ctx.node);
  std::vector<PlanContext> concats;
  for (size_t p = 0; p < 2; ++p) {
    ops::NodeInfo& half = halves[p];
    half.name = ctx.node.name + (p == 0 ? ", its first Concat" : ", its second Concat");  // for messages
    half.op_type = "Concat";
    half.domain.clear();
    half.opset = 13;  // Concat as current opsets define it (negative axes)
    auto pick = [p](const std::vector<std::string>& names, size_t per) {
      std::vector<std::string> picked;
      for (size_t i = p * per; i < (p + 1) * per && i < names.size(); ++i) picked.push_back(names[i]);
      return picked;
    };
    half.input_names = pick(ctx.node.input_names, 2);
    half.output_names = pick(ctx.node.output_names, 1);
    concats.push_back(PlanContext{half,
                                  {ctx.inputs[2 * p], ctx.inputs[2 * p + 1]},
                                  {ctx.constant(2 * p), ctx.constant(2 * p + 1)},
                                  ctx.caps,
                                  ctx.gemm_tuning,
                                  ctx.status_tag});
  }
  const std::optional<ConcatPairShape> first = concat_pair_shape(concats[0]);
  const std::optional<ConcatPairShape> second = concat_pair_shape(concats[1]);
  OpPlan plan;
  // One launch indexes both outputs' elements in 32 bits.
  if (first && second && *first == *second && uint64_t{first->units} * 2 <= UINT32_MAX) {
    plan.outputs = {first->output, second->output};
    plan.launches.push_back(concat_pair_launch(ctx, *first, 2));
    return plan;
  }
  // Each Concat on its own: the pair kernel, or a copy per non-empty input (a first step's empty past).
  for (uint32_t p = 0; p < 2; ++p) {
    const std::optional<ConcatPairShape>& shape = p == 0 ? first : second;
    if (shape) {
      plan.outputs.push_back(shape->output);
      KernelLaunch launch = concat_pair_launch(concats[p], *shape, 1);
      for (TensorRef& ref : launch.bindings) ref.index += ref.kind == TensorRef::Kind::Input ? 2 * p : p;
      plan.launches.push_back(std::move(launch));
      continue;
    }
    CopyLayout layout = concat_layout(concats[p]);
    plan.outputs.push_back(layout.outputs[0]);
    for (StridedCopy& copy : layout.copies) {
      copy.src.index += 2 * p;
      copy.dst = TensorRef::output(p);
      add_copy_launches(ctx, plan, std::move(copy));
    }
  }
  return plan;
}

OpHandler concat_handler() {
  OpHandler handler = copy_layout_handler(concat_layout);
  handler.plan = [copies = std::move(handler.plan)](const PlanContext& ctx) {
    if (std::optional<OpPlan> pair = plan_concat_pair(ctx)) return std::move(*pair);
    return copies(ctx);
  };
  return handler;
}

std::vector<int64_t> split_sizes(const PlanContext& ctx, int64_t dim) {
  std::optional<std::vector<int64_t>> sizes;
  if (ctx.node.opset < 13) {
    if (ctx.node.attributes.has("split")) sizes = ctx.node.attributes.get_ints("split", {});
  } else if (ctx.has_input(1)) {
    sizes = known_ints(ctx, 1, "split");
  }
  const bool has_num_outputs = ctx.node.opset >= 18 && ctx.node.attributes.has("num_outputs");
  if (sizes && has_num_outputs) ctx.fail("has both the split input and the num_outputs attribute");
  if (sizes) {
    if (!ctx.node.output_names.empty() && sizes->size() != ctx.node.output_names.size()) {
      ctx.fail("split " + shape_to_string(*sizes) + " has " + std::to_string(sizes->size()) +
               " sizes but the node has " + std::to_string(ctx.node.output_names.size()) + " outputs");
    }
    int64_t sum = 0;
    for (int64_t s : *sizes) {
      if (s < 0) ctx.fail("split " + shape_to_string(*sizes) + " has a negative size");
      sum += s;
    }
    if (sum != dim) {
      ctx.fail("split " + shape_to_string(*sizes) + " sums to " + std::to_string(sum) +
               ", but the axis has " + std::to_string(dim) + " elements");
    }
    return *sizes;
  }
  if (has_num_outputs) {
    const int64_t n = ctx.node.attributes.get_int("num_outputs", 0);
    if (n < 1) ctx.fail("num_outputs is " + std::to_string(n) + "; expected at least 1");
    if (!ctx.node.output_names.empty() && static_cast<size_t>(n) != ctx.node.output_names.size()) {
      ctx.fail("num_outputs is " + std::to_string(n) + " but the node has " +
               std::to_string(ctx.node.output_names.size()) + " outputs");
    }
    // Chunks of ceil(dim / n); the last one takes what is left.
    const int64_t chunk = (dim + n - 1) / n;
    const int64_t last = dim - chunk * (n - 1);
    if (last < 0) {
      ctx.fail("an axis of " + std::to_string(dim) + " elements cannot be split into " + std::to_string(n) +
               " chunks of " + std::to_string(chunk) + " with a smaller last one");
    }
    std::vector<int64_t> out(static_cast<size_t>(n), chunk);
    out.back() = last;
    return out;
  }
  const int64_t n = static_cast<int64_t>(declared_output_count(ctx));
  if (dim % n != 0) {
    ctx.fail("an axis of " + std::to_string(dim) + " elements does not split evenly into " +
             std::to_string(n) + " outputs (give split sizes" +
             (ctx.node.opset >= 18 ? std::string(" or num_outputs") : "") + ")");
  }
  return std::vector<int64_t>(static_cast<size_t>(n), dim / n);
}

CopyLayout split_layout(const PlanContext& ctx) {
  const TensorDesc& in = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  if (rank == 0) ctx.fail("cannot split a scalar");
  const int64_t axis = normalize_axis(ctx, ctx.node.attributes.get_int("axis", 0), rank, "axis");
  const std::vector<int64_t> sizes = split_sizes(ctx, in.shape[static_cast<size_t>(axis)]);
  const std::vector<int64_t> in_strides = row_major_strides(in.shape);
  CopyLayout layout;
  int64_t offset = 0;
  for (size_t j = 0; j < sizes.size(); ++j) {
    Shape s = in.shape;
    s[static_cast<size_t>(axis)] = sizes[j];
    layout.outputs.push_back({in.dtype, s});
    StridedCopy c = gather_view(s, in_strides, offset * in_strides[static_cast<size_t>(axis)]);
    c.dst = TensorRef::output(static_cast<uint32_t>(j));
    layout.copies.push_back(std::move(c));
    offset += sizes[j];
  }
  return layout;
}

CopyLayout slice_layout(const PlanContext& ctx) {
  const TensorDesc& in = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.node.opset < 10) {
    if (!ctx.node.attributes.has("starts") || !ctx.node.attributes.has("ends")) {
      ctx.fail("the starts and ends attributes are required");
    }
    starts = ctx.node.attributes.get_ints("starts", {});
    ends = ctx.node.attributes.get_ints("ends", {});
    if (ctx.node.attributes.has("axes")) axes = ctx.node.attributes.get_ints("axes", {});
  } else {
    starts = known_ints(ctx, 1, "starts");
    ends = known_ints(ctx, 2, "ends");
    if (ctx.has_input(3)) axes = known_ints(ctx, 3, "axes");
    if (ctx.has_input(4)) steps = known_ints(ctx, 4, "steps");
  }
  if (axes.empty() && !(ctx.node.opset >= 10 && ctx.has_input(3))) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), int64_t{0});
  }
  if (steps.empty() && !(ctx.node.opset >= 10 && ctx.has_input(4))) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    ctx.fail("starts " + shape_to_string(starts) + ", ends " + shape_to_string(ends) + ", axes " +
             shape_to_string(axes) + " and steps " + shape_to_string(steps) + " must have the same length");
  }
  Shape out_shape = in.shape;
  const std::vector<int64_t> in_strides = row_major_strides(in.shape);
  std::vector<int64_t> src_strides = in_strides;
  int64_t offset = 0;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = normalize_axis(ctx, axes[i], rank, "axes " + shape_to_string(axes) + ": axis");
    const size_t a = static_cast<size_t>(axis);
    if (seen[a]) ctx.fail("axes " + shape_to_string(axes) + " name axis " + std::to_string(axis) + " twice");
    seen[a] = true;
    const int64_t dim = in.shape[a];
    const int64_t step = steps[i];
    if (step == 0) ctx.fail("steps " + shape_to_string(steps) + " has a 0");
    // ONNX's clamping: negative indices count from the end, then starts and ends are clamped into the axis
    // ([0, dim] going forwards, [-1, dim - 1] going backwards).
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t length = 0;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      length = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, -1, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      length = start > end ? (start - end - step - 1) / -step : 0;
    }
    out_shape[a] = length;
    if (length > 0) offset += start * in_strides[a];
    src_strides[a] = in_strides[a] * step;
  }
  StridedCopy c = gather_view(out_shape, src_strides, offset);
  return {{{in.dtype, out_shape}}, {c}};
}

CopyLayout expand_layout(const PlanContext& ctx) {
  const TensorDesc& in = ctx.input(0);
  const std::vector<int64_t> target = known_ints(ctx, 1, "the target shape");
  if (ctx.input(1).shape.size() != 1) {
    ctx.fail("input 1 (the target shape) must be 1-D, found " + shape_to_string(ctx.input(1).shape));
  }
  const size_t rank = std::max(in.shape.size(), target.size());
  const std::vector<int64_t> in_strides = row_major_strides(in.shape);
  Shape out_shape(rank);
  std::vector<int64_t> src_strides(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    // Aligned at the last dim, numpy style.
    const bool has_in = d + in.shape.size() >= rank, has_target = d + target.size() >= rank;
    const size_t di = d + in.shape.size() - rank, dt = d + target.size() - rank;
    const int64_t a = has_in ? in.shape[di] : 1, b = has_target ? target[dt] : 1;
    if (b < 0) ctx.fail("the target shape " + shape_to_string(target) + " has a negative dim");
    if (a != b && a != 1 && b != 1) {
      ctx.fail("input " + shape_to_string(in.shape) + " does not broadcast to the target shape " +
               shape_to_string(target));
    }
    out_shape[d] = a == 1 ? b : a;
    if (has_in && a != 1) src_strides[d] = in_strides[di];
  }
  return {{{in.dtype, out_shape}}, {gather_view(out_shape, src_strides)}};
}

CopyLayout tile_layout(const PlanContext& ctx) {
  const TensorDesc& in = ctx.input(0);
  const std::vector<int64_t> repeats = known_ints(ctx, 1, "repeats");
  if (repeats.size() != in.shape.size()) {
    ctx.fail("repeats " + shape_to_string(repeats) + " has " + std::to_string(repeats.size()) +
             " values; the input " + shape_to_string(in.shape) + " has rank " +
             std::to_string(in.shape.size()));
  }
  Shape out_shape;
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 0) ctx.fail("repeats " + shape_to_string(repeats) + " has a negative value");
    out_shape.push_back(in.shape[d] * repeats[d]);
  }
  // Output dim d of size r*n is iterated as (repeat k, element c): written at k*n + c, read at c.
  const std::vector<int64_t> in_strides = row_major_strides(in.shape);
  const std::vector<int64_t> out_strides = row_major_strides(out_shape);
  StridedCopy c;
  for (size_t d = 0; d < repeats.size(); ++d) {
    c.shape.insert(c.shape.end(), {repeats[d], in.shape[d]});
    c.src_strides.insert(c.src_strides.end(), {0, in_strides[d]});
    c.dst_strides.insert(c.dst_strides.end(), {in.shape[d] * out_strides[d], out_strides[d]});
  }
  return {{{in.dtype, out_shape}}, {c}};
}

int64_t blocksize(const PlanContext& ctx) {
  if (!ctx.node.attributes.has("blocksize")) ctx.fail("the blocksize attribute is required");
  const int64_t b = ctx.node.attributes.get_int("blocksize", 0);
  if (b < 1) ctx.fail("blocksize is " + std::to_string(b) + "; expected at least 1");
  return b;
}

const Shape& nchw_input(const PlanContext& ctx) {
  const Shape& s = ctx.input(0).shape;
  if (s.size() != 4) ctx.fail("input 0 must be 4-D [N, C, H, W], found " + shape_to_string(s));
  return s;
}

CopyLayout depth_to_space_layout(const PlanContext& ctx) {
  const Shape& s = nchw_input(ctx);
  const int64_t b = blocksize(ctx);
  const std::string mode = ctx.node.opset >= 11 ? ctx.node.attributes.get_string("mode", "DCR") : "DCR";
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  if (c % (b * b) != 0) {
    ctx.fail("channels (" + std::to_string(c) +
             ") are not divisible by blocksize^2 = " + std::to_string(b * b));
  }
  const int64_t co = c / (b * b);
  StridedCopy copy;
  if (mode == "DCR") {
    copy = permuted_view({n, b, b, co, h, w}, {0, 3, 4, 1, 5, 2});
  } else if (mode == "CRD") {
    copy = permuted_view({n, co, b, b, h, w}, {0, 1, 4, 2, 5, 3});
  } else {
    ctx.fail("mode is '" + mode + "'; expected DCR or CRD");
  }
  return {{{ctx.input(0).dtype, {n, co, h * b, w * b}}}, {copy}};
}

CopyLayout space_to_depth_layout(const PlanContext& ctx) {
  const Shape& s = nchw_input(ctx);
  const int64_t b = blocksize(ctx);
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  if (h % b != 0 || w % b != 0) {
    ctx.fail("height and width " + std::to_string(h) + "x" + std::to_string(w) +
             " are not divisible by blocksize " + std::to_string(b));
  }
  StridedCopy copy = permuted_view({n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4});
  return {{{ctx.input(0).dtype, {n, c * b * b, h / b, w / b}}}, {copy}};
}

}  // namespace

void register_copy_ops(OpRegistry& registry) {
  registry.add("", "Transpose", 1, kLatestOpset, copy_layout_handler(transpose_layout));
  registry.add("", "Concat", 4, kLatestOpset, concat_handler());
  registry.add("wgi", "ConcatPairs", 1, kLatestOpset, {plan_concat_pairs, nullptr});
  registry.add("", "Split", 2, kLatestOpset, copy_layout_handler(split_layout));
  registry.add("", "Slice", 1, kLatestOpset, copy_layout_handler(slice_layout));
  registry.add("", "Expand", 8, kLatestOpset, copy_layout_handler(expand_layout));
  registry.add("", "Tile", 6, kLatestOpset, copy_layout_handler(tile_layout));
  registry.add("", "DepthToSpace", 1, kLatestOpset, copy_layout_handler(depth_to_space_layout));
  registry.add("", "SpaceToDepth", 1, kLatestOpset, copy_layout_handler(space_to_depth_layout));
}

}  // namespace wgi::ops::data_movement
