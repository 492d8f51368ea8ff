// ConvTranspose in gather form, conv/conv_transpose2d.wgsl: one invocation per output element sums the
// input positions whose (strided, dilated) kernel taps reach it, reading the weight in ONNX's layout
// [C, M / group, KH, KW]. Its output size and padding are resolved in geometry.cpp; it shares the direct
// kernels' bindings and parameter block (conv/conv_common.wgsl, direct.cpp).
#include "ops/conv/conv.h"

namespace wgi::ops {

void add_conv_transpose_launch(const PlanContext& ctx, const ConvGeometry& g, const ConvEpilogue& epilogue,
                               OpPlan& plan) {
  add_conv_common_launch(ctx, g, "conv/conv_transpose2d.wgsl", "conv_transpose2d", TensorRef::input(1),
                         epilogue, plan);
}

}  // namespace wgi::ops
