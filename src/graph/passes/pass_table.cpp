// The graph passes in the order optimize() runs them, with the constraints that order satisfies.
#include <cstdlib>

#include "graph/passes.h"
#include "wgi/error.h"

namespace wgi::graph {

namespace {

template <int (*pass)(Graph&)>
int without_registry(Graph& graph, const ops::OpRegistry&) {
  return pass(graph);
}

}  // namespace

const std::vector<PassInfo>& pass_table() {
  static const std::vector<PassInfo> table = {
      {"eliminate_identities",
       "Identity/Dropout removed",
       without_registry<eliminate_identities>,
       {},
       {},
       ""},
      {"read_transposed_weights",
       "transposed weights read in place",
       without_registry<read_transposed_weights>,
       {},
       {"fold_constants", "fuse_bias_adds"},
       "before folding, which would copy every Transpose(W) into a transposed weight; before the bias "
       "fusion, "
       "which reads the weight's N from wgi.trans_b"},
      {"remove_dead_nodes",
       "dead nodes removed",
       without_registry<remove_dead_nodes>,
       {"read_transposed_weights"},
       {"fold_constants"},
       "the Transposes read around are dead: gone before folding, which would otherwise still compute them"},
      {"fold_constants", "nodes folded into constants", fold_constants, {}, {}, ""},
      {"compute_float16_in_float32",
       "float16 values computed in float32",
       without_registry<compute_float16_in_float32>,
       {"fold_constants"},
       {"fold_batch_norms", "fuse_bias_adds", "read_windows_in_place", "fuse_depthwise_conv_channels_last"},
       "float16 constant subgraphs fold first (as float16 does); the fusions then see the float32 graph "
       "with the Casts of the boundary gone"},
      {"fold_batch_norms",
       "BatchNormalization folded",
       without_registry<fold_batch_norms>,
       {"fold_constants"},
       {"fuse_activations", "fuse_residual_adds"},
       "its scale, shift, mean and variance may be folded constants; the conv or Gemm it folds into must "
       "have "
       "no fused activation or residual yet"},
      {"fuse_bias_adds",
       "MatMul+Add fused",
       without_registry<fuse_bias_adds>,
       {"fold_constants"},
       {"read_windows_in_place", "write_windows_in_place", "fuse_residual_adds"},
       "the bias must be a constant; the window MatMuls keep their bias, and the residual fusion takes input "
       "3 "
       "after it"},
      {"fuse_dynamically_quantized_products",
       "dynamically quantized products rescaled in place",
       without_registry<fuse_dynamically_quantized_products>,
       {"fold_constants"},
       {"fuse_residual_adds", "fuse_activations"},
       "the weight's scale and the bias must be constants (a Transpose of a weight folded first); the "
       "residual and activation fusions then take the Add and the activation after its float output"},
      {"fold_scales_into_weights",
       "scalar Muls folded into weights",
       without_registry<fold_scales_into_weights>,
       {"fuse_bias_adds"},
       {"read_windows_in_place", "write_windows_in_place", "fuse_residual_adds", "fuse_activations",
        "fuse_attention", "read_split_heads"},
       "the bias is scaled with the weight once fused; nothing may be fused after the product yet, and the "
       "head split then sees the MatMul's output directly"},
      {"read_windows_in_place",
       "window partitions read in place",
       without_registry<read_windows_in_place>,
       {"fuse_bias_adds"},
       {"fuse_residual_adds"},
       "the residual fusion then takes the Add after a window MatMul"},
      {"write_windows_in_place",
       "window reverses written in place",
       without_registry<write_windows_in_place>,
       {"fuse_bias_adds"},
       {"fuse_residual_adds", "fuse_activations"},
       "the residual fusion then takes the Add after the window reverse into the proj MatMul's epilogue; the "
       "MatMul must have no fused activation"},
      {"fuse_residual_adds",
       "residual Adds fused",
       without_registry<fuse_residual_adds>,
       {"fuse_bias_adds"},
       {"fuse_activations", "fuse_attention"},
       "a Relu after the residual (ResNet's bottlenecks) then fuses too; the attention masks it leaves alone "
       "are the attention fusion's"},
      {"fuse_gelu",
       "GELUs fused into Gelu",
       without_registry<fuse_gelu>,
       {},
       {"fuse_activations"},
       "the activation fusion then folds the Gelu into the GEMM or conv before it"},
      {"fuse_activations", "activations fused", without_registry<fuse_activations>, {}, {}, ""},
      {"fuse_depthwise_conv_channels_last",
       "channels-last depthwise convs fused",
       without_registry<fuse_depthwise_conv_channels_last>,
       {"fuse_activations"},
       {},
       "takes over the Relu / Clip / Gelu the activation fusion put on the conv"},
      {"fuse_attention", "attentions fused", without_registry<fuse_attention>, {}, {}, ""},
      {"read_packed_qkv",
       "attentions read packed Q, K, V",
       without_registry<read_packed_qkv>,
       {"fuse_attention"},
       {"read_split_heads"},
       "it rewrites the fused Attention nodes' operands"},
      {"read_split_heads",
       "attentions read split heads in place",
       without_registry<read_split_heads>,
       {"fuse_attention", "read_packed_qkv"},
       {},
       "it rewrites the fused Attention nodes' operands not packed"},
      {"write_attention_transposed",
       "attention outputs written transposed",
       without_registry<write_attention_transposed>,
       {"fuse_attention"},
       {},
       "it rewrites the fused Attention nodes' output"},
      {"merge_sibling_products",
       "products merged with their siblings",
       without_registry<merge_sibling_products>,
       {"fuse_bias_adds", "fold_scales_into_weights", "fuse_residual_adds", "fuse_activations",
        "read_packed_qkv", "read_split_heads", "write_attention_transposed"},
       {},
       "it takes products that the single-product fusions have finished with"},
      {"fuse_dynamic_quantization_into_products",
       "dynamic quantizations taken into their products",
       without_registry<fuse_dynamic_quantization_into_products>,
       {"fuse_dynamically_quantized_products", "fuse_residual_adds", "fuse_activations",
        "merge_sibling_products"},
       {},
       "it takes the rescaled products as the epilogue fusions and merges leave them"},
      {"fuse_layer_norm_into_products",
       "LayerNorms taken into their products",
       without_registry<fuse_layer_norm_into_products>,
       {"merge_sibling_products", "fuse_residual_adds", "fuse_bias_adds",
        "fuse_dynamic_quantization_into_products"},
       {},
       "it takes the products the merges and epilogue fusions have finished with, and a quantizing product "
       "once it reads the LayerNormalization's output itself"},
      {"merge_past_concats", "past Concats paired", without_registry<merge_past_concats>, {}, {}, ""},
      {"remove_dead_nodes",
       "dead nodes removed",
       without_registry<remove_dead_nodes>,
       {"write_attention_transposed", "merge_sibling_products"},
       {},
       "last: what the fusions left unread"},
  };
  return table;
}

std::string pass_names() {
  std::string names;
  std::set<std::string> seen;
  for (const PassInfo& pass : pass_table()) {
    if (seen.insert(pass.name).second) names += (names.empty() ? "" : ", ") + pass.name;
  }
  return names;
}

namespace {

bool is_pass(const std::string& name) {
  for (const PassInfo& pass : pass_table()) {
    if (pass.name == name) return true;
  }
  return false;
}

}  // namespace

int PassReport::count(const std::string& pass) const {
  if (!is_pass(pass))
    throw Error("PassReport: '" + pass + "' is not a graph pass; the passes: " + pass_names());
  const auto it = counts_.find(pass);
  return it == counts_.end() ? 0 : it->second;
}

void PassReport::add(const std::string& pass, int n) {
  counts_[pass] += n;
}

PassReport& PassReport::operator+=(const PassReport& other) {
  for (const auto& [pass, n] : other.counts_) counts_[pass] += n;
  return *this;
}

std::string PassReport::summary() const {
  std::string s;
  std::set<std::string> seen;
  for (const PassInfo& pass : pass_table()) {
    if (!seen.insert(pass.name).second) continue;
    const auto it = counts_.find(pass.name);
    if (it != counts_.end() && it->second != 0)
      s += (s.empty() ? "" : ", ") + std::to_string(it->second) + " " + pass.reported;
  }
  return s.empty() ? "no changes" : s;
}

DisabledPasses DisabledPasses::of(const std::vector<std::string>& names, const std::string& source) {
  DisabledPasses disabled;
  for (const std::string& name : names) {
    if (!is_pass(name))
      throw Error(source + " names '" + name + "', which is not a graph pass; the passes: " + pass_names());
    disabled.names.insert(name);
  }
  return disabled;
}

DisabledPasses DisabledPasses::parse(const std::string& list, const std::string& source) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    std::string name = list.substr(start, comma - start);
    const size_t first = name.find_first_not_of(" \t"), last = name.find_last_not_of(" \t");
    if (first != std::string::npos) names.push_back(name.substr(first, last - first + 1));
    start = comma + 1;
  }
  return of(names, source);
}

DisabledPasses DisabledPasses::from_environment(const std::vector<std::string>& names) {
  DisabledPasses disabled = of(names, "SessionOptions::disabled_passes");
  if (const char* env = std::getenv("WGI_DISABLE_PASSES"); env && *env) {
    for (const std::string& name : parse(env, "WGI_DISABLE_PASSES").names) disabled.names.insert(name);
  }
  return disabled;
}

PassReport optimize(Graph& graph, const ops::OpRegistry& registry, const DisabledPasses& disabled) {
  PassReport report;
  for (const PassInfo& pass : pass_table()) {
    if (!disabled.contains(pass.name)) report.add(pass.name, pass.run(graph, registry));
  }
  // Then inside subgraphs (If's branches), where a value read from an enclosing scope counts as a graph
  // input; what the passes folded out here is a constant there.
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (size_t s = 0; s < graph.nodes[n].subgraphs.size(); ++s)
      graph.edit_subgraph(graph.nodes[n], s,
                          [&](Graph& sub) { report += optimize(sub, registry, disabled); });
  }
  return report;
}

}  // namespace wgi::graph
