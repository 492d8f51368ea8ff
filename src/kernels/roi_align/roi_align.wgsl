// RoiAlign of X [N, C, H, W] over rois [R, 4] (x1, y1, x2, y2 in input coordinates times spatial_scale) of
// images batch_indices [R]: Y [R, C, out_h, out_w], as the ONNX reference (and onnxruntime) define it. One
// invocation per output element samples its bin on a grid_h x grid_w grid (sampling_ratio, or
// ceil(roi size / bins) when it is 0) and bilinearly interpolates each sample; avg averages the samples, max
// takes the largest of the samples' largest weighted corner (the reference's max mode, not a max of
// interpolated values). A batch index outside [0, N) is recorded in the run status and gives 0.
#include "common/dispatch_grid.wgsl"
#include "common/run_status.wgsl"

#interface

override WG_SIZE: u32 = 256;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) {
    return;
  }
  let pw = i % params.out_w;
  let ph = (i / params.out_w) % params.out_h;
  let c = (i / (params.out_w * params.out_h)) % params.channels;
  let r = i / (params.out_w * params.out_h * params.channels);
  let b = batch_indices[r];
  if (b < 0 || u32(b) >= params.batch) {
    report_index_out_of_range(params.status_tag, 2u, r, b, params.batch);
    y[i] = 0.0;
    return;
  }
  let start_w = rois[4u * r] * params.spatial_scale - params.offset;
  let start_h = rois[4u * r + 1u] * params.spatial_scale - params.offset;
  var roi_w = rois[4u * r + 2u] * params.spatial_scale - params.offset - start_w;
  var roi_h = rois[4u * r + 3u] * params.spatial_scale - params.offset - start_h;
  if (params.offset == 0.0) {  // output_half_pixel forces malformed rois to 1 x 1
    roi_w = max(roi_w, 1.0);
    roi_h = max(roi_h, 1.0);
  }
  let bin_h = roi_h / f32(params.out_h);
  let bin_w = roi_w / f32(params.out_w);
  var grid_h = params.sampling_ratio;
  var grid_w = params.sampling_ratio;
  if (params.sampling_ratio == 0u) {
    grid_h = u32(max(ceil(roi_h / f32(params.out_h)), 0.0));
    grid_w = u32(max(ceil(roi_w / f32(params.out_w)), 0.0));
  }
  let fh = f32(params.height);
  let fw = f32(params.width);
  let plane = (u32(b) * params.channels + c) * params.height * params.width;
  var sum = 0.0;
  var largest = 0.0;
  var first_sample = true;
  for (var iy = 0u; iy < grid_h; iy++) {
    let yy = start_h + f32(ph) * bin_h + (f32(iy) + 0.5) * bin_h / f32(grid_h);
    for (var ix = 0u; ix < grid_w; ix++) {
      let xx = start_w + f32(pw) * bin_w + (f32(ix) + 0.5) * bin_w / f32(grid_w);
      var value = 0.0;  // a sample outside [-1, size] contributes 0, to the max as well
      if (!(yy < -1.0 || yy > fh || xx < -1.0 || xx > fw)) {
        var sy = max(yy, 0.0);
        var sx = max(xx, 0.0);
        var y_low = u32(sy);
        var x_low = u32(sx);
        var y_high = y_low + 1u;
        var x_high = x_low + 1u;
        if (y_low >= params.height - 1u) {
          y_low = params.height - 1u;
          y_high = y_low;
          sy = f32(y_low);
        }
        if (x_low >= params.width - 1u) {
          x_low = params.width - 1u;
          x_high = x_low;
          sx = f32(x_low);
        }
        let ly = sy - f32(y_low);
        let lx = sx - f32(x_low);
        let hy = 1.0 - ly;
        let hx = 1.0 - lx;
        let v1 = hy * hx * x[plane + y_low * params.width + x_low];
        let v2 = hy * lx * x[plane + y_low * params.width + x_high];
        let v3 = ly * hx * x[plane + y_high * params.width + x_low];
        let v4 = ly * lx * x[plane + y_high * params.width + x_high];
        if (params.max_mode != 0u) {
          value = max(max(v1, v2), max(v3, v4));
        } else {
          value = v1 + v2 + v3 + v4;
        }
      }
      if (first_sample || value > largest) {
        largest = value;
      }
      first_sample = false;
      sum += value;
    }
  }
  if (params.max_mode != 0u) {
    y[i] = largest;
  } else {
    y[i] = sum / f32(max(grid_h * grid_w, 1u));
  }
}
