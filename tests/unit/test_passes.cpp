// Graph optimisation passes on real exported models: what they fold and fuse. (That results stay the same is
// checked end to end by the model tests on the GPU.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>

#include "graph/passes.h"
#include "onnx/importer.h"
#include "ops/float16.h"
#include "ops/fused_activation.h"
#include "ops/fused_residual.h"
#include "ops/gemm_launch.h"
#include "wgi/error.h"

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
  EXPECT_EQ(r.count("fold_batch_norms"), 1) << r.summary();
  EXPECT_EQ(r.count("fuse_activations"), 1) << r.summary();
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
  EXPECT_EQ(r.count("fuse_activations"), 1) << r.summary();
  EXPECT_EQ(count_ops(g, "Relu"), 0);
  EXPECT_EQ(g.nodes.size(), 3u);
}

TEST(Passes, FuseBiasAddsIntoMatMulsOfAnExportedTransformer) {
  Graph g = onnx::import_model_file(kModels / "tiny_transformer_opset17" / "model.onnx");
  const int matmuls = count_ops(g, "MatMul");
  PassReport r = optimize(g, ops::builtin_registry());
  // qkv, proj, and the MLP's two Linear layers: MatMul(x, Transpose(W)) + Add each in torch's export. The
  // MatMuls read W as [N, K] in place (no transposed copy), and take the bias.
  EXPECT_EQ(r.count("read_transposed_weights"), 4) << r.summary();
  for (const Node& n : g.nodes) {
    EXPECT_FALSE(n.info.op_type == "Transpose" && g.value(n.inputs[0]).constant) << n.info.name;
  }
  EXPECT_EQ(r.count("fuse_bias_adds"), 4) << r.summary();
  // The two MatMuls of the attention core (Q·Kᵀ and P·V) become one fused Attention node; the rest stay.
  EXPECT_EQ(r.count("fuse_attention"), 1) << r.summary();
  EXPECT_EQ(count_ops(g, "MatMul"), matmuls - 2);
  int with_bias = 0;
  for (const Node& n : g.nodes) {
    // A fourth input is a residual fused after the bias (fuse_residual_adds).
    if (n.info.op_type != "MatMul" || n.inputs.size() < 3 || n.inputs[2] == kNoValue) continue;
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

// BART scales each attention's query projection by head_size^-0.5 (a Mul after q_proj's bias): folded into
// the projection's weight and bias, one dispatch fewer per attention. The folded weights are the exported
// ones times the scale (compared in float64, exact here: 2^-2 for head size 16); every other MatMul keeps its
// weight.
TEST(Passes, FoldQueryScalesIntoTheProjectionsOfAnExportedDecoder) {
  const std::filesystem::path file = kModels / "bart_decoder_cached_cross_tiny_opset17" / "model.onnx";
  // The projections compared one by one: the merge of sibling products, which runs later, stays off.
  Graph before = onnx::import_model_file(file);
  optimize(before, ops::builtin_registry(),
           DisabledPasses::of({"fold_scales_into_weights", "merge_sibling_products"}, "the test"));
  Graph g = onnx::import_model_file(file);
  PassReport r =
      optimize(g, ops::builtin_registry(), DisabledPasses::of({"merge_sibling_products"}, "the test"));
  EXPECT_EQ(r.count("fold_scales_into_weights"), 4) << r.summary();  // self and cross attention, 2 layers
  EXPECT_EQ(count_ops(before, "Mul") - count_ops(g, "Mul"), 4);
  size_t scaled = 0, compared = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.info.op_type != "MatMul" || !g.value(n.inputs[1]).constant) continue;
    const auto it = std::find_if(before.nodes.begin(), before.nodes.end(),
                                 [&](const Node& m) { return m.info.name == n.info.name; });
    ASSERT_NE(it, before.nodes.end()) << n.info.name;
    const Tensor& w = *g.value(n.inputs[1]).constant;
    const Tensor& w0 = *before.value(it->inputs[1]).constant;
    ASSERT_EQ(w.shape(), w0.shape());
    const double ratio = static_cast<double>(w.data<float>()[0]) / w0.data<float>()[0];
    if (ratio != 1.0) {
      ++scaled;
      EXPECT_NEAR(ratio, 0.25, 1e-12) << n.info.name;
      for (size_t e = 0; e < w.data<float>().size(); ++e)
        ASSERT_EQ(static_cast<double>(w.data<float>()[e]), 0.25 * w0.data<float>()[e]) << n.info.name;
      // The bias too (then, for the products that took a LayerNorm in, its inputs after the residual slot).
      ASSERT_TRUE(n.inputs.size() == 3u || ops::read_linear_attributes(n.info).layer_norm_epsilon)
          << n.info.name;
      const Tensor& b = *g.value(n.inputs[2]).constant;
      const Tensor& b0 = *before.value(it->inputs[2]).constant;
      for (size_t e = 0; e < b.data<float>().size(); ++e)
        ASSERT_EQ(static_cast<double>(b.data<float>()[e]), 0.25 * b0.data<float>()[e]) << n.info.name;
    }
    ++compared;
  }
  EXPECT_EQ(scaled, 4u);
  EXPECT_GT(compared, scaled);
}

// torch's export already folds BatchNorm into Conv in eval mode; what is left for wgi: Relu and ReLU6
// (exported as Clip with constant bounds) into the convs' epilogues.
TEST(Passes, FuseReluAndClipIntoConvsOfAnExportedCnn) {
  Graph g = onnx::import_model_file(kModels / "small_cnn_opset13" / "model.onnx");
  PassReport r = optimize(g, ops::builtin_registry());
  EXPECT_EQ(r.count("fuse_activations"), 3) << r.summary();
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

// A graph written node by node: float inputs, scalar constants, elementwise nodes (opset 17).
class GraphBuilder {
 public:
  ValueId input(const std::string& name, const Shape& shape) {
    Value v;
    v.name = name;
    v.shape = ValueShape::of(shape);
    ValueId id = g.add_value(std::move(v));
    g.inputs.push_back(id);
    return id;
  }
  ValueId constant(float value, const Shape& shape = {}) {
    Value v;
    v.name = "c" + std::to_string(g.values.size());
    std::vector<float> data(static_cast<size_t>(element_count(shape)), value);
    v.constant = Tensor::from_vector(shape, data);
    v.shape = ValueShape::of(shape);
    return g.add_value(std::move(v));
  }
  ValueId node(const std::string& op, std::vector<ValueId> inputs) {
    Value out;
    out.name = op + std::to_string(g.values.size());
    ValueId id = g.add_value(std::move(out));
    Node n;
    n.info.name = g.value(id).name;
    n.info.op_type = op;
    n.info.opset = 17;
    n.inputs = std::move(inputs);
    n.outputs = {id};
    g.nodes.push_back(std::move(n));
    return id;
  }
  Graph& finish(ValueId output) {
    g.outputs = {output};
    g.sort_topologically();
    return g;
  }
  Graph g;
};

// The q4 export of the same decoder (MatMulNBits): the scale goes into the projections' block scales (float32
// there) and biases instead; the packed codes and zero points stay as they are.
TEST(Passes, FoldQueryScalesIntoTheBlockScalesOfAQ4Decoder) {
  const std::filesystem::path file = kModels / "variants" / "bart_decoder_tiny_opset17_q4" / "model.onnx";
  Graph before = onnx::import_model_file(file);
  optimize(before, ops::builtin_registry(),
           DisabledPasses::of({"fold_scales_into_weights", "merge_sibling_products"}, "the test"));
  Graph g = onnx::import_model_file(file);
  PassReport r =
      optimize(g, ops::builtin_registry(), DisabledPasses::of({"merge_sibling_products"}, "the test"));
  EXPECT_EQ(r.count("fold_scales_into_weights"), 4) << r.summary();
  size_t scaled = 0;
  for (const Node& n : g.nodes) {
    if (n.info.op_type != "MatMulNBits") continue;
    const auto it = std::find_if(before.nodes.begin(), before.nodes.end(),
                                 [&](const Node& m) { return m.info.name == n.info.name; });
    ASSERT_NE(it, before.nodes.end()) << n.info.name;
    EXPECT_EQ(n.inputs[1], it->inputs[1]) << n.info.name;  // the codes
    const Tensor& q = *g.value(n.inputs[2]).constant;
    const Tensor& q0 = *before.value(it->inputs[2]).constant;
    if (q.data<float>()[0] == q0.data<float>()[0]) continue;
    ++scaled;
    for (size_t e = 0; e < q.data<float>().size(); ++e)
      ASSERT_EQ(static_cast<double>(q.data<float>()[e]), 0.25 * q0.data<float>()[e]) << n.info.name;
  }
  EXPECT_EQ(scaled, 4u);
}

// Not folded: a scale that is not a scalar, a weight another node reads too, a float16 weight.
TEST(Passes, FoldScalesLeavesLookalikesAlone) {
  auto fold = [](const Shape& scale_shape, bool shared_weight, bool half_weight) {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 4});
    ValueId w = b.constant(0.75f, {4, 3});
    if (half_weight) b.g.value(w).constant = ops::narrow_to_float16(*b.g.value(w).constant);
    ValueId z = b.node("Mul", {b.node("MatMul", {x, w}), b.constant(0.5f, scale_shape)});
    if (shared_weight) z = b.node("Add", {z, b.node("MatMul", {x, w})});
    return fold_scales_into_weights(b.finish(z));
  };
  EXPECT_EQ(fold({}, false, false), 1);  // the pattern itself: the others differ from it only as named
  EXPECT_EQ(fold({1}, false, false), 1);
  EXPECT_EQ(fold({3}, false, false), 0);
  EXPECT_EQ(fold({}, true, false), 0);
  EXPECT_EQ(fold({}, false, true), 0);
}

// Sibling products of one A (a decoder layer's q, k and v projections) merged: one MatMul over the weights
// side by side, its output split into their column blocks. The merged weight's block i equals sibling i's
// weight element for element (whichever layout read_transposed_weights left), its bias likewise.
TEST(Passes, MergeSiblingProjectionsOfAnExportedDecoder) {
  const std::filesystem::path file = kModels / "bart_decoder_cached_cross_tiny_opset17" / "model.onnx";
  Graph before = onnx::import_model_file(file);
  // fuse_layer_norm_into_products off in both: it would take the LayerNorms into different products.
  optimize(before, ops::builtin_registry(),
           DisabledPasses::of({"merge_sibling_products", "fuse_layer_norm_into_products"}, "the test"));
  Graph g = onnx::import_model_file(file);
  PassReport r =
      optimize(g, ops::builtin_registry(), DisabledPasses::of({"fuse_layer_norm_into_products"}, "the test"));
  EXPECT_EQ(r.count("merge_sibling_products"), 6) << r.summary();  // q, k, v of 2 layers
  EXPECT_EQ(before.nodes.size() - g.nodes.size(), 4u);
  auto original = [&](const std::string& name) -> const Node& {
    const auto it = std::find_if(before.nodes.begin(), before.nodes.end(),
                                 [&](const Node& m) { return m.info.name == name; });
    EXPECT_NE(it, before.nodes.end()) << name;
    return *it;
  };
  int merged = 0;
  for (const Node& n : g.nodes) {
    const ops::LinearAttributes linear =
        n.info.op_type == "MatMul" ? ops::read_linear_attributes(n.info) : ops::LinearAttributes{};
    if (linear.split_columns.empty()) continue;
    ++merged;
    ASSERT_EQ(linear.split_columns, (std::vector<int64_t>{32, 32, 32})) << n.info.name;
    ASSERT_EQ(n.outputs.size(), 3u);
    const Tensor& w = *g.value(n.inputs[1]).constant;
    const Tensor& bias = *g.value(n.inputs[2]).constant;
    size_t start = 0, name_start = 0;
    for (size_t i = 0; i < 3; ++i) {
      const size_t plus = n.info.name.find('+', name_start);
      const Node& m = original(n.info.name.substr(name_start, plus - name_start));
      name_start = plus + 1;
      EXPECT_EQ(m.outputs[0], n.outputs[i]);
      EXPECT_EQ(m.inputs[0], n.inputs[0]);
      const Tensor& wi = *before.value(m.inputs[1]).constant;
      const Tensor& bi = *before.value(m.inputs[2]).constant;
      const int64_t k = 32, width = 32;
      for (int64_t row = 0; row < k; ++row)
        for (int64_t c = 0; c < width; ++c) {
          // [N, K] (trans_b) or [K, N]
          const float got =
              linear.trans_b ? w.data<float>()[(start + c) * k + row] : w.data<float>()[row * 96 + start + c];
          const float want =
              linear.trans_b ? wi.data<float>()[c * k + row] : wi.data<float>()[row * width + c];
          ASSERT_EQ(got, want) << n.info.name << " block " << i;
        }
      for (int64_t c = 0; c < width; ++c) ASSERT_EQ(bias.data<float>()[start + c], bi.data<float>()[c]);
      start += width;
    }
  }
  EXPECT_EQ(merged, 2);
}

