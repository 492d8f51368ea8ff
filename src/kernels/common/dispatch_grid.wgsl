// Recovers linear indices from grids that the host folded into 2-D or 3-D (gpu/dispatch_grid.h).
// Pass @builtin(workgroup_id) and @builtin(num_workgroups); indices at or past the real work count must be
// skipped by the caller, since folding can round the grid up.

fn linear_workgroup_index(workgroup_id: vec3<u32>, num_workgroups: vec3<u32>) -> u32 {
  return workgroup_id.x + num_workgroups.x * (workgroup_id.y + num_workgroups.y * workgroup_id.z);
}

fn linear_invocation_index(workgroup_id: vec3<u32>, num_workgroups: vec3<u32>, local_index: u32,
                           workgroup_size: u32) -> u32 {
  return linear_workgroup_index(workgroup_id, num_workgroups) * workgroup_size + local_index;
}
