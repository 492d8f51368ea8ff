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

// Writes `a` over `attributes` (ONNX ones and a stale internal one the write replaces), reads it back equal,
// and hands the node to `check_onnx_kept`.
template <class Internal, class Write, class Read, class Check>
void expect_round_trip(const Internal& a, ops::Attributes attributes, const char* op, const char* domain,
                       Write write, Read read, Check check_onnx_kept) {
  write(a, attributes);
  const ops::NodeInfo n = node(op, domain, attributes);
  EXPECT_EQ(read(n), a);
  check_onnx_kept(n);
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
  ops::Attributes attributes;
  attributes.set("transB", int64_t{1});
  attributes.set("alpha", 0.5f);
  attributes.set(ops::kMatMulWindowsOutAttribute, int64_t{1});
  for (const ops::LinearAttributes& a : {ops::LinearAttributes(), every}) {
    expect_round_trip(a, attributes, "Gemm", "", ops::write_linear_attributes, ops::read_linear_attributes,
                      [](const ops::NodeInfo& n) {
                        EXPECT_EQ(n.attributes.get_int("transB", 0), 1);
                        EXPECT_EQ(n.attributes.get_float("alpha", 0.0f), 0.5f);
                      });
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

TEST(InternalOps, GemmTuningWriteReplacesOnlyItsOwn) {
  ops::Attributes attributes;
  attributes.set("problem.m", int64_t{7});                // the tuner's own
  attributes.set(ops::kGemmStagesAttribute, int64_t{3});  // replaced by the write
  attributes.set(ops::kFusedResidualAttribute, int64_t{1});
  ops::GemmTuningAttributes split;
  split.kernel = "tiled";
  split.split_k = 4;
  ops::write_gemm_tuning_attributes(split, attributes);
  const ops::NodeInfo n = node("GemmProblem", "wgi.tuning", attributes);
  EXPECT_EQ(ops::read_gemm_tuning_attributes(n), split);
  EXPECT_EQ(n.attributes.get_int("problem.m", 0), 7);
  EXPECT_EQ(n.attributes.get_int(ops::kFusedResidualAttribute, 0), 1);
  ops::write_gemm_tuning_attributes(every_tuning_knob(), attributes);
  EXPECT_EQ(ops::read_gemm_tuning_attributes(node("GemmProblem", "wgi.tuning", attributes)),
            every_tuning_knob());
}

TEST(InternalOps, ConvRoundTripKeepsOnnxAttributes) {
  ops::ConvInternalAttributes every;
  every.epilogue = {true, "Clip", 0.0f, 6.0f};
  every.kernel = "depthwise_rows";
  every.depthwise_rows = 4;
  every.tuning = every_tuning_knob();
  ops::Attributes attributes;
  attributes.set("group", int64_t{8});
  attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  attributes.set(ops::kForcedKernelAttribute, std::string("direct"));
  for (const ops::ConvInternalAttributes& a : {ops::ConvInternalAttributes(), every}) {
    expect_round_trip(a, attributes, "Conv", "", ops::write_conv_internal_attributes,
                      ops::read_conv_internal_attributes, [](const ops::NodeInfo& n) {
                        EXPECT_EQ(n.attributes.get_int("group", 0), 8);
                        EXPECT_EQ(n.attributes.get_ints("pads", {}), (std::vector<int64_t>{1, 1, 1, 1}));
                      });
  }
}

TEST(InternalOps, NBitsRoundTripKeepsTheOpsOwnAttributes) {
  ops::NBitsAttributes every;
  every.epilogue = {true, "GeluTanh", std::nullopt, std::nullopt};
  every.kernel = "gemv";
  every.tuning.gemv_lanes = 16;
  ops::Attributes attributes;
  attributes.set("bits", int64_t{4});
  attributes.set("block_size", int64_t{32});
  attributes.set(ops::kGemvLanesAttribute, int64_t{64});
  for (const ops::NBitsAttributes& a : {ops::NBitsAttributes(), every}) {
    expect_round_trip(a, attributes, "MatMulNBits", "com.microsoft", ops::write_nbits_attributes,
                      ops::read_nbits_attributes, [](const ops::NodeInfo& n) {
                        EXPECT_EQ(n.attributes.get_int("bits", 0), 4);
                        EXPECT_EQ(n.attributes.get_int("block_size", 0), 32);
                      });
  }
}

TEST(InternalOps, ChannelsLastConvRoundTrip) {
  ops::ChannelsLastConvAttributes every;
  every.kernel_shape = {3, 5};
  every.pads = {1, 2, 0, 2};
  every.strides = {2, 1};
  every.height = 9;
  every.width = 11;
  every.epilogue = {false, "Clip", -1.0f, 1.0f};
  for (const ops::ChannelsLastConvAttributes& a : {ops::ChannelsLastConvAttributes(), every}) {
    const ops::NodeInfo n =
        node("DepthwiseConvChannelsLast", "wgi", ops::write_channels_last_conv_attributes(a));
    EXPECT_EQ(ops::read_channels_last_conv_attributes(n), a);
  }
  // The defaults the planner applied to an absent attribute: no padding, stride 1.
  const ops::NodeInfo bare = node("DepthwiseConvChannelsLast", "wgi", {});
  EXPECT_EQ(ops::read_channels_last_conv_attributes(bare), ops::ChannelsLastConvAttributes());
  // Its residual is an input, never the epilogue's flag.
  ops::ChannelsLastConvAttributes residual;
  residual.epilogue.residual = true;
  const std::string msg = error_of([&] { ops::write_channels_last_conv_attributes(residual); });
  EXPECT_NE(msg.find("residual as input 3"), std::string::npos) << msg;
}

TEST(InternalOps, MisspeltConvNBitsAndChannelsLastAttributesAreErrors) {
  ops::Attributes conv;
  conv.set("group", int64_t{2});
  conv.set("wgi.depthwise_row", int64_t{2});
  std::string msg = error_of([&] { ops::read_conv_internal_attributes(node("Conv", "", conv)); });
  EXPECT_NE(msg.find("node 'node_under_test' (Conv, opset 1)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown internal attribute 'wgi.depthwise_row'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("wgi.depthwise_rows"), std::string::npos) << msg;  // the names it knows

  ops::Attributes nbits;
  nbits.set("bits", int64_t{4});
  nbits.set("wgi.kernal", std::string("gemv"));
  msg = error_of([&] { ops::read_nbits_attributes(node("MatMulNBits", "com.microsoft", nbits)); });
  EXPECT_NE(msg.find("node 'node_under_test' (MatMulNBits, domain com.microsoft, opset 1)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("unknown internal attribute 'wgi.kernal'"), std::string::npos) << msg;

  // Every name of wgi's own op is internal.
  ops::Attributes channels_last = ops::write_channels_last_conv_attributes(ops::ChannelsLastConvAttributes());
  channels_last.set("stride", std::vector<int64_t>{1, 1});
  msg = error_of([&] {
    ops::read_channels_last_conv_attributes(node("DepthwiseConvChannelsLast", "wgi", channels_last));
  });
  EXPECT_NE(msg.find("node 'node_under_test' (DepthwiseConvChannelsLast, domain wgi, opset 1)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("unknown internal attribute 'stride'"), std::string::npos) << msg;

  // ONNX names are the ops' own, not internal ones.
  ops::Attributes onnx;
  onnx.set("group", int64_t{2});
  onnx.set("bits", int64_t{4});
  EXPECT_EQ(error_of([&] { ops::read_conv_internal_attributes(node("Conv", "", onnx)); }), "no error");
  EXPECT_EQ(error_of([&] { ops::read_nbits_attributes(node("MatMulNBits", "com.microsoft", onnx)); }),
            "no error");
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

  ops::Attributes conv;
  conv.set(ops::kDepthwiseRowsAttribute, std::string("4"));
  msg = error_of([&] { ops::read_conv_internal_attributes(node("Conv", "", conv)); });
  EXPECT_NE(msg.find("node 'node_under_test'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("wgi.depthwise_rows must be an int; it is a string"), std::string::npos) << msg;

  ops::Attributes nbits;
  nbits.set(ops::kForcedKernelAttribute, int64_t{1});
  msg = error_of([&] { ops::read_nbits_attributes(node("MatMulNBits", "com.microsoft", nbits)); });
  EXPECT_NE(msg.find("wgi.kernel must be a string; it is an int"), std::string::npos) << msg;

  ops::Attributes channels_last;
  channels_last.set(ops::kChannelsLastPadsAttribute, 1.0f);
  msg = error_of([&] {
    ops::read_channels_last_conv_attributes(node("DepthwiseConvChannelsLast", "wgi", channels_last));
  });
  EXPECT_NE(msg.find("internal attribute pads must be ints; it is a float"), std::string::npos) << msg;

  ops::Attributes flags = ops::write_attention_attributes(ops::AttentionAttributes());
  flags.set(ops::kAttentionHeadsViewsAttribute, std::vector<int64_t>{1, 0});
  msg = error_of([&] { ops::read_attention_attributes(node("Attention", "wgi", flags)); });
  EXPECT_NE(msg.find("heads_views needs three flags (Q, K, V); it has 2"), std::string::npos) << msg;
}

}  // namespace
}  // namespace wgi
