#include "ops/float16.h"

#include <algorithm>
#include <cstring>

namespace wgi::ops {

namespace {

// float16 constants larger than this are not widened for a float32 plan or host fold: such a plan sees the
// input as computed at run time (read through its float32 scratch), as it would any large tensor. Values a
// plan must know (shapes, clip bounds, pads, scales) are far smaller.
constexpr int64_t kMaxWidenedElements = int64_t{1} << 20;
// Host folds widen up to the largest tensor any op folds in float32 (data_movement_internal.h,
// elementwise_binary.cpp), so that e.g. a Transpose of a float16 weight folds as a float32 one does.
constexpr int64_t kMaxWidenedFoldElements = int64_t{1} << 24;

bool any_float16_input(const PlanContext& ctx) {
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (ctx.has_input(i) && ctx.input(i).dtype == DType::Float16) return true;
  }
  return false;
}

// Whether the node's float outputs are float16: its first floating-point input is (see float16.h).
bool float_outputs_are_float16(const PlanContext& ctx) {
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (!ctx.has_input(i)) continue;
    const DType d = ctx.input(i).dtype;
    if (d == DType::Float16) return true;
    if (d == DType::Float32) return false;
  }
  return false;
}

uint64_t float32_bytes(const Shape& shape) {
  return std::max<uint64_t>(4, 4 * static_cast<uint64_t>(element_count(shape)));
}

