// TopK planning without a GPU (src/ops/topk.cpp): K up to 16 selects (one launch for a row of one chunk, two
// with the chunks' merge, whatever the row's length), larger K sorts (the bitonic network's launches), on a
// model of the H200 and of a compatibility device (smaller workgroups, so smaller chunks).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/registry.h"
#include "support/planner_devices.h"

namespace wgi {
namespace {

ops::OpPlan plan_topk(const Shape& shape, int64_t k, const gpu::Capabilities& caps) {
  ops::NodeInfo node{"topk_under_test", "TopK", "", 11, {}, {"x", "k"}, {"values", "indices"}};
  const Tensor k_value = Tensor::from_vector<int64_t>({1}, {k});
  ops::PlanContext ctx{node,
                       {ops::TensorDesc{DType::Float32, shape}, ops::TensorDesc{DType::Int64, {1}}},
                       {nullptr, &k_value},
                       caps};
  const ops::OpRegistry::Entry* entry = ops::builtin_registry().find("", "TopK", 11);
  EXPECT_NE(entry, nullptr);
  return entry->handler.plan(ctx);
}

std::vector<std::string> labels(const ops::OpPlan& p) {
  std::vector<std::string> out;
  for (const auto& l : p.launches) out.push_back(l.program.label);
  return out;
}

TEST(TopkPlan, SmallKSelectsInOneOrTwoLaunchesWhateverTheRowLength) {
  const gpu::Capabilities h200 = test::model_device(49152, 1024);
  using Labels = std::vector<std::string>;
  EXPECT_EQ(labels(plan_topk({2, 1000}, 5, h200)), Labels{"topk_select_f32_largest"});
  EXPECT_EQ(labels(plan_topk({1, 1, 51289}, 1, h200)),
            (Labels{"topk_select_f32_largest", "topk_merge_f32_largest"}));
  EXPECT_EQ(labels(plan_topk({8, 50000}, 16, h200)),
            (Labels{"topk_select_f32_largest", "topk_merge_f32_largest"}));
  // 51289 positions in chunks of 4 x 256: 51 SELECT workgroups per row.
  const ops::OpPlan head = plan_topk({3, 51289}, 8, h200);
  EXPECT_EQ(head.launches[0].groups.x * head.launches[0].groups.y * head.launches[0].groups.z, 3u * 51);
  EXPECT_EQ(head.launches[1].groups.x, 3u);
}

TEST(TopkPlan, LargerKSorts) {
  const ops::OpPlan p = plan_topk({8, 50000}, 17, test::model_device(49152, 1024));
  ASSERT_EQ(p.launches.size(), 138u);  // INIT, 16 * 17 / 2 steps for 65536 slots, WRITE
  EXPECT_EQ(p.launches.front().program.label, "topk_INIT_f32_largest");
  EXPECT_EQ(p.launches.back().program.label, "topk_WRITE_f32_largest");
}

TEST(TopkPlan, CompatibilityDevicesSelectInSmallerChunks) {
  // 128 invocations: chunks of 512, so a 1000-wide row needs the merge there and not on the H200.
  const ops::OpPlan p = plan_topk({2, 1000}, 5, test::model_device(16384, 128));
  ASSERT_EQ(p.launches.size(), 2u);
  EXPECT_EQ(p.launches[1].program.label, "topk_merge_f32_largest");
}

}  // namespace
}  // namespace wgi
