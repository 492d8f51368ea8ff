// Shared by the attention kernels (attention.wgsl, attention_tiled.wgsl, attention_matrix_f16.wgsl; their
// bindings and parameters are declared by build_fused_plan in src/ops/attention.cpp): the decoding of an
// output matrix's batch index into each operand's element offset, and of a block kernel's workgroup.
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

// The workgroup of a kernel that covers each output matrix's Tq query rows in blocks of `rows_per_block`
// (attention_tiled.wgsl, attention_matrix_f16.wgsl): its output matrix (batch index; params.rows / params.tq
// or more for a workgroup past the grid, which leaves) and its first query row.
fn query_block(wid: vec3<u32>, nwg: vec3<u32>, rows_per_block: u32) -> vec2<u32> {
  let blocks_per_matrix = (params.tq + rows_per_block - 1u) / rows_per_block;
  let block = linear_workgroup_index(wid, nwg);
  return vec2<u32>(block / blocks_per_matrix, (block % blocks_per_matrix) * rows_per_block);
}