// The q4 export of the self-contained decoder: MatMulNBits siblings merged with their codes, block scales,
// zero points and biases laid side by side along N (bytes equal to the siblings' concatenated), N their sum;
// the four cross-attention k / v products of the encoder's states merge three at a time (one left alone).
TEST(Passes, MergeSiblingMatMulNBitsOfAQ4Decoder) {
  const std::filesystem::path file = kModels / "variants" / "bart_decoder_tiny_opset17_q4" / "model.onnx";
  Graph before = onnx::import_model_file(file);
  // fuse_layer_norm_into_products off in both: it would take the LayerNorms into different products.
  optimize(before, ops::builtin_registry(),
           DisabledPasses::of({"merge_sibling_products", "fuse_layer_norm_into_products"}, "the test"));
  Graph g = onnx::import_model_file(file);
  PassReport r =
      optimize(g, ops::builtin_registry(), DisabledPasses::of({"fuse_layer_norm_into_products"}, "the test"));
  EXPECT_EQ(r.count("merge_sibling_products"), 9) << r.summary();
  int merged = 0;
  for (const Node& n : g.nodes) {
    if (n.info.op_type != "MatMulNBits") continue;
    const ops::NBitsAttributes nbits = ops::read_nbits_attributes(n.info);
    if (nbits.split_columns.empty()) continue;
    ++merged;
    std::vector<const Node*> siblings;
    for (size_t start = 0; start <= n.info.name.size();) {
      const size_t plus = std::min(n.info.name.find('+', start), n.info.name.size());
      const std::string name = n.info.name.substr(start, plus - start);
      const auto it = std::find_if(before.nodes.begin(), before.nodes.end(),
                                   [&](const Node& m) { return m.info.name == name; });
      ASSERT_NE(it, before.nodes.end()) << name;
      siblings.push_back(&*it);
      start = plus + 1;
    }
    ASSERT_EQ(siblings.size(), nbits.split_columns.size());
    int64_t n_total = 0;
    for (size_t i = 0; i < siblings.size(); ++i) {
      EXPECT_EQ(siblings[i]->info.attributes.get_int("N", 0), nbits.split_columns[i]);
      n_total += nbits.split_columns[i];
    }
    EXPECT_EQ(n.info.attributes.get_int("N", 0), n_total);
    for (size_t input = 1; input < n.inputs.size(); ++input) {
      if (n.inputs[input] == kNoValue) continue;
      std::vector<std::byte> joined;
      for (const Node* m : siblings) {
        const auto bytes = before.value(m->inputs[input]).constant->bytes();
        joined.insert(joined.end(), bytes.begin(), bytes.end());
      }
      const auto bytes = g.value(n.inputs[input]).constant->bytes();
      EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), joined.begin(), joined.end()))
          << n.info.name << " input " << input;
    }
  }
  EXPECT_EQ(merged, 3);  // self-attention q, k, v of both layers; three of the four cross k / v
}

// Not merged: products that differ in their epilogue, read a runtime weight, force a kernel, take a residual
// or read another A; more than three siblings make groups of three (and a pair).
TEST(Passes, MergeSiblingProductsLeavesLookalikesAlone) {
  auto merge = [](const std::string& variant, int siblings) {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 8});
    std::vector<ValueId> outputs;
    for (int i = 0; i < siblings; ++i) outputs.push_back(b.node("MatMul", {x, b.constant(0.5f + i, {8, 4})}));
    ValueId other = kNoValue;
    if (variant == "relu") {
      other = b.node("MatMul", {x, b.constant(1.0f, {8, 4})});
      b.g.nodes.back().info.attributes.set(ops::kFusedActivationAttribute, std::string("Relu"));
    } else if (variant == "runtime weight") {
      other = b.node("MatMul", {x, b.input("w", {8, 4})});
    } else if (variant == "forced kernel") {
      other = b.node("MatMul", {x, b.constant(1.0f, {8, 4})});
      b.g.nodes.back().info.attributes.set(ops::kForcedKernelAttribute, std::string("tiled"));
    } else if (variant == "residual") {
      other = b.node("MatMul", {x, b.constant(1.0f, {8, 4}), kNoValue, b.input("r", {2, 4})});
      b.g.nodes.back().info.attributes.set(ops::kFusedResidualAttribute, int64_t{1});
    } else if (variant == "bias") {
      other = b.node("MatMul", {x, b.constant(1.0f, {8, 4}), b.constant(1.0f, {4})});
    } else if (variant == "other A") {
      other = b.node("MatMul", {b.input("y", {2, 8}), b.constant(1.0f, {8, 4})});
    }
    if (other != kNoValue) outputs.push_back(other);
    Graph& g = b.finish(outputs[0]);
    g.outputs = outputs;
    return merge_sibling_products(g);
  };
  EXPECT_EQ(merge("", 2), 2);  // the pattern itself: the others differ from it only as named
  for (const char* variant : {"relu", "runtime weight", "forced kernel", "residual", "bias", "other A"})
    EXPECT_EQ(merge(variant, 1), 0) << variant;
  EXPECT_EQ(merge("", 4), 3);  // three, and one left
  EXPECT_EQ(merge("", 5), 5);  // three and two
}

// Every LayerNormalization of a decoder taken into the product that reads its output as A, of type `op`,
// its scale and bias as inputs `scale_input` and the next (constants), the normalised values as the product's
// last output for the LayerNormalization's other readers (the next residual).
void expect_layer_norms_in_products(const std::filesystem::path& file, const std::string& op,
                                    size_t scale_input) {
  Graph g = onnx::import_model_file(file);
  const int layer_norms = count_ops(g, "LayerNormalization");
  PassReport r = optimize(g, ops::builtin_registry());
  EXPECT_EQ(layer_norms, 7);  // the embedding's and three a layer
  EXPECT_EQ(r.count("fuse_layer_norm_into_products"), layer_norms) << r.summary();
  EXPECT_EQ(count_ops(g, "LayerNormalization"), 0);
  int fused = 0;
  for (const Node& n : g.nodes) {
    if (!n.info.attributes.has(ops::kMatMulLayerNormEpsilonAttribute)) continue;
    ++fused;
    EXPECT_EQ(n.info.op_type, op);
    ASSERT_EQ(n.inputs.size(), scale_input + 2);
    EXPECT_TRUE(g.value(n.inputs[scale_input]).constant.has_value());
    EXPECT_TRUE(g.value(n.inputs[scale_input + 1]).constant.has_value());
    EXPECT_GE(n.outputs.size(), 2u);
  }
  EXPECT_EQ(fused, layer_norms);
}

// A post-LN decoder: the products are the merged q, k, v, the cross-attention's q, fc1 and the LM head.
TEST(Passes, FuseLayerNormIntoProductsOfAnExportedDecoder) {
  expect_layer_norms_in_products(kModels / "bart_decoder_cached_cross_tiny_opset17" / "model.onnx", "MatMul",
                                 ops::LayerNormInput::kScale);
}

// Its q4 export: MatMulNBits, the scale and bias after the empty residual slot.
TEST(Passes, FuseLayerNormIntoMatMulNBitsOfAQ4Decoder) {
  expect_layer_norms_in_products(kModels / "variants" / "bart_decoder_tiny_opset17_q4" / "model.onnx",
                                 "MatMulNBits", ops::NBitsLayerNormInput::kScale);
}

// A uint8 export of the decoder (tests/models/variants_dynamic.py, as ONNX Runtime's quantize_dynamic writes
// it): each MatMulInteger whose product is not exposed takes its Cast, its Mul by a_scale * b_scale and its
// bias Add in (wgi.scaled_output, ScaledIntegerInput's inputs); the scale products' Muls go dead with them,
// and the residual Adds after them move into their epilogue.
// The first product, a graph output (--expose-integers), stays as it is; so does one whose Cast output is
// read elsewhere.
TEST(Passes, FuseDynamicallyQuantizedMatMulsOfAUint8Decoder) {
  const std::filesystem::path file =
      std::filesystem::path(WGI_TEST_DATA_DIR) / "quantized" / "bart_decoder_tiny_uint8.onnx";
  const auto producer_op = [](const Graph& g, ValueId v) {
    for (const Node& n : g.nodes)
      if (std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end()) return n.info.op_type;
    return std::string();
  };
  const auto fuse = [&](bool expose_a_cast) {
    Graph g = onnx::import_model_file(file);
    const int products = count_ops(g, "MatMulInteger");
    const int casts = count_ops(g, "Cast");
    if (expose_a_cast) {
      for (const Node& n : g.nodes) {
        if (n.info.op_type == "Cast" && producer_op(g, n.inputs[0]) == "MatMulInteger" &&
            std::find(g.outputs.begin(), g.outputs.end(), n.inputs[0]) == g.outputs.end()) {
          g.outputs.push_back(n.outputs[0]);
          break;
        }
      }
    }
    PassReport r = optimize(g, ops::builtin_registry());
    const int fused = r.count("fuse_dynamically_quantized_products");
    // Merged siblings (merge_sibling_products) keep an output each; a LayerNormalization taken in adds its
    // own.
    int product_outputs = 0;
    for (const Node& n : g.nodes) {
      if (n.info.op_type != "MatMulInteger") continue;
      product_outputs += static_cast<int>(n.outputs.size()) -
                         (n.info.attributes.has(ops::kMatMulLayerNormEpsilonAttribute) ? 1 : 0);
    }
    EXPECT_EQ(product_outputs, products);
    EXPECT_EQ(casts - count_ops(g, "Cast"), fused) << r.summary();
    int with_residual = 0;
    for (const Node& n : g.nodes) {
      if (n.info.op_type != "MatMulInteger" || !n.info.attributes.has(ops::kIntegerScaledOutputAttribute))
        continue;
      // The residual fusion then takes the Add after the float output (input 7).
      if (ops::read_epilogue_attributes(n.info).residual) {
        ++with_residual;
        EXPECT_EQ(n.inputs.size(), ops::ScaledIntegerInput::kResidual + 1);
      }
      EXPECT_GE(n.inputs.size(), ops::ScaledIntegerInput::kBScale + 1);
      // (or none where the product then took the quantization in: the next test)
      if (!n.info.attributes.has(ops::kIntegerQuantizeAAttribute)) {
        EXPECT_EQ(producer_op(g, n.inputs[ops::ScaledIntegerInput::kAScale]), "DynamicQuantizeLinear");
      }
      EXPECT_TRUE(g.value(n.inputs[ops::ScaledIntegerInput::kBScale]).constant.has_value());
    }
    EXPECT_EQ(with_residual, 6) << "the out_proj of each attention and fc2, of 2 layers";
    return std::pair{products, fused};
  };
  const auto [products, fused] = fuse(false);
  EXPECT_EQ(products, 21);
  EXPECT_EQ(fused, products - 1);  // all but the exposed product
  EXPECT_EQ(fuse(true).second, fused - 1);
}

// Then rescaled products of one A merge (merge_sibling_products: a layer's q, k and v projections, at most
// three a product), and each DynamicQuantizeLinear read by one product goes into it (wgi.quantize_a: the
// float A as input 0, inputs 2 and 4 empty). Two stay: layer 0's self-attention input, which the exposed
// (unrescaled) q projection reads beside the merged k and v, and the encoder states, which the four
// cross-attention k and v projections read (merged three and one).
TEST(Passes, FuseDynamicQuantizationIntoProductsOfAUint8Decoder) {
  Graph g = onnx::import_model_file(std::filesystem::path(WGI_TEST_DATA_DIR) / "quantized" /
                                    "bart_decoder_tiny_uint8.onnx");
  const int quantizations = count_ops(g, "DynamicQuantizeLinear");
  const PassReport r = optimize(g, ops::builtin_registry());
  const int taken = r.count("fuse_dynamic_quantization_into_products");
  EXPECT_EQ(count_ops(g, "DynamicQuantizeLinear"), quantizations - taken);
  EXPECT_EQ(taken, 12) << r.summary();
  EXPECT_EQ(r.count("merge_sibling_products"), 8) << r.summary();  // 2 (layer 0's k, v) + 3 + 3
  // The attentions' query scaling folds into the rescaled q projections' weight scales and biases (all but
  // the exposed first product's: 2 layers, self and cross attention).
  EXPECT_EQ(r.count("fold_scales_into_weights"), 3) << r.summary();
  int quantizing = 0;
  for (const Node& n : g.nodes) {
    if (n.info.op_type == "DynamicQuantizeLinear") {
      int products = 0;
      for (const Node& reader : g.nodes)
        products += reader.info.op_type == "MatMulInteger" && reader.inputs[0] == n.outputs[0];
      EXPECT_EQ(products, 2) << n.info.name << ": a quantization read by one product stayed";
    }
    if (n.info.op_type != "MatMulInteger" || !n.info.attributes.has(ops::kIntegerQuantizeAAttribute))
      continue;
    ++quantizing;
    EXPECT_EQ(g.value(n.inputs[0]).dtype, DType::Float32);
    EXPECT_EQ(n.inputs[2], kNoValue);
    EXPECT_EQ(n.inputs[ops::ScaledIntegerInput::kAScale], kNoValue);
  }
  EXPECT_EQ(quantizing, taken);
}

// The uint8 export of the small CNN: its convs (ConvInteger) take their rescale and bias [M, 1, 1] in, then
// their Relu / Clip; the first, a graph output, stays.
TEST(Passes, FuseDynamicallyQuantizedConvsOfAUint8Cnn) {
  Graph g = onnx::import_model_file(std::filesystem::path(WGI_TEST_DATA_DIR) / "quantized" /
                                    "small_cnn_uint8.onnx");
  ASSERT_EQ(count_ops(g, "ConvInteger"), 3);
  const PassReport r = optimize(g, ops::builtin_registry());
  EXPECT_EQ(r.count("fuse_dynamically_quantized_products"), 2) << r.summary();
  EXPECT_EQ(count_ops(g, "Cast"), 1);  // the exposed conv's
  std::set<std::string> activations;
  for (const Node& n : g.nodes) {
    if (n.info.op_type != "ConvInteger" || !n.info.attributes.has(ops::kIntegerScaledOutputAttribute))
      continue;
    ASSERT_EQ(n.inputs.size(), ops::ScaledIntegerInput::kBias + 1);
    EXPECT_EQ(g.value(n.inputs[ops::ScaledIntegerInput::kBias]).constant->shape().size(), 3u);
    activations.insert(ops::read_epilogue_attributes(n.info).activation);
  }
  EXPECT_EQ(activations, (std::set<std::string>{"Clip", "Relu"}));
}

