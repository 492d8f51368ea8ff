// Unchanged nodes (docs/decoding.md): with sharing, plan_nodes takes a node whose inputs (types, shapes,
// plan-time values) are those of its latest planning as it was planned then, without its planner or host
// evaluation. Planned for the tiny split decoder and the merged decoder (an If planned inline) at one past
// length and then the next, every node must be taken unchanged exactly when its inputs are the same in the
// two plannings (worked out here from the two plannings' value tables, independently of the records), and the
// second planning must equal a fresh planning of the same inputs (another PlanSharing, records off): the same
// shapes, folded values and kernels, launch by launch. The loops' outputs through Session are
// tests/gpu/test_plan_respecialize.cpp's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>

#include "graph/passes.h"
#include "onnx/importer.h"
#include "runtime/execution_plan.h"
#include "support/test_device.h"

namespace wgi {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(WGI_TEST_DATA_DIR) / "models";

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.byte_size()) == 0;
}

bool same_value(const std::optional<Tensor>& a, const std::optional<Tensor>& b) {
  return a.has_value() == b.has_value() && (!a || same_tensor(*a, *b));
}

bool same_desc(const ops::TensorDesc& a, const ops::TensorDesc& b) {
  return a.dtype == b.dtype && a.shape == b.shape;
}

// Whether two node plans launch the same kernels with the same bindings, uniforms and grids.
void expect_same_plan(const ops::OpPlan& got, const ops::OpPlan& want, const std::string& node) {
  ASSERT_EQ(got.outputs.size(), want.outputs.size()) << node;
  for (size_t o = 0; o < want.outputs.size(); ++o)
    EXPECT_TRUE(same_desc(got.outputs[o], want.outputs[o])) << node << " output " << o;
  EXPECT_EQ(got.scratch_bytes, want.scratch_bytes) << node;
  EXPECT_EQ(got.alias_output_to_input, want.alias_output_to_input) << node;
  ASSERT_EQ(got.launches.size(), want.launches.size()) << node;
  for (size_t l = 0; l < want.launches.size(); ++l) {
    const ops::KernelLaunch &a = got.launches[l], &b = want.launches[l];
    EXPECT_EQ(a.program.label, b.program.label) << node;
    EXPECT_TRUE(a.program.wgsl == b.program.wgsl) << node << " launch " << l;
    EXPECT_EQ(a.program.constants, b.program.constants) << node;
    EXPECT_EQ(a.uniform, b.uniform) << node << " launch " << l;
    EXPECT_EQ(a.groups.x, b.groups.x) << node;
    EXPECT_EQ(a.groups.y, b.groups.y) << node;
    EXPECT_EQ(a.groups.z, b.groups.z) << node;
    ASSERT_EQ(a.bindings.size(), b.bindings.size()) << node;
    for (size_t k = 0; k < a.bindings.size(); ++k) {
      EXPECT_EQ(a.bindings[k].kind, b.bindings[k].kind) << node;
      EXPECT_EQ(a.bindings[k].index, b.bindings[k].index) << node;
    }
  }
}

Tensor ids(int64_t batch, int64_t tokens, int64_t first) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < batch * tokens; ++i) v.push_back((first + 7 * i) % 50);
  return Tensor::from_vector<int64_t>({batch, tokens}, v);
}

// The model as a Session plans it (optimised).
graph::Graph load(const std::string& name) {
  graph::Graph g = onnx::import_model_file(kModels / name / "model.onnx");
  graph::optimize(g, ops::builtin_registry());
  return g;
}

