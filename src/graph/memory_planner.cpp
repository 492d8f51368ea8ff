#include "graph/memory_planner.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "wgi/error.h"

namespace wgi::graph {

uint64_t MemoryPlan::total_bytes() const {
  return std::accumulate(buffer_sizes.begin(), buffer_sizes.end(), uint64_t{0});
}

MemoryPlan plan_memory(std::span<const BufferRequest> requests, uint64_t max_buffer_bytes) {
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].size > requests[b].size; });
  MemoryPlan plan;
  plan.buffer_of.resize(requests.size());
  std::vector<std::vector<size_t>> tenants;
  for (size_t r : order) {
    const BufferRequest& req = requests[r];
    if (req.size > max_buffer_bytes) {
      throw Error("activation " + std::to_string(r) + " needs " + std::to_string(req.size) +
                  " bytes, more than one GPU buffer may hold (maxBufferSize " +
                  std::to_string(max_buffer_bytes) + ")");
    }
    auto free_then = [&](size_t b) {
      return std::none_of(tenants[b].begin(), tenants[b].end(), [&](size_t other) {
        return !(requests[other].last_use < req.first_use || req.last_use < requests[other].first_use);
      });
    };
    size_t b = 0;
    while (b < tenants.size() && !free_then(b)) ++b;
    if (b == tenants.size()) {
      tenants.emplace_back();
      plan.buffer_sizes.push_back(std::max<uint64_t>(req.size, 4));
    }
    tenants[b].push_back(r);
    plan.buffer_of[r] = static_cast<uint32_t>(b);
  }
  return plan;
}

}  // namespace wgi::graph
