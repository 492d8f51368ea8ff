// Recurrent layers: ONNX LSTM, GRU and RNN (docs/recurrent.md).
//
// Plan: the input projection X * W^T of every step and direction is one GEMM (ops/gemm_launch.h) into a
// scratch [directions][seq * batch][gate rows]; R is transposed once ([directions][hidden][gate rows], on the
// host when it is a constant, else by a copy launch) so that a step's threads read it coalesced; the hidden
// (and cell) state is initialised in a scratch buffer from initial_h / initial_c or zeros. Then each time
// step is one launch of kernels/recurrent/recurrent_step.wgsl (two for GRU with linear_before_reset = 0,
// whose reset gate must be known for all units before the hidden gate's product), for all batch rows and
// directions; the state stays on the GPU and ping-pongs between two slots. Y_h and Y_c are copied out of the
// state at the end (the state of a row past its sequence length is held, so the last one is the last valid).
// The biases Wb + Rb are added in the step kernel (the GEMM's bias cannot vary per direction).
#include <algorithm>
#include <array>
#include <cctype>
#include <limits>

#include "kernels/wgsl_library.h"
#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/gemm_launch.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

enum class Cell { Lstm, Gru, Rnn };

struct CellTraits {
  const char* name;
  int64_t gates;            // W / R row blocks
  size_t activation_slots;  // activations per direction
  std::array<const char*, 3> default_activations;
};

const CellTraits& traits(Cell cell) {
  static const CellTraits lstm{"LSTM", 4, 3, {"Sigmoid", "Tanh", "Tanh"}};
  static const CellTraits gru{"GRU", 3, 2, {"Sigmoid", "Tanh", ""}};
  static const CellTraits rnn{"RNN", 1, 1, {"Tanh", "", ""}};
  return cell == Cell::Lstm ? lstm : cell == Cell::Gru ? gru : rnn;
}

// ONNX's activation functions, in the step kernel's numbering (recurrent_step.wgsl, activate()), with
// onnxruntime's defaults for alpha and beta (used when activation_alpha / activation_beta run out).
struct ActivationKind {
  const char* name;
  bool takes_alpha, takes_beta;
  float alpha, beta;
};
constexpr std::array<ActivationKind, 11> kActivations = {{
    {"Relu", false, false, 0.0f, 0.0f},
    {"Tanh", false, false, 0.0f, 0.0f},
    {"Sigmoid", false, false, 0.0f, 0.0f},
    {"Affine", true, true, 1.0f, 0.0f},
    {"LeakyRelu", true, false, 0.01f, 0.0f},
    {"ThresholdedRelu", true, false, 1.0f, 0.0f},
    {"ScaledTanh", true, true, 1.0f, 1.0f},
    {"HardSigmoid", true, true, 0.2f, 0.5f},
    {"Elu", true, false, 1.0f, 0.0f},
    {"Softsign", false, false, 0.0f, 0.0f},
    {"Softplus", false, false, 0.0f, 0.0f},
}};

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

struct Activations {
  std::array<std::array<uint32_t, 4>, 2> kinds{};
  std::array<std::array<float, 4>, 2> alphas{}, betas{};
};

