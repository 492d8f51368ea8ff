// Shares GPU buffers between activations whose lifetimes do not overlap. Pure arithmetic: no GPU,
// unit-tested.
//
// Why whole buffers rather than offsets in one big arena: WebGPU tracks usage per buffer, not per range, and
// a dispatch may not use one buffer both as read-only storage and as writable storage. With an arena, every
// kernel reading one activation and writing another would touch the same buffer both ways. Separate buffers
// keep inputs `read` (which lets drivers use their read-only load paths) and still reuse memory: a buffer is
// handed to the next activation once the previous one is dead.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace wgi::graph {

struct BufferRequest {
  uint64_t size = 0;
  int32_t first_use = 0;  // step that writes it
  int32_t last_use = 0;   // last step that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<uint32_t> buffer_of;     // per request: the shared buffer it lives in
  std::vector<uint64_t> buffer_sizes;  // per shared buffer
  uint64_t total_bytes() const;
};

// Greedy by size: requests from largest to smallest, each into the first existing buffer none of whose
// tenants is alive at the same time (every existing buffer is at least as large, by the order), else a new
// buffer. Throws wgi::Error if a request exceeds `max_buffer_bytes` (naming its index and size).
MemoryPlan plan_memory(std::span<const BufferRequest> requests, uint64_t max_buffer_bytes);

}  // namespace wgi::graph
