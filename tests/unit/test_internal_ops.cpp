// The internal-op contracts of ops/internal_ops.h: what a pass writes reads back equal, a misspelt internal
// attribute or one of the wrong type is an error naming the node, and the writes keep the attributes that
// are not theirs.
#include <gtest/gtest.h>

#include <string>

#include "ops/internal_ops.h"
#include "ops/op.h"

namespace wgi {
namespace {

ops::NodeInfo node(const char* op, const char* domain, ops::Attributes attributes) {
  return ops::NodeInfo{"node_under_test", op, domain, 1, std::move(attributes), {}, {}};
}

// The message of the error `read` throws, "no error" if it throws none.
template <class Read>
std::string error_of(Read read) {
  try {
    read();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

ops::GemmTuningAttributes every_tuning_knob() {
  ops::GemmTuningAttributes t;
  t.kernel = "fast64";
  t.tile_k = 16;
  t.stages = 2;
  t.split_k = 3;
  t.gemv_lanes = 32;
  return t;
}

TEST(InternalOps, AttentionRoundTrip) {
  ops::AttentionAttributes every;
  every.scale = 0.125f;
  every.scale_divides = true;
  every.k_transposed = true;
  every.qkv_packed = true;
  every.qkv_indices = {2, 0, -1};
  every.qkv_transposed = std::array<bool, 3>{true, false, true};
  every.heads_views = std::array<bool, 3>{false, true, true};
  every.transpose_output = true;
  every.output_perm = std::vector<int64_t>{0, 3, 1, 2};
  every.kernel = "tiled";
  every.tuning = every_tuning_knob();
  for (const ops::AttentionAttributes& a : {ops::AttentionAttributes(), every}) {
    const ops::NodeInfo n = node("Attention", "wgi", ops::write_attention_attributes(a));
    EXPECT_EQ(ops::read_attention_attributes(n), a);
  }
  // The map the passes always wrote: scale, scale_divides and k_transposed, the others only where set.
  EXPECT_EQ(ops::write_attention_attributes(ops::AttentionAttributes()).all().size(), 3u);
}

TEST(InternalOps, LinearRoundTripKeepsOnnxAttributes) {
  ops::LinearAttributes every;
  every.trans_b = true;
  every.windows_in = true;
  every.windows_out = true;
  every.epilogue = {true, "Clip", -1.5f, 6.0f};
  every.kernel = "gemv";
  every.tuning = every_tuning_knob();
  for (const ops::LinearAttributes& a : {ops::LinearAttributes(), every}) {
    ops::Attributes attributes;
    attributes.set("transB", int64_t{1});
    attributes.set("alpha", 0.5f);
    attributes.set(ops::kMatMulWindowsOutAttribute, int64_t{1});  // replaced by the write
    ops::write_linear_attributes(a, attributes);
    const ops::NodeInfo n = node("Gemm", "", attributes);
    EXPECT_EQ(ops::read_linear_attributes(n), a);
    EXPECT_EQ(n.attributes.get_int("transB", 0), 1);
    EXPECT_EQ(n.attributes.get_float("alpha", 0.0f), 0.5f);
  }
}

TEST(InternalOps, EpilogueWriteKeepsConvsOwnAttributes) {
  ops::Attributes attributes;
  attributes.set("group", int64_t{4});
  attributes.set("wgi.depthwise_rows", int64_t{2});  // conv.cpp's own, not the epilogue's
  attributes.set(ops::kFusedActivationMaxAttribute, 3.0f);
  const ops::EpilogueAttributes relu{true, "Relu", std::nullopt, std::nullopt};
  ops::write_epilogue_attributes(relu, attributes);
  const ops::NodeInfo n = node("Conv", "", attributes);
  EXPECT_EQ(ops::read_epilogue_attributes(n), relu);
  EXPECT_EQ(n.attributes.get_int("group", 0), 4);
  EXPECT_EQ(n.attributes.get_int("wgi.depthwise_rows", 0), 2);
  EXPECT_FALSE(n.attributes.has(ops::kFusedActivationMaxAttribute));
}

TEST(InternalOps, MisspeltAttentionAttributeIsAnError) {
  ops::Attributes attributes = ops::write_attention_attributes(ops::AttentionAttributes());
  attributes.set("qkv_pakced", int64_t{1});
  const std::string msg =
      error_of([&] { ops::read_attention_attributes(node("Attention", "wgi", attributes)); });
  EXPECT_NE(msg.find("node 'node_under_test' (Attention, domain wgi, opset 1)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown internal attribute 'qkv_pakced'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("qkv_packed"), std::string::npos) << msg;  // the names it knows
}

TEST(InternalOps, MisspeltLinearAttributeIsAnError) {
  ops::Attributes attributes;
  attributes.set("wgi.trans_B", int64_t{1});
  const std::string msg = error_of([&] { ops::read_linear_attributes(node("MatMul", "", attributes)); });
  EXPECT_NE(msg.find("node 'node_under_test' (MatMul, opset 1)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown internal attribute 'wgi.trans_B'"), std::string::npos) << msg;
  // ONNX names are the op's own, not internal ones.
  ops::Attributes onnx;
  onnx.set("transB", int64_t{1});
  EXPECT_EQ(error_of([&] { ops::read_linear_attributes(node("Gemm", "", onnx)); }), "no error");
}

TEST(InternalOps, WrongTypeIsAnErrorNamingTheNode) {
  ops::Attributes attention = ops::write_attention_attributes(ops::AttentionAttributes());
  attention.set(ops::kAttentionQkvIndicesAttribute, 1.0f);
  std::string msg = error_of([&] { ops::read_attention_attributes(node("Attention", "wgi", attention)); });
  EXPECT_NE(msg.find("node 'node_under_test'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("qkv_indices must be ints; it is a float"), std::string::npos) << msg;

  ops::Attributes linear;
  linear.set(ops::kMatMulTransBAttribute, std::string("yes"));
  msg = error_of([&] { ops::read_linear_attributes(node("MatMul", "", linear)); });
  EXPECT_NE(msg.find("node 'node_under_test'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("wgi.trans_b must be an int; it is a string"), std::string::npos) << msg;

  ops::Attributes flags = ops::write_attention_attributes(ops::AttentionAttributes());
  flags.set(ops::kAttentionHeadsViewsAttribute, std::vector<int64_t>{1, 0});
  msg = error_of([&] { ops::read_attention_attributes(node("Attention", "wgi", flags)); });
  EXPECT_NE(msg.find("heads_views needs three flags (Q, K, V); it has 2"), std::string::npos) << msg;
}

}  // namespace
}  // namespace wgi