Activations read_activations(const PlanContext& ctx, const CellTraits& cell, int64_t directions) {
  const Attributes& attrs = ctx.node.attributes;
  std::vector<std::string> names;
  if (attrs.has("activations")) {
    const auto* list = std::get_if<std::vector<std::string>>(&attrs.all().at("activations"));
    if (!list) ctx.fail("attribute 'activations' must be a list of strings");
    names = *list;
  } else {
    for (int64_t d = 0; d < directions; ++d)
      for (size_t s = 0; s < cell.activation_slots; ++s) names.push_back(cell.default_activations[s]);
  }
  const size_t wanted = cell.activation_slots * static_cast<size_t>(directions);
  // ONNX once gave RNN's default as [Tanh, Tanh]: a one-direction RNN listing two takes the first, as
  // onnxruntime does.
  const bool rnn_pair = cell.activation_slots == 1 && directions == 1 && names.size() == 2;
  if (names.size() != wanted && !rnn_pair) {
    ctx.fail("attribute 'activations' has " + std::to_string(names.size()) + " names; " + cell.name +
             " with " + std::to_string(directions) + " direction(s) takes " + std::to_string(wanted));
  }
  const std::vector<float> alphas = attrs.get_floats("activation_alpha", {});
  const std::vector<float> betas = attrs.get_floats("activation_beta", {});
  size_t next_alpha = 0, next_beta = 0;
  Activations out;
  for (size_t i = 0; i < wanted; ++i) {
    const auto kind = std::find_if(kActivations.begin(), kActivations.end(),
                                   [&](const ActivationKind& k) { return same_name(k.name, names[i]); });
    if (kind == kActivations.end()) {
      std::string known;
      for (const ActivationKind& k : kActivations) known += (known.empty() ? "" : ", ") + std::string(k.name);
      ctx.fail("activation '" + names[i] + "' is not one of ONNX's recurrent activations (" + known + ")");
    }
    const size_t d = i / cell.activation_slots, s = i % cell.activation_slots;
    out.kinds[d][s] = static_cast<uint32_t>(kind - kActivations.begin());
    out.alphas[d][s] = kind->alpha;
    out.betas[d][s] = kind->beta;
    if (kind->takes_alpha && next_alpha < alphas.size()) out.alphas[d][s] = alphas[next_alpha++];
    if (kind->takes_beta && next_beta < betas.size()) out.betas[d][s] = betas[next_beta++];
  }
  return out;
}

uint32_t u32_of(const PlanContext& ctx, int64_t v, const std::string& what) {
  if (v < 0 || v > static_cast<int64_t>(std::numeric_limits<uint32_t>::max()))
    ctx.fail(what + " = " + std::to_string(v) + " does not fit the GPU's 32-bit indices");
  return static_cast<uint32_t>(v);
}

// Whether output k gets a buffer: node tests and kernel tests that give no output names get every output.
bool output_bound(const PlanContext& ctx, size_t k) {
  return ctx.node.output_names.empty() || data_movement::output_requested(ctx, k);
}

void require_float(const PlanContext& ctx, size_t i) {
  if (ctx.input(i).dtype != DType::Float32) {
    ctx.fail("input " + std::to_string(i) + " (" + ctx.input_name(i) + ") has type " +
             std::string(dtype_name(ctx.input(i).dtype)) + "; wgi runs " + ctx.node.op_type +
             " on float32 and float16");
  }
}

void require_shape(const PlanContext& ctx, size_t i, const char* role, const Shape& expected) {
  if (ctx.input(i).shape != expected) {
    ctx.fail("input " + std::to_string(i) + " (" + role + ", " + ctx.input_name(i) + ") has shape " +
             shape_to_string(ctx.input(i).shape) + "; expected " + shape_to_string(expected));
  }
}

// The step kernel's workgroup: UNITS hidden units x KSPLIT k-slices, BT batch rows (recurrent_step.wgsl).
struct StepShape {
  uint32_t units = 32, ksplit = 1, bt = 1;
};

StepShape choose_step_shape(const gpu::Limits& limits, uint32_t gates, int64_t batch) {
  StepShape s;
  const uint32_t most =
      std::min(limits.max_compute_invocations_per_workgroup, limits.max_compute_workgroup_size_x);
  s.ksplit = std::max<uint32_t>(1, std::min<uint32_t>(8, most / s.units));
  // Batch rows per workgroup: each R element loaded is used BT times; the reduction needs BT <= KSPLIT
  // finishing rows and WG * gates * BT floats of workgroup memory.
  s.bt = 1;
  while (s.bt < 4 && s.bt < static_cast<uint32_t>(batch) && s.bt * 2 <= s.ksplit &&
         uint64_t{s.units} * s.ksplit * gates * s.bt * 2 * 4 <= limits.max_compute_workgroup_storage_size) {
    s.bt *= 2;
  }
  return s;
}

// A recurrent node's attributes and inputs, checked: the sizes and flags its launches are planned from.
struct RecurrentSpec {
  int64_t layout = 0, nd = 1, T = 0, B = 0, I = 0, H = 0, GH = 0;
  bool reverse = false, lstm = false;
  bool has_bias = false, has_lens = false, has_init_h = false, has_init_c = false, has_peepholes = false;
  int64_t input_forget = 0, linear_before_reset = 0;
  bool has_clip = false;
  float clip = 0.0f;
  Activations activations;
  Shape xs, ws, state_shape;
};

