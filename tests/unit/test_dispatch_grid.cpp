// Grid folding: every workgroup index must be reachable, none lost, within the per-dimension limit.
#include <gtest/gtest.h>

#include "gpu/dispatch_grid.h"
#include "wgi/error.h"

namespace wgi::gpu {
namespace {

Limits limits(uint32_t max_per_dim = 65535, uint32_t max_invocations = 256) {
  Limits l;
  l.max_compute_workgroups_per_dimension = max_per_dim;
  l.max_compute_invocations_per_workgroup = max_invocations;
  l.max_compute_workgroup_size_x = max_invocations;
  return l;
}

TEST(FoldWorkgroups, SmallGridsStayOneDimensional) {
  auto c = fold_workgroups(1000, 65535);
  EXPECT_EQ(c.x, 1000u);
  EXPECT_EQ(c.y, 1u);
  EXPECT_EQ(c.z, 1u);
  EXPECT_EQ(fold_workgroups(0, 65535).x, 1u);
  EXPECT_EQ(fold_workgroups(65535, 65535).y, 1u);
}

TEST(FoldWorkgroups, LargeGridsFoldInto2DAnd3D) {
  for (uint64_t n : {65536ull, 70000ull, 131071ull, 4294836225ull /* 65535^2 */}) {
    auto c = fold_workgroups(n, 65535);
    EXPECT_GE(c.total(), n) << n;
    EXPECT_LE(c.x, 65535u);
    EXPECT_LE(c.y, 65535u);
    EXPECT_EQ(c.z, 1u) << n;
    // No more than one partial row of waste.
    EXPECT_LT(c.total() - n, c.x) << n;
  }
  auto c = fold_workgroups(1000, 10);  // small limit forces 3-D
  EXPECT_GE(c.total(), 1000u);
  EXPECT_LE(c.x, 10u);
  EXPECT_LE(c.y, 10u);
  EXPECT_EQ(c.z, 10u);
}

TEST(FoldWorkgroups, RefusesWhatCannotBeAddressed) {
  EXPECT_THROW(fold_workgroups(1001, 10), Error);
  try {
    fold_workgroups(1001, 10);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("maxComputeWorkgroupsPerDimension"), std::string::npos);
  }
  EXPECT_THROW(fold_workgroups((1ull << 32) + 1, 65535), Error);
}

TEST(ComputeDispatchGrid, ClampsWorkgroupSizeToDeviceLimits) {
  auto g = compute_dispatch_grid(1000, 512, limits(65535, 128));
  EXPECT_EQ(g.workgroup_size, 128u);
  EXPECT_EQ(g.groups.x, 8u);  // ceil(1000 / 128)
  EXPECT_EQ(g.invocations, 1000u);
  EXPECT_EQ(compute_dispatch_grid(5, 0, limits()).workgroup_size, 1u);
}

TEST(ComputeDispatchGrid, FoldsPastTheDimensionLimit) {
  auto g = compute_dispatch_grid(70000ull * 64, 64, limits());
  EXPECT_EQ(g.workgroup_size, 64u);
  EXPECT_GT(g.groups.y, 1u);
  EXPECT_GE(g.groups.total() * 64, 70000ull * 64);
}

}  // namespace
}  // namespace wgi::gpu