// Plan inputs in graph-input order: `desc_of` gives each input's description; inputs of at most 64 elements
// get a value (as a Session plans them), drawn from `seed`.
std::vector<runtime::PlanInput> plan_inputs(const graph::Graph& g,
                                            const std::function<ops::TensorDesc(const std::string&)>& desc_of,
                                            std::vector<Tensor>& values, int64_t seed) {
  std::vector<runtime::PlanInput> inputs;
  values.clear();
  values.reserve(g.inputs.size());  // PlanInput points into it
  for (graph::ValueId v : g.inputs) {
    const std::string& name = g.value(v).name;
    const ops::TensorDesc desc = desc_of(name);
    runtime::PlanInput in{desc, nullptr};
    if (name == "input_ids") {
      values.push_back(ids(desc.shape[0], desc.shape[1], seed));
      in.value = &values.back();
    } else if (name == "use_cache_branch") {
      Tensor yes(DType::Bool, {1});
      yes.bytes()[0] = std::byte{1};
      values.push_back(yes);
      in.value = &values.back();
    }
    inputs.push_back(in);
  }
  return inputs;
}

// Whether `node`'s inputs that are not graph constants have the same descriptions and plan-time values in two
// plannings' tables.
bool same_inputs(const graph::Graph& g, const graph::Node& node, const runtime::NodePlans& a,
                 const runtime::NodePlans& b) {
  for (graph::ValueId v : node.inputs) {
    if (v == graph::kNoValue || g.value(v).constant) continue;
    const size_t i = static_cast<size_t>(v);
    if (!same_desc(a.descs[i], b.descs[i]) || !same_value(a.host_values[i], b.host_values[i])) return false;
  }
  return true;
}

// Folded in this planning: a node of the graph or an If branch, not control flow, not a GPU node, with every
// output known on the host.
bool folded(const graph::Node& node, const runtime::NodePlans& p, const std::set<const graph::Node*>& gpu) {
  if (!node.subgraphs.empty() || gpu.count(&node)) return false;
  for (graph::ValueId v : node.outputs) {
    if (v != graph::kNoValue && !p.host_values[static_cast<size_t>(v)]) return false;
  }
  return !node.outputs.empty();
}