RecurrentSpec parse_recurrent(const PlanContext& ctx, Cell cell_kind) {
  const CellTraits& cell = traits(cell_kind);
  const Attributes& attrs = ctx.node.attributes;
  for (size_t i = 0; i < 3; ++i) require_float(ctx, i);
  const int64_t layout = attrs.get_int("layout", 0);
  if (layout != 0 && layout != 1)
    ctx.fail("attribute 'layout' must be 0 or 1, got " + std::to_string(layout));
  const std::string direction = attrs.get_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    ctx.fail("attribute 'direction' is '" + direction + "'; expected forward, reverse or bidirectional");
  }
  const int64_t nd = direction == "bidirectional" ? 2 : 1;
  const Shape& xs = ctx.input(0).shape;
  if (xs.size() != 3) ctx.fail("input 0 (X) must have rank 3, got " + shape_to_string(xs));
  const int64_t T = layout == 0 ? xs[0] : xs[1], B = layout == 0 ? xs[1] : xs[0], I = xs[2];
  if (I <= 0) ctx.fail("input 0 (X) " + shape_to_string(xs) + " has no input features");
  const Shape& ws = ctx.input(1).shape;
  if (ws.size() != 3 || ws[0] != nd || ws[2] != I || ws[1] % cell.gates != 0) {
    ctx.fail("input 1 (W) has shape " + shape_to_string(ws) + "; expected [" + std::to_string(nd) + ", " +
             std::to_string(cell.gates) + " * hidden_size, " + std::to_string(I) + "]");
  }
  const int64_t H = attrs.get_int("hidden_size", ws[1] / cell.gates);
  if (H <= 0 || H > ws[1] || ws[1] != cell.gates * H)
    ctx.fail("W " + shape_to_string(ws) + " does not match hidden_size " + std::to_string(H));
  const int64_t GH = cell.gates * H;
  require_shape(ctx, 2, "R", {nd, GH, H});
  const bool has_bias = ctx.has_input(3);
  if (has_bias) {
    require_float(ctx, 3);
    require_shape(ctx, 3, "B", {nd, 2 * GH});
  }
  const bool has_lens = ctx.has_input(4);
  if (has_lens) {
    if (ctx.input(4).dtype != DType::Int32)
      ctx.fail("input 4 (sequence_lens) has type " + std::string(dtype_name(ctx.input(4).dtype)) +
               "; ONNX gives it as int32");
    require_shape(ctx, 4, "sequence_lens", {B});
    if (const Tensor* lens = ctx.constant(4)) {
      for (int32_t v : lens->data<int32_t>()) {
        if (v < 0 || v > T)
          ctx.fail("sequence_lens holds " + std::to_string(v) + ", outside [0, " + std::to_string(T) + "]");
      }
    }
  }
  const Shape state_shape = layout == 0 ? Shape{nd, B, H} : Shape{B, nd, H};
  const bool has_init_h = ctx.has_input(5);
  if (has_init_h) {
    require_float(ctx, 5);
    require_shape(ctx, 5, "initial_h", state_shape);
  }
  const bool lstm = cell_kind == Cell::Lstm;
  const bool has_init_c = lstm && ctx.has_input(6);
  const bool has_peepholes = lstm && ctx.has_input(7);
  if (has_init_c) {
    require_float(ctx, 6);
    require_shape(ctx, 6, "initial_c", state_shape);
  }
  if (has_peepholes) {
    require_float(ctx, 7);
    require_shape(ctx, 7, "P", {nd, 3 * H});
  }
  const int64_t input_forget = lstm ? attrs.get_int("input_forget", 0) : 0;
  const int64_t linear_before_reset = cell_kind == Cell::Gru ? attrs.get_int("linear_before_reset", 0) : 0;
  if ((input_forget != 0 && input_forget != 1) || (linear_before_reset != 0 && linear_before_reset != 1))
    ctx.fail("attributes 'input_forget' and 'linear_before_reset' must be 0 or 1");
  const bool has_clip = attrs.has("clip");
  const float clip = attrs.get_float("clip", 0.0f);
  if (has_clip && !(clip > 0.0f)) ctx.fail("attribute 'clip' must be positive, got " + std::to_string(clip));
  const Activations activations = read_activations(ctx, cell, nd);

  return RecurrentSpec{.layout = layout,
                       .nd = nd,
                       .T = T,
                       .B = B,
                       .I = I,
                       .H = H,
                       .GH = GH,
                       .reverse = direction == "reverse",
                       .lstm = lstm,
                       .has_bias = has_bias,
                       .has_lens = has_lens,
                       .has_init_h = has_init_h,
                       .has_init_c = has_init_c,
                       .has_peepholes = has_peepholes,
                       .input_forget = input_forget,
                       .linear_before_reset = linear_before_reset,
                       .has_clip = has_clip,
                       .clip = clip,
                       .activations = activations,
                       .xs = xs,
                       .ws = ws,
                       .state_shape = state_shape};
}

