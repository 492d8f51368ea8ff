// The contracts between the graph passes (src/graph/passes/) and the op planners: the internal attributes
// and input positions the passes write on the nodes they fuse or rewrite, and the planners read back. Each
// name and position is spelled once, here; the passes write a struct with write_*, the planners read it with
// read_*. Reading is strict: on wgi's Attention and DepthwiseConvChannelsLast every attribute is internal and
// one the struct does not know is an error naming the node; on MatMul, Gemm, Conv, ConvTranspose and
// MatMulNBits the same holds for every "wgi." name (their ONNX attributes are the op's own). An attribute of
// the wrong type is an error naming the node and attribute. The epilogue and GEMM tuning readers, which those
// ops' readers share, check only their own names.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/attributes.h"

namespace wgi::ops {

struct NodeInfo;

// ---- Names ----

// Forces a kernel of the node's op (tests, tuning): Attention "rows" | "tiled"; MatMul and Gemm a GEMM kernel
// name (gemm_launch.h); Conv and MatMulNBits their own (conv/choose.cpp, matmul_nbits.cpp).
inline constexpr const char* kForcedKernelAttribute = "wgi.kernel";
// Conv: output rows per invocation of the depthwise_rows kernel (conv/conv.h).
inline constexpr const char* kDepthwiseRowsAttribute = "wgi.depthwise_rows";
// MatMulNBits / MatMulBnb4: output columns per thread of the GEMV (1, 2 or 4; matmul_nbits.cpp).
inline constexpr const char* kGemvThreadColumnsAttribute = "wgi.gemv_thread_columns";
// MatMul / MatMulNBits merged from sibling products of one A (graph::merge_sibling_products): the widths of
// the output's column blocks, one output each (gemm_launch.h, GemmLaunchSpec::ColumnSplit).
inline constexpr const char* kSplitColumnsAttribute = "wgi.split_columns";
// The most column blocks (outputs) such a product has: with A, B, a quantized B's scales and zero points and
// the bias, the eight storage buffers a WebGPU device allows a shader by default.
inline constexpr size_t kMaxSplitOutputs = 3;

// The GEMM planner's knobs on any node whose plan ends in a GEMM launch (gemm_launch.h says what each takes).
inline constexpr const char* kGemmKernelAttribute = "wgi.gemm_kernel";
inline constexpr const char* kGemmTileKAttribute = "wgi.gemm_tile_k";
inline constexpr const char* kGemmStagesAttribute = "wgi.gemm_stages";
inline constexpr const char* kGemvLanesAttribute = "wgi.gemv_lanes";
inline constexpr const char* kGemmSplitKAttribute = "wgi.gemm_split_k";
inline constexpr const char* kGemmHeadRowsAttribute = "wgi.gemm_head_rows";

// The fused epilogue (fused_activation.h, fused_residual.h).
inline constexpr const char* kFusedActivationAttribute = "wgi.activation";
inline constexpr const char* kFusedActivationMinAttribute = "wgi.activation_min";
inline constexpr const char* kFusedActivationMaxAttribute = "wgi.activation_max";
inline constexpr const char* kFusedResidualAttribute = "wgi.residual";

// MatMul's layouts (gemm_launch.h says what each means).
inline constexpr const char* kMatMulTransBAttribute = "wgi.trans_b";
inline constexpr const char* kMatMulWindowsInAttribute = "wgi.windows_in";
inline constexpr const char* kMatMulWindowsOutAttribute = "wgi.windows_out";
// MatMul, MatMulNBits or MatMulBnb4 with a LayerNormalization over A's last axis fused in front
// (graph::fuse_layer_norm_into_products): input 0 is the LayerNormalization's X, its scale and bias
// (constants, one value per element of the axis) are LayerNormInput's inputs (NBitsLayerNormInput's), its
// epsilon this attribute, and the normalised X (its Y, which other nodes read) the product's last output.
inline constexpr const char* kMatMulLayerNormEpsilonAttribute = "wgi.layer_norm_epsilon";

// MatMulInteger or ConvInteger with dynamic quantization's rescale taken in
// (graph::fuse_dynamically_quantized_products): = 1 when its output is float32 f32(sum) * (a_scale *
// b_scale[c]) (+ bias[c]) for output column / channel c, ScaledIntegerInput's inputs (integer_linear.cpp).
inline constexpr const char* kIntegerScaledOutputAttribute = "wgi.scaled_output";
// A MatMulInteger with wgi.scaled_output that quantizes its own A (graph::fuse_dynamic_quantization_into_
// products): = 1 when input 0 is the float32 tensor a DynamicQuantizeLinear quantized for it, A's zero point
// (input 2) and scale (input 4) absent; the product computes them as that op does (integer_linear.cpp).
inline constexpr const char* kIntegerQuantizeAAttribute = "wgi.quantize_a";

// wgi's Attention (src/ops/attention.cpp says what each means).
inline constexpr const char* kAttentionScaleAttribute = "scale";
inline constexpr const char* kAttentionScaleDividesAttribute = "scale_divides";
inline constexpr const char* kAttentionKTransposedAttribute = "k_transposed";
inline constexpr const char* kAttentionQkvPackedAttribute = "qkv_packed";
inline constexpr const char* kAttentionQkvIndicesAttribute = "qkv_indices";
inline constexpr const char* kAttentionQkvTransposedAttribute = "qkv_transposed";
inline constexpr const char* kAttentionHeadsViewsAttribute = "heads_views";
inline constexpr const char* kAttentionTransposeOutputAttribute = "transpose_output";
inline constexpr const char* kAttentionOutputPermAttribute = "output_perm";

// wgi's DepthwiseConvChannelsLast (conv_channels_last.h says what each is), named as Conv's ONNX attributes.
inline constexpr const char* kChannelsLastKernelShapeAttribute = "kernel_shape";
inline constexpr const char* kChannelsLastPadsAttribute = "pads";
inline constexpr const char* kChannelsLastStridesAttribute = "strides";
inline constexpr const char* kChannelsLastHeightAttribute = "height";
inline constexpr const char* kChannelsLastWidthAttribute = "width";

// ---- Input positions ----

// A fused residual R: input 3 of MatMul, Gemm and Conv (inputs 0-2 keep their meaning; 2 may be empty).
inline constexpr size_t kFusedResidualInput = 3;
// com.microsoft MatMulNBits' bias (its own input 5) and R, after its own inputs (A, B, scales, zero_points,
// g_idx, bias).
inline constexpr size_t kNBitsBiasInput = 5;
inline constexpr size_t kNBitsResidualInput = 6;

// MatMul and Gemm. kBias: Gemm's C, or the bias that graph::fuse_bias_adds gives a MatMul.
struct LinearInput {
  static constexpr size_t kA = 0, kB = 1, kBias = 2, kResidual = kFusedResidualInput;
};
// MatMul with wgi.windows_in: the Reshape targets of the window partition (gemm_launch.h).
struct WindowsInInput {
  static constexpr size_t kPartition = 4;  // [B, H / wh, wh, W / ww, ww, C]
  static constexpr size_t kWindows = 5;    // the windows' shape
  static constexpr size_t kTokens = 6;     // the tokens' shape (A's)
  static constexpr size_t kCount = 7;
};
// MatMul with wgi.windows_out: the window reverse's Reshape targets and the crop's ends (empty: no crop).
struct WindowsOutInput {
  static constexpr size_t kWindows = 4;       // the product reshaped to the windows
  static constexpr size_t kWindowsImage = 5;  // [B, H / wh, W / ww, wh, ww, N]
  static constexpr size_t kImage = 6;         // the image [B, H, W, N]
  static constexpr size_t kCropEndH = 7;
  static constexpr size_t kCropEndW = 8;
  static constexpr size_t kOutput = 9;  // the node's output shape
  static constexpr size_t kCount = 10;
};
// wgi's DepthwiseConvChannelsLast (conv_channels_last.h says what each is).
struct ChannelsLastConvInput {
  static constexpr size_t kX = 0, kW = 1, kBias = 2, kResidual = 3;
  static constexpr size_t kImageTarget = 4;   // the first Reshape's target, [B, C, H, W] (optional)
  static constexpr size_t kTokensTarget = 5;  // the second Reshape's target, [B, C, Ho * Wo] (optional)
  static constexpr size_t kCount = 6;
};
// MatMulInteger and ConvInteger with wgi.scaled_output: after their own four, A's (x's) scale (a float32
// scalar, DynamicQuantizeLinear's second output, computed on the GPU), B's (w's) scale (a float32 constant,
// one value or one per output column / channel), the bias (a float32 constant of one value per column /
// channel, optional) and a fused residual (with the epilogue's wgi.residual; its float output also takes
// wgi.activation).
struct ScaledIntegerInput {
  static constexpr size_t kAScale = 4, kBScale = 5, kBias = 6, kResidual = 7;
};
// A quantizing MatMulInteger's fused LayerNormalization (wgi.layer_norm_epsilon with wgi.quantize_a): its
// scale and bias, after the residual slot.
struct IntegerLayerNormInput {
  static constexpr size_t kScale = ScaledIntegerInput::kResidual + 1,
                          kBias = ScaledIntegerInput::kResidual + 2;
};
// A MatMul's fused LayerNormalization (wgi.layer_norm_epsilon): its scale and bias, after the residual slot.
struct LayerNormInput {
  static constexpr size_t kScale = 4, kBias = 5;
};
// The quantized matmuls' fused LayerNormalization: its scale and bias, after the residual slot.
struct NBitsLayerNormInput {
  static constexpr size_t kScale = kNBitsResidualInput + 1, kBias = kNBitsResidualInput + 2;
};
// The first input after a MatMul's residual: where the window inputs start.
inline constexpr size_t kMatMulWindowInputs = WindowsInInput::kPartition;
static_assert(WindowsInInput::kPartition == WindowsOutInput::kWindows);

// wgi's Attention.
struct AttentionInput {
  static constexpr size_t kQ = 0, kK = 1, kV = 2;
  static constexpr size_t kMask = 3;          // an additive mask (optional)
  static constexpr size_t kScale = 4;         // a scale tensor, one float known when planning (optional)
  static constexpr size_t kPackedTarget = 5;  // qkv_packed: the packed projection's Reshape target
  // heads_views: operand i's Reshape target [B, N, heads, D].
  static constexpr size_t heads_target(size_t operand) { return 6 + operand; }
  static constexpr size_t kCountWithPacked = 6;
  static constexpr size_t kCountWithHeads = 9;
};

// ---- Attributes ----

// The GEMM planner's knobs (absent: the planner's choice; values are checked where a GEMM is planned).
struct GemmTuningAttributes {
  std::optional<std::string> kernel;  // wgi.gemm_kernel
  std::optional<int64_t> tile_k, stages, split_k, gemv_lanes, head_rows;
  friend bool operator==(const GemmTuningAttributes&, const GemmTuningAttributes&) = default;
};
// Reads only these names (any op may carry them); the write replaces them and keeps every other attribute.
GemmTuningAttributes read_gemm_tuning_attributes(const NodeInfo& node);
void write_gemm_tuning_attributes(const GemmTuningAttributes& tuning, Attributes& attributes);

// An activation and a residual applied in a GEMM or conv kernel's epilogue (graph::fuse_activations,
// graph::fuse_residual_adds), on MatMul, Gemm, Conv, ConvTranspose, MatMulNBits, and MatMulInteger and
// ConvInteger with wgi.scaled_output.
struct EpilogueAttributes {
  bool residual = false;   // wgi.residual: R is input kFusedResidualInput (MatMulNBits kNBitsResidualInput)
  std::string activation;  // wgi.activation: "" (none), "Relu", "Clip", "Gelu" or "GeluTanh"
  std::optional<float> activation_min, activation_max;  // Clip's bounds (absent: the largest finite float)
  friend bool operator==(const EpilogueAttributes&, const EpilogueAttributes&) = default;
};
// Reads only these names; the write replaces them and keeps every other attribute.
EpilogueAttributes read_epilogue_attributes(const NodeInfo& node);
void write_epilogue_attributes(const EpilogueAttributes& epilogue, Attributes& attributes);

// The internal attributes of MatMul and Gemm.
struct LinearAttributes {
  bool trans_b = false;      // wgi.trans_b (MatMul): B is given as [..., N, K]
  bool windows_in = false;   // wgi.windows_in (MatMul): input 0 is the image, read as windows
  bool windows_out = false;  // wgi.windows_out (MatMul): the output is the windows reversed into the image
  std::vector<int64_t> split_columns;       // wgi.split_columns: empty, or one width per output (sum N)
  std::optional<float> layer_norm_epsilon;  // wgi.layer_norm_epsilon (MatMul): A is normalised first
  EpilogueAttributes epilogue;
  std::string kernel;  // wgi.kernel: a GEMM kernel name, "" for the planner's choice
  GemmTuningAttributes tuning;
  friend bool operator==(const LinearAttributes&, const LinearAttributes&) = default;
};
// Strict over "wgi." names; the write replaces every "wgi." name and keeps the ONNX attributes.
LinearAttributes read_linear_attributes(const NodeInfo& node);
void write_linear_attributes(const LinearAttributes& linear, Attributes& attributes);

// The internal attributes of Conv and ConvTranspose (conv.cpp; conv/choose.cpp checks the hints against the
// conv).
struct ConvInternalAttributes {
  EpilogueAttributes epilogue;
  std::string kernel;  // wgi.kernel: a conv kernel name (conv/choose.cpp), "" for the planner's choice
  int64_t depthwise_rows = 0;   // wgi.depthwise_rows: 1, 2, 4 or 8; 0 for the planner's choice
  GemmTuningAttributes tuning;  // the pointwise GEMM's and the implicit GEMM's knobs
  friend bool operator==(const ConvInternalAttributes&, const ConvInternalAttributes&) = default;
};
// Strict over "wgi." names; the write replaces every "wgi." name and keeps the ONNX attributes.
ConvInternalAttributes read_conv_internal_attributes(const NodeInfo& node);
void write_conv_internal_attributes(const ConvInternalAttributes& conv, Attributes& attributes);

// The internal attributes of com.microsoft MatMulNBits and MatMulBnb4 (matmul_nbits.cpp).
struct NBitsAttributes {
  EpilogueAttributes epilogue;  // R is input kNBitsResidualInput
  std::string kernel;  // wgi.kernel: "gemv", "fast" or "tiled"; "" or "auto" for the planner's choice
  GemmTuningAttributes tuning;         // gemv_lanes: the GEMV's lanes per column; the others the fast GEMM's
  int64_t gemv_thread_columns = 0;     // wgi.gemv_thread_columns; 0: the planner's choice
  std::vector<int64_t> split_columns;  // wgi.split_columns: empty, or one width per output (sum N)
  std::optional<float> layer_norm_epsilon;  // wgi.layer_norm_epsilon: A is normalised first
  friend bool operator==(const NBitsAttributes&, const NBitsAttributes&) = default;
};
// Strict over "wgi." names; the write replaces every "wgi." name and keeps the op's own attributes.
NBitsAttributes read_nbits_attributes(const NodeInfo& node);
void write_nbits_attributes(const NBitsAttributes& nbits, Attributes& attributes);

// The attributes of wgi's DepthwiseConvChannelsLast (made by graph::fuse_depthwise_conv_channels_last).
struct ChannelsLastConvAttributes {
  std::vector<int64_t> kernel_shape;         // [KH, KW]; empty: W's
  std::vector<int64_t> pads = {0, 0, 0, 0};  // [top, left, bottom, right]
  std::vector<int64_t> strides = {1, 1};     // dilation is 1
  std::optional<int64_t> height, width;      // H and W when input kImageTarget is absent
  EpilogueAttributes epilogue;  // the activation; R is input kResidual (epilogue.residual: a write error)
  friend bool operator==(const ChannelsLastConvAttributes&, const ChannelsLastConvAttributes&) = default;
};
// Strict over every name (the sizes and ranges are the planner's to check).
ChannelsLastConvAttributes read_channels_last_conv_attributes(const NodeInfo& node);
Attributes write_channels_last_conv_attributes(const ChannelsLastConvAttributes& conv);

// The attributes of wgi's Attention (made by graph::fuse_attention, rewritten by read_packed_qkv,
// read_split_heads and write_attention_transposed).
struct AttentionAttributes {
  float scale = 1.0f;                // scale: multiplies the scores (with the scale tensor's factor)
  bool scale_divides = false;        // scale_divides: the scale tensor divides instead
  bool k_transposed = false;         // k_transposed: input 1 is K^T [.., D, Tk]
  bool qkv_packed = false;           // qkv_packed: Q, K and V are views of one packed projection
  std::vector<int64_t> qkv_indices;  // qkv_indices: which packed part each one is
  std::optional<std::array<bool, 3>> qkv_transposed;  // qkv_transposed: operand i read transposed
  std::optional<std::array<bool, 3>> heads_views;     // heads_views: operand i split into heads in place
  bool transpose_output = false;                      // transpose_output: written with perm [0, 2, 1, 3]
  std::optional<std::vector<int64_t>> output_perm;    // output_perm: written with this perm
  std::string kernel;                                 // wgi.kernel: "rows", "tiled" or "gemm"; "": the choice
  GemmTuningAttributes tuning;                        // the three-launch plan's GEMMs
  friend bool operator==(const AttentionAttributes&, const AttentionAttributes&) = default;
};
// Strict over every name. The written map holds scale, scale_divides and k_transposed always and the others
// where set.
AttentionAttributes read_attention_attributes(const NodeInfo& node);
Attributes write_attention_attributes(const AttentionAttributes& attention);

}  // namespace wgi::ops
