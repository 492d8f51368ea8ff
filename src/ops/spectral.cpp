// Spectral ops of audio front ends: DFT (opset 17: axis attribute; 20+: axis input), STFT, the
// HannWindow / HammingWindow / BlackmanWindow generators and MelWeightMatrix. DFT and STFT share one
// direct-transform kernel (kernels/spectral/dft.wgsl); the windows one elementwise kernel
// (kernels/spectral/window.wgsl). Lengths that decide output shapes (dft_length, frame_step, frame_length,
// window size) must be known when the model is planned.
#include <algorithm>
#include <cmath>

#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

// A scalar (or one-element) integer input known at plan time.
int64_t known_scalar(const PlanContext& ctx, size_t i, const std::string& what) {
  const std::vector<int64_t> v = data_movement::known_ints(ctx, i, what);
  if (v.size() != 1) {
    ctx.fail("input " + std::to_string(i) + " (" + what + ") has " + std::to_string(v.size()) +
             " values; expected a scalar");
  }
  return v[0];
}

void require_float(const PlanContext& ctx, size_t i, const std::string& what) {
  if (ctx.input(i).dtype != DType::Float32) {
    ctx.fail("input " + std::to_string(i) + " (" + what + ") has type " +
             std::string(dtype_name(ctx.input(i).dtype)) + "; wgi runs " + ctx.node.op_type +
             " on float32 and float16");
  }
}

struct TransformLayout {
  int64_t outer = 1, inner = 1, bins = 0, frames = 1, input_steps = 0, length = 0, step = 0, components = 1;
  bool inverse = false;
  bool window = false;
};

