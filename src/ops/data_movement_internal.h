// Shared pieces of the data-movement family (data_movement*.cpp): strided copies planned once and run either
// as GPU launches or on the host (constant folding), axis and int-list helpers, and the family's registration
// split by file.
//
// Most ops of the family are a set of strided copies (a StridedCopy each): the op's handler computes its
// output descriptions and copies from the node; `plan` turns each copy into a kernel launch and
// `evaluate_on_host` runs the same copies on the host. Both paths therefore share the index arithmetic, and
// the tests compare both against independent references.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ops/op.h"
#include "ops/registry.h"

namespace wgi::ops::data_movement {

// The kernels take up to this many dimensions (uniform vec4 pairs); larger copies are peeled on the host.
inline constexpr size_t kMaxKernelRank = 8;
// Host folding declines outputs larger than this (unless they are no larger than the op's constant inputs,
// see copy_layout_handler): such constants are better computed on the GPU.
inline constexpr int64_t kMaxHostFoldElements = int64_t{1} << 24;

// Copies every element of the iteration space `shape`: multi-index c is read at src_offset + sum(c[d] *
// src_strides[d]) of `src` and written at dst_offset + sum(c[d] * dst_strides[d]) of `dst`. Offsets and
// strides are in elements; source strides may be negative (Slice with negative steps) or zero (Expand).
struct StridedCopy {
  Shape shape;
  std::vector<int64_t> src_strides;
  std::vector<int64_t> dst_strides;
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
  TensorRef src = TensorRef::input(0);
  TensorRef dst = TensorRef::output(0);
};

// What a copy-style op produces: its outputs and the copies that fill them (together they must cover every
// output element).
struct CopyLayout {
  std::vector<TensorDesc> outputs;
  std::vector<StridedCopy> copies;
};

std::vector<int64_t> row_major_strides(const Shape& shape);

// A copy that writes all of the output (contiguous), reading the input viewed with `src_strides` from
// `src_offset`.
StridedCopy gather_view(const Shape& out_shape, std::vector<int64_t> src_strides, int64_t src_offset = 0);

// `axis` in [-rank, rank) (or [-rank, rank] with `inclusive`, for Flatten's split position) made
// non-negative; fails naming `what` otherwise.
int64_t normalize_axis(const PlanContext& ctx, int64_t axis, int64_t rank, const std::string& what,
                       bool inclusive = false);

// The values of an int64 or int32 tensor.
std::vector<int64_t> tensor_ints(const PlanContext& ctx, const Tensor& t, const std::string& what);
// Input `i`'s values, which must be known when the model is planned (an initializer or folded shape
// arithmetic); fails saying so otherwise. `what` names the input's role, e.g. "the target shape".
std::vector<int64_t> known_ints(const PlanContext& ctx, size_t i, const std::string& what);

// Fails unless the GPU kernels can move this input's elements (4 bytes each on the device).
void require_device_elements(const PlanContext& ctx, size_t input);

// The 4-byte device representation (see runtime/device_tensor.h) of a one-element tensor's value, and of a
// number in `dtype`.
uint32_t device_bits(const PlanContext& ctx, const Tensor& scalar, const std::string& what);
uint32_t device_bits(DType dtype, double value);
// A one-element host tensor of `dtype` holding `value` (converted as static_cast would).
Tensor scalar_tensor(DType dtype, double value);

// Four values from `first` (zero past the end) for a uniform vec4.
std::array<uint32_t, 4> u32x4(const std::vector<int64_t>& v, size_t first);
std::array<int32_t, 4> i32x4(const std::vector<int64_t>& v, size_t first);

// Kernel launches. Zero-element copies add nothing. A copy into (or from) a scratch buffer takes its size
// from plan.scratch_bytes: push it there first.
void add_copy_launches(const PlanContext& ctx, OpPlan& plan, StridedCopy copy);
void add_fill_launch(const PlanContext& ctx, OpPlan& plan, TensorRef dst, int64_t count, uint32_t bits);
// An output that is a host-computed constant: stored in plan.constants and copied into output `output`.
void add_constant_output(const PlanContext& ctx, OpPlan& plan, const Tensor& value, uint32_t output);

// Runs a copy on the host; `src` and `dst` are the tensors its refs name.
void copy_on_host(const StridedCopy& copy, const Tensor& src, Tensor& dst);
// The same bytes with another shape.
Tensor with_shape(const Tensor& t, Shape shape);

// A handler for an op that is a CopyLayout: plan launches one copy kernel per copy, evaluate_on_host runs
// the copies when every input they read is known (and the outputs are not too large).
OpHandler copy_layout_handler(std::function<CopyLayout(const PlanContext&)> layout);

// The number of outputs the node declares (Split, Dropout's mask); fails when the node lists none.
size_t declared_output_count(const PlanContext& ctx);
bool output_requested(const PlanContext& ctx, size_t i);

void register_shape_ops(OpRegistry& registry);   // data_movement.cpp
void register_copy_ops(OpRegistry& registry);    // data_movement_copy.cpp
void register_gather_ops(OpRegistry& registry);  // data_movement_gather.cpp

}  // namespace wgi::ops::data_movement