// One kernel variant run at every step: the GRU without linear_before_reset needs two (gates, then the
// candidate from r * h).
struct StepPhase {
  const char* define;
  uint32_t gates, first_gate;
  bool reads_reset_h;
};

// The state scratch buffer: two hidden slots of nd * B * H floats, then the cell state (LSTM) or z and r * h
// (the two-phase GRU).
struct StateRegions {
  int64_t slot = 0;               // floats per region
  int64_t cell = 0, reset_h = 0;  // offsets of the cell state / z and of r * h
  int64_t count = 0;              // regions in all
};

StateRegions state_regions(const RecurrentSpec& r, bool two_phase) {
  const int64_t slot = r.nd * r.B * r.H;
  return {slot, 2 * slot, 3 * slot, 2 + (r.lstm ? 1 : 0) + (two_phase ? 2 : 0)};
}

// What every step's launch binds.
struct StepBindings {
  TensorRef projected, r_t, bias, peepholes, lengths, state, y;
};

// The step kernel's bindings and Params (the same for every phase).
KernelInterface step_interface(const StepBindings& refs) {
  KernelInterface iface;
  iface.read("projected", "f32", refs.projected)
      .read("r_t", "f32", refs.r_t)
      .read("bias", "f32", refs.bias)            // [directions][2 * gate_rows]: Wb, Rb
      .read("peepholes", "f32", refs.peepholes)  // [directions][3 * hidden]: i, o, f
      .read("lengths", "i32", refs.lengths)      // [batch]
      .read_write("state", "f32", refs.state)
      .read_write("y", "f32", refs.y)
      .uniforms({{"hidden", UniformType::U32},
                 {"batch", UniformType::U32},
                 {"seq", UniformType::U32},
                 {"directions", UniformType::U32},
                 {"step", UniformType::U32},
                 // direction = "reverse": direction 0 runs backwards (else only direction 1 does)
                 {"all_reverse", UniformType::U32},
                 // layout 0: X [seq, batch, .], Y [seq, dirs, batch, hidden]; 1: X [batch, seq, .],
                 // Y [batch, seq, dirs, hidden]
                 {"batch_major", UniformType::U32},
                 {"has_lens", UniformType::U32},
                 {"gate_rows", UniformType::U32},   // rows of W and R per direction (4, 3 or 1 times hidden)
                 {"first_gate", UniformType::U32},  // the first R gate this kernel multiplies
                 // offsets in `state`: the hidden state read, the one written, the vector multiplied by R
                 // (h_read, or GRU's r * h), the cell state (LSTM) or z (GRU_GATES / GRU_HIDDEN), GRU's r * h
                 {"h_read", UniformType::U32},
                 {"h_write", UniformType::U32},
                 {"vector", UniformType::U32},
                 {"cell", UniformType::U32},
                 {"reset_h", UniformType::U32},
                 {"has_bias", UniformType::U32},
                 {"has_peepholes", UniformType::U32},
                 {"input_forget", UniformType::U32},
                 {"has_clip", UniformType::U32},
                 {"clip", UniformType::F32},
                 {"has_y", UniformType::U32},
                 {"pad0", UniformType::Pad},
                 {"pad1", UniformType::Pad},
                 {"pad2", UniformType::Pad},
                 {"kinds", UniformType::Vec4U, 2},  // activation ids per direction (f, g, h), see activate()
                 {"alphas", UniformType::Vec4F, 2},
                 {"betas", UniformType::Vec4F, 2}});
  return iface;
}

