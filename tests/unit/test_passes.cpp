// Graph optimisation passes on real exported models: what they fold and fuse. (That results stay the same is
// checked end to end by the model tests on the GPU.)
#include <gtest/gtest.h>

#include <filesystem>

#include "graph/passes.h"
#include "onnx/importer.h"
#include "ops/fused_activation.h"
#include "ops/gemm_launch.h"

namespace wgi::graph {
namespace {

const std::filesystem::path kModels = std::filesystem::path(WGI_TEST_DATA_DIR) / "models";

int count_ops(const Graph& g, const std::string& op) {
  return static_cast<int>(
      std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.info.op_type == op; }));
}

TEST(Passes, FoldBatchNormAndFuseActivationIntoConv) {
  Graph g = onnx::import_model_file(kModels / "conv_bn_relu" / "model.onnx");
  PassReport r = optimize(g, ops::builtin_registry());
  EXPECT_EQ(r.batch_norms_folded, 1) << r.summary();
  EXPECT_EQ(r.activations_fused, 1) << r.summary();
  EXPECT_EQ(count_ops(g, "BatchNormalization"), 0);
  EXPECT_EQ(count_ops(g, "Relu"), 0);
  ASSERT_EQ(count_ops(g, "Conv"), 2);
  const Node& conv1 = g.nodes[0];
  EXPECT_EQ(conv1.info.name, "conv1");
  EXPECT_EQ(conv1.info.attributes.get_string(ops::kFusedActivationAttribute, ""), "Relu");
  ASSERT_EQ(conv1.inputs.size(), 3u);
  EXPECT_TRUE(g.value(conv1.inputs[1]).constant.has_value());  // the folded weight
  // The graph output keeps its producer: Sigmoid after conv2.
  EXPECT_EQ(g.value(g.outputs[0]).producer, static_cast<int32_t>(g.nodes.size() - 1));
}

TEST(Passes, FuseActivationIntoGemm) {
  Graph g = onnx::import_model_file(kModels / "gemm_chain" / "model.onnx");
  PassReport r = optimize(g, ops::builtin_registry());
  EXPECT_EQ(r.activations_fused, 1) << r.summary();
  EXPECT_EQ(count_ops(g, "Relu"), 0);
  EXPECT_EQ(g.nodes.size(), 3u);
}

TEST(Passes, FuseBiasAddsIntoMatMulsOfAnExportedTransformer) {
  Graph g = onnx::import_model_file(kModels / "tiny_transformer_opset17" / "model.onnx");
  const int matmuls = count_ops(g, "MatMul");
  PassReport r = optimize(g, ops::builtin_registry());
  // qkv, proj, and the MLP's two Linear layers: MatMul(x, Transpose(W)) + Add each in torch's export. The
  // MatMuls read W as [N, K] in place (no transposed copy), and take the bias.
  EXPECT_EQ(r.transposed_weights_read, 4) << r.summary();
  for (const Node& n : g.nodes) {
    EXPECT_FALSE(n.info.op_type == "Transpose" && g.value(n.inputs[0]).constant) << n.info.name;
  }
  EXPECT_EQ(r.bias_adds_fused, 4) << r.summary();
  // The two MatMuls of the attention core (Q·Kᵀ and P·V) become one fused Attention node; the rest stay.
  EXPECT_EQ(r.attentions_fused, 1) << r.summary();
  EXPECT_EQ(count_ops(g, "MatMul"), matmuls - 2);
  int with_bias = 0;
  for (const Node& n : g.nodes) {
    if (n.info.op_type != "MatMul" || n.inputs.size() != 3) continue;
    ++with_bias;
    EXPECT_EQ(n.info.attributes.get_int(ops::kMatMulTransBAttribute, 0), 1) << n.info.name;
    const auto& w = g.value(n.inputs[1]).constant;
    const auto& bias = g.value(n.inputs[2]).constant;
    ASSERT_TRUE(w && bias) << n.info.name;
    ASSERT_EQ(w->rank(), 2) << n.info.name;
    EXPECT_EQ(bias->shape(), (Shape{w->shape()[0]})) << n.info.name;  // N rows of W [N, K]
  }
  EXPECT_EQ(with_bias, 4);
}

// torch's export already folds BatchNorm into Conv in eval mode; what is left for wgi: Relu and ReLU6
// (exported as Clip with constant bounds) into the convs' epilogues.
TEST(Passes, FuseReluAndClipIntoConvsOfAnExportedCnn) {
  Graph g = onnx::import_model_file(kModels / "small_cnn_opset13" / "model.onnx");
  PassReport r = optimize(g, ops::builtin_registry());
  EXPECT_EQ(r.activations_fused, 3) << r.summary();
  EXPECT_EQ(count_ops(g, "Relu"), 0);
  EXPECT_EQ(count_ops(g, "Clip"), 0);
  int clip_fused = 0;
  for (const Node& n : g.nodes) {
    if (n.info.attributes.get_string(ops::kFusedActivationAttribute, "") == "Clip") {
      ++clip_fused;
      EXPECT_EQ(n.info.attributes.get_float(ops::kFusedActivationMinAttribute, -1), 0.0f);
      EXPECT_EQ(n.info.attributes.get_float(ops::kFusedActivationMaxAttribute, -1), 6.0f);
    }
  }
  EXPECT_EQ(clip_fused, 1);
}

}  // namespace
}  // namespace wgi::graph
