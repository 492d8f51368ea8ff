// The data-movement family, part 1: ops that only reinterpret or describe their input. Reshape, Flatten,
// Squeeze, Unsqueeze, Identity and Dropout (inference) share their input's memory (alias_output_to_input, no
// kernel); Shape, Size, ConstantOfShape and Range compute their output on the host. All of them fold on the
// host when their inputs are known, which is what turns torch.onnx's Shape -> Gather -> Unsqueeze -> Concat
// -> Reshape chains into constants before any GPU work.
//
// The other parts: data_movement_copy.cpp (Transpose, Concat, Split, Slice, Expand, Tile, Depth/SpaceToDepth)
// and data_movement_gather.cpp (Gather, GatherElements, Pad).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/reshape.h"

namespace wgi::ops {

namespace data_movement {

namespace {

// A reshape-like op: output 0 is input 0's bytes with the shape `shape_of` computes.
OpHandler alias_handler(std::function<Shape(const PlanContext&)> shape_of) {
  OpHandler handler;
  handler.plan = [shape_of](const PlanContext& ctx) {
    OpPlan plan;
    plan.outputs.push_back({ctx.input(0).dtype, shape_of(ctx)});
    plan.alias_output_to_input = 0;
    return plan;
  };
  handler.evaluate_on_host = [shape_of](const PlanContext& ctx,
                                        std::span<const Tensor* const> host) -> std::vector<Tensor> {
    if (host.empty() || !host[0] || host[0]->element_count() > kMaxHostFoldElements) return {};
    return {with_shape(*host[0], shape_of(ctx))};
  };
  return handler;
}

Shape reshape_shape(const PlanContext& ctx) {
  const std::vector<int64_t> target = known_ints(ctx, 1, "the target shape");
  const bool allowzero = ctx.node.opset >= 14 && ctx.node.attributes.get_int("allowzero", 0) != 0;
  std::string why;
  const std::optional<Shape> out = reshape_result(ctx.input(0).shape, target, allowzero, &why);
  if (!out) ctx.fail(why);
  return *out;
}

Shape flatten_shape(const PlanContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  const int64_t axis = normalize_axis(ctx, ctx.node.attributes.get_int("axis", 1), rank, "axis", true);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= in[static_cast<size_t>(d)];
  return {outer, inner};
}

// Squeeze/Unsqueeze axes: an attribute before opset 13, an input from 13. nullopt: not given.
std::optional<std::vector<int64_t>> axes_of(const PlanContext& ctx) {
  if (ctx.node.opset < 13) {
    if (!ctx.node.attributes.has("axes")) return std::nullopt;
    return ctx.node.attributes.get_ints("axes", {});
  }
  if (!ctx.has_input(1)) return std::nullopt;
  return known_ints(ctx, 1, "axes");
}

std::vector<int64_t> unique_axes(const PlanContext& ctx, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(ctx, a, rank, "axes " + shape_to_string(axes) + ": axis");
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      ctx.fail("axes " + shape_to_string(axes) + " name axis " + std::to_string(n) + " twice");
    }
    out.push_back(n);
  }
  return out;
}

Shape squeeze_shape(const PlanContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const auto axes = axes_of(ctx);
  Shape out;
  // Empty axes squeeze every unit dim too, as ONNX Runtime reads them.
  if (!axes || axes->empty()) {
    for (int64_t d : in) {
      if (d != 1) out.push_back(d);
    }
    return out;
  }
  const std::vector<int64_t> drop = unique_axes(ctx, *axes, static_cast<int64_t>(in.size()));
  for (size_t d = 0; d < in.size(); ++d) {
    if (std::find(drop.begin(), drop.end(), static_cast<int64_t>(d)) == drop.end()) {
      out.push_back(in[d]);
    } else if (in[d] != 1) {
      ctx.fail("cannot squeeze axis " + std::to_string(d) + " of " + shape_to_string(in) + ": its size is " +
               std::to_string(in[d]) + ", not 1");
    }
  }
  return out;
}

Shape unsqueeze_shape(const PlanContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const auto axes = axes_of(ctx);
  if (!axes) {
    ctx.fail(ctx.node.opset < 13 ? std::string("the axes attribute is required")
                                 : std::string("input 1 (axes) is required"));
  }
  const int64_t out_rank = static_cast<int64_t>(in.size() + axes->size());
  const std::vector<int64_t> add = unique_axes(ctx, *axes, out_rank);
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    out.push_back(std::find(add.begin(), add.end(), d) != add.end() ? 1 : in[next++]);
  }
  return out;
}

