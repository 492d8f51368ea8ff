#include "ops/internal_ops.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <variant>

#include "ops/op.h"

namespace wgi::ops {

namespace {

constexpr std::initializer_list<const char*> kGemmTuningNames = {
    kGemmKernelAttribute, kGemmTileKAttribute,  kGemmStagesAttribute,
    kGemvLanesAttribute,  kGemmSplitKAttribute, kGemmHeadRowsAttribute};
constexpr std::initializer_list<const char*> kActivationNames = {
    kFusedActivationAttribute, kFusedActivationMinAttribute, kFusedActivationMaxAttribute};
constexpr std::initializer_list<const char*> kResidualNames = {kFusedResidualAttribute};
constexpr std::initializer_list<const char*> kLinearNames = {
    kMatMulTransBAttribute, kMatMulWindowsInAttribute, kMatMulWindowsOutAttribute,
    kForcedKernelAttribute, kSplitColumnsAttribute,    kMatMulLayerNormEpsilonAttribute};
constexpr std::initializer_list<const char*> kConvNames = {kForcedKernelAttribute, kDepthwiseRowsAttribute};
constexpr std::initializer_list<const char*> kNBitsNames = {
    kForcedKernelAttribute, kGemvThreadColumnsAttribute, kSplitColumnsAttribute,
    kMatMulLayerNormEpsilonAttribute};
constexpr std::initializer_list<const char*> kChannelsLastConvNames = {
    kChannelsLastKernelShapeAttribute, kChannelsLastPadsAttribute, kChannelsLastStridesAttribute,
    kChannelsLastHeightAttribute, kChannelsLastWidthAttribute};
constexpr std::initializer_list<const char*> kAttentionNames = {
    kAttentionScaleAttribute,      kAttentionScaleDividesAttribute,    kAttentionKTransposedAttribute,
    kAttentionQkvPackedAttribute,  kAttentionQkvIndicesAttribute,      kAttentionQkvTransposedAttribute,
    kAttentionHeadsViewsAttribute, kAttentionTransposeOutputAttribute, kAttentionOutputPermAttribute,
    kForcedKernelAttribute};

bool listed(std::initializer_list<const char*> names, std::string_view name) {
  return std::any_of(names.begin(), names.end(), [name](const char* n) { return name == n; });
}

const char* type_name(const AttributeValue& v) {
  static_assert(std::variant_size_v<AttributeValue> == 7, "a name for each attribute type");
  static constexpr const char* kNames[] = {"an int", "a float", "a string", "ints",
                                           "floats", "strings", "a tensor"};
  return kNames[v.index()];
}

[[noreturn]] void fail(const NodeInfo& node, const std::string& message) {
  throw Error(node.describe() + ": " + message);
}

// The value of attribute `name` if present; an error naming the node when it is not a T.
template <class T>
const T* typed(const NodeInfo& node, const char* name, const char* expected) {
  const auto& all = node.attributes.all();
  const auto it = all.find(name);
  if (it == all.end()) return nullptr;
  if (const T* v = std::get_if<T>(&it->second)) return v;
  fail(node, std::string("internal attribute ") + name + " must be " + expected + "; it is " +
                 type_name(it->second));
}

std::optional<int64_t> read_int(const NodeInfo& node, const char* name) {
  const int64_t* v = typed<int64_t>(node, name, "an int");
  return v ? std::optional<int64_t>(*v) : std::nullopt;
}

bool read_flag(const NodeInfo& node, const char* name) {
  return read_int(node, name).value_or(0) != 0;
}

// A float, or an int read as one (as Attributes::get_float does).
std::optional<float> read_float(const NodeInfo& node, const char* name) {
  const auto& all = node.attributes.all();
  const auto it = all.find(name);
  if (it == all.end()) return std::nullopt;
  if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<float>(*i);
  return *typed<float>(node, name, "a float");
}

std::optional<std::string> read_string(const NodeInfo& node, const char* name) {
  const std::string* v = typed<std::string>(node, name, "a string");
  return v ? std::optional<std::string>(*v) : std::nullopt;
}

std::optional<std::vector<int64_t>> read_ints(const NodeInfo& node, const char* name) {
  const auto* v = typed<std::vector<int64_t>>(node, name, "ints");
  return v ? std::optional<std::vector<int64_t>>(*v) : std::nullopt;
}

// One flag per operand (Q, K, V), stored as three ints.
std::optional<std::array<bool, 3>> read_operand_flags(const NodeInfo& node, const char* name) {
  const std::optional<std::vector<int64_t>> v = read_ints(node, name);
  if (!v) return std::nullopt;
  if (v->size() != 3) {
    fail(node, std::string(name) + " needs three flags (Q, K, V); it has " + std::to_string(v->size()));
  }
  return std::array<bool, 3>{(*v)[0] != 0, (*v)[1] != 0, (*v)[2] != 0};
}

std::vector<int64_t> operand_flags(const std::array<bool, 3>& flags) {
  return {int64_t{flags[0]}, int64_t{flags[1]}, int64_t{flags[2]}};
}

// Every name of the node's attributes that `known` lists (only the "wgi." ones with `internal_prefix_only`).
void check_known(const NodeInfo& node, const std::vector<std::initializer_list<const char*>>& known,
                 bool internal_prefix_only) {
  for (const auto& entry : node.attributes.all()) {
    const std::string& name = entry.first;
    if (internal_prefix_only && name.rfind("wgi.", 0) != 0) continue;
    if (std::any_of(known.begin(), known.end(), [&](const auto& names) { return listed(names, name); }))
      continue;
    std::string names;
    for (const auto& list : known) {
      for (const char* n : list) names += std::string(names.empty() ? "" : ", ") + n;
    }
    fail(node, "unknown internal attribute '" + name + "' on " + node.op_type + " (wgi knows " + names + ")");
  }
}

// `attributes` without the names `drop` says to drop.
template <class Drop>
Attributes without(const Attributes& attributes, Drop drop) {
  Attributes kept;
  for (const auto& [name, value] : attributes.all()) {
    if (!drop(name)) kept.set(name, value);
  }
  return kept;
}

bool internal(const std::string& name) {
  return name.rfind("wgi.", 0) == 0;
}

void write_gemm_tuning(const GemmTuningAttributes& t, Attributes& into) {
  if (t.kernel) into.set(kGemmKernelAttribute, *t.kernel);
  if (t.tile_k) into.set(kGemmTileKAttribute, *t.tile_k);
  if (t.stages) into.set(kGemmStagesAttribute, *t.stages);
  if (t.split_k) into.set(kGemmSplitKAttribute, *t.split_k);
  if (t.gemv_lanes) into.set(kGemvLanesAttribute, *t.gemv_lanes);
  if (t.head_rows) into.set(kGemmHeadRowsAttribute, *t.head_rows);
}

void set_activation(const EpilogueAttributes& e, Attributes& into) {
  if (!e.activation.empty()) into.set(kFusedActivationAttribute, e.activation);
  if (e.activation_min) into.set(kFusedActivationMinAttribute, *e.activation_min);
  if (e.activation_max) into.set(kFusedActivationMaxAttribute, *e.activation_max);
}

void set_epilogue(const EpilogueAttributes& e, Attributes& into) {
  if (e.residual) into.set(kFusedResidualAttribute, int64_t{1});
  set_activation(e, into);
}

// The epilogue, wgi.kernel and the GEMM knobs, which MatMul, Gemm, Conv and MatMulNBits carry alike.
template <class Internal>
void read_epilogue_kernel_tuning(const NodeInfo& node, Internal& a) {
  a.epilogue = read_epilogue_attributes(node);
  a.kernel = read_string(node, kForcedKernelAttribute).value_or("");
  a.tuning = read_gemm_tuning_attributes(node);
}
template <class Internal>
void write_epilogue_kernel_tuning(const Internal& a, Attributes& into) {
  set_epilogue(a.epilogue, into);
  if (!a.kernel.empty()) into.set(kForcedKernelAttribute, a.kernel);
  write_gemm_tuning(a.tuning, into);
}

}  // namespace

GemmTuningAttributes read_gemm_tuning_attributes(const NodeInfo& node) {
  GemmTuningAttributes t;
  t.kernel = read_string(node, kGemmKernelAttribute);
  t.tile_k = read_int(node, kGemmTileKAttribute);
  t.stages = read_int(node, kGemmStagesAttribute);
  t.split_k = read_int(node, kGemmSplitKAttribute);
  t.gemv_lanes = read_int(node, kGemvLanesAttribute);
  t.head_rows = read_int(node, kGemmHeadRowsAttribute);
  return t;
}

void write_gemm_tuning_attributes(const GemmTuningAttributes& tuning, Attributes& attributes) {
  attributes = without(attributes, [](const std::string& name) { return listed(kGemmTuningNames, name); });
  write_gemm_tuning(tuning, attributes);
}

EpilogueAttributes read_epilogue_attributes(const NodeInfo& node) {
  EpilogueAttributes e;
  e.residual = read_flag(node, kFusedResidualAttribute);
  e.activation = read_string(node, kFusedActivationAttribute).value_or("");
  e.activation_min = read_float(node, kFusedActivationMinAttribute);
  e.activation_max = read_float(node, kFusedActivationMaxAttribute);
  return e;
}

void write_epilogue_attributes(const EpilogueAttributes& epilogue, Attributes& attributes) {
  attributes = without(attributes, [](const std::string& name) {
    return listed(kActivationNames, name) || listed(kResidualNames, name);
  });
  set_epilogue(epilogue, attributes);
}

LinearAttributes read_linear_attributes(const NodeInfo& node) {
  check_known(node, {kLinearNames, kActivationNames, kResidualNames, kGemmTuningNames}, true);
  LinearAttributes a;
  a.trans_b = read_flag(node, kMatMulTransBAttribute);
  a.windows_in = read_flag(node, kMatMulWindowsInAttribute);
  a.windows_out = read_flag(node, kMatMulWindowsOutAttribute);
  a.split_columns = read_ints(node, kSplitColumnsAttribute).value_or(std::vector<int64_t>{});
  a.layer_norm_epsilon = read_float(node, kMatMulLayerNormEpsilonAttribute);
  read_epilogue_kernel_tuning(node, a);
  return a;
}

void write_linear_attributes(const LinearAttributes& linear, Attributes& attributes) {
  attributes = without(attributes, internal);
  if (linear.trans_b) attributes.set(kMatMulTransBAttribute, int64_t{1});
  if (linear.windows_in) attributes.set(kMatMulWindowsInAttribute, int64_t{1});
  if (linear.windows_out) attributes.set(kMatMulWindowsOutAttribute, int64_t{1});
  if (!linear.split_columns.empty()) attributes.set(kSplitColumnsAttribute, linear.split_columns);
  if (linear.layer_norm_epsilon) attributes.set(kMatMulLayerNormEpsilonAttribute, *linear.layer_norm_epsilon);
  write_epilogue_kernel_tuning(linear, attributes);
}

ConvInternalAttributes read_conv_internal_attributes(const NodeInfo& node) {
  check_known(node, {kConvNames, kActivationNames, kResidualNames, kGemmTuningNames}, true);
  ConvInternalAttributes a;
  read_epilogue_kernel_tuning(node, a);
  a.depthwise_rows = read_int(node, kDepthwiseRowsAttribute).value_or(0);
  return a;
}

void write_conv_internal_attributes(const ConvInternalAttributes& conv, Attributes& attributes) {
  attributes = without(attributes, internal);
  write_epilogue_kernel_tuning(conv, attributes);
  if (conv.depthwise_rows != 0) attributes.set(kDepthwiseRowsAttribute, conv.depthwise_rows);
}

NBitsAttributes read_nbits_attributes(const NodeInfo& node) {
  check_known(node, {kNBitsNames, kActivationNames, kResidualNames, kGemmTuningNames}, true);
  NBitsAttributes a;
  read_epilogue_kernel_tuning(node, a);
  a.gemv_thread_columns = read_int(node, kGemvThreadColumnsAttribute).value_or(0);
  a.split_columns = read_ints(node, kSplitColumnsAttribute).value_or(std::vector<int64_t>{});
  a.layer_norm_epsilon = read_float(node, kMatMulLayerNormEpsilonAttribute);
  return a;
}

void write_nbits_attributes(const NBitsAttributes& nbits, Attributes& attributes) {
  attributes = without(attributes, internal);
  write_epilogue_kernel_tuning(nbits, attributes);
  if (nbits.gemv_thread_columns != 0) attributes.set(kGemvThreadColumnsAttribute, nbits.gemv_thread_columns);
  if (!nbits.split_columns.empty()) attributes.set(kSplitColumnsAttribute, nbits.split_columns);
  if (nbits.layer_norm_epsilon) attributes.set(kMatMulLayerNormEpsilonAttribute, *nbits.layer_norm_epsilon);
}

ChannelsLastConvAttributes read_channels_last_conv_attributes(const NodeInfo& node) {
  check_known(node, {kChannelsLastConvNames, kActivationNames}, false);
  ChannelsLastConvAttributes a;
  a.kernel_shape = read_ints(node, kChannelsLastKernelShapeAttribute).value_or(std::vector<int64_t>{});
  if (auto pads = read_ints(node, kChannelsLastPadsAttribute)) a.pads = std::move(*pads);
  if (auto strides = read_ints(node, kChannelsLastStridesAttribute)) a.strides = std::move(*strides);
  a.height = read_int(node, kChannelsLastHeightAttribute);
  a.width = read_int(node, kChannelsLastWidthAttribute);
  a.epilogue = read_epilogue_attributes(node);
  return a;
}

Attributes write_channels_last_conv_attributes(const ChannelsLastConvAttributes& conv) {
  Attributes out;
  if (!conv.kernel_shape.empty()) out.set(kChannelsLastKernelShapeAttribute, conv.kernel_shape);
  out.set(kChannelsLastPadsAttribute, conv.pads);
  out.set(kChannelsLastStridesAttribute, conv.strides);
  if (conv.height) out.set(kChannelsLastHeightAttribute, *conv.height);
  if (conv.width) out.set(kChannelsLastWidthAttribute, *conv.width);
  if (conv.epilogue.residual) {
    throw Error("DepthwiseConvChannelsLast takes its residual as input " +
                std::to_string(ChannelsLastConvInput::kResidual) + ", not as " + kFusedResidualAttribute);
  }
  set_activation(conv.epilogue, out);
  return out;
}

AttentionAttributes read_attention_attributes(const NodeInfo& node) {
  check_known(node, {kAttentionNames, kGemmTuningNames}, false);
  AttentionAttributes a;
  a.scale = read_float(node, kAttentionScaleAttribute).value_or(1.0f);
  a.scale_divides = read_flag(node, kAttentionScaleDividesAttribute);
  a.k_transposed = read_flag(node, kAttentionKTransposedAttribute);
  a.qkv_packed = read_flag(node, kAttentionQkvPackedAttribute);
  a.qkv_indices = read_ints(node, kAttentionQkvIndicesAttribute).value_or(std::vector<int64_t>{});
  a.qkv_transposed = read_operand_flags(node, kAttentionQkvTransposedAttribute);
  a.heads_views = read_operand_flags(node, kAttentionHeadsViewsAttribute);
  a.transpose_output = read_flag(node, kAttentionTransposeOutputAttribute);
  a.output_perm = read_ints(node, kAttentionOutputPermAttribute);
  a.kernel = read_string(node, kForcedKernelAttribute).value_or("");
  a.tuning = read_gemm_tuning_attributes(node);
  return a;
}

Attributes write_attention_attributes(const AttentionAttributes& a) {
  Attributes out;
  out.set(kAttentionScaleAttribute, a.scale);
  out.set(kAttentionScaleDividesAttribute, int64_t{a.scale_divides});
  out.set(kAttentionKTransposedAttribute, int64_t{a.k_transposed});
  if (a.qkv_packed) out.set(kAttentionQkvPackedAttribute, int64_t{1});
  if (!a.qkv_indices.empty()) out.set(kAttentionQkvIndicesAttribute, a.qkv_indices);
  if (a.qkv_transposed) out.set(kAttentionQkvTransposedAttribute, operand_flags(*a.qkv_transposed));
  if (a.heads_views) out.set(kAttentionHeadsViewsAttribute, operand_flags(*a.heads_views));
  if (a.transpose_output) out.set(kAttentionTransposeOutputAttribute, int64_t{1});
  if (a.output_perm) out.set(kAttentionOutputPermAttribute, *a.output_perm);
  if (!a.kernel.empty()) out.set(kForcedKernelAttribute, a.kernel);
  write_gemm_tuning(a.tuning, out);
  return out;
}

}  // namespace wgi::ops
