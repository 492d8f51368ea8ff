// Plain CPU references for the data-movement ops, written per output element from the ONNX definitions
// (multi-index in, multi-index out), independent of the strided-copy arithmetic wgi plans with. They work on
// any dtype by copying element bytes, so comparisons are exact.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ops/op.h"
#include "runtime/node_runner.h"
#include "support/run_node.h"
#include "wgi/tensor.h"

namespace wgi::test {

Tensor transpose_reference(const Tensor& x, const std::vector<int64_t>& perm);
Tensor concat_reference(const std::vector<Tensor>& inputs, int64_t axis);
std::vector<Tensor> split_reference(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes);
// Python slicing per axis: x[start:end:step] with ONNX's (numpy's) clamping.
Tensor slice_reference(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                       const std::vector<int64_t>& axes, const std::vector<int64_t>& steps);
Tensor gather_reference(const Tensor& x, const Tensor& indices, int64_t axis);
Tensor gather_elements_reference(const Tensor& x, const Tensor& indices, int64_t axis);
Tensor expand_reference(const Tensor& x, const std::vector<int64_t>& shape);
Tensor tile_reference(const Tensor& x, const std::vector<int64_t>& repeats);
// pads = [begin..., end...] for every axis; mode constant / edge / reflect / wrap; value has x's dtype.
Tensor pad_reference(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode,
                     const Tensor& value);
Tensor depth_to_space_reference(const Tensor& x, int64_t blocksize, const std::string& mode);
Tensor space_to_depth_reference(const Tensor& x, int64_t blocksize);

// Seeded tensors of any dtype with values that are never all zero: floats in [-1, 1), integers in [lo, hi).
Tensor random_ints(DType dtype, const Shape& shape, uint64_t seed, int64_t lo = -1000, int64_t hi = 1000);
// A tensor of `dtype` counting 1, 2, 3, ... (floats and ints; bool alternates).
Tensor iota_tensor(DType dtype, const Shape& shape);

// Same dtype, same shape, identical bytes; reports the first differing element.
::testing::AssertionResult identical(const Tensor& actual, const Tensor& expected);

// ---- Running nodes ----

// NodeInputs, make_node and node_error: support/run_node.h.
// The handler's evaluate_on_host with every input known (as if all were initializers); empty if it declines.
std::vector<Tensor> fold_node(const ops::NodeInfo& node, const NodeInputs& inputs);
// Runs the node on the GPU (inputs constant as flagged) and folds it on the host; both must give `expected`
// exactly.
void expect_node_outputs(const ops::NodeInfo& node, const NodeInputs& inputs,
                         const std::vector<Tensor>& expected, const runtime::NodeRunOptions& options = {});
// A 1-D int64 tensor.
Tensor ints(const std::vector<int64_t>& values);

}  // namespace wgi::test