void add_transform_launch(const PlanContext& ctx, OpPlan& plan, const TransformLayout& t) {
  const int64_t count = t.outer * t.frames * t.bins * t.inner;
  if (count == 0) return;
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = t.window ? "dft_windowed" : "dft";
  KernelInterface iface;
  iface.read("x", "f32", TensorRef::input(0));
  if (t.window) iface.read("frame_window", "f32", TensorRef::input(2));
  iface.read_write("y", "vec2<f32>", TensorRef::output(0))
      .uniforms(
          {{"count",
            UniformType::U32},  // output complex values
                                // values per step of the axis (the dims between the axis and the complex dim)
           {"inner", UniformType::U32},
           {"bins", UniformType::U32},  // output values along the axis
           {"frames", UniformType::U32},
           {"input_steps", UniformType::U32},  // the input's size along the axis
           {"length", UniformType::U32},       // the transform's length
           {"step", UniformType::U32},         // frame step along the axis
           {"components", UniformType::U32},   // 1 real, 2 complex input
           {"inverse", UniformType::U32},
           {"scale", UniformType::F32}});
  launch.program.wgsl =
      iface.load_wgsl("spectral/dft.wgsl", {{"WINDOW", t.window ? "1" : "0"}, {"MATH_VEC4", "0"}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(count))
                       .u32("inner", static_cast<uint32_t>(t.inner))
                       .u32("bins", static_cast<uint32_t>(t.bins))
                       .u32("frames", static_cast<uint32_t>(t.frames))
                       .u32("input_steps", static_cast<uint32_t>(t.input_steps))
                       .u32("length", static_cast<uint32_t>(t.length))
                       .u32("step", static_cast<uint32_t>(t.step))
                       .u32("components", static_cast<uint32_t>(t.components))
                       .u32("inverse", t.inverse ? 1 : 0)
                       .f32("scale", t.inverse ? 1.0f / static_cast<float>(t.length) : 1.0f)
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
}

// The transform's length must stay where 4 * (k n mod length) fits the kernel's u32 arithmetic.
constexpr int64_t kMaxTransformLength = int64_t{1} << 24;

OpPlan plan_dft(const PlanContext& ctx) {
  require_float(ctx, 0, "input");
  const Shape& x = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank < 2 || (x.back() != 1 && x.back() != 2)) {
    ctx.fail("input 0 " + shape_to_string(x) + " must be [..., signal dims..., 1 or 2] (real or complex)");
  }
  int64_t axis = 1;
  if (ctx.node.opset >= 20) {
    axis = ctx.has_input(2) ? known_scalar(ctx, 2, "axis") : -2;
  } else {
    axis = ctx.node.attributes.get_int("axis", 1);
  }
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank - 2) {
    ctx.fail("axis " + std::to_string(axis) + " is outside the signal dims of input " + shape_to_string(x) +
             " (0 to " + std::to_string(rank - 2) + ", or negative from the back, -2 the last)");
  }
  const size_t a = static_cast<size_t>(axis);
  const int64_t inverse = ctx.node.attributes.get_int("inverse", 0);
  const int64_t onesided = ctx.node.attributes.get_int("onesided", 0);
  if ((inverse != 0 && inverse != 1) || (onesided != 0 && onesided != 1)) {
    ctx.fail("attributes 'inverse' and 'onesided' must be 0 or 1 (got " + std::to_string(inverse) + " and " +
             std::to_string(onesided) + ")");
  }
  // Opsets 17-19 (the ONNX reference) keep the first length / 2 + 1 values of the full inverse; opset 20
  // made inverse + onesided a complex-to-real transform of a one-sided spectrum, which wgi does not have.
  if (inverse && onesided && ctx.node.opset >= 20) {
    ctx.fail(
        "inverse = 1 with onesided = 1 (opset 20's complex-to-real inverse) is not implemented in wgi; use "
        "onesided = 0");
  }
  int64_t length = x[a];
  if (ctx.has_input(1)) {
    length = known_scalar(ctx, 1, "dft_length");
    if (length < 1) ctx.fail("dft_length is " + std::to_string(length) + "; expected >= 1");
  }
  if (length < 1) ctx.fail("input 0 " + shape_to_string(x) + " is empty along axis " + std::to_string(axis));
  if (length > kMaxTransformLength) {
    ctx.fail("a DFT of length " + std::to_string(length) + " is longer than wgi's direct transform takes (" +
             std::to_string(kMaxTransformLength) + ")");
  }
  TransformLayout t;
  t.length = length;
  t.input_steps = x[a];
  t.components = x.back();
  t.inverse = inverse != 0;
  t.bins = onesided ? length / 2 + 1 : length;
  for (size_t d = 0; d < a; ++d) t.outer *= x[d];
  for (size_t d = a + 1; d + 1 < x.size(); ++d) t.inner *= x[d];
  Shape out = x;
  out[a] = t.bins;
  out.back() = 2;
  require_addressable(ctx, "input 0", x);
  require_addressable(ctx, "the output", out);
  OpPlan plan;
  plan.outputs.push_back({DType::Float32, out});
  add_transform_launch(ctx, plan, t);
  return plan;
}

OpPlan plan_stft(const PlanContext& ctx) {
  require_float(ctx, 0, "signal");
  const Shape& x = ctx.input(0).shape;
  if (x.size() != 3 || (x[2] != 1 && x[2] != 2)) {
    ctx.fail("input 0 (signal) " + shape_to_string(x) + " must be [batch, signal_length, 1 or 2]");
  }
  const int64_t step = known_scalar(ctx, 1, "frame_step");
  if (step < 1) ctx.fail("frame_step is " + std::to_string(step) + "; expected >= 1");
  const bool window = ctx.has_input(2);
  int64_t frame_length = -1;
  if (window) {
    require_float(ctx, 2, "window");
    if (ctx.input(2).shape.size() != 1) {
      ctx.fail("input 2 (window) " + shape_to_string(ctx.input(2).shape) + " must be 1-D");
    }
    frame_length = ctx.input(2).shape[0];
  }
  if (ctx.has_input(3)) {
    const int64_t given = known_scalar(ctx, 3, "frame_length");
    if (window && given != frame_length) {
      ctx.fail("frame_length " + std::to_string(given) + " differs from the window's length " +
               std::to_string(frame_length));
    }
    frame_length = given;
  }
  if (frame_length < 0) ctx.fail("needs a window or a frame_length to know the frames' length");
  if (frame_length < 1 || frame_length > x[1]) {
    ctx.fail("frame_length " + std::to_string(frame_length) + " must be 1 to the signal's length " +
             std::to_string(x[1]));
  }
  if (frame_length > kMaxTransformLength)
    ctx.fail("frame_length " + std::to_string(frame_length) + " is too long");
  const int64_t onesided = ctx.node.attributes.get_int("onesided", 1);
  if (onesided != 0 && onesided != 1)
    ctx.fail("attribute 'onesided' is " + std::to_string(onesided) + "; expected 0 or 1");
  if (onesided && x[2] == 2) ctx.fail("onesided = 1 needs a real signal ([..., 1]); this one is complex");
  TransformLayout t;
  t.outer = x[0];
  t.frames = (x[1] - frame_length) / step + 1;
  t.length = frame_length;
  t.input_steps = x[1];
  t.step = step;
  t.components = x[2];
  t.bins = onesided ? frame_length / 2 + 1 : frame_length;
  t.window = window;
  const Shape out = {x[0], t.frames, t.bins, 2};
  require_addressable(ctx, "input 0", x);
  require_addressable(ctx, "the output", out);
  OpPlan plan;
  plan.outputs.push_back({DType::Float32, out});
  add_transform_launch(ctx, plan, t);
  return plan;
}

