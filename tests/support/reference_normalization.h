// Float64 CPU references for the normalisation family: reductions (Reduce*, ArgMax / ArgMin), Softmax /
// LogSoftmax in both opset forms, LayerNormalization, InstanceNormalization, GroupNormalization and
// BatchNormalization. Written as plainly as possible, by coordinates, independent of the GPU kernels' views.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

struct NormReference {
  Shape shape;
  std::vector<double> values;
};

// op: "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
// "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin". axes already non-negative; an
// empty list reduces nothing (noop_with_empty_axes); pass every axis to reduce all. Values of x are read as
// doubles (float32, int32 or int64 tensors).
NormReference reduce_reference(const Tensor& x, const std::string& op, const std::vector<int64_t>& axes,
                               bool keepdims, bool select_last_index = false);

// opset < 13: flatten to [prod(shape[:axis]), prod(shape[axis:])] and normalise whole rows; else along axis.
NormReference softmax_reference(const Tensor& x, int64_t axis, bool flatten, bool log);

struct LayerNormReference {
  NormReference y, mean, inv_std_dev;
};
// scale and bias broadcast numpy-style onto the normalised axes shape[axis:]; bias may be null.
LayerNormReference layer_norm_reference(const Tensor& x, int64_t axis, const Tensor& scale,
                                        const Tensor* bias, double epsilon);

// x [N, C, ...]: each (n, c) plane normalised, then scale[c], bias[c].
NormReference instance_norm_reference(const Tensor& x, const Tensor& scale, const Tensor& bias,
                                      double epsilon);

// x [N, C, ...]: each (n, group) block of C / groups channels normalised; scale and bias per group
// (per_channel false, opset 18) or per channel (opset 21).
NormReference group_norm_reference(const Tensor& x, int64_t groups, const Tensor& scale, const Tensor& bias,
                                   double epsilon, bool per_channel);

// Inference: (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c], per channel of x [N, C, ...].
NormReference batch_norm_reference(const Tensor& x, const Tensor& scale, const Tensor& bias,
                                   const Tensor& mean, const Tensor& var, double epsilon);

}  // namespace wgi::test