// The conv's constants must broadcast per output channel without widening the output: a scale or bias of
// shape [M] (numpy would put it on the width axis) or of a higher rank is not taken in.
TEST(Passes, FuseDynamicallyQuantizedConvsOnlyWithChannelShapedConstants) {
  struct Case {
    Shape w_scale, bias;
    int fused;
    bool bias_taken;
  };
  const int64_t m = 5;
  for (const Case& c : {Case{{}, {m, 1, 1}, 1, true}, Case{{m, 1, 1}, {1, m, 1, 1}, 1, true},
                        Case{{m}, {m, 1, 1}, 0, false}, Case{{1, 1, 1, 1, 1}, {m, 1, 1}, 0, false},
                        Case{{}, {m}, 1, false}, Case{{1, m, 1, 1}, {1, 1, m, 1, 1}, 1, false}}) {
    SCOPED_TRACE(shape_to_string(c.w_scale) + " " + shape_to_string(c.bias));
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 4, 6, m});  // width m: a [M] constant would broadcast there
    Graph& g = b.g;
    const auto value = [&](const std::string& name, std::optional<Tensor> constant) {
      Value v;
      v.name = name;
      v.constant = std::move(constant);
      return g.add_value(std::move(v));
    };
    Node dq;
    dq.info.op_type = "DynamicQuantizeLinear";
    dq.info.opset = 17;
    dq.inputs = {x};
    dq.outputs = {value("xq", std::nullopt), value("x_scale", std::nullopt), value("x_zp", std::nullopt)};
    g.nodes.push_back(dq);
    const ValueId w = value("w", Tensor(DType::UInt8, {m, 4, 3, 3}));
    const ValueId w_zp = value("w_zp", Tensor(DType::UInt8, {}));
    const ValueId sums = b.node("ConvInteger", {dq.outputs[0], w, dq.outputs[2], w_zp});
    const ValueId s = b.node("Mul", {dq.outputs[1], b.constant(0.01f, c.w_scale)});
    const ValueId f = b.node("Cast", {sums});
    g.nodes.back().info.attributes.set("to", int64_t{1});
    const ValueId y = b.node("Add", {b.node("Mul", {f, s}), b.constant(0.5f, c.bias)});
    b.finish(y);
    EXPECT_EQ(fuse_dynamically_quantized_products(g), c.fused);
    EXPECT_EQ(count_ops(g, "Add"), c.bias_taken ? 0 : 1);
    for (const Node& n : g.nodes) {
      if (n.info.op_type != "ConvInteger") continue;
      EXPECT_EQ(n.inputs.size(), c.fused == 0   ? 4u
                                 : c.bias_taken ? ops::ScaledIntegerInput::kBias + 1
                                                : ops::ScaledIntegerInput::kBScale + 1);
    }
  }
}

// Not taken in: a LayerNormalization over another axis, one whose Mean output is read, one read only by a
// product with a runtime weight.
TEST(Passes, FuseLayerNormIntoProductsOnlyItsForm) {
  for (const std::string variant : {"", "axis", "mean", "runtime weight"}) {
    SCOPED_TRACE(variant);
    GraphBuilder b;
    const ValueId x = b.input("x", {2, 3, 8});
    const ValueId w = variant == "runtime weight" ? b.input("w", {8, 5}) : b.constant(0.5f, {8, 5});
    const ValueId y = b.node("LayerNormalization", {x, b.constant(1.5f, {8}), b.constant(0.25f, {8})});
    Node& ln = b.g.nodes.back();
    if (variant == "axis") ln.info.attributes.set("axis", int64_t{1});
    if (variant == "mean") {
      Value mean;
      mean.name = "mean";
      ln.outputs.push_back(b.g.add_value(std::move(mean)));
    }
    const ValueId mean_output = b.g.nodes.back().outputs.back();
    Graph& g = b.finish(b.node("MatMul", {y, w}));
    if (variant == "mean") g.outputs.push_back(mean_output);
    EXPECT_EQ(fuse_layer_norm_into_products(g), variant.empty() ? 1 : 0);
  }
}

// A decoder's past keys and values, each concatenated with the step's new ones: paired per layer into wgi
// ConcatPairs nodes (the present outputs theirs).
TEST(Passes, MergePastConcatsOfAnExportedDecoder) {
  Graph g = onnx::import_model_file(kModels / "bart_decoder_cached_cross_tiny_opset17" / "model.onnx");
  PassReport r = optimize(g, ops::builtin_registry());
  EXPECT_EQ(r.count("merge_past_concats"), 4) << r.summary();  // keys and values of 2 layers
  EXPECT_EQ(count_ops(g, "ConcatPairs"), 2);
  for (const Node& n : g.nodes) {
    if (n.info.op_type != "ConcatPairs") continue;
    EXPECT_EQ(n.info.domain, "wgi");
    ASSERT_EQ(n.inputs.size(), 4u);
    ASSERT_EQ(n.outputs.size(), 2u);
    for (size_t p = 0; p < 2; ++p) {
      EXPECT_NE(std::find(g.inputs.begin(), g.inputs.end(), n.inputs[2 * p]), g.inputs.end());  // the past
      EXPECT_NE(std::find(g.outputs.begin(), g.outputs.end(), n.outputs[p]), g.outputs.end());  // the present
    }
  }
}

// Not paired: a Concat whose first input is computed, Concats along different axes, of three inputs; an odd
// one out stays a Concat.
TEST(Passes, MergePastConcatsLeavesLookalikesAlone) {
  auto merge = [](const std::string& variant) {
    GraphBuilder b;
    std::vector<ValueId> outputs;
    auto concat = [&](std::vector<ValueId> inputs, int64_t axis) {
      outputs.push_back(b.node("Concat", std::move(inputs)));
      b.g.nodes.back().info.attributes.set("axis", axis);
    };
    concat({b.input("past_key", {1, 2, 4, 8}), b.input("key", {1, 2, 1, 8})}, 2);
    if (variant == "pair") concat({b.input("past_value", {1, 2, 4, 8}), b.input("value", {1, 2, 1, 8})}, 2);
    if (variant == "computed")
      concat({b.node("Relu", {b.input("past_value", {1, 2, 4, 8})}), b.input("value", {1, 2, 1, 8})}, 2);
    if (variant == "axis") concat({b.input("past_value", {1, 2, 4, 8}), b.input("value", {1, 2, 4, 1})}, 3);
    if (variant == "three")
      concat(
          {b.input("past_value", {1, 2, 4, 8}), b.input("value", {1, 2, 1, 8}), b.input("v2", {1, 2, 1, 8})},
          2);
    if (variant == "shape") concat({b.input("past_value", {1, 3, 4, 8}), b.input("value", {1, 3, 1, 8})}, 2);
    Graph& g = b.finish(outputs[0]);
    g.outputs = outputs;
    return merge_past_concats(g);
  };
  EXPECT_EQ(merge("pair"), 2);  // the pattern itself: the others differ from it only as named
  for (const char* variant : {"computed", "axis", "three", "shape", "alone"})
    EXPECT_EQ(merge(variant), 0) << variant;
}

// y = Add(P, R) or Add(R, P) with P a MatMul / Conv: R moves into the producer's epilogue (input 3 and
// wgi.residual = 1), before an activation fused afterwards.
TEST(Passes, FuseResidualAddIntoMatMulWithBias) {
  for (size_t side = 0; side < 2; ++side) {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    ValueId r = b.input("r", {4, 6});
    ValueId w = b.constant(0.5f, {8, 6});
    ValueId mm = b.node("MatMul", {x, w});
    ValueId biased = b.node("Add", {mm, b.constant(1.0f, {6})});
    Graph& g = b.finish(
        b.node("Add", side == 0 ? std::vector<ValueId>{biased, r} : std::vector<ValueId>{r, biased}));
    const ValueId y = g.outputs[0];
    EXPECT_EQ(fuse_bias_adds(g), 1);
    EXPECT_EQ(fuse_residual_adds(g), 1) << side;
    ASSERT_EQ(g.nodes.size(), 1u);
    const Node& n = g.nodes[0];
    EXPECT_EQ(n.info.op_type, "MatMul");
    ASSERT_EQ(n.inputs.size(), 4u);
    EXPECT_EQ(n.inputs[0], x);
    EXPECT_TRUE(g.value(n.inputs[2]).constant.has_value());  // the bias
    EXPECT_EQ(n.inputs[ops::kFusedResidualInput], r);
    EXPECT_EQ(n.info.attributes.get_int(ops::kFusedResidualAttribute, 0), 1);
    EXPECT_EQ(n.outputs[0], y);
  }
}

TEST(Passes, FuseResidualAddAndReluIntoConv) {
  GraphBuilder b;
  ValueId x = b.input("x", {1, 4, 5, 5});
  ValueId conv = b.node("Conv", {x, b.constant(0.25f, {4, 4, 3, 3})});
  b.g.nodes.back().info.attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  Graph& g = b.finish(b.node("Relu", {b.node("Add", {conv, x})}));
  const ValueId y = g.outputs[0];
  PassReport r = optimize(g, ops::builtin_registry());
  EXPECT_EQ(r.count("fuse_residual_adds"), 1) << r.summary();
  EXPECT_EQ(r.count("fuse_activations"), 1) << r.summary();
  ASSERT_EQ(g.nodes.size(), 1u);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.info.op_type, "Conv");
  ASSERT_EQ(n.inputs.size(), 4u);
  EXPECT_EQ(n.inputs[2], kNoValue);  // no bias
  EXPECT_EQ(n.inputs[ops::kFusedResidualInput], x);
  EXPECT_EQ(n.info.attributes.get_int(ops::kFusedResidualAttribute, 0), 1);
  EXPECT_EQ(n.info.attributes.get_string(ops::kFusedActivationAttribute, ""), "Relu");
  EXPECT_EQ(n.outputs[0], y);
}

TEST(Passes, FuseResidualAddsLeavesLookalikesAlone) {
  enum class Case { Broadcast, KnownAgainstSymbol, FusedGelu, TwoReaders, GraphOutput, SoftmaxReader };
  for (Case c : {Case::Broadcast, Case::KnownAgainstSymbol, Case::FusedGelu, Case::TwoReaders,
                 Case::GraphOutput, Case::SoftmaxReader}) {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    ValueId r = b.input("r", c == Case::Broadcast ? Shape{6} : Shape{4, 6});
    ValueId mm = b.node("MatMul", {x, b.constant(0.5f, {8, 6})});
    // The graph's shapes, where an exporter's value_info gives them.
    b.g.value(mm).shape = ValueShape::of({4, 6});
    if (c == Case::KnownAgainstSymbol) b.g.value(r).shape.dims[0] = Dim::named("batch");
    if (c == Case::FusedGelu)
      b.g.nodes.back().info.attributes.set(ops::kFusedActivationAttribute, std::string("Gelu"));
    ValueId y = b.node("Add", {mm, r});
    if (c == Case::SoftmaxReader) y = b.node("Softmax", {y});
    Graph& g = b.finish(y);
    if (c == Case::TwoReaders) {
      g.outputs.push_back(b.node("Relu", {mm}));
      g.sort_topologically();
    }
    if (c == Case::GraphOutput) g.outputs.push_back(mm);
    const size_t nodes = g.nodes.size();
    EXPECT_EQ(fuse_residual_adds(g), 0) << static_cast<int>(c);
    EXPECT_EQ(g.nodes.size(), nodes) << static_cast<int>(c);
  }
}

// The exported models: ResNet's bottleneck shortcuts (Conv + Add + Relu -> one Conv), and the transformer
// blocks' x + attention projection and x + MLP (SigLIP: two per block of three, and its pooling head's).
TEST(Passes, FuseResidualAddsOfExportedModels) {
  {
    Graph g = onnx::import_model_file(kModels / "resnet_tiny_opset17" / "model.onnx");
    const int adds = count_ops(g, "Add");
    ASSERT_EQ(adds, 4);
    PassReport r = optimize(g, ops::builtin_registry());
    EXPECT_EQ(r.count("fuse_residual_adds"), adds) << r.summary();
    EXPECT_EQ(count_ops(g, "Add"), 0);
    EXPECT_EQ(count_ops(g, "Relu"), 0);
    int fused = 0;
    for (const Node& n : g.nodes) {
      if (!n.info.attributes.has(ops::kFusedResidualAttribute)) continue;
      ++fused;
      EXPECT_EQ(n.info.op_type, "Conv") << n.info.name;
      EXPECT_EQ(n.info.attributes.get_string(ops::kFusedActivationAttribute, ""), "Relu") << n.info.name;
      EXPECT_EQ(n.inputs.size(), 4u) << n.info.name;
    }
    EXPECT_EQ(fused, adds);
  }
  {
    Graph g = onnx::import_model_file(kModels / "siglip_vision_tiny_opset17" / "model.onnx");
    PassReport r = optimize(g, ops::builtin_registry());
    EXPECT_EQ(r.count("fuse_residual_adds"), 7) << r.summary();
    EXPECT_EQ(r.count("fuse_attention"), 3) << r.summary();  // the masks and P V left to the attention fusion
    for (const Node& n : g.nodes) {
      if (n.info.attributes.has(ops::kFusedResidualAttribute)) {
        EXPECT_EQ(n.info.op_type, "MatMul") << n.info.name;
      }
    }
  }
}

