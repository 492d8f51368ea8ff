// Shared by the attention kernels (attention.wgsl, attention_tiled.wgsl; their bindings and parameters are
// declared by build_fused_plan in src/ops/attention.cpp): the decoding of an output matrix's batch index into
// each operand's element offset.
//
// Every operand is a strided view: its [rows, cols] matrices start at offset + sum(batch index * batch
// stride) and their rows are row_stride elements apart (columns contiguous). Q's rows are its queries, K's
// its keys (with K_TRANSPOSED its head dims), V's its keys; the output's rows are its queries. Contiguous
// operands have row strides D, D (Tk when transposed), Dv, Dv and offset 0; views let the kernels read Q, K
// and V inside one packed projection [B, N, 3, heads, D] and write the output as [B, N, heads, Dv].
#include "common/dispatch_grid.wgsl"

struct AttentionBases {
  q: u32,
  k: u32,
  v: u32,
  mask: u32,
  out: u32,
}

// Element offsets of Q's, K's, V's, the mask's and the output's matrices for output matrix `batch` (batch
// dims decoded from the output's, each operand with its own strides, 0 where it broadcasts).
fn attention_bases(batch: u32) -> AttentionBases {
  var rest = batch;
  var b = AttentionBases(params.q_offset, params.k_offset, params.v_offset, 0u, 0u);
  for (var dim = 3; dim >= 0; dim--) {
    let extent = params.batch_dims[dim];
    let index = rest % extent;
    rest = rest / extent;
    b.q += index * params.q_strides[dim];
    b.k += index * params.k_strides[dim];
    b.v += index * params.v_strides[dim];
    b.mask += index * params.mask_strides[dim];
    b.out += index * params.out_strides[dim];
  }
  return b;
}