// One launch per phase per time step, reading the hidden state one slot holds and writing the other.
void add_step_launches(const RecurrentSpec& r, const std::vector<StepPhase>& phases,
                       const std::vector<gpu::ProgramSource>& programs, const std::vector<StepShape>& shapes,
                       const StateRegions& regions, const KernelInterface& iface, bool has_y, OpPlan& plan) {
  const int64_t H = r.H, B = r.B, T = r.T, nd = r.nd, GH = r.GH;
  const int64_t nbh = regions.slot, cell_offset = regions.cell, reset_h_offset = regions.reset_h;
  for (int64_t step = 0; step < T; ++step) {
    const int64_t read = step % 2, write = 1 - read;
    for (size_t p = 0; p < phases.size(); ++p) {
      const StepPhase& v = phases[p];
      const StepShape& s = shapes[p];
      KernelLaunch launch;
      launch.program = programs[p];
      iface.bind(launch);
      launch.uniform =
          iface.values()
              .u32("hidden", static_cast<uint32_t>(H))
              .u32("batch", static_cast<uint32_t>(B))
              .u32("seq", static_cast<uint32_t>(T))
              .u32("directions", static_cast<uint32_t>(nd))
              .u32("step", static_cast<uint32_t>(step))
              .u32("all_reverse", r.reverse ? 1u : 0u)
              .u32("batch_major", static_cast<uint32_t>(r.layout))
              .u32("has_lens", r.has_lens ? 1u : 0u)
              .u32("gate_rows", static_cast<uint32_t>(GH))
              .u32("first_gate", v.first_gate)
              .u32("h_read", static_cast<uint32_t>(read * nbh))
              .u32("h_write", static_cast<uint32_t>(write * nbh))
              .u32("vector", static_cast<uint32_t>(v.reads_reset_h ? reset_h_offset : read * nbh))
              .u32("cell", static_cast<uint32_t>(cell_offset))
              .u32("reset_h", static_cast<uint32_t>(reset_h_offset))
              .u32("has_bias", r.has_bias ? 1u : 0u)
              .u32("has_peepholes", r.has_peepholes ? 1u : 0u)
              .u32("input_forget", static_cast<uint32_t>(r.input_forget))
              .u32("has_clip", r.has_clip ? 1u : 0u)
              .f32("clip", r.clip)
              .u32("has_y", has_y ? 1u : 0u)
              .vec4u_array("kinds", r.activations.kinds)
              .vec4f_array("alphas", r.activations.alphas)
              .vec4f_array("betas", r.activations.betas)
              .bytes();
      launch.groups = {static_cast<uint32_t>((H + s.units - 1) / s.units),
                       static_cast<uint32_t>((B + s.bt - 1) / s.bt), static_cast<uint32_t>(nd)};
      plan.launches.push_back(std::move(launch));
    }
  }
}

std::vector<StepPhase> step_phases(Cell cell_kind, bool two_phase) {
  switch (cell_kind) {
    case Cell::Lstm:
      return {{"LSTM", 4, 0, false}};
    case Cell::Rnn:
      return {{"RNN", 1, 0, false}};
    case Cell::Gru:
      if (two_phase) return {{"GRU_GATES", 2, 0, false}, {"GRU_HIDDEN", 1, 2, true}};
      return {{"GRU_FUSED", 3, 0, false}};
  }
  return {};
}