// The graph is one Gelu node from `x` to the graph's output.
void expect_single_gelu(const Graph& g, ValueId x, const std::string& approximate, const std::string& what) {
  ASSERT_EQ(g.nodes.size(), 1u) << what;
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.info.op_type, "Gelu") << what;
  EXPECT_EQ(n.info.opset, 20) << what;
  EXPECT_EQ(n.info.attributes.get_string("approximate", "none"), approximate) << what;
  EXPECT_EQ(n.inputs, std::vector<ValueId>{x}) << what;
  EXPECT_EQ(n.outputs, g.outputs) << what;
}

// 0.5 x (1 + erf(x / sqrt 2)) in the association orders and spellings exporters use.
TEST(Passes, FuseGeluErfFormInEveryOrder) {
  enum class Order { XpHalf, HalfXp, PHalfX, PxHalf };
  for (bool divide : {true, false}) {
    for (Order order : {Order::XpHalf, Order::HalfXp, Order::PHalfX, Order::PxHalf}) {
      GraphBuilder b;
      ValueId x = b.input("x", {2, 5});
      ValueId s = divide ? b.node("Div", {x, b.constant(1.4142135381698608f)})
                         : b.node("Mul", {b.constant(0.70710678f), x});
      ValueId p = b.node("Add", {b.node("Erf", {s}), b.constant(1.0f)});
      ValueId y = kNoValue;
      switch (order) {
        case Order::XpHalf:  // torch's nn.GELU export
          y = b.node("Mul", {b.node("Mul", {x, p}), b.constant(0.5f)});
          break;
        case Order::HalfXp:
          y = b.node("Mul", {b.node("Mul", {b.constant(0.5f), x}), p});
          break;
        case Order::PHalfX:
          y = b.node("Mul", {b.node("Mul", {p, b.constant(0.5f)}), x});
          break;
        case Order::PxHalf:
          y = b.node("Mul", {b.constant(0.5f), b.node("Mul", {p, x})});
          break;
      }
      Graph& g = b.finish(y);
      const std::string what = std::string(divide ? "Div" : "Mul") + " order " + std::to_string(int(order));
      EXPECT_EQ(fuse_gelu(g), 1) << what;
      expect_single_gelu(g, x, "none", what);
    }
  }
}

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the cube as torch writes it and as Pow.
TEST(Passes, FuseGeluTanhForm) {
  for (bool pow : {false, true}) {
    GraphBuilder b;
    ValueId x = b.input("x", {3, 4});
    ValueId cube = pow ? b.node("Pow", {x, b.constant(3.0f)}) : b.node("Mul", {x, b.node("Mul", {x, x})});
    ValueId inner = b.node("Add", {x, b.node("Mul", {b.constant(0.044714998453855515f), cube})});
    ValueId t = b.node("Tanh", {b.node("Mul", {b.constant(0.7978845834732056f), inner})});
    ValueId y = b.node("Mul", {b.constant(0.5f), b.node("Mul", {x, b.node("Add", {b.constant(1.0f), t})})});
    Graph& g = b.finish(y);
    EXPECT_EQ(fuse_gelu(g), 1) << (pow ? "Pow" : "Mul");
    expect_single_gelu(g, x, "tanh", pow ? "Pow" : "Mul");
  }
}

// What must stay as it is: another constant, an intermediate that something else reads, a constant that
// broadcasts x to a higher rank.
TEST(Passes, FuseGeluLeavesLookalikesAlone) {
  struct Variant {
    const char* what;
    float divisor;
    bool erf_is_output;
    Shape half_shape;
  };
  for (const Variant& v :
       {Variant{"x / 2", 2.0f, false, {}}, Variant{"erf read twice", 1.41421356f, true, {}},
        Variant{"[1,1,1] half", 1.41421356f, false, {1, 1, 1}}}) {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 5});
    ValueId e = b.node("Erf", {b.node("Div", {x, b.constant(v.divisor)})});
    ValueId y = b.node(
        "Mul", {b.node("Mul", {x, b.node("Add", {e, b.constant(1.0f)})}), b.constant(0.5f, v.half_shape)});
    Graph& g = b.finish(y);
    if (v.erf_is_output) g.outputs.push_back(e);
    const size_t nodes = g.nodes.size();
    EXPECT_EQ(fuse_gelu(g), 0) << v.what;
    EXPECT_EQ(g.nodes.size(), nodes) << v.what;
  }
}

// On the exported models: every GELU becomes one Gelu and then the epilogue of the MLP's first Linear.
TEST(Passes, FuseGeluIntoTheMlpOfExportedTransformers) {
  struct Case {
    const char* model;
    const char* written_as;
    const char* fused_as;
  };
  for (const Case& c : {Case{"siglip_vision_tiny_opset17", "Tanh", "GeluTanh"},
                        Case{"florence2_vision_tiny_opset17", "Erf", "Gelu"}}) {
    Graph g = onnx::import_model_file(kModels / c.model / "model.onnx");
    const int gelus = count_ops(g, c.written_as);
    ASSERT_GT(gelus, 0) << c.model;
    PassReport r = optimize(g, ops::builtin_registry());
    EXPECT_EQ(r.count("fuse_gelu"), gelus) << c.model << ": " << r.summary();
    EXPECT_EQ(count_ops(g, c.written_as), 0) << c.model;
    EXPECT_EQ(count_ops(g, "Gelu"), 0) << c.model << ": each GELU follows a Linear";
    int fused = 0;
    for (const Node& n : g.nodes) {
      if (n.info.attributes.get_string(ops::kFusedActivationAttribute, "") != c.fused_as) continue;
      EXPECT_EQ(n.info.op_type, "MatMul") << n.info.name;
      ++fused;
    }
    EXPECT_EQ(fused, gelus) << c.model;
  }
}

// Q scaled before the scores (DaViT: q * head_dim ** -0.5, in its channel attention under a Transpose of Q):
// the scalar moves into the fused node, which reads the unscaled Q (through the Transpose where there is
// one). A Mul by a tensor that is not one scalar stays.
TEST(Passes, FuseAttentionTakesTheScaleOfQ) {
  struct Variant {
    const char* what;
    bool transpose_q;
    Shape factor_shape;
    bool folds;
  };
  for (const Variant& v :
       {Variant{"Mul(q, s)", false, {}, true}, Variant{"Transpose(Mul(q, s))", true, {}, true},
        Variant{"Mul(q, per-column)", false, {8}, false}}) {
    GraphBuilder b;
    // [batch, heads, tokens, head]: Q·Kᵀ with K given as is and transposed by the MatMul's Transpose.
    ValueId q = b.input("q", {1, 2, v.transpose_q ? 8 : 6, v.transpose_q ? 6 : 8});
    ValueId k = b.input("k", {1, 2, 6, 8});
    ValueId val = b.input("v", {1, 2, 6, 5});
    ValueId scaled = b.node("Mul", {q, b.constant(0.125f, v.factor_shape)});
    if (v.transpose_q) {
      scaled = b.node("Transpose", {scaled});
      b.g.nodes.back().info.attributes.set("perm", std::vector<int64_t>{0, 1, 3, 2});
    }
    ValueId kt = b.node("Transpose", {k});
    b.g.nodes.back().info.attributes.set("perm", std::vector<int64_t>{0, 1, 3, 2});
    ValueId p = b.node("Softmax", {b.node("MatMul", {scaled, kt})});
    Graph& g = b.finish(b.node("MatMul", {p, val}));
    ASSERT_EQ(fuse_attention(g), 1) << v.what;
    remove_dead_nodes(g);
    const auto attention = std::find_if(g.nodes.begin(), g.nodes.end(),
                                        [](const Node& n) { return n.info.op_type == "Attention"; });
    ASSERT_NE(attention, g.nodes.end()) << v.what;
    EXPECT_EQ(attention->info.attributes.get_float("scale", 0.0f), v.folds ? 0.125f : 1.0f) << v.what;
    EXPECT_EQ(count_ops(g, "Mul"), v.folds ? 0 : 1) << v.what;
    const ValueId q_read = attention->inputs[0];
    if (v.transpose_q) {
      const int32_t t = g.value(q_read).producer;
      ASSERT_GE(t, 0) << v.what;
      EXPECT_EQ(g.nodes[static_cast<size_t>(t)].info.op_type, "Transpose") << v.what;
      EXPECT_EQ(g.nodes[static_cast<size_t>(t)].inputs[0], q) << v.what;
    } else {
      EXPECT_EQ(q_read == q, v.folds) << v.what;
    }
  }
}

// DaViT's convolutional position encoding, x [1, 12, 8] as a 3x4 image of 8 channels:
//   Transpose(x, [0, 2, 1]) -> Reshape [1, 8, 3, 4] -> Conv (depthwise 3x3, pads 1) -> Reshape [1, 8, 12]
//   -> Transpose([0, 2, 1]) -> [Add(x, .) or Add(., x)]
// with one thing changed per lookalike.
struct PosEnc {
  const char* what;
  enum class Residual { None, Left, Right } residual = Residual::Right;
  std::vector<int64_t> perm1 = {0, 2, 1};
  std::vector<int64_t> perm2 = {0, 2, 1};
  Shape weight = {8, 1, 3, 3};
  int64_t group = 8;
  std::vector<int64_t> dilations = {1, 1};
  std::vector<int64_t> target1 = {1, 8, 3, 4};
  std::vector<int64_t> target2 = {1, 8, 12};
  bool conv_output_also_graph_output = false;
  bool transpose_read_twice = false;
  bool relu_on_conv = false;
  Shape residual_shape = {};  // {}: x itself; else a constant of this shape
  // The exporter cancelled Transpose(Transpose(v)): x = Transpose(v [1, 8, 12]) and the Reshape reads v.
  bool cancelled_pair = false;
};

std::vector<int64_t> constant_ints_of(const Graph& g, ValueId v) {
  const auto& c = g.value(v).constant;
  if (!c || c->dtype() != DType::Int64) return {};
  return std::vector<int64_t>(c->data<int64_t>().begin(), c->data<int64_t>().end());
}

ValueId ints_constant(Graph& g, const std::vector<int64_t>& v) {
  Value c;
  c.name = "ints" + std::to_string(g.values.size());
  c.dtype = DType::Int64;
  c.constant = Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  c.shape = ValueShape::of(c.constant->shape());
  return g.add_value(std::move(c));
}

Graph build_pos_enc(const PosEnc& p, ValueId& x, ValueId& w, ValueId& b) {
  GraphBuilder gb;
  w = gb.constant(0.25f, p.weight);
  b = gb.constant(0.5f, {p.weight[0]});
  ValueId t = kNoValue;
  if (p.cancelled_pair) {
    t = gb.input("v", {1, 8, 12});
    x = gb.node("Transpose", {t});
    gb.g.nodes.back().info.attributes.set("perm", p.perm1);
  } else {
    x = gb.input("x", {1, 12, 8});
    t = gb.node("Transpose", {x});
    gb.g.nodes.back().info.attributes.set("perm", p.perm1);
  }
  ValueId nchw = gb.node("Reshape", {t, ints_constant(gb.g, p.target1)});
  ValueId conv = gb.node("Conv", {nchw, w, b});
  ops::Attributes& a = gb.g.nodes.back().info.attributes;
  a.set("group", p.group);
  a.set("kernel_shape", std::vector<int64_t>{p.weight[2], p.weight[3]});
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.set("strides", std::vector<int64_t>{1, 1});
  a.set("dilations", p.dilations);
  if (p.relu_on_conv) conv = gb.node("Relu", {conv});
  ValueId flat = gb.node("Reshape", {conv, ints_constant(gb.g, p.target2)});
  ValueId y = gb.node("Transpose", {flat});
  gb.g.nodes.back().info.attributes.set("perm", p.perm2);
  if (p.transpose_read_twice) gb.g.outputs.push_back(gb.node("Relu", {t}));
  if (p.residual != PosEnc::Residual::None) {
    const ValueId r = p.residual_shape.empty() ? x : gb.constant(1.0f, p.residual_shape);
    y = p.residual == PosEnc::Residual::Left ? gb.node("Add", {r, y}) : gb.node("Add", {y, r});
  }
  gb.g.outputs.insert(gb.g.outputs.begin(), y);
  if (p.conv_output_also_graph_output) gb.g.outputs.push_back(conv);
  gb.g.sort_topologically();
  return std::move(gb.g);
}

TEST(Passes, FuseDepthwiseConvChannelsLast) {
  for (PosEnc p :
       {PosEnc{.what = "Add(., x)"}, PosEnc{.what = "Add(x, .)", .residual = PosEnc::Residual::Left},
        PosEnc{.what = "no Add", .residual = PosEnc::Residual::None},
        PosEnc{.what = "Relu on the conv", .relu_on_conv = true},
        PosEnc{.what = "cancelled Transpose pair", .cancelled_pair = true},
        PosEnc{.what = "5x5 kernel, -1 and 0 in the targets",
        .weight = {8, 1, 5, 5},
        .target1 = {-1, 8, 3, 4},
        .target2 = {0, 0, -1}}}) {
    if (p.weight[2] == 5) p.residual = PosEnc::Residual::None;  // pads 1 shrink a 5x5 conv's output
    ValueId x, w, b;
    Graph g = build_pos_enc(p, x, w, b);
    // The activation moves into the conv first, as in optimize.
    if (p.relu_on_conv) {
      EXPECT_EQ(fuse_activations(g), 1) << p.what;
    }
    EXPECT_EQ(fuse_depthwise_conv_channels_last(g), 1) << p.what;
    // With a cancelled pair, x's Transpose stays: the fused node reads x.
    ASSERT_EQ(g.nodes.size(), p.cancelled_pair ? 2u : 1u) << p.what;
    const Node& n = g.nodes.back();
    EXPECT_EQ(n.info.op_type, "DepthwiseConvChannelsLast") << p.what;
    EXPECT_EQ(n.info.domain, "wgi") << p.what;
    ASSERT_EQ(n.inputs.size(), 6u) << p.what;
    EXPECT_EQ(n.inputs[0], x) << p.what;
    EXPECT_EQ(n.inputs[1], w) << p.what;
    EXPECT_EQ(n.inputs[2], b) << p.what;
    EXPECT_EQ(n.inputs[3], p.residual == PosEnc::Residual::None ? kNoValue : x) << p.what;
    EXPECT_EQ(n.outputs, g.outputs) << p.what;
    EXPECT_EQ(n.info.attributes.get_ints("kernel_shape", {}),
              (std::vector<int64_t>{p.weight[2], p.weight[3]}));
    EXPECT_EQ(n.info.attributes.get_ints("pads", {}), (std::vector<int64_t>{1, 1, 1, 1})) << p.what;
    EXPECT_EQ(n.info.attributes.get_string(ops::kFusedActivationAttribute, ""), p.relu_on_conv ? "Relu" : "")
        << p.what;
  }
}