Shape same_shape(const PlanContext& ctx) {
  return ctx.input(0).shape;
}

// Inference Dropout: the output is the input; the optional mask is all true (opset 7-9: all ones of the
// input's type).
bool dropout_has_mask(const PlanContext& ctx) {
  return ctx.node.output_names.size() > 1;
}

DType dropout_mask_dtype(const PlanContext& ctx) {
  return ctx.node.opset >= 10 ? DType::Bool : ctx.input(0).dtype;
}

void check_dropout_inference(const PlanContext& ctx) {
  if (ctx.node.opset < 12 || !ctx.has_input(2)) return;
  const Tensor* mode = ctx.constant(2);
  if (!mode) {
    ctx.fail(ctx.input_name(2) +
             " (training_mode) is computed at run time; wgi runs Dropout for inference "
             "only and needs training_mode known to be false");
  }
  if (mode->element_count() != 1 || mode->dtype() != DType::Bool) {
    ctx.fail(ctx.input_name(2) + " (training_mode) must be one bool, found " +
             std::string(dtype_name(mode->dtype())) + " " + shape_to_string(mode->shape()));
  }
  if (mode->bytes()[0] == std::byte{0}) return;
  // Training with ratio 0 drops nothing: the same as inference.
  const Tensor* ratio = ctx.has_input(1) ? ctx.constant(1) : nullptr;
  if (ratio && ratio->dtype() == DType::Float32 && ratio->element_count() == 1 &&
      ratio->data<float>()[0] == 0.0f) {
    return;
  }
  ctx.fail("training_mode is true with a " +
           std::string(!ctx.has_input(1) ? "default ratio of 0.5"
                       : ratio           ? "nonzero ratio"
                                         : "ratio computed at run time") +
           "; wgi runs Dropout for inference only (no random mask)");
}

OpHandler dropout_handler() {
  OpHandler handler;
  handler.plan = [](const PlanContext& ctx) {
    check_dropout_inference(ctx);
    OpPlan plan;
    plan.outputs.push_back(ctx.input(0));
    plan.alias_output_to_input = 0;
    if (dropout_has_mask(ctx)) {
      const DType mask = dropout_mask_dtype(ctx);
      plan.outputs.push_back({mask, ctx.input(0).shape});
      if (output_requested(ctx, 1)) {
        if (mask == DType::Float16) require_device_elements(ctx, 0);
        add_fill_launch(ctx, plan, TensorRef::output(1), element_count(ctx.input(0).shape),
                        device_bits(mask, 1.0));
      }
    }
    return plan;
  };
  handler.evaluate_on_host = [](const PlanContext& ctx,
                                std::span<const Tensor* const> host) -> std::vector<Tensor> {
    if (host.empty() || !host[0] || host[0]->element_count() > kMaxHostFoldElements) return {};
    check_dropout_inference(ctx);
    std::vector<Tensor> out{*host[0]};
    if (dropout_has_mask(ctx)) {
      const DType mask = dropout_mask_dtype(ctx);
      Tensor ones(mask, host[0]->shape());
      const Tensor one = scalar_tensor(mask, 1.0);
      const size_t es = dtype_size(mask);
      for (int64_t i = 0; i < ones.element_count(); ++i) {
        std::memcpy(ones.bytes().data() + static_cast<size_t>(i) * es, one.bytes().data(), es);
      }
      out.push_back(std::move(ones));
    }
    return out;
  };
  return handler;
}

// An op whose output is computed on the host from the inputs' descriptions and known values: folded, or
// planned as a constant copied into the output (node tests and unfolded graphs still get a GPU output).
OpHandler host_computed_handler(std::function<Tensor(const PlanContext&)> compute) {
  OpHandler handler;
  handler.plan = [compute](const PlanContext& ctx) {
    Tensor value = compute(ctx);
    OpPlan plan;
    plan.outputs.push_back({value.dtype(), value.shape()});
    add_constant_output(ctx, plan, value, 0);
    return plan;
  };
  handler.evaluate_on_host = [compute](const PlanContext& ctx, std::span<const Tensor* const>) {
    return std::vector<Tensor>{compute(ctx)};
  };
  return handler;
}

Tensor shape_value(const PlanContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t start = 0, end = rank;
  if (ctx.node.opset >= 15) {
    start = ctx.node.attributes.get_int("start", 0);
    end = ctx.node.attributes.get_int("end", rank);
  }
  auto clamp_index = [rank](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank); };
  start = clamp_index(start);
  end = clamp_index(end);
  Shape dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(in[static_cast<size_t>(d)]);
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
}

