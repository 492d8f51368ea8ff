// The data-movement family, part 3: ops whose source positions are not a plain strided view. Gather and
// GatherElements read positions from an index tensor (gather.wgsl, gather_elements.wgsl); Pad maps positions
// outside the input through its mode (pad.wgsl). Each has a host version for constant folding.
#include <algorithm>
#include <cstring>
#include <limits>

#include "ops/data_movement_internal.h"
#include "ops/kernel_interface.h"

namespace wgi::ops::data_movement {

namespace {

constexpr uint32_t kWorkgroupSize = 256;

void require_index_type(const PlanContext& ctx, size_t i) {
  const DType t = ctx.input(i).dtype;
  if (t != DType::Int64 && t != DType::Int32) {
    ctx.fail(ctx.input_name(i) + " (indices) has type " + std::string(dtype_name(t)) +
             "; expected int64 or int32");
  }
}

// Known indices are checked here; on the GPU an out-of-range index is recorded in the run status
// (runtime/run_status.h), which the run reports as an error.
void check_known_indices(const PlanContext& ctx, size_t i, int64_t axis_dim) {
  const Tensor* t = ctx.constant(i);
  if (!t) return;
  const std::vector<int64_t> v = tensor_ints(ctx, *t, ctx.input_name(i) + " (indices)");
  for (size_t k = 0; k < v.size(); ++k) {
    if (v[k] < -axis_dim || v[k] >= axis_dim) {
      ctx.fail(ctx.input_name(i) + " (indices) has " + std::to_string(v[k]) + " at element " +
               std::to_string(k) + ", outside [" + std::to_string(-axis_dim) + ", " +
               std::to_string(axis_dim - 1) + "] for an axis of " + std::to_string(axis_dim));
    }
  }
}

uint32_t u32_of(const PlanContext& ctx, int64_t v, const std::string& what) {
  if (v < 0 || v > std::numeric_limits<int32_t>::max()) {
    ctx.fail(what + " (" + std::to_string(v) + ") is beyond the 32-bit indexing of wgi's kernels");
  }
  return static_cast<uint32_t>(v);
}

// The interface of gather.wgsl and gather_elements.wgsl: data, indices, the output of `element`s, the run
// status, then their own uniforms `params`.
KernelInterface index_interface(const char* element, std::vector<UniformMember> params) {
  KernelInterface iface;
  iface.read("data", element, TensorRef::input(0))
      .read("indices", "i32", TensorRef::input(1))
      .read_write("destination", element, TensorRef::output(0))
      .run_status()
      .uniforms(std::move(params));
  return iface;
}

KernelLaunch index_launch(const PlanContext& ctx, const KernelInterface& iface, const char* name,
                          int64_t count, bool vec4 = false) {
  gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(static_cast<uint64_t>(count), kWorkgroupSize, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = std::string(name) + (vec4 ? "_vec4" : "");
  launch.program.wgsl =
      iface.load_wgsl(std::string("data_movement/") + name + ".wgsl", {{"TYPE", vec4 ? "vec4<u32>" : "u32"}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.groups = grid.groups;
  return launch;
}

// ---- Gather ----

struct GatherGeometry {
  Shape out_shape;
  int64_t outer = 1, axis_dim = 0, inner = 1, index_count = 0;
};

GatherGeometry gather_geometry(const PlanContext& ctx) {
  const TensorDesc& data = ctx.input(0);
  require_index_type(ctx, 1);
  const Shape& indices = ctx.input(1).shape;
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  if (rank == 0) ctx.fail("cannot gather from a scalar (input 0 has rank 0)");
  const size_t axis =
      static_cast<size_t>(normalize_axis(ctx, ctx.node.attributes.get_int("axis", 0), rank, "axis"));
  GatherGeometry g;
  g.out_shape.assign(data.shape.begin(), data.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  g.out_shape.insert(g.out_shape.end(), indices.begin(), indices.end());
  g.out_shape.insert(g.out_shape.end(), data.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1,
                     data.shape.end());
  for (size_t d = 0; d < data.shape.size(); ++d) {
    if (d < axis) g.outer *= data.shape[d];
    if (d > axis) g.inner *= data.shape[d];
  }
  g.axis_dim = data.shape[axis];
  g.index_count = element_count(indices);
  check_known_indices(ctx, 1, g.axis_dim);
  return g;
}

OpHandler gather_handler() {
  OpHandler handler;
  handler.plan = [](const PlanContext& ctx) {
    const GatherGeometry g = gather_geometry(ctx);
    require_device_elements(ctx, 0);
    OpPlan plan;
    plan.outputs.push_back({ctx.input(0).dtype, g.out_shape});
    const int64_t count = element_count(g.out_shape);
    if (count == 0) return plan;
    u32_of(ctx, count, "the output's element count");
    // Rows of a multiple of 4 elements move as vec4s.
    const int64_t lanes = g.inner % 4 == 0 ? 4 : 1;
    const KernelInterface iface = index_interface("T", {{"count", UniformType::U32},  // output T elements
                                                        {"axis_dim", UniformType::U32},
                                                        {"index_count", UniformType::U32},
                                                        {"inner", UniformType::U32},
                                                        {"status_tag", UniformType::U32}});
    KernelLaunch launch = index_launch(ctx, iface, "gather", count / lanes, lanes == 4);
    launch.uniform = iface.values()
                         .u32("count", static_cast<uint32_t>(count / lanes))
                         .u32("axis_dim", u32_of(ctx, g.axis_dim, "the gathered axis"))
                         .u32("index_count", u32_of(ctx, g.index_count, "the index count"))
                         .u32("inner", static_cast<uint32_t>(g.inner / lanes))
                         .u32("status_tag", ctx.status_tag)
                         .bytes();
    u32_of(ctx, element_count(ctx.input(0).shape), "the data's element count");
    plan.launches.push_back(std::move(launch));
    return plan;
  };
  handler.evaluate_on_host = [](const PlanContext& ctx,
                                std::span<const Tensor* const> host) -> std::vector<Tensor> {
    if (host.size() < 2 || !host[0] || !host[1]) return {};
    const GatherGeometry g = gather_geometry(ctx);
    if (element_count(g.out_shape) > kMaxHostFoldElements) return {};
    const Tensor& data = *host[0];
    const std::vector<int64_t> indices = tensor_ints(ctx, *host[1], "indices");
    Tensor out(data.dtype(), g.out_shape);
    const size_t block = static_cast<size_t>(g.inner) * dtype_size(data.dtype());
    std::byte* to = out.bytes().data();
    for (int64_t o = 0; o < g.outer; ++o) {
      for (int64_t j = 0; j < g.index_count; ++j) {
        int64_t index = indices[static_cast<size_t>(j)];
        if (index < 0) index += g.axis_dim;
        std::memcpy(to, data.bytes().data() + static_cast<size_t>(o * g.axis_dim + index) * block, block);
        to += block;
      }
    }
    return {out};
  };
  return handler;
}

// ---- GatherElements ----

struct GatherElementsGeometry {
  Shape shape;  // of indices and output
  size_t axis = 0;
  int64_t axis_dim = 0;
  std::vector<int64_t> data_strides;
};

GatherElementsGeometry gather_elements_geometry(const PlanContext& ctx) {
  const TensorDesc& data = ctx.input(0);
  require_index_type(ctx, 1);
  const Shape& indices = ctx.input(1).shape;
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  if (rank == 0) ctx.fail("cannot gather from a scalar (input 0 has rank 0)");
  if (indices.size() != data.shape.size()) {
    ctx.fail("indices " + shape_to_string(indices) + " must have the rank of data " +
             shape_to_string(data.shape));
  }
  GatherElementsGeometry g;
  g.axis = static_cast<size_t>(normalize_axis(ctx, ctx.node.attributes.get_int("axis", 0), rank, "axis"));
  for (size_t d = 0; d < indices.size(); ++d) {
    if (d != g.axis && indices[d] > data.shape[d]) {
      ctx.fail("indices " + shape_to_string(indices) + " are larger than data " +
               shape_to_string(data.shape) + " along axis " + std::to_string(d));
    }
  }
  g.shape = indices;
  g.axis_dim = data.shape[g.axis];
  g.data_strides = row_major_strides(data.shape);
  check_known_indices(ctx, 1, g.axis_dim);
  return g;
}

OpHandler gather_elements_handler() {
  OpHandler handler;
  handler.plan = [](const PlanContext& ctx) {
    const GatherElementsGeometry g = gather_elements_geometry(ctx);
    require_device_elements(ctx, 0);
    if (g.shape.size() > kMaxKernelRank) {
      ctx.fail("rank " + std::to_string(g.shape.size()) + " is beyond the " + std::to_string(kMaxKernelRank) +
               " dimensions of wgi's GatherElements kernel");
    }
    OpPlan plan;
    plan.outputs.push_back({ctx.input(0).dtype, g.shape});
    const int64_t count = element_count(g.shape);
    if (count == 0) return plan;
    u32_of(ctx, element_count(ctx.input(0).shape), "the data's element count");
    const KernelInterface iface =
        index_interface("u32", {{"count", UniformType::U32},  // output elements
                                {"rank", UniformType::U32},
                                {"axis", UniformType::U32},
                                {"axis_dim", UniformType::U32},
                                {"shape", UniformType::Vec4U, 2},         // of indices and output
                                {"data_strides", UniformType::Vec4U, 2},  // row-major strides of data
                                {"status_tag", UniformType::U32}});
    KernelLaunch launch = index_launch(ctx, iface, "gather_elements", count);
    launch.uniform =
        iface.values()
            .u32("count", u32_of(ctx, count, "the output's element count"))
            .u32("rank", static_cast<uint32_t>(g.shape.size()))
            .u32("axis", static_cast<uint32_t>(g.axis))
            .u32("axis_dim", static_cast<uint32_t>(g.axis_dim))
            .vec4u_array("shape", std::array{u32x4(g.shape, 0), u32x4(g.shape, 4)})
            .vec4u_array("data_strides", std::array{u32x4(g.data_strides, 0), u32x4(g.data_strides, 4)})
            .u32("status_tag", ctx.status_tag)
            .bytes();
    plan.launches.push_back(std::move(launch));
    return plan;
  };
  handler.evaluate_on_host = [](const PlanContext& ctx,
                                std::span<const Tensor* const> host) -> std::vector<Tensor> {
    if (host.size() < 2 || !host[0] || !host[1]) return {};
    const GatherElementsGeometry g = gather_elements_geometry(ctx);
    if (element_count(g.shape) > kMaxHostFoldElements) return {};
    const Tensor& data = *host[0];
    const std::vector<int64_t> indices = tensor_ints(ctx, *host[1], "indices");
    Tensor out(data.dtype(), g.shape);
    const size_t es = dtype_size(data.dtype());
    const std::vector<int64_t> index_strides = row_major_strides(g.shape);
    for (size_t i = 0; i < indices.size(); ++i) {
      int64_t src = 0;
      for (size_t d = 0; d < g.shape.size(); ++d) {
        int64_t c = static_cast<int64_t>(i) / index_strides[d] % g.shape[d];
        if (d == g.axis) c = indices[i] < 0 ? indices[i] + g.axis_dim : indices[i];
        src += c * g.data_strides[d];
      }
      std::memcpy(out.bytes().data() + i * es, data.bytes().data() + static_cast<size_t>(src) * es, es);
    }
    return {out};
  };
  return handler;
}

// ---- Pad ----

enum class PadMode : uint32_t { Constant = 0, Edge = 1, Reflect = 2, Wrap = 3 };

struct PadSpec {
  PadMode mode = PadMode::Constant;
  std::vector<int64_t> begin, end;  // per input dim; negative crops
  Shape out_shape;
  Tensor value;  // one element of the data's type
};

PadSpec pad_spec(const PlanContext& ctx) {
  const TensorDesc& data = ctx.input(0);
  const size_t rank = data.shape.size();
  PadSpec spec;
  const std::string mode = ctx.node.attributes.get_string("mode", "constant");
  if (mode == "constant") {
    spec.mode = PadMode::Constant;
  } else if (mode == "edge") {
    spec.mode = PadMode::Edge;
  } else if (mode == "reflect") {
    spec.mode = PadMode::Reflect;
  } else if (mode == "wrap" && ctx.node.opset >= 19) {
    spec.mode = PadMode::Wrap;
  } else {
    ctx.fail("mode is '" + mode + "'; expected constant, reflect, edge" +
             (ctx.node.opset >= 19 ? std::string(" or wrap") : std::string(" (wrap needs opset 19)")));
  }
  std::vector<int64_t> pads;
  std::vector<int64_t> axes;
  if (ctx.node.opset < 11) {
    if (!ctx.node.attributes.has("pads")) ctx.fail("the pads attribute is required");
    pads = ctx.node.attributes.get_ints("pads", {});
    if (data.dtype == DType::Float16) require_device_elements(ctx, 0);
    spec.value = scalar_tensor(data.dtype, ctx.node.attributes.get_float("value", 0.0f));
  } else {
    pads = known_ints(ctx, 1, "pads");
    if (ctx.has_input(2)) {
      const Tensor* v = ctx.constant(2);
      if (!v) {
        ctx.fail(ctx.input_name(2) +
                 " (constant_value) is computed at run time; wgi needs it known when the "
                 "model is planned");
      }
      if (v->dtype() != data.dtype || v->element_count() != 1) {
        ctx.fail(ctx.input_name(2) + " (constant_value) must be one " + std::string(dtype_name(data.dtype)) +
                 ", found " + std::string(dtype_name(v->dtype())) + " " + shape_to_string(v->shape()));
      }
      spec.value = with_shape(*v, {});
    } else {
      if (data.dtype == DType::Float16) require_device_elements(ctx, 0);
      spec.value = scalar_tensor(data.dtype, 0.0);
    }
    if (ctx.node.opset >= 18 && ctx.has_input(3)) {
      for (int64_t a : known_ints(ctx, 3, "axes")) {
        const int64_t n = normalize_axis(ctx, a, static_cast<int64_t>(rank), "axes: axis");
        if (std::find(axes.begin(), axes.end(), n) != axes.end()) {
          ctx.fail("axes name axis " + std::to_string(n) + " twice");
        }
        axes.push_back(n);
      }
    }
  }
  if (axes.empty() && !(ctx.node.opset >= 18 && ctx.has_input(3))) {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (pads.size() != 2 * axes.size()) {
    ctx.fail("pads " + shape_to_string(pads) + " has " + std::to_string(pads.size()) + " values; expected " +
             std::to_string(2 * axes.size()) + " (begin and end for each of " + std::to_string(axes.size()) +
             " axes)");
  }
  spec.begin.assign(rank, 0);
  spec.end.assign(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    spec.begin[static_cast<size_t>(axes[i])] = pads[i];
    spec.end[static_cast<size_t>(axes[i])] = pads[i + axes.size()];
  }
  for (size_t d = 0; d < rank; ++d) {
    const int64_t out = data.shape[d] + spec.begin[d] + spec.end[d];
    if (out < 0) {
      ctx.fail("pads " + shape_to_string(pads) + " crop axis " + std::to_string(d) + " of " +
               shape_to_string(data.shape) + " below zero");
    }
    if (spec.mode != PadMode::Constant && data.shape[d] == 0 && out > 0) {
      ctx.fail("cannot pad the empty axis " + std::to_string(d) + " of " + shape_to_string(data.shape) +
               " in mode '" + mode + "'");
    }
    spec.out_shape.push_back(out);
  }
  return spec;
}

// The input coordinate an output coordinate reads, or -1 for the constant.
int64_t pad_source(PadMode mode, int64_t c, int64_t n) {
  if (c >= 0 && c < n) return c;
  switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      return std::clamp<int64_t>(c, 0, n - 1);
    case PadMode::Wrap:
      return ((c % n) + n) % n;
    case PadMode::Reflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      const int64_t r = ((c % period) + period) % period;
      return r >= n ? period - r : r;
    }
  }
  return -1;
}

// One axis of the pad kernel's view.
struct PadAxis {
  int64_t out, in, begin, stride;
};

// Unpadded axes merge into the axis before them (in constant mode a padded axis does too, its pads scaled):
// fewer axes mean fewer divisions per element, and any rank fits the kernel's eight.
std::vector<PadAxis> pad_axes(const PadSpec& spec, const Shape& in_shape) {
  const std::vector<int64_t> strides = row_major_strides(in_shape);
  std::vector<PadAxis> axes;
  for (size_t d = 0; d < in_shape.size(); ++d) {
    const PadAxis a{spec.out_shape[d], in_shape[d], spec.begin[d], strides[d]};
    const bool unpadded = a.begin == 0 && a.out == a.in;
    if (unpadded && a.in == 1) continue;
    if (unpadded && !axes.empty()) {
      PadAxis& prev = axes.back();
      const bool prev_unpadded = prev.begin == 0 && prev.out == prev.in;
      if (prev_unpadded || spec.mode == PadMode::Constant) {
        prev = {prev.out * a.in, prev.in * a.in, prev.begin * a.in, a.stride};
        continue;
      }
    }
    axes.push_back(a);
  }
  return axes;
}

OpHandler pad_handler() {
  OpHandler handler;
  handler.plan = [](const PlanContext& ctx) {
    const PadSpec spec = pad_spec(ctx);
    require_device_elements(ctx, 0);
    OpPlan plan;
    plan.outputs.push_back({ctx.input(0).dtype, spec.out_shape});
    // Exports pad windowed attention to a multiple of the window with pads computed from the shape; where the
    // image already fits (DaViT at 768^2: every stage), they are all zero and the output is the input.
    const bool nothing_padded =
        std::all_of(spec.begin.begin(), spec.begin.end(), [](int64_t p) { return p == 0; }) &&
        std::all_of(spec.end.begin(), spec.end.end(), [](int64_t p) { return p == 0; });
    if (nothing_padded) {
      plan.alias_output_to_input = 0;
      return plan;
    }
    const int64_t count = element_count(spec.out_shape);
    if (count == 0) return plan;
    u32_of(ctx, count, "the output's element count");
    u32_of(ctx, element_count(ctx.input(0).shape), "the input's element count");
    const std::vector<PadAxis> axes = pad_axes(spec, ctx.input(0).shape);
    if (axes.size() > kMaxKernelRank) {
      ctx.fail(std::to_string(axes.size()) + " padded axes that do not merge are beyond the " +
               std::to_string(kMaxKernelRank) + " dimensions of wgi's Pad kernel");
    }
    std::vector<int64_t> out, in, begin, stride;
    for (const PadAxis& a : axes) {
      out.push_back(a.out);
      in.push_back(a.in);
      begin.push_back(a.begin);
      stride.push_back(a.stride);
    }
    gpu::DispatchGrid grid =
        gpu::compute_dispatch_grid(static_cast<uint64_t>(count), kWorkgroupSize, ctx.caps.limits);
    KernelLaunch launch;
    launch.program.label = "pad";
    KernelInterface iface;
    iface.read("source", "u32", TensorRef::input(0))
        .read_write("destination", "u32", TensorRef::output(0))
        .uniforms({{"count", UniformType::U32},  // output elements
                   {"rank", UniformType::U32},
                   {"mode", UniformType::U32},
                   {"value", UniformType::U32},  // the constant's device bits
                   {"out_shape", UniformType::Vec4U, 2},
                   {"in_shape", UniformType::Vec4I, 2},
                   {"pad_begin", UniformType::Vec4I, 2},
                   {"in_strides", UniformType::Vec4I, 2}});
    launch.program.wgsl = iface.load_wgsl("data_movement/pad.wgsl");
    launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
    iface.bind(launch);
    launch.uniform = iface.values()
                         .u32("count", static_cast<uint32_t>(count))
                         .u32("rank", static_cast<uint32_t>(axes.size()))
                         .u32("mode", static_cast<uint32_t>(spec.mode))
                         .u32("value", device_bits(ctx, spec.value, "the pad value"))
                         .vec4u_array("out_shape", std::array{u32x4(out, 0), u32x4(out, 4)})
                         .vec4i_array("in_shape", std::array{i32x4(in, 0), i32x4(in, 4)})
                         .vec4i_array("pad_begin", std::array{i32x4(begin, 0), i32x4(begin, 4)})
                         .vec4i_array("in_strides", std::array{i32x4(stride, 0), i32x4(stride, 4)})
                         .bytes();
    launch.groups = grid.groups;
    plan.launches.push_back(std::move(launch));
    return plan;
  };
  handler.evaluate_on_host = [](const PlanContext& ctx,
                                std::span<const Tensor* const> host) -> std::vector<Tensor> {
    if (host.empty() || !host[0]) return {};
    const PadSpec spec = pad_spec(ctx);
    if (element_count(spec.out_shape) > kMaxHostFoldElements) return {};
    const Tensor& data = *host[0];
    Tensor out(data.dtype(), spec.out_shape);
    const size_t es = dtype_size(data.dtype());
    const size_t rank = spec.out_shape.size();
    const std::vector<int64_t> out_strides = row_major_strides(spec.out_shape);
    const std::vector<int64_t> in_strides = row_major_strides(data.shape());
    for (int64_t i = 0; i < out.element_count(); ++i) {
      int64_t src = 0;
      for (size_t d = 0; d < rank && src >= 0; ++d) {
        const int64_t c = i / out_strides[d] % spec.out_shape[d] - spec.begin[d];
        const int64_t s = pad_source(spec.mode, c, data.shape()[d]);
        src = s < 0 ? -1 : src + s * in_strides[d];
      }
      const std::byte* from =
          src < 0 ? spec.value.bytes().data() : data.bytes().data() + static_cast<size_t>(src) * es;
      std::memcpy(out.bytes().data() + static_cast<size_t>(i) * es, from, es);
    }
    return {out};
  };
  return handler;
}

}  // namespace

void register_gather_ops(OpRegistry& registry) {
  registry.add("", "Gather", 1, kLatestOpset, gather_handler());
  registry.add("", "GatherElements", 11, kLatestOpset, gather_elements_handler());
  registry.add("", "Pad", 2, kLatestOpset, pad_handler());
}

}  // namespace wgi::ops::data_movement