TEST(Passes, FuseDepthwiseConvChannelsLastLeavesLookalikesAlone) {
  for (const PosEnc& p :
       {PosEnc{.what = "first perm [0, 1, 2]", .perm1 = {0, 1, 2}},
        PosEnc{.what = "second perm [1, 0, 2]", .perm2 = {1, 0, 2}},
        PosEnc{.what = "group 1 conv", .weight = {8, 8, 3, 3}, .group = 1},
        PosEnc{.what = "grouped, not depthwise", .weight = {8, 2, 3, 3}, .group = 4},
        PosEnc{.what = "dilation 2", .dilations = {2, 2}},
        PosEnc{.what = "8x8 kernel", .weight = {8, 1, 8, 8}},
        PosEnc{.what = "conv output read twice", .conv_output_also_graph_output = true},
        PosEnc{.what = "transpose read twice", .transpose_read_twice = true},
        PosEnc{.what = "cancelled pair, perm [1, 0, 2]", .perm1 = {1, 0, 2}, .cancelled_pair = true},
        PosEnc{.what = "channels not second", .target1 = {1, 3, 8, 4}},
        PosEnc{.what = "H * W != N", .target1 = {1, 8, 2, 4}, .target2 = {1, 8, 8}},
        PosEnc{.what = "batch mixed into the image", .target1 = {1, 8, 3, 4}, .target2 = {1, 4, 24}}}) {
    ValueId x, w, b;
    Graph g = build_pos_enc(p, x, w, b);
    const size_t nodes = g.nodes.size();
    EXPECT_EQ(fuse_depthwise_conv_channels_last(g), 0) << p.what;
    EXPECT_EQ(g.nodes.size(), nodes) << p.what;
  }
  // A residual that broadcasts (a [1, 1, 8] bias): the chain fuses, the Add stays.
  ValueId x, w, b;
  Graph g = build_pos_enc(PosEnc{.what = "bias", .residual_shape = {1, 1, 8}}, x, w, b);
  EXPECT_EQ(fuse_depthwise_conv_channels_last(g), 1);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(count_ops(g, "Add"), 1);
  EXPECT_EQ(count_ops(g, "DepthwiseConvChannelsLast"), 1);
  for (const Node& n : g.nodes) {
    if (n.info.op_type == "DepthwiseConvChannelsLast") {
      EXPECT_EQ(n.inputs[3], kNoValue);
    }
  }
}

// The exported DaViT: every ConvPosEnc (the Reshape targets computed from Shape nodes at run time, some of
// them reading the conv's output; after a downsampling conv the exporter cancelled the Transpose pair, so the
// Reshape reads the [B, C, N] tensor that x is the transpose of) becomes one node; the downsampling convs
// between stages stay Convs.
TEST(Passes, FuseDepthwiseConvChannelsLastInTheExportedDaViT) {
  for (const char* model : {"florence2_vision_tiny_opset17", "florence2_vision_tiny_opset13"}) {
    Graph g = onnx::import_model_file(kModels / model / "model.onnx");
    int depthwise = 0;
    for (const Node& n : g.nodes)
      depthwise += n.info.op_type == "Conv" && n.info.attributes.get_int("group", 1) > 1;
    ASSERT_EQ(depthwise, 8) << model;
    const int convs = count_ops(g, "Conv");
    PassReport r = optimize(g, ops::builtin_registry());
    EXPECT_EQ(r.count("fuse_depthwise_conv_channels_last"), depthwise) << model << ": " << r.summary();
    EXPECT_EQ(count_ops(g, "DepthwiseConvChannelsLast"), depthwise) << model;
    EXPECT_EQ(count_ops(g, "Conv"), convs - depthwise) << model;
    for (const Node& n : g.nodes) {
      if (n.info.op_type != "DepthwiseConvChannelsLast") continue;
      EXPECT_NE(n.inputs[3], kNoValue) << n.info.name << ": the residual Add is fused";
      EXPECT_EQ(n.inputs[3], n.inputs[0]) << n.info.name;
    }
  }
}

// Window attention as timm / DaViT export it, x [2, 70, 3 * 4 * 8]:
//   Reshape [2, 70, 3, 4, 8] -> Transpose([2, 0, 3, 1, 4]) -> Gather(0 / 1 / 2, axis 0) -> q, k, v
//   -> Attention(q * s, Transpose(k, [0, 1, 3, 2]), v) -> Transpose([0, 2, 1, 3]) -> Reshape [2, 70, 32]
// with one thing changed per lookalike.
struct PackedQkv {
  const char* what;
  std::vector<int64_t> split_perm = {2, 0, 3, 1, 4};
  std::vector<int64_t> out_perm = {0, 2, 1, 3};
  bool index_is_input = false;   // K's Gather index a graph input, not a constant
  bool index_has_rank1 = false;  // K's Gather index [1] instead of a scalar
  int64_t gather_axis = 0;
  bool split_also_output = false;  // the Transpose's output also a graph output
  bool q_read_twice = false;       // Q's Gather output also read by a Relu (a graph output)
  bool reshape_read_twice = false;
  bool shape_target = false;  // the Reshape target computed from Shape(x) (known only when planning)
  bool attention_output_read_twice = false;
  // DaViT's channel attention instead: Attention(Transpose(q * s, [0, 1, 3, 2]), k as K^T,
  // Transpose(v, [0, 1, 3, 2])) -> out_perm (there [0, 3, 1, 2])
  bool channel = false;
  bool v_transpose_read_twice = false;  // channel: v^T also read by a Relu (a graph output)
};

struct PackedQkvGraph {
  Graph g;
  ValueId x = kNoValue, target = kNoValue, y = kNoValue;
};

PackedQkvGraph build_packed_qkv(const PackedQkv& p) {
  GraphBuilder b;
  PackedQkvGraph out;
  out.x = b.input("x", {2, 70, 96});
  if (p.shape_target) {
    // Concat(Shape(x)[0:2], [3, 4, 8]) as a stand-in for the exporters' Shape / Gather / Concat arithmetic.
    const ValueId dims = b.node("Shape", {out.x});
    const ValueId head = b.node("Slice", {dims, ints_constant(b.g, {0}), ints_constant(b.g, {2})});
    out.target = b.node("Concat", {head, ints_constant(b.g, {3, 4, 8})});
    b.g.nodes.back().info.attributes.set("axis", int64_t{0});
  } else {
    out.target = ints_constant(b.g, {2, 70, 3, 4, 8});
  }
  const ValueId r = b.node("Reshape", {out.x, out.target});
  const ValueId t = b.node("Transpose", {r});
  b.g.nodes.back().info.attributes.set("perm", p.split_perm);
  std::vector<ValueId> qkv;
  for (int64_t i = 0; i < 3; ++i) {
    ValueId index = kNoValue;
    if (i == 1 && p.index_is_input) {
      index = b.input("index", {});
    } else {
      Value c;
      c.name = "index" + std::to_string(i);
      c.constant = i == 1 && p.index_has_rank1 ? Tensor::from_vector<int64_t>({1}, {i})
                                               : Tensor::from_vector<int64_t>({}, {i});
      c.shape = ValueShape::of(c.constant->shape());
      index = b.g.add_value(std::move(c));
    }
    qkv.push_back(b.node("Gather", {t, index}));
    b.g.nodes.back().info.attributes.set("axis", p.gather_axis);
  }
  const ValueId qs = b.node("Mul", {qkv[0], b.constant(0.35f)});
  auto swap_last_two = [&](ValueId v) {
    const ValueId swapped = b.node("Transpose", {v});
    b.g.nodes.back().info.attributes.set("perm", std::vector<int64_t>{0, 1, 3, 2});
    return swapped;
  };
  ValueId o = kNoValue, vt = kNoValue;
  if (p.channel) {
    const ValueId probs = b.node("Softmax", {b.node("MatMul", {swap_last_two(qs), qkv[1]})});
    b.g.nodes.back().info.attributes.set("axis", int64_t{-1});
    vt = swap_last_two(qkv[2]);
    o = b.node("MatMul", {probs, vt});
  } else {
    const ValueId probs = b.node("Softmax", {b.node("MatMul", {qs, swap_last_two(qkv[1])})});
    b.g.nodes.back().info.attributes.set("axis", int64_t{-1});
    o = b.node("MatMul", {probs, qkv[2]});
  }
  const ValueId y = b.node("Transpose", {o});
  b.g.nodes.back().info.attributes.set("perm", p.out_perm);
  out.y = y;
  b.g.outputs = {b.node("Reshape", {y, ints_constant(b.g, {2, 70, 32})})};
  if (p.split_also_output) b.g.outputs.push_back(t);
  if (p.q_read_twice) b.g.outputs.push_back(b.node("Relu", {qkv[0]}));
  if (p.reshape_read_twice) b.g.outputs.push_back(b.node("Relu", {r}));
  if (p.attention_output_read_twice) b.g.outputs.push_back(b.node("Relu", {o}));
  if (p.v_transpose_read_twice) b.g.outputs.push_back(b.node("Relu", {vt}));
  b.g.sort_topologically();
  out.g = std::move(b.g);
  return out;
}

const Node* find_attention(const Graph& g) {
  const auto it = std::find_if(g.nodes.begin(), g.nodes.end(),
                               [](const Node& n) { return n.info.op_type == "Attention"; });
  return it == g.nodes.end() ? nullptr : &*it;
}

// Fuses `m`'s attention and runs both view passes, expecting each to rewrite it, then checks what every
// attention read in the packed projection shares: no Gather or Transpose left, the heads' merge the only
// Reshape, Q, K and V all read in x with indices 0, 1, 2, the target as input 5, Q's scale kept and the
// graph's y (the Reshape's input) as the output. Returns the Attention node, null after a fatal failure.
const Node* expect_packed_attention(PackedQkvGraph& m, const PackedQkv& p) {
  Graph& g = m.g;
  if (fuse_attention(g) != 1) {
    ADD_FAILURE() << p.what << ": fuse_attention did not fuse exactly one attention";
    return nullptr;
  }
  EXPECT_EQ(read_packed_qkv(g), 1) << p.what;
  EXPECT_EQ(write_attention_transposed(g), 1) << p.what;
  remove_dead_nodes(g);
  EXPECT_EQ(count_ops(g, "Gather"), 0) << p.what;
  EXPECT_EQ(count_ops(g, "Transpose"), 0) << p.what;
  EXPECT_EQ(count_ops(g, "Reshape"), 1) << p.what;  // only the heads' merge after the attention
  const Node* a = find_attention(g);
  if (a == nullptr || a->inputs.size() != 6u || a->outputs.size() != 1u) {
    ADD_FAILURE() << p.what << ": no attention with 6 inputs and 1 output";
    return nullptr;
  }
  EXPECT_EQ(a->inputs[0], m.x) << p.what;
  EXPECT_EQ(a->inputs[1], m.x) << p.what;
  EXPECT_EQ(a->inputs[2], m.x) << p.what;
  EXPECT_EQ(a->inputs[5], m.target) << p.what;
  EXPECT_EQ(a->info.attributes.get_int("qkv_packed", 0), 1) << p.what;
  EXPECT_EQ(a->info.attributes.get_ints("qkv_indices", {}), (std::vector<int64_t>{0, 1, 2})) << p.what;
  EXPECT_FLOAT_EQ(a->info.attributes.get_float("scale", 0.0f), 0.35f) << p.what;
  EXPECT_EQ(a->outputs[0], m.y) << p.what;
  return a;
}

TEST(Passes, ReadPackedQkvAndWriteAttentionTransposed) {
  for (const PackedQkv& p : {PackedQkv{.what = "constant target"},
                             PackedQkv{.what = "shape-derived target", .shape_target = true}}) {
    PackedQkvGraph m = build_packed_qkv(p);
    const Node* a = expect_packed_attention(m, p);
    ASSERT_NE(a, nullptr) << p.what;
    EXPECT_EQ(a->inputs[3], kNoValue) << p.what;
    EXPECT_EQ(a->inputs[4], kNoValue) << p.what;
    EXPECT_EQ(a->info.attributes.get_int("k_transposed", -1), 0) << p.what;
    EXPECT_EQ(a->info.attributes.get_int("transpose_output", 0), 1) << p.what;
  }
}