// w[i] = a0 - a1 cos(2 pi i / n) + a2 cos(4 pi i / n), n = size (periodic) or size - 1 (symmetric).
struct WindowCoefficients {
  const char* op_type;
  float a0, a1, a2;
};
constexpr WindowCoefficients kWindows[] = {
    {"HannWindow", 0.5f, 0.5f, 0.0f},
    {"HammingWindow", 25.0f / 46.0f, 21.0f / 46.0f, 0.0f},  // ONNX's alpha = 25/46, beta = 21/46
    {"BlackmanWindow", 0.42f, 0.5f, 0.08f},
};

OpPlan plan_window(const WindowCoefficients& w, const PlanContext& ctx) {
  const int64_t size = known_scalar(ctx, 0, "size");
  if (size < 0) ctx.fail("size is " + std::to_string(size) + "; expected >= 0");
  const int64_t periodic = ctx.node.attributes.get_int("periodic", 1);
  if (periodic != 0 && periodic != 1)
    ctx.fail("attribute 'periodic' is " + std::to_string(periodic) + "; expected 0 or 1");
  const int64_t output_datatype = ctx.node.attributes.get_int("output_datatype", 1);
  if (output_datatype != 1) {
    ctx.fail("attribute 'output_datatype' is " + std::to_string(output_datatype) +
             "; wgi generates float (1) windows only (Cast the result for another type)");
  }
  require_addressable(ctx, "the output", {size});
  OpPlan plan;
  plan.outputs.push_back({DType::Float32, {size}});
  if (size == 0) return plan;
  // A symmetric window of one point has n = 0: it is [1] (numpy's convention), written through `single`.
  const int64_t n = periodic ? size : size - 1;
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(size), 256, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = "window";
  KernelInterface iface;
  iface.read_write("y", "f32", TensorRef::output(0))
      .uniforms({{"size", UniformType::U32},
                 {"n", UniformType::U32},
                 {"one_point", UniformType::U32},
                 {"a0", UniformType::F32},
                 {"a1", UniformType::F32},
                 {"a2", UniformType::F32}});
  launch.program.wgsl = iface.load_wgsl("spectral/window.wgsl", {{"MATH_VEC4", "0"}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("size", static_cast<uint32_t>(size))
                       .u32("n", static_cast<uint32_t>(std::max<int64_t>(n, 1)))
                       .u32("one_point", n == 0 ? 1 : 0)
                       .f32("a0", w.a0)
                       .f32("a1", w.a1)
                       .f32("a2", w.a2)
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

// A scalar float input known at plan time.
double known_float(const PlanContext& ctx, size_t i, const std::string& what) {
  const Tensor* t = ctx.constant(i);
  if (!t || t->dtype() != DType::Float32 || t->element_count() != 1) {
    ctx.fail("input " + std::to_string(i) + " (" + what +
             ") must be a float32 scalar known when the model is planned (an initializer or a Constant)");
  }
  return t->data<float>()[0];
}

OpPlan plan_mel_weight_matrix(const PlanContext& ctx) {
  const int64_t mel_bins = known_scalar(ctx, 0, "num_mel_bins");
  const int64_t dft_length = known_scalar(ctx, 1, "dft_length");
  const int64_t sample_rate = known_scalar(ctx, 2, "sample_rate");
  const double lower = known_float(ctx, 3, "lower_edge_hertz"),
               upper = known_float(ctx, 4, "upper_edge_hertz");
  if (mel_bins < 1 || dft_length < 1 || sample_rate < 1) {
    ctx.fail("num_mel_bins, dft_length and sample_rate must be >= 1 (got " + std::to_string(mel_bins) + ", " +
             std::to_string(dft_length) + ", " + std::to_string(sample_rate) + ")");
  }
  if (!(lower >= 0 && lower <= upper)) {
    ctx.fail("lower_edge_hertz " + std::to_string(lower) + " and upper_edge_hertz " + std::to_string(upper) +
             " must satisfy 0 <= lower <= upper");
  }
  const int64_t output_datatype = ctx.node.attributes.get_int("output_datatype", 1);
  if (output_datatype != 1) {
    ctx.fail("attribute 'output_datatype' is " + std::to_string(output_datatype) +
             "; wgi generates float (1) matrices only (Cast the result for another type)");
  }
  const int64_t spectrogram_bins = dft_length / 2 + 1;
  const Shape out = {spectrogram_bins, mel_bins};
  require_addressable(ctx, "the output", out);
  // The triangles' edges as spectrogram-bin indices: mel_bins + 2 points evenly spaced on the mel scale
  // (the ONNX reference divides the mel range by mel_bins + 2), mapped back to hertz and to bins by
  // floor((dft_length + 1) * hz / sample_rate). Index arithmetic on a few scalars: the host does it in
  // float64 as the reference does; the matrix itself is written on the GPU.
  const double low_mel = 2595 * std::log10(1 + lower / 700), high_mel = 2595 * std::log10(1 + upper / 700);
  const double mel_step = (high_mel - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int32_t> edges;
  for (int64_t k = 0; k < mel_bins + 2; ++k) {
    const double hz = 700 * (std::pow(10.0, (static_cast<double>(k) * mel_step + low_mel) / 2595) - 1);
    const double bin =
        std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate));
    if (bin >= static_cast<double>(spectrogram_bins)) {
      ctx.fail("upper_edge_hertz " + std::to_string(upper) + " maps past the last of the " +
               std::to_string(spectrogram_bins) + " spectrogram bins of dft_length " +
               std::to_string(dft_length) + " at sample_rate " + std::to_string(sample_rate));
    }
    edges.push_back(static_cast<int32_t>(bin));
  }
  OpPlan plan;
  plan.outputs.push_back({DType::Float32, out});
  plan.constants.push_back(Tensor::from_vector<int32_t>({static_cast<int64_t>(edges.size())}, edges));
  const int64_t count = element_count(out);
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = "mel_weight_matrix";
  KernelInterface iface;
  iface.read("edges", "i32", TensorRef::constant(0))
      .read_write("y", "f32", TensorRef::output(0))
      .uniforms({{"count", UniformType::U32}, {"mel_bins", UniformType::U32}});
  launch.program.wgsl = iface.load_wgsl("spectral/mel_weight_matrix.wgsl");
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(count))
                       .u32("mel_bins", static_cast<uint32_t>(mel_bins))
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_spectral_ops(OpRegistry& registry) {
  registry.add("", "DFT", 17, kLatestOpset, {plan_dft, nullptr});
  registry.add("", "STFT", 17, kLatestOpset, {plan_stft, nullptr});
  registry.add("", "MelWeightMatrix", 17, kLatestOpset, {plan_mel_weight_matrix, nullptr});
  for (const WindowCoefficients& w : kWindows) {
    registry.add("", w.op_type, 17, kLatestOpset,
                 {[&w](const PlanContext& ctx) { return plan_window(w, ctx); }, nullptr});
  }
}

}  // namespace wgi::ops
