// wgi's internal "DepthwiseConvChannelsLast" (domain "wgi", src/ops/conv_channels_last.cpp): a depthwise 2-D
// convolution of a channels-last token tensor X [B, N, C] (N = H * W), with an optional residual added in the
// epilogue. The graph pass fuse_depthwise_conv_channels_last makes it out of the chain vision transformers
// export for a convolutional position encoding (DaViT's ConvPosEnc, before every attention and MLP block):
//   Transpose(X, perm [0, 2, 1]) -> Reshape [B, C, H, W] -> Conv (depthwise, weight [C, 1, KH, KW], group C)
//   -> [fused activation] -> Reshape [B, C, Ho * Wo] -> Transpose(perm [0, 2, 1]) -> [Add(R, .)]
// which is then one pass over X instead of two transposes, an NCHW conv and an add.
//
// Inputs: X [B, N, C]; W [C, 1, KH, KW] (a constant: prepacked); bias [C] (optional, a constant); R
// (optional, the output's shape [B, Ho * Wo, C]); the first Reshape's target (optional, int64, known when
// planning: exports compute it from Shape nodes), resolved as ONNX's Reshape would on [B, C, N] and required
// to be [B, C, H, W]; the second Reshape's target (optional, likewise), resolved on [B, C, Ho, Wo] and
// required to be [B, C, Ho * Wo]. Attributes: kernel_shape, pads [top, left, bottom, right], strides
// (dilation 1), height and width (H and W when the first target is absent; checked against it when both are
// given), and the fused activation (ops/fused_activation.h), applied before the residual is added. The
// attributes and input positions are ChannelsLastConvAttributes and ChannelsLastConvInput
// (ops/internal_ops.h).
#pragma once

#include <cstdint>

namespace wgi::ops {

inline constexpr const char* kDepthwiseConvChannelsLastDomain = "wgi";
inline constexpr const char* kDepthwiseConvChannelsLastOp = "DepthwiseConvChannelsLast";
inline constexpr int64_t kDepthwiseConvChannelsLastMaxKernel = 7;  // per axis

}  // namespace wgi::ops