// DaViT's channel attention: Q and V reach the attention through Transposes of their last two dims, and its
// output [B, heads, D, N] goes back to [B, N, heads, D] by perm [0, 3, 1, 2]; all of it becomes views.
TEST(Passes, ReadPackedQkvOfTheChannelAttention) {
  for (const PackedQkv& p : {PackedQkv{.what = "constant target", .out_perm = {0, 3, 1, 2}, .channel = true},
                             PackedQkv{.what = "shape-derived target",
                             .out_perm = {0, 3, 1, 2},
                             .shape_target = true,
                             .channel = true}}) {
    PackedQkvGraph m = build_packed_qkv(p);
    const Node* a = expect_packed_attention(m, p);
    ASSERT_NE(a, nullptr) << p.what;
    EXPECT_EQ(a->info.attributes.get_ints("qkv_transposed", {}), (std::vector<int64_t>{1, 0, 1})) << p.what;
    EXPECT_EQ(a->info.attributes.get_int("k_transposed", -1), 1) << p.what;  // k itself is K^T
    EXPECT_EQ(a->info.attributes.get_int("transpose_output", 0), 0) << p.what;
    EXPECT_EQ(a->info.attributes.get_ints("output_perm", {}), (std::vector<int64_t>{0, 3, 1, 2})) << p.what;
  }
  // Lookalikes: v^T read elsewhere keeps the whole split; another output perm keeps its Transpose.
  {
    PackedQkvGraph m = build_packed_qkv(PackedQkv{
        .what = "v^T read twice", .out_perm = {0, 3, 1, 2}, .channel = true, .v_transpose_read_twice = true});
    ASSERT_EQ(fuse_attention(m.g), 1);
    EXPECT_EQ(read_packed_qkv(m.g), 0);
    EXPECT_EQ(count_ops(m.g, "Gather"), 3);
    EXPECT_EQ(write_attention_transposed(m.g), 1);
  }
  {
    PackedQkvGraph m =
        build_packed_qkv(PackedQkv{.what = "perm [0, 3, 2, 1]", .out_perm = {0, 3, 2, 1}, .channel = true});
    ASSERT_EQ(fuse_attention(m.g), 1);
    EXPECT_EQ(read_packed_qkv(m.g), 1);
    EXPECT_EQ(write_attention_transposed(m.g), 0);
    EXPECT_FALSE(find_attention(m.g)->info.attributes.has("output_perm"));
  }
}

TEST(Passes, ReadPackedQkvLeavesLookalikesAlone) {
  struct Expect {
    PackedQkv p;
    bool packed, transposed;
  };
  for (const Expect& e :
       {Expect{PackedQkv{.what = "split perm [2, 0, 1, 3, 4]", .split_perm = {2, 0, 1, 3, 4}}, false, true},
        Expect{PackedQkv{.what = "index not a constant", .index_is_input = true}, false, true},
        Expect{PackedQkv{.what = "index of rank 1", .index_has_rank1 = true}, false, true},
        Expect{PackedQkv{.what = "Gather on axis 1", .split_perm = {0, 2, 3, 1, 4}, .gather_axis = 1}, false,
               true},
        Expect{PackedQkv{.what = "split also a graph output", .split_also_output = true}, false, true},
        Expect{PackedQkv{.what = "q read twice", .q_read_twice = true}, false, true},
        Expect{PackedQkv{.what = "reshape read twice", .reshape_read_twice = true}, false, true},
        Expect{PackedQkv{.what = "output perm [0, 2, 3, 1]", .out_perm = {0, 2, 3, 1}}, true, false},
        Expect{PackedQkv{.what = "attention output read twice", .attention_output_read_twice = true}, true,
               false}}) {
    PackedQkvGraph m = build_packed_qkv(e.p);
    Graph& g = m.g;
    // A Gather of rank-1 index gives Q a fifth dim, but the attention fuses the same (shapes are not known).
    ASSERT_EQ(fuse_attention(g), 1) << e.p.what;
    const size_t nodes = g.nodes.size();
    EXPECT_EQ(read_packed_qkv(g), e.packed ? 1 : 0) << e.p.what;
    EXPECT_EQ(write_attention_transposed(g), e.transposed ? 1 : 0) << e.p.what;
    if (!e.packed && !e.transposed) {
      EXPECT_EQ(g.nodes.size(), nodes) << e.p.what;
    }
    const Node* a = find_attention(g);
    ASSERT_NE(a, nullptr) << e.p.what;
    EXPECT_EQ(a->info.attributes.get_int("qkv_packed", 0), e.packed ? 1 : 0) << e.p.what;
    EXPECT_EQ(a->info.attributes.get_int("transpose_output", 0), e.transposed ? 1 : 0) << e.p.what;
    if (!e.packed) {
      EXPECT_EQ(a->inputs.size(), 3u) << e.p.what;
      EXPECT_EQ(count_ops(g, "Gather"), 3) << e.p.what;
    }
  }
}

// The exported DaViT: every window attention reads the packed projection and writes [B', N, heads, D]; every
// channel attention (the same split, Q and V through Transposes of their last two dims) reads it as views
// too and writes [B, N, heads, D] through perm [0, 3, 1, 2]: no Gather or Transpose is left around them.
TEST(Passes, ReadPackedQkvInTheExportedDaViT) {
  for (const char* model : {"florence2_vision_tiny_opset17", "florence2_vision_tiny_opset13"}) {
    Graph g = onnx::import_model_file(kModels / model / "model.onnx");
    PassReport r = optimize(g, ops::builtin_registry());
    int window = 0, channel = 0;
    for (const Node& n : g.nodes) {
      if (n.info.op_type != "Attention") continue;
      if (n.info.name.find("window_attn") != std::string::npos) {
        ++window;
        EXPECT_EQ(n.info.attributes.get_int("qkv_packed", 0), 1) << n.info.name;
        EXPECT_EQ(n.info.attributes.get_int("transpose_output", 0), 1) << n.info.name;
      }
      if (n.info.name.find("channel_attn") != std::string::npos) {
        ++channel;
        EXPECT_EQ(n.info.attributes.get_int("qkv_packed", 0), 1) << n.info.name;
        EXPECT_EQ(n.info.attributes.get_ints("qkv_transposed", {}), (std::vector<int64_t>{1, 0, 1}))
            << n.info.name;
        EXPECT_EQ(n.info.attributes.get_ints("output_perm", {}), (std::vector<int64_t>{0, 3, 1, 2}))
            << n.info.name;
      }
    }
    EXPECT_GT(window, 0) << model << ": " << r.summary();
    EXPECT_GT(channel, 0) << model << ": " << r.summary();
    EXPECT_EQ(r.count("read_packed_qkv"), window + channel) << model << ": " << r.summary();
    EXPECT_EQ(r.count("write_attention_transposed"), window + channel) << model << ": " << r.summary();
    for (const Node& n : g.nodes) {
      if (n.info.name.find("channel_attn/fn/") == std::string::npos) continue;
      EXPECT_NE(n.info.op_type, "Transpose") << n.info.name;
      EXPECT_FALSE(n.info.op_type == "Gather" && n.info.name.find("Gather_") != std::string::npos &&
                   std::stoi(n.info.name.substr(n.info.name.rfind('_') + 1)) >= 3)
          << n.info.name;
    }
  }
}

// Separate Q, K, V projections split into heads by Reshape + Transpose (SigLIP's export, K^T made by one
// Transpose): read_split_heads makes the Attention read the projections in place; K read as K.
// Transpose(Reshape(x, a constant `shape`), perm).
ValueId reshape_transpose(GraphBuilder& b, ValueId x, const std::vector<int64_t>& perm,
                          const std::vector<int64_t>& shape) {
  Value target;
  target.name = "target" + std::to_string(b.g.values.size());
  target.constant = Tensor::from_vector<int64_t>({static_cast<int64_t>(shape.size())}, shape);
  target.shape = ValueShape::of({static_cast<int64_t>(shape.size())});
  ValueId r = b.node("Reshape", {x, b.g.add_value(std::move(target))});
  ValueId t = b.node("Transpose", {r});
  b.g.nodes.back().info.attributes.set("perm", perm);
  return t;
}