// The node as a float32 plan sees it: float16 inputs (outside `native_inputs`) typed float32, their small
// constant values widened into `widened` (reserved, so the pointers stay valid).
PlanContext float32_view(const PlanContext& ctx, uint32_t native_inputs, uint32_t widened_inputs,
                         std::vector<Tensor>& widened, std::vector<bool>& converted) {
  PlanContext inner = ctx;
  const size_t n = ctx.input_count();
  inner.constant_inputs.resize(n, nullptr);
  widened.reserve(2 * n);  // with the host fold's own widened values
  converted.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (!ctx.has_input(i) || ctx.input(i).dtype != DType::Float16) continue;
    if (i < 32 && (native_inputs >> i & 1u)) continue;
    converted[i] = true;
    inner.inputs[i]->dtype = DType::Float32;
    const Tensor* value = ctx.constant(i);
    inner.constant_inputs[i] = nullptr;
    const bool always = i < 32 && (widened_inputs >> i & 1u);
    if (value && (always || value->element_count() <= kMaxWidenedElements)) {
      widened.push_back(widen_float16(*value));
      inner.constant_inputs[i] = &widened.back();
    }
  }
  return inner;
}

}  // namespace

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while (!(mantissa & 0x400u));
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mantissa & 0x3ffu) << 13;
    }
  } else {
    bits = sign | (exponent + 127 - 15) << 23 | mantissa << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {                                               // half subnormal or zero
    if (abs < 0x33000000u) return sign;                                  // below half the smallest subnormal
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // to units of 2^-24
    uint32_t h = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = ((abs >> 13) - (112u << 10));
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

Tensor widen_float16(const Tensor& halves) {
  Tensor out(DType::Float32, halves.shape());
  const size_t n = static_cast<size_t>(halves.element_count());
  const std::byte* src = halves.bytes().data();
  auto dst = out.data<float>();
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = half_to_float(h);
  }
  return out;
}

Tensor narrow_to_float16(const Tensor& floats) {
  Tensor out(DType::Float16, floats.shape());
  const size_t n = static_cast<size_t>(floats.element_count());
  auto src = floats.data<float>();
  std::byte* dst = out.bytes().data();
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = float_to_half(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
  return out;
}

OpPlan plan_with_float16(const PlanContext& ctx, const std::function<OpPlan(const PlanContext&)>& plan_f32,
                         uint32_t native_inputs, uint32_t widened_inputs) {
  if (!any_float16_input(ctx)) return plan_f32(ctx);
  std::vector<Tensor> widened;
  std::vector<bool> converted;
  const PlanContext inner = float32_view(ctx, native_inputs, widened_inputs, widened, converted);
  OpPlan body = plan_f32(inner);
  const size_t n = ctx.input_count();

  // Unpack only the float16 inputs the body's kernels read (Shape, or a Reshape's alias, reads none).
  OpPlan plan;
  std::vector<int> scratch_of(n, -1);
  for (const KernelLaunch& launch : body.launches) {
    for (const TensorRef& ref : launch.bindings) {
      if (ref.kind != TensorRef::Kind::Input || ref.index >= n || !converted[ref.index] ||
          scratch_of[ref.index] >= 0)
        continue;
      const TensorDesc& desc = ctx.input(ref.index);
      const TensorRef unpacked = plan.add_scratch(float32_bytes(desc.shape));
      scratch_of[ref.index] = static_cast<int>(unpacked.index);
      if (element_count(desc.shape) > 0)
        plan.launches.push_back(cast_f16_launch(ctx, desc, DType::Float32, ref, unpacked));
    }
  }
  const uint32_t body_scratch = static_cast<uint32_t>(plan.scratch_bytes.size());
  plan.scratch_bytes.insert(plan.scratch_bytes.end(), body.scratch_bytes.begin(), body.scratch_bytes.end());

  // Float outputs of a float16 node are computed in float32 scratch buffers and packed.
  const bool float16_outputs = float_outputs_are_float16(ctx);
  std::vector<int> packed_from(body.outputs.size(), -1);
  for (size_t o = 0; o < body.outputs.size(); ++o) {
    if (o == 0 && body.alias_output_to_input >= 0) {
      body.outputs[0].dtype = ctx.input(static_cast<size_t>(body.alias_output_to_input)).dtype;
      continue;
    }
    if (!float16_outputs || body.outputs[o].dtype != DType::Float32) continue;
    packed_from[o] = static_cast<int>(plan.add_scratch(float32_bytes(body.outputs[o].shape)).index);
  }

  for (KernelLaunch& launch : body.launches) {
    for (TensorRef& ref : launch.bindings) {
      if (ref.kind == TensorRef::Kind::Input && ref.index < n && scratch_of[ref.index] >= 0) {
        ref = TensorRef::scratch(static_cast<uint32_t>(scratch_of[ref.index]));
      } else if (ref.kind == TensorRef::Kind::Scratch) {
        ref.index += body_scratch;
      } else if (ref.kind == TensorRef::Kind::Output && ref.index < packed_from.size() &&
                 packed_from[ref.index] >= 0) {
        ref = TensorRef::scratch(static_cast<uint32_t>(packed_from[ref.index]));
      }
    }
    plan.launches.push_back(std::move(launch));
  }
  for (size_t o = 0; o < body.outputs.size(); ++o) {
    if (packed_from[o] < 0) continue;
    if (element_count(body.outputs[o].shape) > 0) {
      plan.launches.push_back(cast_f16_launch(ctx, body.outputs[o], DType::Float16,
                                              TensorRef::scratch(static_cast<uint32_t>(packed_from[o])),
                                              TensorRef::output(static_cast<uint32_t>(o))));
    }
    body.outputs[o].dtype = DType::Float16;
  }
  plan.outputs = std::move(body.outputs);
  plan.constants = std::move(body.constants);
  plan.alias_output_to_input = body.alias_output_to_input;
  return plan;
}

OpHandler with_float16(OpHandler handler) {
  if (handler.plans_float16) return handler;
  OpHandler wrapped = handler;
  wrapped.plans_float16 = true;
  wrapped.plan = [plan = std::move(handler.plan)](const PlanContext& ctx) {
    return plan_with_float16(ctx, plan);
  };
  if (!handler.evaluate_on_host) return wrapped;
  wrapped.evaluate_on_host = [evaluate = std::move(handler.evaluate_on_host)](
                                 const PlanContext& ctx, std::span<const Tensor* const> host) {
    if (!any_float16_input(ctx)) return evaluate(ctx, host);
    std::vector<Tensor> widened;
    std::vector<bool> converted;
    PlanContext inner = float32_view(ctx, 0, 0, widened, converted);
    std::vector<const Tensor*> values(host.begin(), host.end());
    for (size_t i = 0; i < values.size() && i < converted.size(); ++i) {
      if (converted[i] && values[i]) {
        values[i] = nullptr;
        // The same widened tensor when the value is the plan-time constant; else widened here.
        if (i < ctx.constant_inputs.size() && ctx.constant_inputs[i] == host[i] && inner.constant_inputs[i]) {
          values[i] = inner.constant_inputs[i];
        } else if (host[i]->element_count() <= kMaxWidenedFoldElements) {
          widened.push_back(widen_float16(*host[i]));
          values[i] = &widened.back();
        }
        if (i < ctx.constant_inputs.size() && ctx.constant_inputs[i] == host[i])
          inner.constant_inputs[i] = values[i];
      }
    }
    std::vector<Tensor> results = evaluate(inner, values);
    if (float_outputs_are_float16(ctx)) {
      for (Tensor& t : results) {
        if (t.dtype() == DType::Float32) t = narrow_to_float16(t);
      }
    }
    return results;
  };
  return wrapped;
}

}  // namespace wgi::ops
