// RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike and Bernoulli, seeded only: one kernel
// (kernels/random/random.wgsl) hashes (seed, element index), so a seeded node gives the same tensor on every
// run. An unseeded node is refused: ONNX wants fresh values per run there, which a plan-time constant seed
// would silently break.
#include <bit>
#include <cmath>
#include <limits>

#include "ops/families.h"
#include "ops/kernel_interface.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

enum class Distribution { Uniform, Normal, Bernoulli };

uint32_t seed_bits(const PlanContext& ctx) {
  if (!ctx.node.attributes.has("seed")) {
    ctx.fail(
        "has no 'seed' attribute; wgi runs random ops seeded only (each run of a seeded node draws the "
        "same values; an unseeded one would need fresh values every run). Give the node a seed");
  }
  return std::bit_cast<uint32_t>(ctx.node.attributes.get_float("seed", 0.0f));
}

// The output's dtype from the 'dtype' attribute (1 float by default, or the input's for the *Like ops).
DType output_dtype(const PlanContext& ctx, Distribution distribution, bool like) {
  const int64_t fallback = 1;
  if (!ctx.node.attributes.has("dtype")) {
    if (like) return ctx.input(0).dtype == DType::Bool ? DType::Float32 : ctx.input(0).dtype;
    return DType::Float32;
  }
  const int64_t code = ctx.node.attributes.get_int("dtype", fallback);
  const std::optional<DType> dtype = dtype_from_tensor_proto(code);
  const bool allowed =
      dtype == DType::Float32 || (distribution == Distribution::Bernoulli && dtype == DType::Bool);
  if (!allowed) {
    ctx.fail("attribute 'dtype' is " + std::to_string(code) + "; wgi draws float (1)" +
             std::string(distribution == Distribution::Bernoulli ? " or bool (9)" : "") + " values only");
  }
  return *dtype;
}

OpPlan plan_random(const PlanContext& ctx, Distribution distribution, bool like) {
  const uint32_t seed = seed_bits(ctx);
  Shape shape;
  if (like || distribution == Distribution::Bernoulli) {
    shape = ctx.input(0).shape;
    if (distribution == Distribution::Bernoulli && ctx.input(0).dtype != DType::Float32) {
      ctx.fail("input 0 (probabilities) has type " + std::string(dtype_name(ctx.input(0).dtype)) +
               "; wgi runs Bernoulli on float32 and float16");
    }
  } else {
    if (!ctx.node.attributes.has("shape")) ctx.fail("attribute 'shape' is required");
    shape = ctx.node.attributes.get_ints("shape", {});
    for (int64_t d : shape) {
      if (d < 0) ctx.fail("attribute 'shape' " + shape_to_string(shape) + " has a negative dim");
    }
  }
  const DType dtype = output_dtype(ctx, distribution, like);
  if (dtype != DType::Float32 && dtype != DType::Bool) {
    ctx.fail("would draw " + std::string(dtype_name(dtype)) +
             " values; wgi draws float32 (and bool for Bernoulli)");
  }
  const Attributes& a = ctx.node.attributes;
  float first = 0, second = 1;
  if (distribution == Distribution::Uniform) {
    const float low = a.get_float("low", 0.0f), high = a.get_float("high", 1.0f);
    if (!(low <= high))
      ctx.fail("attributes low " + std::to_string(low) + " and high " + std::to_string(high) +
               " must satisfy low <= high");
    first = low;
    second = high - low;
  } else if (distribution == Distribution::Normal) {
    first = a.get_float("mean", 0.0f);
    second = a.get_float("scale", 1.0f);
  }
  require_addressable(ctx, "the output", shape);
  OpPlan plan;
  plan.outputs.push_back({dtype, shape});
  const int64_t count = element_count(shape);
  if (count == 0) return plan;
  const bool bernoulli = distribution == Distribution::Bernoulli;
  gpu::DispatchGrid grid = gpu::compute_dispatch_grid(static_cast<uint64_t>(count), 256, ctx.caps.limits);
  KernelLaunch launch;
  launch.program.label = bernoulli                              ? "bernoulli"
                         : distribution == Distribution::Normal ? "random_normal"
                                                                : "random_uniform";
  KernelInterface iface;
  if (bernoulli) iface.read("probability", "f32", TensorRef::input(0));
  const char* out_type = dtype == DType::Bool ? "u32" : "f32";
  iface.read_write("y", out_type, TensorRef::output(0))
      .uniforms({{"count", UniformType::U32},
                 {"seed", UniformType::U32},
                 {"a", UniformType::F32},    // uniform: low; normal: mean
                 {"b", UniformType::F32}});  // uniform: high - low; normal: scale
  launch.program.wgsl =
      iface.load_wgsl("random/random.wgsl", {{"BERNOULLI", bernoulli ? "1" : "0"},
                                             {"NORMAL", distribution == Distribution::Normal ? "1" : "0"},
                                             {"UNIFORM", distribution == Distribution::Uniform ? "1" : "0"},
                                             {"OUT_TYPE", out_type}});
  launch.program.constants = {{"WG_SIZE", grid.workgroup_size}};
  iface.bind(launch);
  launch.uniform = iface.values()
                       .u32("count", static_cast<uint32_t>(count))
                       .u32("seed", seed)
                       .f32("a", first)
                       .f32("b", second)
                       .bytes();
  launch.groups = grid.groups;
  plan.launches.push_back(std::move(launch));
  return plan;
}

}  // namespace

void register_random_ops(OpRegistry& registry) {
  struct RandomOp {
    const char* op_type;
    int since;
    Distribution distribution;
    bool like;
  };
  for (const RandomOp& op : {RandomOp{"RandomUniform", 1, Distribution::Uniform, false},
                             RandomOp{"RandomNormal", 1, Distribution::Normal, false},
                             RandomOp{"RandomUniformLike", 1, Distribution::Uniform, true},
                             RandomOp{"RandomNormalLike", 1, Distribution::Normal, true},
                             RandomOp{"Bernoulli", 15, Distribution::Bernoulli, true}}) {
    OpHandler handler;
    handler.plan = [op](const PlanContext& ctx) { return plan_random(ctx, op.distribution, op.like); };
    registry.add("", op.op_type, op.since, kLatestOpset, std::move(handler));
  }
}

}  // namespace wgi::ops
