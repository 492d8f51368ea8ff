// float64 CPU references for GridSample and RoiAlign (src/ops/grid_sample.cpp, src/ops/roi_align.cpp),
// written from the ONNX reference implementation's definitions (onnx/reference/ops/op_grid_sample.py,
// op_roi_align.py): GridSample interpolates one spatial dim at a time, recursively, with each tap padded on
// its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wgi/tensor.h"

namespace wgi::test {

// mode "nearest", "linear" or "cubic"; padding "zeros", "border" or "reflection". X [N, C, d1..dR], grid
// [N, o1..oR, R]; returns Y [N, C, o1..oR] row-major.
std::vector<double> grid_sample_reference(const Tensor& x, const Tensor& grid, const std::string& mode,
                                          const std::string& padding, bool align_corners);

// X [N, C, H, W], rois [R, 4] float32, batch_indices [R] int64; mode "avg" or "max". Returns [R, C, oh, ow].
std::vector<double> roi_align_reference(const Tensor& x, const Tensor& rois, const Tensor& batch_indices,
                                        const std::string& mode, bool half_pixel, int64_t out_h,
                                        int64_t out_w, int64_t sampling_ratio, double spatial_scale);

}  // namespace wgi::test