TEST(Passes, ReadSplitHeadsOfSeparateProjections) {
  GraphBuilder b;
  auto split = [&](ValueId x, const std::vector<int64_t>& perm) {
    return reshape_transpose(b, x, perm, {1, 6, 2, 4});
  };
  ValueId xq = b.input("xq", {1, 6, 8}), xk = b.input("xk", {1, 6, 8}), xv = b.input("xv", {1, 6, 8});
  ValueId q = split(xq, {0, 2, 1, 3}), kt = split(xk, {0, 2, 3, 1}), v = split(xv, {0, 2, 1, 3});
  ValueId scores = b.node("Mul", {b.node("MatMul", {q, kt}), b.constant(0.5f)});
  Graph& g = b.finish(b.node("MatMul", {b.node("Softmax", {scores}), v}));
  ASSERT_EQ(fuse_attention(g), 1);
  EXPECT_EQ(read_split_heads(g), 1);
  remove_dead_nodes(g);
  EXPECT_EQ(count_ops(g, "Transpose"), 0);
  EXPECT_EQ(count_ops(g, "Reshape"), 0);
  ASSERT_EQ(g.nodes.size(), 1u);
  const Node& a = g.nodes[0];
  EXPECT_EQ(a.info.op_type, "Attention");
  EXPECT_EQ(a.info.attributes.get_ints("heads_views", {}), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(a.info.attributes.get_int("k_transposed", 1), 0);
  EXPECT_EQ(a.inputs[0], xq);
  EXPECT_EQ(a.inputs[1], xk);
  EXPECT_EQ(a.inputs[2], xv);
  ASSERT_EQ(a.inputs.size(), 9u);
  for (size_t i = 6; i < 9; ++i) EXPECT_TRUE(g.value(a.inputs[i]).constant.has_value());
}

// What stays: another perm, a Reshape to rank 5, a split head read elsewhere too; only that operand.
TEST(Passes, ReadSplitHeadsLeavesLookalikesAlone) {
  for (int variant = 0; variant < 3; ++variant) {
    GraphBuilder b;
    auto split = [&](ValueId x, const std::vector<int64_t>& perm, const std::vector<int64_t>& shape) {
      return reshape_transpose(b, x, perm, shape);
    };
    ValueId xq = b.input("xq", {1, 6, 8}), xk = b.input("xk", {1, 6, 8}), xv = b.input("xv", {1, 6, 8});
    ValueId q = variant == 0   ? split(xq, {0, 1, 2, 3}, {1, 6, 2, 4})        // identity perm
                : variant == 1 ? split(xq, {0, 2, 1, 3, 4}, {1, 6, 2, 2, 2})  // rank 5
                               : split(xq, {0, 2, 1, 3}, {1, 6, 2, 4});
    ValueId k = split(xk, {0, 2, 1, 3}, {1, 6, 2, 4});
    ValueId kt = b.node("Transpose", {k});
    b.g.nodes.back().info.attributes.set("perm", std::vector<int64_t>{0, 1, 3, 2});
    ValueId v = split(xv, {0, 2, 1, 3}, {1, 6, 2, 4});
    ValueId y = b.node("MatMul", {b.node("Softmax", {b.node("MatMul", {q, kt})}), v});
    Graph& g = b.finish(variant == 2 ? b.node("Add", {y, q}) : y);  // variant 2: Q also read by the Add
    ASSERT_EQ(fuse_attention(g), 1) << variant;
    ASSERT_EQ(read_split_heads(g), 1) << variant;
    const auto a = std::find_if(g.nodes.begin(), g.nodes.end(),
                                [](const Node& n) { return n.info.op_type == "Attention"; });
    ASSERT_NE(a, g.nodes.end());
    // K (read through fuse_attention's Transpose as K) and V are views; Q is not.
    EXPECT_EQ(a->info.attributes.get_ints("heads_views", {}), (std::vector<int64_t>{0, 1, 1})) << variant;
    EXPECT_EQ(a->inputs[0], q) << variant;
    EXPECT_EQ(a->inputs[1], xk) << variant;
  }
}

// Window attention's partition and reverse as DaViT exports them, with constant targets: image X [1, H, W, C]
// -> Reshape [1, H/4, 4, W/4, 4, C] -> Transpose(perm [0, 1, 3, 2, 4, 5]) -> Reshape [-1, 4, 4, C] -> Reshape
// [-1, 16, C] -> qkv MatMul (+ bias; A also read by a Shape node) ... proj MatMul (+ bias) -> Reshape
// [-1, 4, 4, C] -> Reshape [1, H/4, W/4, 4, 4, C] -> Transpose -> Reshape [1, H, W, C] -> Slice(axis 1) ->
// Slice(axis 2) -> Reshape [1, H * W, C] -> Add(x, .).
struct Windows {
  int64_t h = 8, w = 8;
  std::vector<int64_t> perm_in = {0, 1, 3, 2, 4, 5}, perm_out = {0, 1, 3, 2, 4, 5};
  std::vector<int64_t> partition;     // Reshape_3's target; default [1, h/4, 4, w/4, 4, C]
  int64_t crop_h = 8;                 // the crop's constant end in H
  bool partition_read_twice = false;  // the partition's Transpose also read by a graph output
  bool reverse_read_twice = false;    // the reverse's Transpose also read by a graph output
  bool crop_exported = true;          // false: no Slices (the image was not padded when traced)
};

struct WindowGraph {
  Graph g;
  ValueId image, qkv_out, y, shape_of_a;
};

WindowGraph build_windows(const Windows& p) {
  const int64_t c = 8;
  GraphBuilder b;
  auto reshape = [&](ValueId x, const std::vector<int64_t>& target) {
    return b.node("Reshape", {x, ints_constant(b.g, target)});
  };
  auto transpose = [&](ValueId x, const std::vector<int64_t>& perm) {
    ValueId t = b.node("Transpose", {x});
    b.g.nodes.back().info.attributes.set("perm", perm);
    return t;
  };
  WindowGraph r;
  ValueId x = b.input("x", {1, p.h * p.w, c});
  r.image = b.input("image", {1, p.h, p.w, c});
  const std::vector<int64_t> partition =
      p.partition.empty() ? std::vector<int64_t>{1, p.h / 4, 4, p.w / 4, 4, c} : p.partition;
  ValueId t1 = transpose(reshape(r.image, partition), p.perm_in);
  ValueId a = reshape(reshape(t1, {-1, 4, 4, c}), {-1, 16, c});
  r.shape_of_a = b.node("Shape", {a});
  ValueId qkv = b.node("Add", {b.node("MatMul", {a, b.constant(0.5f, {c, c})}), b.constant(1.0f, {c})});
  r.qkv_out = qkv;
  ValueId proj = b.node("Add", {b.node("MatMul", {qkv, b.constant(0.25f, {c, c})}), b.constant(2.0f, {c})});
  ValueId t5 = transpose(reshape(reshape(proj, {-1, 4, 4, c}), {1, p.h / 4, p.w / 4, 4, 4, c}), p.perm_out);
  ValueId img = reshape(t5, {1, p.h / 4 * 4, p.w / 4 * 4, c});
  ValueId cropped = img;
  if (p.crop_exported) {
    cropped = b.node("Slice", {img, ints_constant(b.g, {0}), ints_constant(b.g, {p.crop_h}),
                               ints_constant(b.g, {1}), ints_constant(b.g, {1})});
    cropped = b.node("Slice", {cropped, ints_constant(b.g, {0}), ints_constant(b.g, {p.w}),
                               ints_constant(b.g, {2}), ints_constant(b.g, {1})});
  }
  r.y = b.node("Add", {x, reshape(cropped, {1, p.h * p.w, c})});
  b.finish(r.y);
  b.g.outputs.push_back(r.shape_of_a);
  if (p.partition_read_twice) b.g.outputs.push_back(t1);
  if (p.reverse_read_twice) b.g.outputs.push_back(t5);
  r.g = std::move(b.g);
  return r;
}

TEST(Passes, ReadAndWriteWindowsInPlace) {
  for (bool crop_exported : {true, false}) {
    Windows p;
    p.crop_exported = crop_exported;
    WindowGraph w = build_windows(p);
    Graph& g = w.g;
    ASSERT_EQ(fuse_bias_adds(g), 2);
    EXPECT_EQ(read_windows_in_place(g), 1);
    EXPECT_EQ(write_windows_in_place(g), 1);
    EXPECT_EQ(fuse_residual_adds(g), 1);
    EXPECT_EQ(remove_dead_nodes(g), 0);
    EXPECT_EQ(count_ops(g, "Transpose"), 0);
    EXPECT_EQ(count_ops(g, "Slice"), 0);
    EXPECT_EQ(count_ops(g, "Add"), 0);
    EXPECT_EQ(count_ops(g, "Reshape"), 3);  // kept for the Shape reader of A, without the Transpose
    const Node& qkv = g.nodes[static_cast<size_t>(g.value(w.qkv_out).producer)];
    EXPECT_EQ(qkv.info.attributes.get_int(ops::kMatMulWindowsInAttribute, 0), 1);
    ASSERT_EQ(qkv.inputs.size(), 7u);
    EXPECT_EQ(qkv.inputs[0], w.image);
    EXPECT_TRUE(g.value(qkv.inputs[2]).constant.has_value());  // the bias
    EXPECT_EQ(qkv.inputs[3], kNoValue);
    EXPECT_EQ(constant_ints_of(g, qkv.inputs[4]), (std::vector<int64_t>{1, 2, 4, 2, 4, 8}));
    const Node& proj = g.nodes[static_cast<size_t>(g.value(w.y).producer)];
    EXPECT_EQ(proj.info.op_type, "MatMul");
    EXPECT_EQ(proj.info.attributes.get_int(ops::kMatMulWindowsOutAttribute, 0), 1);
    EXPECT_EQ(proj.info.attributes.get_int(ops::kFusedResidualAttribute, 0), 1);
    ASSERT_EQ(proj.inputs.size(), 10u);
    EXPECT_EQ(proj.inputs[0], w.qkv_out);
    EXPECT_EQ(g.value(proj.inputs[3]).name, "x");
    if (crop_exported) {
      EXPECT_EQ(constant_ints_of(g, proj.inputs[7]), (std::vector<int64_t>{8}));
    } else {
      EXPECT_EQ(proj.inputs[7], kNoValue);
      EXPECT_EQ(proj.inputs[8], kNoValue);
    }
    // The Shape reader reads the Reshapes, now of the un-transposed partition.
    const Node& shape = g.nodes[static_cast<size_t>(g.value(w.shape_of_a).producer)];
    const Node& r5 = g.nodes[static_cast<size_t>(g.value(shape.inputs[0]).producer)];
    const Node& r4 = g.nodes[static_cast<size_t>(g.value(r5.inputs[0]).producer)];
    EXPECT_EQ(r5.info.op_type, "Reshape");
    EXPECT_EQ(r4.info.op_type, "Reshape");
    const Node& r3 = g.nodes[static_cast<size_t>(g.value(r4.inputs[0]).producer)];
    EXPECT_EQ(r3.info.op_type, "Reshape");
    EXPECT_EQ(r3.inputs[0], w.image);
  }
}

// Near misses stay as exported: another perm on either side, windows that do not divide the image, a
// Transpose read by another node too, a crop that cuts the image.
TEST(Passes, WindowsInPlaceLeaveLookalikesAlone) {
  struct Case {
    Windows p;
    int read, written;
    const char* what;
  };
  Windows wrong_in, wrong_out, divide, twice_in, twice_out, crop;
  wrong_in.perm_in = {0, 2, 1, 3, 4, 5};
  wrong_out.perm_out = {0, 1, 2, 3, 4, 5};
  divide.h = divide.w = 6;  // [1, 6, 6, C] as [1, 1, 4, 1, 4, C]: 4 does not divide 6
  divide.crop_h = 6;
  divide.partition = {1, 1, 4, 1, 4, 8};
  twice_in.partition_read_twice = true;
  twice_out.reverse_read_twice = true;
  crop.crop_h = 6;
  for (const Case& c :
       {Case{wrong_in, 0, 1, "wrong partition perm"}, Case{wrong_out, 1, 0, "wrong reverse perm"},
        Case{divide, 0, 1, "windows do not divide"}, Case{twice_in, 0, 1, "partition read twice"},
        Case{twice_out, 1, 0, "reverse read twice"}, Case{crop, 1, 0, "crop cuts the image"}}) {
    WindowGraph w = build_windows(c.p);
    Graph& g = w.g;
    fuse_bias_adds(g);
    const size_t nodes = g.nodes.size();
    EXPECT_EQ(read_windows_in_place(g), c.read) << c.what;
    EXPECT_EQ(write_windows_in_place(g), c.written) << c.what;
    const int transposes_left = 2 - c.read - c.written;
    EXPECT_EQ(count_ops(g, "Transpose"), transposes_left) << c.what;
    EXPECT_EQ(g.nodes.size(), nodes - (c.read ? 1 : 0) - (c.written ? 7 : 0)) << c.what;
    // Without the reverse in place, the residual Add is not the product's.
    EXPECT_EQ(fuse_residual_adds(g), c.written) << c.what;
  }
}

TEST(Passes, WindowsInPlaceInTheExportedDaViT) {
  Graph g = onnx::import_model_file(kModels / "florence2_vision_tiny_opset17" / "model.onnx");
  PassReport r = optimize(g, ops::builtin_registry());
  int window_transposes = 0;
  for (const Node& n : g.nodes) {
    // (The Transpose of the pads' shape arithmetic runs on the host.)
    if (n.info.op_type == "Transpose" && n.info.name.find("window_attn") != std::string::npos &&
        n.info.attributes.get_ints("perm", {}).size() == 6)
      ++window_transposes;
  }
  EXPECT_EQ(window_transposes, 0) << r.summary();
  EXPECT_EQ(r.count("read_windows_in_place"), 2) << r.summary();
  EXPECT_EQ(r.count("write_windows_in_place"), 2) << r.summary();
  // The window attention's residual Adds too (the MLPs' as before).
  EXPECT_EQ(r.count("fuse_residual_adds"), 8) << r.summary();
}

// The passes one by one, and their table (src/graph/passes/pass_table.cpp).

Tensor seeded_tensor(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> data(static_cast<size_t>(element_count(shape)));
  for (float& x : data) x = dist(rng);
  return Tensor::from_vector(shape, data);
}

ValueId add_named_constant(Graph& g, const std::string& name, Tensor t) {
  Value v;
  v.name = name;
  v.dtype = t.dtype();
  v.shape = ValueShape::of(t.shape());
  v.constant = std::move(t);
  return g.add_value(std::move(v));
}

// MatMul(x, Transpose(W)) with W constant and the Transpose swapping W's last two dims: the MatMul reads W
// itself with wgi.trans_b = 1; the Transpose is left for dead-node removal.
TEST(Passes, ReadTransposedWeights) {
  GraphBuilder b;
  const ValueId x = b.input("x", {2, 3, 5});
  const ValueId w2 = add_named_constant(b.g, "w2", seeded_tensor({4, 5}, 1));
  const ValueId w3 = add_named_constant(b.g, "w3", seeded_tensor({2, 4, 5}, 2));
  b.node("Transpose", {w2});
  b.g.nodes.back().info.attributes.set("perm", std::vector<int64_t>{1, 0});
  const ValueId t2 = b.g.nodes.back().outputs[0];
  b.node("Transpose", {w3});
  b.g.nodes.back().info.attributes.set("perm", std::vector<int64_t>{0, 2, 1});
  const ValueId t3 = b.g.nodes.back().outputs[0];
  const ValueId y2 = b.node("MatMul", {x, t2});
  const ValueId y3 = b.node("MatMul", {x, t3});
  Graph& g = b.finish(b.node("Add", {y2, y3}));
  EXPECT_EQ(read_transposed_weights(g), 2);
  for (const Node& n : g.nodes) {
    if (n.info.op_type != "MatMul") continue;
    EXPECT_EQ(n.info.attributes.get_int(ops::kMatMulTransBAttribute, 0), 1) << n.info.name;
    EXPECT_EQ(n.inputs[1], n.outputs[0] == y2 ? w2 : w3) << n.info.name;
  }
  EXPECT_EQ(read_transposed_weights(g), 0);  // once only
  EXPECT_EQ(remove_dead_nodes(g), 2);        // the Transposes
  EXPECT_EQ(count_ops(g, "Transpose"), 0);
}

TEST(Passes, ReadTransposedWeightsLeavesLookalikesAlone) {
  GraphBuilder b;
  const ValueId x = b.input("x", {2, 3, 5});
  const ValueId runtime_w = b.input("w", {4, 5});
  const ValueId w3 = add_named_constant(b.g, "w3", seeded_tensor({5, 2, 4}, 3));
  const ValueId wi =
      add_named_constant(b.g, "wi", Tensor::from_vector<int64_t>({4, 5}, std::vector<int64_t>(20, 1)));
  std::vector<ValueId> products;
  // A weight computed at run time, a perm that moves a batch dim, an int64 weight.
  for (const auto& [w, perm] :
       {std::pair{runtime_w, std::vector<int64_t>{1, 0}}, std::pair{w3, std::vector<int64_t>{1, 0, 2}},
        std::pair{wi, std::vector<int64_t>{1, 0}}}) {
    b.node("Transpose", {w});
    b.g.nodes.back().info.attributes.set("perm", perm);
    products.push_back(b.node("MatMul", {x, b.g.nodes.back().outputs[0]}));
  }
  Graph& g = b.finish(b.node("Add", {b.node("Add", {products[0], products[1]}), products[2]}));
  EXPECT_EQ(read_transposed_weights(g), 0);
  EXPECT_EQ(count_ops(g, "Transpose"), 3);
}

// BatchNormalization(Conv(x)) and BatchNormalization(Gemm(x)) -> one Conv / Gemm with scaled weights and a
// new bias. The folded weights are checked against y = BN(op(x)) evaluated here in float64 on seeded inputs.
TEST(Passes, FoldBatchNormsIntoConvAndGemm) {
  const int64_t channels = 3, in_channels = 2;
  const double epsilon = 1e-3;
  const Tensor scale = seeded_tensor({channels}, 10, 0.5f, 2.0f), shift = seeded_tensor({channels}, 11);
  const Tensor mean = seeded_tensor({channels}, 12), var = seeded_tensor({channels}, 13, 0.1f, 3.0f);
  auto bn = [&](size_t c, double v) {
    return (v - mean.data<float>()[c]) / std::sqrt(var.data<float>()[c] + epsilon) * scale.data<float>()[c] +
           shift.data<float>()[c];
  };
  const Tensor x = seeded_tensor({in_channels}, 14);  // one pixel of a 1x1 conv / one row of the Gemm
  for (const bool gemm : {false, true}) {
    SCOPED_TRACE(gemm ? "Gemm" : "Conv");
    GraphBuilder b;
    const ValueId input = b.input("x", gemm ? Shape{1, in_channels} : Shape{1, in_channels, 1, 1});
    // Conv weight [C, IC, 1, 1] with a bias; Gemm B [C, IC] with transB = 1 and C scaled by beta = 0.5.
    const Tensor w =
        seeded_tensor(gemm ? Shape{channels, in_channels} : Shape{channels, in_channels, 1, 1}, 15);
    const Tensor bias = seeded_tensor({channels}, 16);
    b.node(gemm ? "Gemm" : "Conv",
           {input, add_named_constant(b.g, "w", w), add_named_constant(b.g, "b", bias)});
    if (gemm) {
      b.g.nodes.back().info.attributes.set("transB", int64_t{1});
      b.g.nodes.back().info.attributes.set("beta", 0.5f);
    }
    const ValueId produced = b.g.nodes.back().outputs[0];
    std::vector<ValueId> params;
    int k = 0;
    for (const Tensor* t : {&scale, &shift, &mean, &var})
      params.push_back(add_named_constant(b.g, "bn" + std::to_string(k++), *t));
    const ValueId y = b.node("BatchNormalization", {produced, params[0], params[1], params[2], params[3]});
    b.g.nodes.back().info.attributes.set("epsilon", static_cast<float>(epsilon));
    Graph& g = b.finish(y);
    EXPECT_EQ(fold_batch_norms(g), 1);
    ASSERT_EQ(g.nodes.size(), 1u);
    const Node& n = g.nodes[0];
    EXPECT_EQ(n.outputs[0], y);
    ASSERT_EQ(n.inputs.size(), 3u);
    const Tensor& folded_w = *g.value(n.inputs[1]).constant;
    const Tensor& folded_b = *g.value(n.inputs[2]).constant;
    const double beta = gemm ? n.info.attributes.get_float("beta", 1.0f) : 1.0;
    for (size_t c = 0; c < static_cast<size_t>(channels); ++c) {
      double original = (gemm ? 0.5 : 1.0) * bias.data<float>()[c], folded = beta * folded_b.data<float>()[c];
      for (size_t i = 0; i < static_cast<size_t>(in_channels); ++i) {
        original += double{w.data<float>()[c * in_channels + i]} * x.data<float>()[i];
        folded += double{folded_w.data<float>()[c * in_channels + i]} * x.data<float>()[i];
      }
      // The folded constants are float32: a few ulps of the terms summed.
      EXPECT_NEAR(folded, bn(c, original), 1e-5 * (1 + std::abs(bn(c, original)))) << c;
    }
  }
}

TEST(Passes, FoldBatchNormsLeavesLookalikesAlone) {
  for (const char* why : {"training mode", "conv output read twice", "activation fused"}) {
    SCOPED_TRACE(why);
    GraphBuilder b;
    const ValueId input = b.input("x", {1, 2, 3, 3});
    b.node("Conv", {input, add_named_constant(b.g, "w", seeded_tensor({2, 2, 1, 1}, 20))});
    if (std::string(why) == "activation fused")
      b.g.nodes.back().info.attributes.set(ops::kFusedActivationAttribute, std::string("Relu"));
    const ValueId conv = b.g.nodes.back().outputs[0];
    std::vector<ValueId> params;
    for (uint32_t k = 0; k < 4; ++k)
      params.push_back(
          add_named_constant(b.g, "bn" + std::to_string(k), seeded_tensor({2}, 21 + k, 0.5f, 1.5f)));
    const ValueId y = b.node("BatchNormalization", {conv, params[0], params[1], params[2], params[3]});
    if (std::string(why) == "training mode")
      b.g.nodes.back().info.attributes.set("training_mode", int64_t{1});
    Graph& g = b.finish(std::string(why) == "conv output read twice" ? b.node("Add", {y, conv}) : y);
    EXPECT_EQ(fold_batch_norms(g), 0);
    EXPECT_EQ(count_ops(g, "BatchNormalization"), 1);
  }
}

// Nodes whose inputs are all constants and whose op evaluates on the host become constants; the rest stay.
TEST(Passes, FoldConstants) {
  GraphBuilder b;
  const ValueId x = b.input("x", {3, 4});
  const Tensor c = seeded_tensor({2, 6}, 30);
  const ValueId shape = add_named_constant(b.g, "shape", Tensor::from_vector<int64_t>({2}, {3, 4}));
  const ValueId reshaped = b.node("Reshape", {add_named_constant(b.g, "c", c), shape});
  const ValueId negated = b.node("Neg", {reshaped});      // reads a folded value
  const ValueId runtime = b.node("Reshape", {x, shape});  // reads an input: stays
  Graph& g = b.finish(b.node("Add", {runtime, negated}));
  EXPECT_EQ(fold_constants(g, ops::builtin_registry()), 2);
  EXPECT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(count_ops(g, "Neg"), 0);
  const auto& folded = g.value(negated).constant;
  ASSERT_TRUE(folded.has_value());
  EXPECT_EQ(folded->shape(), (Shape{3, 4}));
  ASSERT_EQ(folded->element_count(), c.element_count());
  for (int64_t i = 0; i < c.element_count(); ++i)
    EXPECT_EQ(folded->data<float>()[i], -c.data<float>()[i]) << i;
  EXPECT_FALSE(g.value(runtime).constant.has_value());
}

// Every constraint the table writes down holds in its order; every pass appears.
TEST(PassTable, OrderSatisfiesItsConstraints) {
  const std::vector<PassInfo>& table = pass_table();
  auto first = [&](const std::string& name) {
    for (size_t i = 0; i < table.size(); ++i)
      if (table[i].name == name) return i;
    ADD_FAILURE() << name << " is not in the table";
    return table.size();
  };
  auto last = [&](const std::string& name) {
    for (size_t i = table.size(); i-- > 0;)
      if (table[i].name == name) return i;
    return size_t{0};
  };
  for (size_t i = 0; i < table.size(); ++i) {
    for (const std::string& before : table[i].after) EXPECT_LT(first(before), i) << table[i].name;
    for (const std::string& after : table[i].before) EXPECT_GT(last(after), i) << table[i].name;
    EXPECT_EQ(table[i].after.empty() && table[i].before.empty(), table[i].why.empty()) << table[i].name;
  }
  EXPECT_EQ(
      pass_names(),
      "eliminate_identities, read_transposed_weights, remove_dead_nodes, fold_constants, "
      "compute_float16_in_float32, fold_batch_norms, "
      "fuse_bias_adds, fuse_dynamically_quantized_products, fold_scales_into_weights, read_windows_in_place, "
      "write_windows_in_place, "
      "fuse_residual_adds, fuse_gelu, "
      "fuse_activations, fuse_depthwise_conv_channels_last, fuse_attention, read_packed_qkv, "
      "read_split_heads, write_attention_transposed, merge_sibling_products, "
      "fuse_dynamic_quantization_into_products, "
      "fuse_layer_norm_into_products, merge_past_concats");
}

TEST(PassTable, DisabledPassLeavesItsPatternAndTheOthersRun) {
  Graph g = onnx::import_model_file(kModels / "conv_bn_relu" / "model.onnx");
  const PassReport r =
      optimize(g, ops::builtin_registry(), DisabledPasses::parse("fuse_activations", "test"));
  EXPECT_EQ(r.count("fuse_activations"), 0) << r.summary();
  EXPECT_EQ(r.count("fold_batch_norms"), 1) << r.summary();
  EXPECT_EQ(count_ops(g, "Relu"), 1);
  EXPECT_EQ(count_ops(g, "BatchNormalization"), 0);
}

TEST(PassTable, UnknownPassNamesAreRefusedWithTheValidNames) {
  EXPECT_EQ(DisabledPasses::parse(" fuse_gelu, ,fuse_attention ", "WGI_DISABLE_PASSES").names,
            (std::set<std::string>{"fuse_gelu", "fuse_attention"}));
  try {
    DisabledPasses::parse("fuse_gelu,fuse_gelus", "WGI_DISABLE_PASSES");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("WGI_DISABLE_PASSES names 'fuse_gelus'"), std::string::npos) << what;
    EXPECT_NE(what.find("fuse_depthwise_conv_channels_last"), std::string::npos) << what;  // the valid names
  }
  EXPECT_THROW(PassReport().count("fuse_everything"), Error);
}

