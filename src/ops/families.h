// Every op family's registration function. One file per family under src/ops/; each adds its ops here.
#pragma once

#include <array>

namespace wgi::ops {

class OpRegistry;

void register_unary_ops(OpRegistry& registry);   // elementwise_unary.cpp: Relu, Sigmoid, ...
void register_linear_ops(OpRegistry& registry);  // linear.cpp: MatMul, Gemm
void register_conv_ops(OpRegistry& registry);    // conv.cpp: Conv, ConvTranspose
void register_binary_ops(OpRegistry& registry);  // elementwise_binary.cpp: Add, Mul, Where, Equal, Cast, ...
void register_data_movement_ops(OpRegistry& registry);  // data_movement.cpp: Reshape, Transpose, Gather, ...
void register_normalization_ops(OpRegistry& registry);  // normalization.cpp: Softmax, LayerNorm, Reduce*, ...
void register_pooling_ops(OpRegistry& registry);        // pooling.cpp: MaxPool, AveragePool, Resize, ...
void register_attention_ops(OpRegistry& registry);      // attention.cpp: wgi's fused Attention
// conv_channels_last.cpp: wgi's DepthwiseConvChannelsLast (a fused convolutional position encoding)
void register_conv_channels_last_ops(OpRegistry& registry);
// matmul_nbits.cpp: com.microsoft MatMulNBits and MatMulBnb4 (weight-only quantized MatMul)
void register_quantized_matmul_ops(OpRegistry& registry);
void register_quantize_ops(OpRegistry& registry);  // quantize.cpp: QuantizeLinear, DequantizeLinear, ...
// integer_linear.cpp: MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv
void register_integer_linear_ops(OpRegistry& registry);
void register_mask_ops(OpRegistry& registry);          // masks.cpp: Trilu
void register_scatter_ops(OpRegistry& registry);       // scatter.cpp: ScatterND, ScatterElements, Scatter
void register_einsum_ops(OpRegistry& registry);        // einsum.cpp: Einsum
void register_scan_ops(OpRegistry& registry);          // scan.cpp: CumSum
void register_float_class_ops(OpRegistry& registry);   // float_class.cpp: IsNaN, IsInf
void register_lrn_ops(OpRegistry& registry);           // lrn.cpp: LRN
void register_control_flow_ops(OpRegistry& registry);  // control_flow.cpp: If (planned as its taken branch)
void register_gather_nd_ops(OpRegistry& registry);     // gather_nd.cpp: GatherND
void register_topk_ops(OpRegistry& registry);          // topk.cpp: TopK
void register_mvn_ops(OpRegistry& registry);           // mvn.cpp: MeanVarianceNormalization
void register_recurrent_ops(OpRegistry& registry);     // recurrent.cpp: LSTM, GRU, RNN
void register_selection_ops(OpRegistry& registry);     // selection.cpp: NonZero, Compress
void register_unique_ops(OpRegistry& registry);        // unique.cpp: Unique
void register_detection_ops(OpRegistry& registry);     // non_max_suppression.cpp: NonMaxSuppression

// grid_sample.cpp: GridSample; roi_align.cpp: RoiAlign; max_unpool.cpp: MaxUnpool;
// reverse_sequence.cpp: ReverseSequence; spectral.cpp: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow,
// MelWeightMatrix; det.cpp: Det
void register_grid_sample_ops(OpRegistry& registry);
void register_roi_align_ops(OpRegistry& registry);
void register_max_unpool_ops(OpRegistry& registry);
void register_reverse_sequence_ops(OpRegistry& registry);
void register_spectral_ops(OpRegistry& registry);
void register_det_ops(OpRegistry& registry);
// random.cpp: seeded RandomUniform(Like), RandomNormal(Like), Bernoulli
void register_random_ops(OpRegistry& registry);

// One family per line, so that adding a family is a one-line change.
// clang-format off
inline constexpr std::array kOpFamilies = {
    &register_unary_ops,
    &register_linear_ops,
    &register_conv_ops,
    &register_binary_ops,
    &register_data_movement_ops,
    &register_normalization_ops,
    &register_pooling_ops,
    &register_attention_ops,
    &register_conv_channels_last_ops,
    &register_quantized_matmul_ops,
    &register_quantize_ops,
    &register_integer_linear_ops,
    &register_mask_ops,
    &register_scatter_ops,
    &register_einsum_ops,
    &register_scan_ops,
    &register_float_class_ops,
    &register_lrn_ops,
    &register_control_flow_ops,
    &register_gather_nd_ops,
    &register_topk_ops,
    &register_mvn_ops,
    &register_recurrent_ops,
    &register_grid_sample_ops,
    &register_roi_align_ops,
    &register_max_unpool_ops,
    &register_reverse_sequence_ops,
    &register_spectral_ops,
    &register_det_ops,
    &register_random_ops,
    &register_selection_ops,
    &register_unique_ops,
    &register_detection_ops,
};
// clang-format on

}  // namespace wgi::ops