// The step kernel of one phase, for its workgroup shape; fails when the grid would not fit the device.
gpu::ProgramSource step_program(const PlanContext& ctx, const KernelInterface& iface, const StepPhase& v,
                                const StepShape& s, const RecurrentSpec& r) {
  gpu::ProgramSource program;
  program.label = std::string("recurrent_") + v.define + "_u" + std::to_string(s.units) + "_k" +
                  std::to_string(s.ksplit) + "_b" + std::to_string(s.bt);
  for (char& c : program.label) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  kernels::Defines defines = {{"UNITS", std::to_string(s.units)},
                              {"KSPLIT", std::to_string(s.ksplit)},
                              {"BT", std::to_string(s.bt)},
                              {"GATES", std::to_string(v.gates)},
                              {"MATH_VEC4", "0"}};
  for (const char* phase : {"LSTM", "RNN", "GRU_FUSED", "GRU_GATES", "GRU_HIDDEN"})
    defines[phase] = std::string_view(phase) == v.define ? "1" : "0";
  program.wgsl = iface.load_wgsl("recurrent/recurrent_step.wgsl", defines);
  // Hidden-unit blocks in x, batch blocks in y (not folded: neither comes near the limit in practice).
  const uint64_t most = ctx.caps.limits.max_compute_workgroups_per_dimension;
  if (static_cast<uint64_t>((r.H + s.units - 1) / s.units) > most ||
      static_cast<uint64_t>((r.B + s.bt - 1) / s.bt) > most) {
    ctx.fail("hidden_size " + std::to_string(r.H) + " or batch " + std::to_string(r.B) +
             " needs more workgroups per grid dimension than the device's " + std::to_string(most));
  }
  return program;
}