Tensor size_value(const PlanContext& ctx) {
  return Tensor::from_vector<int64_t>({}, {element_count(ctx.input(0).shape)});
}

// ConstantOfShape's output shape and its one value (default: float32 zero).
std::pair<Shape, Tensor> constant_of_shape_spec(const PlanContext& ctx) {
  const std::vector<int64_t> shape = known_ints(ctx, 0, "the output shape");
  if (ctx.input(0).shape.size() != 1) {
    ctx.fail("input 0 (the output shape) must be 1-D, found " + shape_to_string(ctx.input(0).shape));
  }
  for (int64_t d : shape) {
    if (d < 0) ctx.fail("the output shape " + shape_to_string(shape) + " has a negative dim");
  }
  const Tensor* value = ctx.node.attributes.get_tensor("value");
  Tensor v = value ? *value : scalar_tensor(DType::Float32, 0.0);
  if (v.element_count() != 1) {
    ctx.fail("the value attribute has " + std::to_string(v.element_count()) + " elements; expected one");
  }
  return {shape, v};
}

OpHandler constant_of_shape_handler() {
  OpHandler handler;
  handler.plan = [](const PlanContext& ctx) {
    auto [shape, value] = constant_of_shape_spec(ctx);
    OpPlan plan;
    plan.outputs.push_back({value.dtype(), shape});
    add_fill_launch(ctx, plan, TensorRef::output(0), element_count(shape),
                    device_bits(ctx, value, "the value attribute"));
    return plan;
  };
  handler.evaluate_on_host = [](const PlanContext& ctx,
                                std::span<const Tensor* const> host) -> std::vector<Tensor> {
    if (host.empty() || !host[0]) return {};
    auto [shape, value] = constant_of_shape_spec(ctx);
    if (element_count(shape) > kMaxHostFoldElements) return {};
    Tensor out(value.dtype(), shape);
    const size_t es = dtype_size(value.dtype());
    for (int64_t i = 0; i < out.element_count(); ++i) {
      std::memcpy(out.bytes().data() + static_cast<size_t>(i) * es, value.bytes().data(), es);
    }
    return {out};
  };
  return handler;
}

// Range's scalars must be known when planning: they decide the output's length.
double range_scalar(const PlanContext& ctx, size_t i, const char* what) {
  const TensorDesc& d = ctx.input(i);
  if (d.dtype != ctx.input(0).dtype) {
    ctx.fail(ctx.input_name(i) + " (" + what + ") has type " + std::string(dtype_name(d.dtype)) +
             "; it must have start's type " + std::string(dtype_name(ctx.input(0).dtype)));
  }
  const Tensor* t = ctx.constant(i);
  if (!t) {
    ctx.fail(ctx.input_name(i) + " (" + what +
             ") is computed at run time; wgi needs Range's scalars known when the model is planned");
  }
  if (t->element_count() != 1) {
    ctx.fail(ctx.input_name(i) + " (" + what + ") must be a scalar, found " + shape_to_string(t->shape()));
  }
  switch (t->dtype()) {
    case DType::Float32:
      return t->data<float>()[0];
    case DType::Int64:
      return static_cast<double>(t->data<int64_t>()[0]);
    case DType::Int32:
      return t->data<int32_t>()[0];
    default:
      ctx.fail(ctx.input_name(i) + " (" + what + ") has type " + std::string(dtype_name(t->dtype())) +
               "; wgi's Range takes float32, int64 or int32");
  }
}

Tensor range_value(const PlanContext& ctx) {
  const double start = range_scalar(ctx, 0, "start");
  const double limit = range_scalar(ctx, 1, "limit");
  const double delta = range_scalar(ctx, 2, "delta");
  if (delta == 0) ctx.fail("delta is 0");
  const DType dtype = ctx.input(0).dtype;
  int64_t n = 0;
  if (dtype == DType::Float32) {
    n = static_cast<int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
  } else {
    // Exact integer arithmetic (int64 values beyond 2^53 would round in double).
    const int64_t s = ctx.constant(0)->dtype() == DType::Int64 ? ctx.constant(0)->data<int64_t>()[0]
                                                               : static_cast<int64_t>(start);
    const int64_t l = ctx.constant(1)->dtype() == DType::Int64 ? ctx.constant(1)->data<int64_t>()[0]
                                                               : static_cast<int64_t>(limit);
    const int64_t d = ctx.constant(2)->dtype() == DType::Int64 ? ctx.constant(2)->data<int64_t>()[0]
                                                               : static_cast<int64_t>(delta);
    const int64_t span = l - s;
    n = d > 0 ? (span > 0 ? (span + d - 1) / d : 0) : (span < 0 ? (-span + -d - 1) / -d : 0);
    if (n > kMaxHostFoldElements) ctx.fail("Range of " + std::to_string(n) + " elements is too long");
    if (dtype == DType::Int64) {
      std::vector<int64_t> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = s + i * d;
      return Tensor::from_vector<int64_t>({n}, v);
    }
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<int32_t>(s + i * d);
    return Tensor::from_vector<int32_t>({n}, v);
  }
  if (n > kMaxHostFoldElements) ctx.fail("Range of " + std::to_string(n) + " elements is too long");
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(start + static_cast<double>(i) * delta);
  return Tensor::from_vector<float>({n}, v);
}

}  // namespace

