// GEMM tuning as the planner sees it: exact problems, the configuration measured fastest for each on one
// device, and the hook through which append_gemm_launches / make_gemm_launch consult them (PlanContext::
// gemm_tuning). Pure: no files, no GPU. The cache file, the adapter key and the measuring live in
// src/runtime/ (tuning_cache.h, gemm_tuner.h); docs/tuning.md describes the whole.
//
// A tuned entry is a preference, never a force: node attributes (wgi.kernel, wgi.gemm_*) win, and an entry
// the device cannot run (checked exactly as a forced choice would be) is ignored in favour of the rules.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "ops/gemm_launch.h"

namespace wgi::ops {

// How B is stored: given [K, N] or [N, K] at run time, or a constant the op prepacks in the layout the chosen
// kernel wants (prepack_b_as_nk).
enum class GemmBLayout { KN, NK, Packed };
const char* gemm_b_layout_name(GemmBLayout layout);  // "kn", "nk", "packed"
std::optional<GemmBLayout> gemm_b_layout_from_name(std::string_view name);

// One GEMM problem, exactly: sizes, operand layouts, which operands have a matrix per batch entry (the other
// is broadcast), and whether the call site may split K. The epilogue (alpha, beta * C, a fused Relu/Clip) is
// not part of it: every kernel runs the same epilogue code at the same cost, so it does not change which
// configuration wins.
struct GemmProblemKey {
  uint32_t m = 0, n = 0, k = 0, batch = 1;
  bool a_km = false;  // A stored [K, M]
  GemmBLayout b = GemmBLayout::KN;
  bool a_batched = false, b_batched = false;
  // The call site can split K: append_gemm_launches (MatMul, Gemm, attention, 1x1 conv); not
  // make_gemm_launch.
  bool splittable = true;
  auto operator<=>(const GemmProblemKey&) const = default;
};
// The key of `spec` as planned from a call site that can (or cannot) split K.
GemmProblemKey gemm_problem_key(const GemmLaunchSpec& spec, bool splittable);
// A spec with the key's sizes and layouts (contiguous batch strides, TensorRefs A = input 0, B = input 1 or
// constant 0 when packed, out = output 0), as the tuner launches the problem.
GemmLaunchSpec gemm_problem_spec(const GemmProblemKey& key);
// "196x3072x768", then " batch 12" and the layouts where they are not the plain A [M,K], B [K,N]: e.g.
// "196x768x768 B=weight", "32x32x36864 batch 4 B=[N,K] no-split".
std::string to_string(const GemmProblemKey& key);

// A configuration: the knobs forcing would set. Fields that do not apply to the kernel are 0 (tile_k and
// stages outside fast128/fast64, gemv_lanes outside gemv); split_k is 1 for no split.
struct GemmChoice {
  GemmKernel kernel = GemmKernel::Tiled;
  uint32_t tile_k = 0;
  uint32_t stages = 0;
  uint32_t split_k = 1;
  uint32_t gemv_lanes = 0;
  uint32_t head_rows = 0;  // the wave tail's first launch (GemmPlanned::head_rows); 0: one launch
  bool operator==(const GemmChoice&) const = default;
};
// "fast64 k16 s2", "fast64 k16 s1 split 3", "gemv 32 lanes", "vec4", "tiled split 64", "fast128 k8 s2 head
// 1408".
std::string to_string(const GemmChoice& choice);
// Empty if the knob values are ones forcing accepts (and the fields that do not apply are 0); else why not.
std::string gemm_choice_problem(const GemmChoice& choice);
// The choice a planned GEMM runs with.
GemmChoice gemm_choice_of(const GemmPlanned& planned);

// `spec` planned with `choice` forced, if the device can run it: nullopt with `why` set otherwise (the same
// checks and messages as forcing through attributes). A split choice needs a splittable call site.
std::optional<GemmPlanned> plan_gemm_choice(const GemmLaunchSpec& spec, const GemmChoice& choice,
                                            const gpu::Capabilities& caps, bool splittable, std::string& why);

// Tuned choices of one device (one adapter, driver and kernel version: runtime::TuningCache selects them).
class GemmTuningTable {
 public:
  const GemmChoice* find(const GemmProblemKey& key) const;
  void set(const GemmProblemKey& key, const GemmChoice& choice) { entries_[key] = choice; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::map<GemmProblemKey, GemmChoice>& entries() const { return entries_; }

 private:
  std::map<GemmProblemKey, GemmChoice> entries_;
};

// One GEMM as it was planned, for the observer.
struct GemmProblemUse {
  GemmProblemKey problem;
  const NodeInfo* node = nullptr;
  GemmChoice planned;       // what the plan runs
  bool from_table = false;  // the table's entry was applied
  bool forced = false;      // node attributes forced a kernel or knob (the table was not consulted)
  std::string ignored;      // the table had an entry the device cannot run: why (the rules were used)
};

// The planner's hook (PlanContext::gemm_tuning).
struct GemmTuning {
  const GemmTuningTable* table = nullptr;  // null: no preferences
  // Called once per GEMM a node plan contains (not for node plans reused from an earlier plan): tuning
  // collects the problems a model plans this way, sessions count the tuned ones.
  std::function<void(const GemmProblemUse&)> observe;
};

// A hash of the GEMM kernels' WGSL sources (src/kernels/linear/, common/): a tuning cache keeps it with its
// entries, and entries measured on other kernel sources are stale (ignored, re-tuned by `wgi tune`).
std::string gemm_kernels_fingerprint();

}  // namespace wgi::ops