void check_model(const std::string& name,
                 const std::function<ops::TensorDesc(const std::string&, int64_t)>& desc) {
  SCOPED_TRACE(name);
  const graph::Graph g = load(name);
  const gpu::Capabilities& caps = test::device().capabilities();
  const ops::OpRegistry& registry = ops::builtin_registry();
  auto planning = [&](runtime::PlanSharing& sharing, int64_t past_len, int64_t seed) {
    std::vector<Tensor> values;
    const auto inputs = plan_inputs(
        g, [&](const std::string& input) { return desc(input, past_len); }, values, seed);
    return runtime::plan_nodes(g, registry, caps, inputs, {}, nullptr, &sharing);
  };
  runtime::PlanSharing sharing(4);
  const runtime::NodePlans first = planning(sharing, 16, 3);
  EXPECT_EQ(first.unchanged, 0u);  // nothing planned before
  EXPECT_EQ(first.replanned, first.gpu_nodes.size() + first.host_nodes);
  // The next step: one more past row, another token.
  const runtime::NodePlans next = planning(sharing, 17, 11);
  runtime::PlanSharing fresh_sharing(4);
  fresh_sharing.reuse_unchanged_nodes = false;
  const runtime::NodePlans fresh = planning(fresh_sharing, 17, 11);
  EXPECT_EQ(fresh.unchanged, 0u);

  // The same planning as a fresh one: every value's shape and folded value, every GPU node's kernels.
  ASSERT_EQ(next.descs.size(), fresh.descs.size());
  for (size_t v = 0; v < fresh.descs.size(); ++v) {
    EXPECT_TRUE(same_desc(next.descs[v], fresh.descs[v])) << "value " << g.values[v].name;
    EXPECT_TRUE(same_value(next.host_values[v], fresh.host_values[v])) << "value " << g.values[v].name;
  }
  ASSERT_EQ(next.gpu_nodes.size(), fresh.gpu_nodes.size());
  EXPECT_EQ(next.host_nodes, fresh.host_nodes);
  for (size_t s = 0; s < fresh.gpu_nodes.size(); ++s) {
    ASSERT_EQ(next.gpu_nodes[s].node, fresh.gpu_nodes[s].node);
    expect_same_plan(next.gpu_nodes[s].op_plan(), fresh.gpu_nodes[s].op_plan(),
                     fresh.gpu_nodes[s].node->info.name);
  }

  // Taken unchanged exactly when planned the first time (the same way) with the same inputs.
  std::set<const graph::Node*> gpu_first, gpu_next;
  for (const auto& n : first.gpu_nodes) gpu_first.insert(n.node);
  for (const auto& n : next.gpu_nodes) gpu_next.insert(n.node);
  size_t unchanged_gpu = 0, changed_gpu = 0;
  for (const runtime::NodePlans::GpuNode& n : next.gpu_nodes) {
    const bool expected = gpu_first.count(n.node) && same_inputs(g, *n.node, first, next) &&
                          !ops::data_dependence(n.node->info);
    EXPECT_EQ(n.unchanged, expected) << n.node->info.describe();
    if (n.unchanged) {
      EXPECT_TRUE(n.reused);
      // The very plan of the first planning.
      const auto it = std::find_if(first.gpu_nodes.begin(), first.gpu_nodes.end(),
                                   [&](const auto& f) { return f.node == n.node; });
      EXPECT_EQ(it->shared, n.shared) << n.node->info.describe();
    }
    (expected ? unchanged_gpu : changed_gpu) += 1;
  }
  size_t unchanged_folded = 0;
  for (const graph::Node* node : runtime::nodes_by_tag(g)) {
    if (folded(*node, next, gpu_next) && folded(*node, first, gpu_first) &&
        same_inputs(g, *node, first, next) && !ops::data_dependence(node->info)) {
      ++unchanged_folded;
    }
  }
  EXPECT_EQ(next.unchanged, unchanged_gpu + unchanged_folded);
  EXPECT_EQ(next.unchanged + next.replanned, next.gpu_nodes.size() + next.host_nodes);
  // Both kinds occur: the projections stay, the attention over the longer past and its concats change.
  EXPECT_GT(unchanged_gpu, next.gpu_nodes.size() / 2);
  EXPECT_GT(changed_gpu, 0u);
  EXPECT_GT(unchanged_folded, 0u);

  // The same inputs again: every node unchanged.
  const runtime::NodePlans again = planning(sharing, 17, 11);
  EXPECT_EQ(again.unchanged, again.gpu_nodes.size() + again.host_nodes);
  EXPECT_EQ(again.replanned, 0u);
}

TEST(PlanNodeReuse, SplitDecoderNodesAreTakenUnchangedExactlyWhenTheirInputsAreTheSame) {
  check_model("bart_decoder_cached_cross_tiny_opset17", [](const std::string& input, int64_t past_len) {
    constexpr int64_t kBatch = 2, kSource = 7;
    if (input == "input_ids") return ops::TensorDesc{DType::Int64, {kBatch, 1}};
    const bool past = input.rfind("past_", 0) == 0;
    return ops::TensorDesc{DType::Float32, {kBatch, 2, past ? past_len : kSource, 16}};
  });
}

TEST(PlanNodeReuse, MergedDecoderNodesAreTakenUnchangedExactlyWhenTheirInputsAreTheSame) {
  check_model("merged_decoder_tiny_opset17", [](const std::string& input, int64_t past_len) {
    constexpr int64_t kBatch = 2, kSource = 5;
    if (input == "input_ids") return ops::TensorDesc{DType::Int64, {kBatch, 1}};
    if (input == "use_cache_branch") return ops::TensorDesc{DType::Bool, {1}};
    if (input == "encoder_hidden_states") return ops::TensorDesc{DType::Float32, {kBatch, kSource, 32}};
    return ops::TensorDesc{DType::Float32, {kBatch, 2, past_len, 16}};
  });
}

}  // namespace
}  // namespace wgi