void register_shape_ops(OpRegistry& registry) {
  registry.add("", "Reshape", 5, kLatestOpset, alias_handler(reshape_shape));
  registry.add("", "Flatten", 1, kLatestOpset, alias_handler(flatten_shape));
  registry.add("", "Squeeze", 1, kLatestOpset, alias_handler(squeeze_shape));
  registry.add("", "Unsqueeze", 1, kLatestOpset, alias_handler(unsqueeze_shape));
  registry.add("", "Identity", 1, kLatestOpset, alias_handler(same_shape));
  registry.add("", "Dropout", 7, kLatestOpset, dropout_handler());
  registry.add("", "Shape", 1, kLatestOpset, host_computed_handler(shape_value));
  registry.add("", "Size", 1, kLatestOpset, host_computed_handler(size_value));
  registry.add("", "ConstantOfShape", 9, kLatestOpset, constant_of_shape_handler());
  OpHandler range = host_computed_handler(range_value);
  // Range folds only when its scalars are known; otherwise plan says why.
  range.evaluate_on_host = [](const PlanContext& ctx,
                              std::span<const Tensor* const> host) -> std::vector<Tensor> {
    if (host.size() < 3 || !host[0] || !host[1] || !host[2]) return {};
    return {range_value(ctx)};
  };
  registry.add("", "Range", 11, kLatestOpset, std::move(range));
}

}  // namespace data_movement

std::optional<Shape> reshape_result(const Shape& in, std::span<const int64_t> target, bool allowzero,
                                    std::string* why) {
  auto fail = [&](const std::string& message) -> std::optional<Shape> {
    if (why) *why = message;
    return std::nullopt;
  };
  const std::string target_text = shape_to_string(std::vector<int64_t>(target.begin(), target.end()));
  Shape out;
  std::optional<size_t> inferred;
  bool has_zero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    const int64_t v = target[i];
    if (v == -1) {
      if (inferred) {
        return fail("the target shape " + target_text + " has more than one -1 (positions " +
                    std::to_string(*inferred) + " and " + std::to_string(i) + ")");
      }
      inferred = i;
      out.push_back(1);
    } else if (v == 0 && !allowzero) {
      if (i >= in.size()) {
        return fail("the target shape " + target_text + " has 0 (copy the input's dim) at position " +
                    std::to_string(i) + ", but the input " + shape_to_string(in) + " has rank " +
                    std::to_string(in.size()));
      }
      out.push_back(in[i]);
    } else if (v < 0) {
      return fail("the target shape " + target_text + " has " + std::to_string(v) + " at position " +
                  std::to_string(i) + "; dims must be >= 0 or -1");
    } else {
      has_zero = has_zero || v == 0;
      out.push_back(v);
    }
  }
  if (allowzero && has_zero && inferred) {
    return fail("the target shape " + target_text + " has both 0 and -1, which allowzero=1 forbids");
  }
  const int64_t n = element_count(in);
  const int64_t known = element_count(out);
  if (inferred) {
    if (known == 0 || n % known != 0) {
      return fail("cannot infer the -1 in the target shape " + target_text + " for an input of " +
                  shape_to_string(in) + " (" + std::to_string(n) + " elements)");
    }
    out[*inferred] = n / known;
  } else if (known != n) {
    return fail("the target shape " + target_text + " has " + std::to_string(known) +
                " elements; the input " + shape_to_string(in) + " has " + std::to_string(n));
  }
  return out;
}

void register_data_movement_ops(OpRegistry& registry) {
  data_movement::register_shape_ops(registry);
  data_movement::register_copy_ops(registry);
  data_movement::register_gather_ops(registry);
}

}  // namespace wgi::ops
