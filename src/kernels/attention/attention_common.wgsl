// Shared by the attention kernels (attention.wgsl, attention_tiled.wgsl): the parameters and the decoding of
// an output matrix's batch index into each operand's element offset.
#include "common/dispatch_grid.wgsl"

struct Params {
  rows: u32,  // batch * Tq
  tq: u32,
  tk: u32,
  d: u32,
  dv: u32,
  has_mask: u32,
  mask_row_stride: u32,
  mask_col_stride: u32,
  scale: f32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
  batch_dims: vec4<u32>,
  q_strides: vec4<u32>,
  k_strides: vec4<u32>,
  v_strides: vec4<u32>,
  mask_strides: vec4<u32>,
}

struct AttentionBases {
  q: u32,
  k: u32,
  v: u32,
  mask: u32,
}

// Element offsets of Q's, K's, V's and the mask's matrices for output matrix `batch` (batch dims decoded from
// the output's, each operand with its own strides, 0 where it broadcasts).
fn attention_bases(batch: u32) -> AttentionBases {
  var rest = batch;
  var b = AttentionBases(0u, 0u, 0u, 0u);
  for (var dim = 3; dim >= 0; dim--) {
    let extent = params.batch_dims[dim];
    let index = rest % extent;
    rest = rest / extent;
    b.q += index * params.q_strides[dim];
    b.k += index * params.k_strides[dim];
    b.v += index * params.v_strides[dim];
    b.mask += index * params.mask_strides[dim];
  }
  return b;
}
