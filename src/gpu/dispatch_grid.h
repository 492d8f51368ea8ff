// Dispatch grids that respect the device's limits.
//
// WebGPU caps each grid dimension at maxComputeWorkgroupsPerDimension (65535 by default). Work that needs
// more workgroups is folded into 2-D or 3-D; the shader recovers the linear workgroup index with the
// functions in src/kernels/common/dispatch_grid.wgsl and skips indices past the real count.
#pragma once

#include <cstdint>

#include "gpu/device.h"

namespace wgi::gpu {

struct WorkgroupCount {
  uint32_t x = 1;
  uint32_t y = 1;
  uint32_t z = 1;
  uint64_t total() const { return uint64_t{x} * y * z; }
};

// Folds `workgroups` (>= 1) into at most three dimensions of at most `max_per_dimension` each, wasting as
// few workgroups as possible. Throws wgi::Error if even a 3-D grid cannot hold them or the linear index
// would not fit in u32.
WorkgroupCount fold_workgroups(uint64_t workgroups, uint32_t max_per_dimension);

struct DispatchGrid {
  uint32_t workgroup_size = 1;  // invocations per workgroup (1-D), pass as the WG_SIZE override constant
  WorkgroupCount groups;
  uint64_t invocations = 0;  // the real amount of work; indices at or past it must be skipped
};

// One invocation per element of 1-D work. The workgroup size is the desired one clamped to the device's
// maxComputeInvocationsPerWorkgroup and maxComputeWorkgroupSizeX.
DispatchGrid compute_dispatch_grid(uint64_t invocations, uint32_t desired_workgroup_size,
                                   const Limits& limits);

}  // namespace wgi::gpu
