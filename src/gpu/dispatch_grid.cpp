#include "gpu/dispatch_grid.h"

#include <algorithm>
#include <string>

#include "core/integer_math.h"
#include "wgi/error.h"

namespace wgi::gpu {

WorkgroupCount fold_workgroups(uint64_t workgroups, uint32_t max_per_dimension) {
  if (max_per_dimension == 0) throw Error("fold_workgroups: maxComputeWorkgroupsPerDimension is 0");
  workgroups = std::max<uint64_t>(workgroups, 1);
  const uint64_t max = max_per_dimension;
  if (workgroups > (uint64_t{1} << 32)) {
    throw Error("dispatch of " + std::to_string(workgroups) +
                " workgroups: the linear workgroup index would not fit in u32; split the work");
  }
  if (workgroups > max * max * max) {
    throw Error("dispatch of " + std::to_string(workgroups) + " workgroups exceeds the device's limit of " +
                std::to_string(max) + "^3 (maxComputeWorkgroupsPerDimension = " + std::to_string(max) + ")");
  }
  WorkgroupCount count;
  if (workgroups <= max) {
    count.x = static_cast<uint32_t>(workgroups);
    return count;
  }
  // Spread evenly: the fewest rows (then layers) that hold everything, and rows no longer than needed.
  uint64_t z = ceil_div(workgroups, max * max);
  uint64_t per_layer = ceil_div(workgroups, z);
  uint64_t y = ceil_div(per_layer, max);
  uint64_t x = ceil_div(per_layer, y);
  count.x = static_cast<uint32_t>(x);
  count.y = static_cast<uint32_t>(y);
  count.z = static_cast<uint32_t>(z);
  return count;
}

DispatchGrid compute_dispatch_grid(uint64_t invocations, uint32_t desired_workgroup_size,
                                   const Limits& limits) {
  uint32_t size = std::max<uint32_t>(1, desired_workgroup_size);
  size = std::min({size, limits.max_compute_invocations_per_workgroup, limits.max_compute_workgroup_size_x});
  size = std::max<uint32_t>(1, size);
  DispatchGrid grid;
  grid.workgroup_size = size;
  grid.invocations = invocations;
  grid.groups = fold_workgroups(ceil_div(std::max<uint64_t>(invocations, 1), size),
                                limits.max_compute_workgroups_per_dimension);
  if (grid.groups.total() * size > (uint64_t{1} << 32)) {
    throw Error("dispatch of " + std::to_string(invocations) +
                " invocations: the linear invocation index would not fit in u32; split the work");
  }
  return grid;
}

}  // namespace wgi::gpu