OpPlan plan_recurrent(const PlanContext& ctx, Cell cell_kind) {
  const RecurrentSpec r = parse_recurrent(ctx, cell_kind);
  const int64_t layout = r.layout, nd = r.nd, T = r.T, B = r.B, I = r.I, H = r.H, GH = r.GH;
  const bool lstm = r.lstm, has_init_h = r.has_init_h, has_init_c = r.has_init_c;
  const Shape& xs = r.xs;
  const Shape& ws = r.ws;
  const Shape& state_shape = r.state_shape;
  OpPlan plan;
  const Shape y_shape = layout == 0 ? Shape{T, nd, B, H} : Shape{B, T, nd, H};
  plan.outputs.push_back({DType::Float32, y_shape});
  plan.outputs.push_back({DType::Float32, state_shape});
  if (lstm) plan.outputs.push_back({DType::Float32, state_shape});
  if (B == 0) return plan;
  if (T == 0) ctx.fail("X has an empty sequence (" + shape_to_string(xs) + "): there is no last state");
  // Each step is a launch of its own (its program's text shared by all steps): under a kilobyte of plan,
  // and when bound a bind group and a uniform buffer (kilobytes of device objects) -- a bound on the memory
  // a long sequence takes (docs/recurrent.md).
  constexpr int64_t kMaxSteps = 65536;
  if (T > kMaxSteps) {
    ctx.fail("X " + shape_to_string(xs) + " has " + std::to_string(T) +
             " steps; wgi plans one launch per step and " + "takes at most " + std::to_string(kMaxSteps) +
             " (split the sequence into chunks, passing the state on)");
  }
  // X first: it bounds T * B for the products below.
  require_addressable(ctx, "X", xs);
  require_addressable(ctx, "W", ws);
  require_addressable(ctx, "R", {nd, GH, H});
  require_addressable(ctx, "Y", y_shape);
  require_addressable(ctx, "the input projection", {nd, T * B, GH});

  // X * W^T for all steps and directions: [nd][T * B][GH], rows in X's order.
  const TensorRef projected = plan.add_scratch(static_cast<uint64_t>(nd * T * B * GH) * sizeof(float));
  GemmLaunchSpec g;
  g.m = u32_of(ctx, T * B, "seq * batch");
  g.n = u32_of(ctx, GH, "gate rows");
  g.k = u32_of(ctx, I, "input_size");
  g.batch = static_cast<uint32_t>(nd);
  g.batch_dims = {1, 1, 1, static_cast<uint32_t>(nd)};
  g.b_batch_strides = {0, 0, 0, u32_of(ctx, GH * I, "W's direction stride")};
  g.b_nk = true;
  g.a = TensorRef::input(0);
  g.b = TensorRef::input(1);
  g.out = projected;
  append_gemm_launches(ctx, g, plan);

  // R^T: [nd][H][GH].
  data_movement::StridedCopy transpose;
  transpose.shape = {nd, H, GH};
  transpose.src_strides = {GH * H, 1, H};
  transpose.dst_strides = data_movement::row_major_strides(transpose.shape);
  transpose.src = TensorRef::input(2);
  TensorRef r_t;
  if (const Tensor* recurrence = ctx.constant(2)) {
    Tensor packed(DType::Float32, transpose.shape);
    data_movement::copy_on_host(transpose, *recurrence, packed);
    plan.constants.push_back(std::move(packed));
    r_t = TensorRef::constant(static_cast<uint32_t>(plan.constants.size() - 1));
  } else {
    r_t = plan.add_scratch(static_cast<uint64_t>(nd * H * GH) * sizeof(float));
    transpose.dst = r_t;
    data_movement::add_copy_launches(ctx, plan, transpose);
  }

  const bool two_phase = cell_kind == Cell::Gru && r.linear_before_reset == 0;
  const StateRegions regions = state_regions(r, two_phase);
  const int64_t nbh = regions.slot;
  const TensorRef state = plan.add_scratch(static_cast<uint64_t>(regions.count * nbh) * sizeof(float));
  // Zeros, then initial_h / initial_c into their regions ([nd, B, H] with layout 0; layout 1's [B, nd, H] is
  // read transposed).
  data_movement::add_fill_launch(ctx, plan, state, regions.count * nbh, 0u);
  auto copy_initial = [&](size_t input, int64_t offset) {
    data_movement::StridedCopy copy;
    copy.shape = {nd, B, H};
    copy.src_strides = layout == 0 ? std::vector<int64_t>{B * H, H, 1} : std::vector<int64_t>{H, nd * H, 1};
    copy.dst_strides = {B * H, H, 1};
    copy.dst_offset = offset;
    copy.src = TensorRef::input(static_cast<uint32_t>(input));
    copy.dst = state;
    data_movement::add_copy_launches(ctx, plan, copy);
  };
  if (has_init_h) copy_initial(5, 0);
  if (has_init_c) copy_initial(6, regions.cell);

  const bool has_y = output_bound(ctx, 0);
  const TensorRef y = has_y ? TensorRef::output(0) : plan.add_scratch(16);
  const TensorRef zero = TensorRef::zero();
  const TensorRef bias = r.has_bias ? TensorRef::input(3) : zero;
  const TensorRef peepholes = r.has_peepholes ? TensorRef::input(7) : zero;
  const TensorRef lengths = r.has_lens ? TensorRef::input(4) : zero;

  const std::vector<StepPhase> phases = step_phases(cell_kind, two_phase);
  const KernelInterface iface = step_interface({projected, r_t, bias, peepholes, lengths, state, y});
  std::vector<gpu::ProgramSource> programs;
  std::vector<StepShape> shapes;
  for (const StepPhase& v : phases) {
    shapes.push_back(choose_step_shape(ctx.caps.limits, v.gates, B));
    programs.push_back(step_program(ctx, iface, v, shapes.back(), r));
  }
  add_step_launches(r, phases, programs, shapes, regions, iface, has_y, plan);

  // Y_h (and Y_c) from the state: the slot the last step wrote, in the outputs' layout.
  auto copy_final = [&](uint32_t output, int64_t offset) {
    data_movement::StridedCopy copy;
    copy.shape = {nd, B, H};
    copy.src_strides = {B * H, H, 1};
    copy.dst_strides = layout == 0 ? std::vector<int64_t>{B * H, H, 1} : std::vector<int64_t>{H, nd * H, 1};
    copy.src_offset = offset;
    copy.src = state;
    copy.dst = TensorRef::output(output);
    data_movement::add_copy_launches(ctx, plan, copy);
  };
  if (output_bound(ctx, 1)) copy_final(1, (T % 2) * nbh);
  if (lstm && output_bound(ctx, 2)) copy_final(2, regions.cell);
  return plan;
}

}  // namespace

void register_recurrent_ops(OpRegistry& registry) {
  // Opset 14 added `layout`; 7 to 13 are the same op without it (its default, 0).
  for (Cell cell : {Cell::Lstm, Cell::Gru, Cell::Rnn}) {
    OpHandler handler;
    handler.plan = [cell](const PlanContext& ctx) { return plan_recurrent(ctx, cell); };
    registry.add("", traits(cell).name, 7, kLatestOpset, std::move(handler));
  }
}

}  // namespace wgi::ops
