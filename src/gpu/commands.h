// Recording and submitting GPU work.
//
// A BoundDispatch is a pipeline with its bind group, uniform block and grid: built once when a model is
// planned, then encoded on every run without creating anything. A CommandBatch encodes many dispatches into
// one compute pass and submits them together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/dispatch_grid.h"
#include "gpu/handles.h"

namespace wgi::gpu {

class ComputePipeline;
class Device;
class TimestampProfiler;

class BoundDispatch {
 public:
  BoundDispatch() = default;
  ~BoundDispatch();
  BoundDispatch(BoundDispatch&& other) noexcept;
  BoundDispatch& operator=(BoundDispatch&& other) noexcept;
  BoundDispatch(const BoundDispatch&) = delete;
  BoundDispatch& operator=(const BoundDispatch&) = delete;

  const ComputePipeline* pipeline() const { return pipeline_; }
  WGPUBindGroupImpl* bind_group() const { return bind_group_; }
  const WorkgroupCount& groups() const { return groups_; }
  // Rewrites the uniform block (same size) without rebuilding the bind group.
  void update_uniform(Device& device, std::span<const std::byte> bytes);
  // Changes the grid (within the limits bind_dispatch checks: the caller checks them).
  void update_groups(WorkgroupCount groups) { groups_ = groups; }

 private:
  friend BoundDispatch bind_dispatch(Device&, const ComputePipeline&, std::span<const BufferSlice>,
                                     std::span<const std::byte>, WorkgroupCount);
  const ComputePipeline* pipeline_ = nullptr;
  WGPUBindGroupImpl* bind_group_ = nullptr;
  std::optional<Buffer> uniform_;
  WorkgroupCount groups_;
};

// Binds `storage` to the pipeline's storage bindings in order and `uniform` (if the pipeline declares one) to
// its uniform binding. Checks counts, alignment and binding sizes against the device limits and throws
// wgi::Error naming the kernel, binding and limit.
BoundDispatch bind_dispatch(Device& device, const ComputePipeline& pipeline,
                            std::span<const BufferSlice> storage, std::span<const std::byte> uniform,
                            WorkgroupCount groups);

class CommandBatch {
 public:
  explicit CommandBatch(Device& device);
  ~CommandBatch();
  CommandBatch(const CommandBatch&) = delete;
  CommandBatch& operator=(const CommandBatch&) = delete;

  void dispatch(const BoundDispatch& dispatch);
  // The dispatch in a compute pass of its own whose start and end write timestamps `2*slot` and `2*slot+1`.
  void dispatch_timed(const BoundDispatch& dispatch, TimestampProfiler& profiler, uint32_t slot);
  void copy(const BufferSlice& source, const BufferSlice& destination);
  // Finishes the encoder and submits; the batch can then record again. Throws on WebGPU errors.
  void submit();

 private:
  void begin_pass();
  void end_pass();
  Device& device_;
  WGPUCommandEncoderImpl* encoder_ = nullptr;
  WGPUComputePassEncoderImpl* pass_ = nullptr;
};

}  // namespace wgi::gpu