// float16 graphs (docs/float16.md): the tanh-form GELU with float16 constants (the exporter's values rounded
// to 11 bits, 0.044715 -> 0.044708...) and a float16 x is matched; a constant off by more than float16's
// rounding (0.5 -> 0.5 + 2^-9) is not. Gelu takes float16 through the float16 wrapper.
TEST(Passes, FuseGeluTanhFormInFloat16) {
  for (const float half : {0.5f, 0.5f + 0x1p-9f}) {
    GraphBuilder b;
    const ValueId x = b.input("x", {3, 4});
    b.g.value(x).dtype = DType::Float16;
    auto constant = [&](float v) {
      return add_named_constant(b.g, "h" + std::to_string(b.g.values.size()),
                                ops::narrow_to_float16(Tensor::from_vector<float>({}, {v})));
    };
    const ValueId cube = b.node("Mul", {x, b.node("Mul", {x, x})});
    const ValueId inner = b.node("Add", {x, b.node("Mul", {constant(0.044715f), cube})});
    const ValueId t = b.node("Tanh", {b.node("Mul", {constant(0.7978845834732056f), inner})});
    Graph& g =
        b.finish(b.node("Mul", {b.node("Mul", {x, b.node("Add", {t, constant(1.0f)})}), constant(half)}));
    EXPECT_EQ(fuse_gelu(g), half == 0.5f ? 1 : 0) << half;
  }
}

// compute_float16_in_float32 on a keep_io_types graph written by hand: x (float32) -> Cast(float16) -> Add(h,
// a float16 constant) -> MatMul(h, a float16 weight) -> Cast(float32) -> y. The Casts go, the activations are
// float32, the Add's constant is widened (exactly), the weight stays float16, y keeps its name.
TEST(Passes, ComputeFloat16InFloat32RemovesTheBoundaryCasts) {
  GraphBuilder b;
  const ValueId x = b.input("x", {3, 4});
  auto cast = [&](ValueId in, int64_t to, DType type) {
    const ValueId out = b.node("Cast", {in});
    b.g.nodes.back().info.attributes.set("to", to);
    b.g.value(out).dtype = type;
    return out;
  };
  auto half_constant = [&](const std::string& name, const Shape& shape, float step) {
    std::vector<float> values(static_cast<size_t>(element_count(shape)));
    for (size_t i = 0; i < values.size(); ++i) values[i] = step * static_cast<float>(i + 1);
    return add_named_constant(b.g, name, ops::narrow_to_float16(Tensor::from_vector(shape, values)));
  };
  const ValueId h = cast(x, 10, DType::Float16);
  const ValueId bias = half_constant("bias", {4}, 0.1f);
  const ValueId added = b.node("Add", {h, bias});
  b.g.value(added).dtype = DType::Float16;
  const ValueId weight = half_constant("w", {4, 5}, 0.01f);
  const ValueId product = b.node("MatMul", {added, weight});
  b.g.value(product).dtype = DType::Float16;
  Graph& g = b.finish(cast(product, 1, DType::Float32));
  const std::string output_name = g.value(g.outputs[0]).name;

  EXPECT_GT(compute_float16_in_float32(g), 0);
  EXPECT_EQ(count_ops(g, "Cast"), 0);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.value(g.outputs[0]).name, output_name);
  for (const Node& n : g.nodes) {
    for (ValueId o : n.outputs) EXPECT_EQ(g.value(o).dtype, DType::Float32) << n.info.name;
  }
  const Node& add = g.nodes[0];
  const Node& matmul = g.nodes[1];
  EXPECT_EQ(add.inputs[0], x);
  const std::optional<Tensor>& wide = g.value(add.inputs[1]).constant;
  ASSERT_TRUE(wide);
  ASSERT_EQ(wide->dtype(), DType::Float32);
  const Tensor exact = ops::widen_float16(*g.value(bias).constant);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(wide->data<float>()[i], exact.data<float>()[i]);
  EXPECT_EQ(matmul.inputs[1], weight);  // read packed by the GEMM kernels
  EXPECT_EQ(g.value(matmul.inputs[1]).dtype, DType::Float16);
}

// Float16 graph inputs and outputs (no keep_io_types): cast where they enter and leave, the nodes between
// computed in float32; a Conv with groups takes a float32 weight (the depthwise kernels read float32).
TEST(Passes, ComputeFloat16InFloat32CastsFloat16GraphInputsAndOutputs) {
  GraphBuilder b;
  const ValueId x = b.input("x", {1, 2, 5, 5});
  b.g.value(x).dtype = DType::Float16;
  const ValueId w = add_named_constant(
      b.g, "w",
      ops::narrow_to_float16(Tensor::from_vector<float>({2, 1, 3, 3}, std::vector<float>(18, 0.5f))));
  const ValueId conv = b.node("Conv", {x, w});
  b.g.nodes.back().info.attributes.set("group", int64_t{2});
  b.g.value(conv).dtype = DType::Float16;
  const ValueId y = b.node("Relu", {conv});
  b.g.value(y).dtype = DType::Float16;
  Graph& g = b.finish(y);

  EXPECT_GT(compute_float16_in_float32(g), 0);
  ASSERT_EQ(g.nodes.size(), 4u);  // Cast, Conv, Relu, Cast
  EXPECT_EQ(g.nodes.front().info.op_type, "Cast");
  EXPECT_EQ(g.nodes.front().inputs[0], x);
  EXPECT_EQ(g.nodes.front().info.attributes.get_int("to", 0), 1);
  EXPECT_EQ(g.nodes.back().info.op_type, "Cast");
  EXPECT_EQ(g.nodes.back().outputs[0], y);
  EXPECT_EQ(g.nodes.back().info.attributes.get_int("to", 0), 10);
  EXPECT_EQ(g.value(y).dtype, DType::Float16);
  for (const Node& n : g.nodes) {
    if (n.info.op_type == "Conv") {
      EXPECT_EQ(g.value(n.inputs[0]).dtype, DType::Float32);
      EXPECT_EQ(g.value(n.inputs[1]).dtype, DType::Float32);  // grouped: widened
      EXPECT_EQ(g.value(n.outputs[0]).dtype, DType::Float32);
    }
  }
}

}  // namespace
}  // namespace wgi::graph
