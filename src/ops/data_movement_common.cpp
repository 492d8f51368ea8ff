#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/data_movement_internal.h"
#include "ops/kernel_interface.h"

namespace wgi::ops::data_movement {

namespace {

constexpr uint32_t kWorkgroupSize = 256;
// Peeling a copy of rank > kMaxKernelRank into launches stops here: such a copy is better reshaped by the
// model.
constexpr size_t kMaxLaunchesPerOp = 4096;

constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();

// Size-1 dims dropped and neighbours that step through memory as one dim merged, on both sides: fewer dims
// mean fewer divisions per element in the kernel, and a transpose reduced to 2-D can use the tiled kernel.
StridedCopy coalesce(const StridedCopy& c) {
  StridedCopy out = c;
  out.shape.clear();
  out.src_strides.clear();
  out.dst_strides.clear();
  for (size_t d = 0; d < c.shape.size(); ++d) {
    if (c.shape[d] == 1) continue;
    if (!out.shape.empty() && out.src_strides.back() == c.src_strides[d] * c.shape[d] &&
        out.dst_strides.back() == c.dst_strides[d] * c.shape[d]) {
      out.shape.back() *= c.shape[d];
      out.src_strides.back() = c.src_strides[d];
      out.dst_strides.back() = c.dst_strides[d];
      continue;
    }
    out.shape.push_back(c.shape[d]);
    out.src_strides.push_back(c.src_strides[d]);
    out.dst_strides.push_back(c.dst_strides[d]);
  }
  return out;
}

// The lowest and highest element offsets a copy touches on one side.
std::pair<int64_t, int64_t> offset_range(const Shape& shape, const std::vector<int64_t>& strides,
                                         int64_t offset) {
  int64_t lo = offset, hi = offset;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t reach = (shape[d] - 1) * strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  return {lo, hi};
}

int64_t ref_element_count(const PlanContext& ctx, const OpPlan& plan, TensorRef ref) {
  switch (ref.kind) {
    case TensorRef::Kind::Input:
      return element_count(ctx.input(ref.index).shape);
    case TensorRef::Kind::Output:
      return element_count(plan.outputs.at(ref.index).shape);
    case TensorRef::Kind::Constant:
      return plan.constants.at(ref.index).element_count();
    case TensorRef::Kind::Scratch:  // device elements are 4 bytes (runtime/device_tensor.h)
      return static_cast<int64_t>(plan.scratch_bytes.at(ref.index) / 4);
    default:
      return 0;
  }
}

// A layout bug must not become an out-of-bounds access (on the host: memory corruption).
void check_bounds(const StridedCopy& c, int64_t src_count, int64_t dst_count, const std::string& where) {
  auto [slo, shi] = offset_range(c.shape, c.src_strides, c.src_offset);
  auto [dlo, dhi] = offset_range(c.shape, c.dst_strides, c.dst_offset);
  if (slo < 0 || shi >= src_count || dlo < 0 || dhi >= dst_count) {
    throw Error(where + ": internal error: a copy of " + shape_to_string(c.shape) +
                " reaches source elements [" + std::to_string(slo) + ", " + std::to_string(shi) + "] of " +
                std::to_string(src_count) + " and destination elements [" + std::to_string(dlo) + ", " +
                std::to_string(dhi) + "] of " + std::to_string(dst_count));
  }
}

// The batched 2-D transpose a coalesced copy may be: dst = src[b, m, n] transposed to [b, n, m], both
// contiguous. Returns {batch, m, n} when it is.
std::optional<std::array<int64_t, 3>> as_batched_transpose(const StridedCopy& c) {
  const size_t r = c.shape.size();
  if (r < 2 || r > 3 || c.src_offset != 0 || c.dst_offset != 0) return std::nullopt;
  if (c.dst_strides != row_major_strides(c.shape)) return std::nullopt;
  const int64_t n = c.shape[r - 2], m = c.shape[r - 1];
  if (c.src_strides[r - 2] != 1 || c.src_strides[r - 1] != n) return std::nullopt;
  if (r == 3 && c.src_strides[0] != m * n) return std::nullopt;
  return std::array<int64_t, 3>{r == 3 ? c.shape[0] : 1, m, n};
}

bool tile_kernel_fits(const gpu::Limits& limits) {
  return limits.max_compute_invocations_per_workgroup >= 256 && limits.max_compute_workgroup_size_x >= 32 &&
         limits.max_compute_workgroup_size_y >= 8 && limits.max_compute_workgroup_storage_size >= 32 * 33 * 4;
}

KernelLaunch transpose_tile_launch(const PlanContext& ctx, const StridedCopy& c, std::array<int64_t, 3> bmn) {
  const auto [batch, m, n] = bmn;
  const uint64_t tiles_m = static_cast<uint64_t>((m + 31) / 32),
                 tiles_n = static_cast<uint64_t>((n + 31) / 32);
  const uint64_t tiles = static_cast<uint64_t>(batch) * tiles_m * tiles_n;
  KernelLaunch launch;
  launch.program.label = "transpose_tile";
  KernelInterface iface;
  iface.read("source", "u32", c.src)
      .read_write("destination", "u32", c.dst)
      .uniforms({{"rows", UniformType::U32},     // m
                 {"cols", UniformType::U32},     // n
                 {"tiles_m", UniformType::U32},  // ceil(m / 32)
                 {"tiles_n", UniformType::U32},  // ceil(n / 32)
                 // batch * tiles_m * tiles_n; folded grids round up past it
                 {"tile_count", UniformType::U32}});
  launch.program.wgsl = iface.load_wgsl("data_movement/transpose_tile.wgsl");
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("rows", static_cast<uint32_t>(m))
                       .u32("cols", static_cast<uint32_t>(n))
                       .u32("tiles_m", static_cast<uint32_t>(tiles_m))
                       .u32("tiles_n", static_cast<uint32_t>(tiles_n))
                       .u32("tile_count", static_cast<uint32_t>(tiles))
                       .bytes();
  launch.groups = gpu::fold_workgroups(tiles, ctx.caps.limits.max_compute_workgroups_per_dimension);
  return launch;
}

// The copy in units of 4 elements, when its innermost dim is contiguous on both sides and every stride,
// offset and that dim's size are multiples of 4: a quarter of the index arithmetic, 16-byte accesses.
std::optional<StridedCopy> as_vec4(const StridedCopy& c) {
  if (c.shape.empty() || c.shape.back() % 4 != 0 || c.src_strides.back() != 1 || c.dst_strides.back() != 1 ||
      c.src_offset % 4 != 0 || c.dst_offset % 4 != 0) {
    return std::nullopt;
  }
  StridedCopy v = c;
  for (size_t d = 0; d + 1 < c.shape.size(); ++d) {
    if (c.src_strides[d] % 4 != 0 || c.dst_strides[d] % 4 != 0) return std::nullopt;
    v.src_strides[d] /= 4;
    v.dst_strides[d] /= 4;
  }
  v.shape.back() /= 4;
  v.src_offset /= 4;
  v.dst_offset /= 4;
  return v;
}

KernelLaunch strided_copy_launch(const PlanContext& ctx, const StridedCopy& scalar) {
  const std::optional<StridedCopy> vec4 = as_vec4(scalar);
  const StridedCopy& c = vec4 ? *vec4 : scalar;
  const uint64_t count = static_cast<uint64_t>(element_count(c.shape));
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(count, kWorkgroupSize, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = vec4 ? "copy_strided_vec4" : "copy_strided";
  KernelInterface iface;
  iface.read("source", "T", c.src)
      .read_write("destination", "T", c.dst)
      .uniforms({{"count", UniformType::U32},  // T elements in the iteration space
                 {"rank", UniformType::U32},
                 {"src_offset", UniformType::I32},
                 {"dst_offset", UniformType::I32},
                 {"shape", UniformType::Vec4U, 2},
                 {"src_strides", UniformType::Vec4I, 2},
                 {"dst_strides", UniformType::Vec4I, 2}});
  launch.program.wgsl =
      iface.load_wgsl("data_movement/copy_strided.wgsl", {{"TYPE", vec4 ? "vec4<u32>" : "u32"}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform =
      iface.values()
          .u32("count", static_cast<uint32_t>(count))
          .u32("rank", static_cast<uint32_t>(c.shape.size()))
          .i32("src_offset", static_cast<int32_t>(c.src_offset))
          .i32("dst_offset", static_cast<int32_t>(c.dst_offset))
          .vec4u_array("shape", std::array{u32x4(c.shape, 0), u32x4(c.shape, 4)})
          .vec4i_array("src_strides", std::array{i32x4(c.src_strides, 0), i32x4(c.src_strides, 4)})
          .vec4i_array("dst_strides", std::array{i32x4(c.dst_strides, 0), i32x4(c.dst_strides, 4)})
          .bytes();
  launch.groups = grid.groups;
  return launch;
}

void add_coalesced_copy(const PlanContext& ctx, OpPlan& plan, const StridedCopy& c) {
  if (c.shape.size() > kMaxKernelRank) {
    // Peel the outermost dim into separate launches.
    StridedCopy inner = c;
    inner.shape.erase(inner.shape.begin());
    inner.src_strides.erase(inner.src_strides.begin());
    inner.dst_strides.erase(inner.dst_strides.begin());
    for (int64_t k = 0; k < c.shape[0]; ++k) {
      StridedCopy part = inner;
      part.src_offset = c.src_offset + k * c.src_strides[0];
      part.dst_offset = c.dst_offset + k * c.dst_strides[0];
      add_coalesced_copy(ctx, plan, part);
      if (plan.launches.size() > kMaxLaunchesPerOp) {
        ctx.fail("a copy over " + shape_to_string(c.shape) + " needs more than " +
                 std::to_string(kMaxLaunchesPerOp) + " kernel launches (wgi's kernels take " +
                 std::to_string(kMaxKernelRank) + " dimensions that do not merge)");
      }
    }
    return;
  }
  if (auto bmn = as_batched_transpose(c);
      bmn && (*bmn)[1] >= 8 && (*bmn)[2] >= 8 && tile_kernel_fits(ctx.caps.limits)) {
    plan.launches.push_back(transpose_tile_launch(ctx, c, *bmn));
    return;
  }
  plan.launches.push_back(strided_copy_launch(ctx, c));
}

}  // namespace

std::array<uint32_t, 4> u32x4(const std::vector<int64_t>& v, size_t first) {
  std::array<uint32_t, 4> out{};
  for (size_t i = 0; i < 4 && first + i < v.size(); ++i) out[i] = static_cast<uint32_t>(v[first + i]);
  return out;
}

std::array<int32_t, 4> i32x4(const std::vector<int64_t>& v, size_t first) {
  std::array<int32_t, 4> out{};
  for (size_t i = 0; i < 4 && first + i < v.size(); ++i) out[i] = static_cast<int32_t>(v[first + i]);
  return out;
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

StridedCopy gather_view(const Shape& out_shape, std::vector<int64_t> src_strides, int64_t src_offset) {
  StridedCopy c;
  c.shape = out_shape;
  c.src_strides = std::move(src_strides);
  c.dst_strides = row_major_strides(out_shape);
  c.src_offset = src_offset;
  return c;
}

int64_t normalize_axis(const PlanContext& ctx, int64_t axis, int64_t rank, const std::string& what,
                       bool inclusive) {
  const int64_t hi = inclusive ? rank : rank - 1;
  const int64_t lo = -rank;
  if (axis < lo || axis > hi) {
    ctx.fail(what + " is " + std::to_string(axis) + "; expected a value in [" + std::to_string(lo) + ", " +
             std::to_string(hi) + "] for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> tensor_ints(const PlanContext& ctx, const Tensor& t, const std::string& what) {
  if (t.dtype() == DType::Int64) {
    auto v = t.data<int64_t>();
    return {v.begin(), v.end()};
  }
  if (t.dtype() == DType::Int32) {
    auto v = t.data<int32_t>();
    return {v.begin(), v.end()};
  }
  ctx.fail(what + " has type " + std::string(dtype_name(t.dtype())) + "; expected int64 or int32");
}

std::vector<int64_t> known_ints(const PlanContext& ctx, size_t i, const std::string& what) {
  ctx.input(i);
  const Tensor* t = ctx.constant(i);
  if (!t) {
    ctx.fail(ctx.input_name(i) + " (" + what +
             ") is computed at run time; wgi needs it known when the model is planned (an initializer, a "
             "Constant, or shape arithmetic that folds on the host)");
  }
  return tensor_ints(ctx, *t, ctx.input_name(i) + " (" + what + ")");
}

void require_device_elements(const PlanContext& ctx, size_t input) {
  const DType t = ctx.input(input).dtype;
  if (t == DType::Float16) {
    ctx.fail(ctx.input_name(input) + " has type float16, which wgi's " + ctx.node.op_type +
             " kernels do not move yet (float16 tensors are not stored on the device)");
  }
}

uint32_t device_bits(DType dtype, double value) {
  switch (dtype) {
    case DType::Float32:
      return std::bit_cast<uint32_t>(static_cast<float>(value));
    case DType::Int64:
    case DType::Int32:
    case DType::Int8:
      return static_cast<uint32_t>(static_cast<int32_t>(value));
    case DType::UInt8:
      return static_cast<uint32_t>(value);
    case DType::Bool:
      return value != 0 ? 1u : 0u;
    case DType::Float16:
      break;
  }
  throw Error("float16 values have no 4-byte device form");
}

uint32_t device_bits(const PlanContext& ctx, const Tensor& scalar, const std::string& what) {
  if (scalar.element_count() != 1) {
    ctx.fail(what + " has " + std::to_string(scalar.element_count()) + " elements " +
             shape_to_string(scalar.shape()) + "; expected one");
  }
  switch (scalar.dtype()) {
    case DType::Float32:
      return std::bit_cast<uint32_t>(scalar.data<float>()[0]);
    case DType::Int64: {
      const int64_t v = scalar.data<int64_t>()[0];
      if (v < std::numeric_limits<int32_t>::min() || v > kI32Max) {
        ctx.fail(what + " is " + std::to_string(v) + ", which does not fit the GPU's 32-bit integers");
      }
      return static_cast<uint32_t>(static_cast<int32_t>(v));
    }
    case DType::Int32:
      return static_cast<uint32_t>(scalar.data<int32_t>()[0]);
    case DType::Int8:
      return static_cast<uint32_t>(static_cast<int32_t>(scalar.data<int8_t>()[0]));
    case DType::UInt8:
      return scalar.data<uint8_t>()[0];
    case DType::Bool:
      return std::to_integer<uint8_t>(scalar.bytes()[0]) != 0 ? 1u : 0u;
    case DType::Float16:
      break;
  }
  ctx.fail(what + " has type float16, which wgi's " + ctx.node.op_type + " kernels do not support yet");
}

Tensor scalar_tensor(DType dtype, double value) {
  Tensor t(dtype, {});
  switch (dtype) {
    case DType::Float32:
      t.data<float>()[0] = static_cast<float>(value);
      break;
    case DType::Int64:
      t.data<int64_t>()[0] = static_cast<int64_t>(value);
      break;
    case DType::Int32:
      t.data<int32_t>()[0] = static_cast<int32_t>(value);
      break;
    case DType::Int8:
      t.data<int8_t>()[0] = static_cast<int8_t>(value);
      break;
    case DType::UInt8:
      t.data<uint8_t>()[0] = static_cast<uint8_t>(value);
      break;
    case DType::Bool:
      t.bytes()[0] = std::byte{value != 0};
      break;
    case DType::Float16:
      throw Error("scalar_tensor: float16 is not supported");
  }
  return t;
}

void add_copy_launches(const PlanContext& ctx, OpPlan& plan, StridedCopy copy) {
  if (copy.shape.size() != copy.src_strides.size() || copy.shape.size() != copy.dst_strides.size()) {
    throw Error(ctx.node.describe() + ": internal error: a copy's shape and strides differ in rank");
  }
  const int64_t count = element_count(copy.shape);
  if (count == 0) return;
  const int64_t src_count = ref_element_count(ctx, plan, copy.src);
  const int64_t dst_count = ref_element_count(ctx, plan, copy.dst);
  check_bounds(copy, src_count, dst_count, ctx.node.describe());
  if (src_count > kI32Max || dst_count > kI32Max) {
    ctx.fail("a tensor of " + std::to_string(std::max(src_count, dst_count)) +
             " elements is beyond the 32-bit indexing of wgi's kernels");
  }
  add_coalesced_copy(ctx, plan, coalesce(copy));
}

void add_fill_launch(const PlanContext& ctx, OpPlan& plan, TensorRef dst, int64_t count, uint32_t bits) {
  if (count == 0) return;
  if (count > kI32Max)
    ctx.fail("an output of " + std::to_string(count) + " elements is beyond 32-bit indexing");
  gpu::DispatchGrid grid =
      gpu::compute_dispatch_grid(static_cast<uint64_t>(count), kWorkgroupSize, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = "fill";
  KernelInterface iface;
  iface.read_write("destination", "u32", dst)
      .uniforms({{"count", UniformType::U32}, {"value", UniformType::U32}});
  launch.program.wgsl = iface.load_wgsl("data_movement/fill.wgsl");
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values().u32("count", static_cast<uint32_t>(count)).u32("value", bits).bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
}

void add_constant_output(const PlanContext& ctx, OpPlan& plan, const Tensor& value, uint32_t output) {
  plan.constants.push_back(value);
  const int64_t n = value.element_count();
  StridedCopy c = gather_view({n}, {1});
  c.src = TensorRef::constant(static_cast<uint32_t>(plan.constants.size() - 1));
  c.dst = TensorRef::output(output);
  add_copy_launches(ctx, plan, c);
}

namespace {

// `count` elements of type Element from element `s` of `from` (every `src_step`) to element `d` of `to`
// (every `dst_step`).
template <typename Element>
void copy_strided_row(const std::byte* from, int64_t s, int64_t src_step, std::byte* to, int64_t d,
                      int64_t dst_step, int64_t count) {
  const Element* in = reinterpret_cast<const Element*>(from) + s;
  Element* out = reinterpret_cast<Element*>(to) + d;
  for (int64_t j = 0; j < count; ++j) out[j * dst_step] = in[j * src_step];
}

}  // namespace

void copy_on_host(const StridedCopy& c, const Tensor& src, Tensor& dst) {
  const int64_t count = element_count(c.shape);
  if (count == 0) return;
  if (src.dtype() != dst.dtype()) throw Error("internal error: host copy between different dtypes");
  check_bounds(c, src.element_count(), dst.element_count(), "host copy");
  const size_t es = dtype_size(src.dtype());
  const std::byte* from = src.bytes().data();
  std::byte* to = dst.bytes().data();
  // Row by row along the innermost dim: one memcpy when both sides are contiguous there, else a loop with
  // the element size known to the compiler (host folding transposes weights of hundreds of MB at load).
  const size_t rank = c.shape.size();
  const int64_t row = rank ? c.shape[rank - 1] : 1;
  const int64_t src_step = rank ? c.src_strides[rank - 1] : 1;
  const int64_t dst_step = rank ? c.dst_strides[rank - 1] : 1;
  std::vector<int64_t> index(rank, 0);
  int64_t s = c.src_offset, d = c.dst_offset;
  for (int64_t i = 0; i < count; i += row) {
    if (src_step == 1 && dst_step == 1) {
      std::memcpy(to + static_cast<size_t>(d) * es, from + static_cast<size_t>(s) * es,
                  static_cast<size_t>(row) * es);
    } else if (es == 4) {
      copy_strided_row<uint32_t>(from, s, src_step, to, d, dst_step, row);
    } else if (es == 8) {
      copy_strided_row<uint64_t>(from, s, src_step, to, d, dst_step, row);
    } else {
      for (int64_t j = 0; j < row; ++j) {
        std::memcpy(to + static_cast<size_t>(d + j * dst_step) * es,
                    from + static_cast<size_t>(s + j * src_step) * es, es);
      }
    }
    // The next row: advance the outer dims like an odometer.
    for (size_t k = rank > 0 ? rank - 1 : 0; k-- > 0;) {
      s += c.src_strides[k];
      d += c.dst_strides[k];
      if (++index[k] < c.shape[k]) break;
      s -= c.src_strides[k] * c.shape[k];
      d -= c.dst_strides[k] * c.shape[k];
      index[k] = 0;
    }
  }
}

Tensor with_shape(const Tensor& t, Shape shape) {
  return Tensor(t.dtype(), std::move(shape), t.bytes());
}

namespace {

// The layout's one copy that moves elements, when it moves none to another place: the output is that input's
// bytes in the same order (a Transpose that only moves dims of size 1, as a one-token step's [batch, 1,
// heads, size] -> [batch, heads, 1, size]; a Slice or Split that takes a whole input; a Concat of it with
// empty inputs). Null otherwise.
const StridedCopy* copies_in_place(const PlanContext& ctx, const CopyLayout& l) {
  if (l.outputs.size() != 1) return nullptr;
  const StridedCopy* only = nullptr;
  for (const StridedCopy& c : l.copies) {
    if (element_count(c.shape) == 0) continue;
    if (only) return nullptr;
    only = &c;
  }
  if (!only) return nullptr;
  const StridedCopy& c = *only;
  if (c.src.kind != TensorRef::Kind::Input || c.dst.kind != TensorRef::Kind::Output || c.dst.index != 0 ||
      c.src_offset != 0 || c.dst_offset != 0) {
    return nullptr;
  }
  const TensorDesc& in = ctx.input(c.src.index);
  if (in.dtype != l.outputs[0].dtype || element_count(in.shape) != element_count(l.outputs[0].shape) ||
      element_count(c.shape) != element_count(l.outputs[0].shape)) {
    return nullptr;
  }
  for (size_t d = 0; d < c.shape.size(); ++d) {
    if (c.shape[d] > 1 && c.src_strides[d] != c.dst_strides[d]) return nullptr;
  }
  return only;
}

}  // namespace

OpHandler copy_layout_handler(std::function<CopyLayout(const PlanContext&)> layout) {
  OpHandler handler;
  handler.plan = [layout](const PlanContext& ctx) {
    CopyLayout l = layout(ctx);
    OpPlan plan;
    plan.outputs = l.outputs;
    if (const StridedCopy* in_place = copies_in_place(ctx, l)) {
      plan.alias_output_to_input = static_cast<int>(in_place->src.index);
      return plan;
    }
    for (const StridedCopy& c : l.copies) {
      if (c.src.kind == TensorRef::Kind::Input) require_device_elements(ctx, c.src.index);
    }
    for (StridedCopy& c : l.copies) add_copy_launches(ctx, plan, std::move(c));
    return plan;
  };
  handler.evaluate_on_host = [layout](const PlanContext& ctx,
                                      std::span<const Tensor* const> host) -> std::vector<Tensor> {
    // Cheap refusals first: a data input computed at run time means the op runs on the GPU.
    if (host.empty() || !host[0]) return {};
    CopyLayout l = layout(ctx);
    int64_t total = 0, inputs_total = 0;
    for (const TensorDesc& d : l.outputs) total += element_count(d.shape);
    for (const Tensor* t : host) inputs_total += t ? t->element_count() : 0;
    // Past the limit only layouts that make nothing larger fold (Transpose, Slice, Split, Concat of
    // constants): a transposed constant weight (a tied LM head, 39M elements) is then transposed once at
    // load instead of on every run. Expand / Tile of constants stay on the GPU past the limit.
    if (total > kMaxHostFoldElements && total > inputs_total) return {};
    for (const StridedCopy& c : l.copies) {
      if (c.src.kind != TensorRef::Kind::Input || c.src.index >= host.size() || !host[c.src.index]) return {};
    }
    std::vector<Tensor> out;
    for (const TensorDesc& d : l.outputs) out.emplace_back(d.dtype, d.shape);
    for (const StridedCopy& c : l.copies) copy_on_host(c, *host[c.src.index], out.at(c.dst.index));
    return out;
  };
  return handler;
}

size_t declared_output_count(const PlanContext& ctx) {
  if (ctx.node.output_names.empty()) {
    ctx.fail("the node lists no outputs, so the number of " + ctx.node.op_type + " outputs is unknown");
  }
  return ctx.node.output_names.size();
}

bool output_requested(const PlanContext& ctx, size_t i) {
  return i < ctx.node.output_names.size() && !ctx.node.output_names[i].empty();
}

}  // namespace wgi::ops::data_movement
