#include "ops/gemm_tuning.h"

#include <algorithm>
#include <cstdio>

#include "kernels/wgsl_library.h"

namespace wgi::ops {

namespace {

bool any_nonzero(const std::array<uint32_t, 4>& strides) {
  return std::any_of(strides.begin(), strides.end(), [](uint32_t s) { return s != 0; });
}

}  // namespace

const char* gemm_b_layout_name(GemmBLayout layout) {
  switch (layout) {
    case GemmBLayout::KN:
      return "kn";
    case GemmBLayout::NK:
      return "nk";
    case GemmBLayout::Packed:
      return "packed";
  }
  return "?";
}

std::optional<GemmBLayout> gemm_b_layout_from_name(std::string_view name) {
  for (GemmBLayout l : {GemmBLayout::KN, GemmBLayout::NK, GemmBLayout::Packed}) {
    if (name == gemm_b_layout_name(l)) return l;
  }
  return std::nullopt;
}

GemmProblemKey gemm_problem_key(const GemmLaunchSpec& spec, bool splittable) {
  GemmProblemKey key;
  key.m = spec.m;
  key.n = spec.n;
  key.k = spec.k;
  key.batch = spec.batch;
  key.a_km = spec.a_km;
  key.b = spec.b_prepacked ? GemmBLayout::Packed : spec.b_nk ? GemmBLayout::NK : GemmBLayout::KN;
  key.a_batched = spec.batch > 1 && any_nonzero(spec.a_batch_strides);
  key.b_batched = spec.batch > 1 && any_nonzero(spec.b_batch_strides);
  key.splittable = splittable;
  return key;
}

GemmLaunchSpec gemm_problem_spec(const GemmProblemKey& key) {
  GemmLaunchSpec spec;
  spec.m = key.m;
  spec.n = key.n;
  spec.k = key.k;
  spec.batch = std::max<uint32_t>(1, key.batch);
  spec.batch_dims = {1, 1, 1, spec.batch};
  if (spec.batch > 1) {
    spec.a_batch_strides[3] = key.a_batched ? key.m * key.k : 0;
    spec.b_batch_strides[3] = key.b_batched ? key.k * key.n : 0;
  }
  spec.a_km = key.a_km;
  spec.b_nk = key.b != GemmBLayout::KN;
  spec.b_prepacked = key.b == GemmBLayout::Packed;
  spec.a = TensorRef::input(0);
  spec.b = spec.b_prepacked ? TensorRef::constant(0) : TensorRef::input(1);
  spec.out = TensorRef::output(0);
  return spec;
}

std::string to_string(const GemmProblemKey& key) {
  std::string s = std::to_string(key.m) + "x" + std::to_string(key.n) + "x" + std::to_string(key.k);
  if (key.batch > 1) {
    s += " batch " + std::to_string(key.batch);
    if (!key.a_batched) s += " A=shared";
    if (!key.b_batched) s += " B=shared";
  }
  if (key.a_km) s += " A=[K,M]";
  switch (key.b) {
    case GemmBLayout::KN:
      break;
    case GemmBLayout::NK:
      s += " B=[N,K]";
      break;
    case GemmBLayout::Packed:
      s += " B=weight";
      break;
  }
  if (!key.splittable) s += " no-split";
  return s;
}

std::string to_string(const GemmChoice& c) {
  std::string s = gemm_kernel_name(c.kernel);
  if (is_fast_gemm_kernel(c.kernel)) s += " k" + std::to_string(c.tile_k) + " s" + std::to_string(c.stages);
  if (c.kernel == GemmKernel::Gemv) s += " " + std::to_string(c.gemv_lanes) + " lanes";
  if (c.split_k > 1) s += " split " + std::to_string(c.split_k);
  if (c.head_rows > 0) s += " head " + std::to_string(c.head_rows);
  return s;
}

std::string gemm_choice_problem(const GemmChoice& c) {
  if (c.kernel == GemmKernel::Auto) return "the kernel is 'auto'";
  if (is_fast_gemm_kernel(c.kernel)) {
    if (!valid_gemm_tile_k(c.tile_k)) return "tile_k " + std::to_string(c.tile_k) + " (expected 8, 16 or 32)";
    if (!valid_gemm_stages(c.stages)) return "stages " + std::to_string(c.stages) + " (expected 1 or 2)";
  } else if (c.tile_k != 0 || c.stages != 0) {
    return std::string("tile_k and stages apply to fast128 and fast64 only, not ") +
           gemm_kernel_name(c.kernel);
  }
  if (c.kernel == GemmKernel::Gemv) {
    if (!valid_gemv_lanes(c.gemv_lanes))
      return "gemv_lanes " + std::to_string(c.gemv_lanes) + " (expected a power of two from 4 to 256)";
  } else if (c.gemv_lanes != 0) {
    return std::string("gemv_lanes applies to gemv only, not ") + gemm_kernel_name(c.kernel);
  }
  if (!valid_gemm_split_k(c.split_k))
    return "split_k " + std::to_string(c.split_k) + " (expected 1 to 65535)";
  return "";
}

GemmChoice gemm_choice_of(const GemmPlanned& planned) {
  GemmChoice c;
  c.kernel = planned.config.kernel;
  if (is_fast_gemm_kernel(c.kernel)) {
    c.tile_k = planned.config.tile_k;
    c.stages = planned.config.stages;
  }
  if (c.kernel == GemmKernel::Gemv) c.gemv_lanes = planned.config.gemv_lanes;
  c.split_k = std::max<uint32_t>(1, planned.splits);
  c.head_rows = planned.head_rows;
  return c;
}

std::optional<GemmPlanned> plan_gemm_choice(const GemmLaunchSpec& spec, const GemmChoice& choice,
                                            const gpu::Capabilities& caps, bool splittable,
                                            std::string& why) {
  why = gemm_choice_problem(choice);
  if (!why.empty()) return std::nullopt;
  if (choice.split_k > 1 && !splittable) {
    why = "this call site does not split K";
    return std::nullopt;
  }
  GemmLaunchSpec forced = spec;
  forced.kernel = choice.kernel;
  forced.tile_k = choice.tile_k;
  forced.stages = choice.stages;
  forced.gemv_lanes = choice.gemv_lanes;
  forced.split_k = splittable ? choice.split_k : 0;
  forced.head_rows = choice.head_rows > 0 ? choice.head_rows : kGemmOneLaunch;
  try {
    GemmPlanned planned = plan_gemm_rules(forced, caps, splittable);
    // Every knob was forced, so the plan is the choice; anything else would mean the rules moved it.
    if (!(gemm_choice_of(planned) == choice)) {
      why = "planned as " + to_string(gemm_choice_of(planned)) + " instead";
      return std::nullopt;
    }
    return planned;
  } catch (const Error& e) {
    why = e.what();
    return std::nullopt;
  }
}

const GemmChoice* GemmTuningTable::find(const GemmProblemKey& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

std::string gemm_kernels_fingerprint() {
  // FNV-1a over the path and text of every kernel a GEMM launch can include, in embedding order.
  uint64_t h = 0xcbf29ce484222325ULL;
  auto add = [&h](std::string_view bytes) {
    for (char c : bytes) {
      h ^= static_cast<unsigned char>(c);
      h *= 0x100000001b3ULL;
    }
    h ^= 0xff;  // separates consecutive strings
    h *= 0x100000001b3ULL;
  };
  for (const kernels::EmbeddedSource& source : kernels::embedded_sources()) {
    if (source.path.rfind("linear/", 0) != 0 && source.path.rfind("common/", 0) != 0) continue;
    add(source.path);
    add(source.text);
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace wgi::ops
