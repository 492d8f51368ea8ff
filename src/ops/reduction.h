// The reduction planner shared by the Reduce* / ArgMax / ArgMin ops (normalization.cpp) and the global pools
// (pooling.cpp): one kernel, kernels/normalization/reduce.wgsl, for any set of reduced axes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ops/op.h"

namespace wgi::ops {

enum class ReduceKind { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp, ArgMax, ArgMin };

struct ReductionSpec {
  ReduceKind kind = ReduceKind::Sum;
  std::vector<bool> reduced;  // per axis of input 0; none reduced = every output is one element's value
  bool keepdims = true;
  bool select_last_index = false;  // ArgMax / ArgMin ties
};

// Output description of the reduction of `input` (int64 for ArgMax / ArgMin, else the input's type).
TensorDesc reduction_output(const TensorDesc& input, const ReductionSpec& spec);

// Plans the reduction of input 0. Fails clearly for types the kernel does not run.
OpPlan plan_reduction(const PlanContext& ctx, const ReductionSpec& spec);

// The reduction computed on the host (float64 for float32 input, int64 for integers), for constant folding.
Tensor reduce_on_host(const Tensor& input, const ReductionSpec& spec);

// One Softmax / LogSoftmax launch (normalization/softmax.wgsl) over `rows` rows of `length` elements whose
// consecutive elements are `inner` apart: Softmax's own plan and the unfused path of Attention
// (attention.cpp).
KernelLaunch make_softmax_launch(const PlanContext& ctx, int64_t rows, int64_t length, int64_t inner,
                                 bool log, TensorRef in, TensorRef out);

// The largest power of two at most `desired` that the device allows as a 1-D workgroup size.
uint32_t pow2_workgroup_size(uint32_t desired, const gpu::Limits& limits);

}  // namespace wgi::ops
