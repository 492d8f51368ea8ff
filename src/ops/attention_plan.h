// The planning of wgi's Attention op (attention.cpp) in its steps, exposed for the unit tests:
//   parse     the node's attributes (internal_ops.h) and inputs as Q, K and V views, the scale
//   validate  shapes, types, the output's layout and the mask's broadcast: an AttentionProblem
//   choose    which plan and kernel run it and which operands are copied first: an AttentionChoice, a pure
//             function of the problem and the device's limits
//   build     the launches (attention.cpp)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "ops/op.h"

namespace wgi::ops::attention {

// An operand as the kernels read it: logical `shape` ([batch..., rows, cols]), element `strides` per dim
// and the element `offset` of its first element in the bound tensor.
struct View {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

struct AttentionProblem {
  std::array<View, 3> views;  // Q [.., Tq, D], K [.., Tk, D] (or K^T [.., D, Tk]), V [.., Tk, Dv]
  bool k_transposed = false;
  float scale = 1.0f;
  int64_t tq = 0, tk = 0, d = 0, dv = 0;
  Shape out_batch;    // the output's batch dims, the broadcast of Q's, K's and V's
  Shape logical_out;  // [batch..., Tq, Dv]
  View out_view;      // where the logical output lies in the output tensor (transpose_output, output_perm)
  Shape out_shape;    // the output tensor's shape
  bool has_mask = false;
  std::vector<int64_t> mask_strides;  // per output batch dim, 0 where the mask broadcasts
  int64_t mask_row = 0, mask_col = 0;
  std::string forced_kernel;  // wgi.kernel: "", "rows", "tiled", "gemm" or "matrix"
  int64_t batch() const { return element_count(out_batch); }
};

// Parses and validates the node; throws via ctx.fail.
AttentionProblem attention_problem(const PlanContext& ctx);

enum class AttentionKernel {
  Rows,         // attention/attention.wgsl: one workgroup per query row
  Tiled,        // attention/attention_tiled.wgsl: one query row per invocation, K and V staged
  ThreeLaunch,  // GEMM (scores), Softmax, GEMM (P V): V's last dim beyond the fused kernels'
  MatrixF16,    // attention/attention_matrix_f16.wgsl: 16 query rows per subgroup on subgroup matrices (f16)
};

struct AttentionChoice {
  AttentionKernel kernel = AttentionKernel::Rows;
  int64_t tiled_queries = 0;          // Tiled: query rows per workgroup
  int64_t matrix_subgroups = 0;       // MatrixF16: subgroups (of 16 query rows each) per workgroup
  int64_t matrix_keys_per_chunk = 0;  // MatrixF16: keys staged at a time (32 or 64)
  bool matrix_vec4 = false;           // MatrixF16: Q, K and V read 16 bytes at a time
  int64_t workgroups = 0;             // Rows, Tiled and MatrixF16: the fused kernel's workgroups
  // Rows: workgroups per query row, each over keys_per_split of the keys (the last over the rest), whose
  // partial softmaxes attention_combine.wgsl adds up; 1: the row's workgroup takes every key, one launch.
  int64_t key_splits = 1;
  int64_t keys_per_split = 0;
  bool k_transposed = false;  // K as the kernels read it (a strided K is copied as K^T for Rows)
  std::array<bool, 3> copied = {false, false, false};  // operands copied contiguous into scratch first
  bool output_copied = false;  // the output written to scratch, then copied into place
  bool columns_out = false;    // ThreeLaunch: the product written by columns, out^T = V^T P^T
};

// From `caps`: the limits, whether the device runs the fast GEMM kernels, which read strided views
// (gemm_views_supported), and whether the session computes in f16 on subgroup matrices (f16_compute).
// Throws wgi::Error (without the node's name) when the forced kernel cannot run the problem.
AttentionChoice choose_attention_plan(const AttentionProblem& problem, const gpu::Capabilities& caps);

// Subgroups per workgroup of the f16 matrix kernel for `tq` query rows (16 per subgroup, 1 to 4): the count
// with the fewest workgroups x (subgroups + 2), the 2 standing for a workgroup's staging of the keys and
// values; DaViT's 144-query windows take 3 (no padded rows), SigLIP's 197 queries 4.
int64_t matrix_attention_subgroups(int64_t tq);

}  // namespace wgi::ops::attention
