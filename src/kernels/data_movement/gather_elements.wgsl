// GatherElements: output[c] = data[c with c[axis] replaced by indices[c]], for every multi-index c of the
// indices' (= the output's) shape, up to 8-D. Negative indices count from the end; one still out of range
// is recorded in the run status and yields zero bits (see gather.wgsl).
#include "common/dispatch_grid.wgsl"
#include "common/run_status.wgsl"

struct Params {
  count: u32,  // output elements
  rank: u32,
  axis: u32,
  axis_dim: u32,
  shape: array<vec4u, 2>,         // of indices and output
  data_strides: array<vec4u, 2>,  // row-major strides of data
  status_tag: u32,
}

@group(0) @binding(0) var<storage, read> data: array<u32>;
@group(0) @binding(1) var<storage, read> indices: array<i32>;
@group(0) @binding(2) var<storage, read_write> destination: array<u32>;
@group(0) @binding(4) var<uniform> params: Params;

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  let given = indices[i];
  var index = given;
  if (index < 0) {
    index += i32(params.axis_dim);
  }
  if (index < 0 || u32(index) >= params.axis_dim) {
    report_index_out_of_range(params.status_tag, 1u, i, given, params.axis_dim);
    destination[i] = 0u;
    return;
  }
  var rest = i;
  var s = 0u;
  for (var k = i32(params.rank) - 1; k >= 0; k--) {
    let n = params.shape[k / 4][k % 4];
    var c = rest % n;
    rest = rest / n;
    if (u32(k) == params.axis) {
      c = u32(index);
    }
    s += c * params.data_strides[k / 4][k % 4];
  }
  destination[i] = data[s];
}
