// The activation memory planner: tensors alive at the same time never share a buffer; dead ones do.
#include <gtest/gtest.h>

#include <random>

#include "graph/memory_planner.h"
#include "wgi/error.h"

namespace wgi::graph {
namespace {

void expect_no_conflicts(std::span<const BufferRequest> reqs, const MemoryPlan& plan) {
  ASSERT_EQ(plan.buffer_of.size(), reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_LE(reqs[i].size, plan.buffer_sizes.at(plan.buffer_of[i])) << "request " << i << " does not fit";
    for (size_t j = i + 1; j < reqs.size(); ++j) {
      bool time_overlap = !(reqs[i].last_use < reqs[j].first_use || reqs[j].last_use < reqs[i].first_use);
      EXPECT_FALSE(time_overlap && plan.buffer_of[i] == plan.buffer_of[j])
          << "requests " << i << " and " << j;
    }
  }
}

TEST(MemoryPlanner, ReusesBuffersOfDeadTensors) {
  // A chain: each tensor is read only by the next step, so two buffers suffice.
  std::vector<BufferRequest> chain;
  for (int i = 0; i < 10; ++i) chain.push_back({1000u + static_cast<uint64_t>(i), i, i + 1});
  MemoryPlan plan = plan_memory(chain, 1 << 30);
  expect_no_conflicts(chain, plan);
  EXPECT_EQ(plan.buffer_sizes.size(), 2u);
  EXPECT_LE(plan.total_bytes(), 2u * 1009);
}

TEST(MemoryPlanner, RandomLifetimesNeverCollide) {
  std::mt19937 rng(7);
  std::vector<BufferRequest> reqs;
  for (int i = 0; i < 300; ++i) {
    int32_t first = static_cast<int32_t>(rng() % 100);
    reqs.push_back({1 + rng() % 100000, first, first + static_cast<int32_t>(rng() % 20)});
  }
  MemoryPlan plan = plan_memory(reqs, 1 << 20);
  expect_no_conflicts(reqs, plan);
  uint64_t sum = 0;
  for (const auto& r : reqs) sum += r.size;
  EXPECT_LT(plan.total_bytes(), sum / 2);  // sharing happened
}

TEST(MemoryPlanner, RefusesTensorsLargerThanABuffer) {
  try {
    plan_memory(std::vector<BufferRequest>{{2000, 0, 1}}, 1024);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2000"), std::string::npos);
  }
}

}  // namespace
}  // namespace wgi::graph
