#include "gpu/commands.h"

#include <webgpu/webgpu.h>

#include <utility>

#include "gpu/device.h"
#include "gpu/pipeline_cache.h"
#include "gpu/profiler.h"
#include "gpu/webgpu_util.h"
#include "wgi/error.h"

namespace wgi::gpu {

BoundDispatch::~BoundDispatch() {
  if (bind_group_) wgpuBindGroupRelease(bind_group_);
}

BoundDispatch::BoundDispatch(BoundDispatch&& other) noexcept
    : pipeline_(other.pipeline_),
      bind_group_(std::exchange(other.bind_group_, nullptr)),
      uniform_(std::move(other.uniform_)),
      groups_(other.groups_) {}

BoundDispatch& BoundDispatch::operator=(BoundDispatch&& other) noexcept {
  if (this != &other) {
    if (bind_group_) wgpuBindGroupRelease(bind_group_);
    pipeline_ = other.pipeline_;
    bind_group_ = std::exchange(other.bind_group_, nullptr);
    uniform_ = std::move(other.uniform_);
    groups_ = other.groups_;
  }
  return *this;
}

void BoundDispatch::update_uniform(Device& device, std::span<const std::byte> bytes) {
  if (!uniform_ || bytes.size() > uniform_->size()) {
    throw Error("update_uniform: the new block does not fit the dispatch's uniform buffer");
  }
  device.upload(*uniform_, 0, bytes);
}

BoundDispatch bind_dispatch(Device& device, const ComputePipeline& pipeline,
                            std::span<const BufferSlice> storage, std::span<const std::byte> uniform,
                            WorkgroupCount groups) {
  const auto& kinds = pipeline.bindings();
  const auto& limits = device.limits();
  size_t storage_count = 0;
  bool has_uniform = false;
  for (BindingKind k : kinds) {
    if (k == BindingKind::Uniform) {
      has_uniform = true;
    } else {
      ++storage_count;
    }
  }
  const std::string& name = pipeline.label();
  if (storage.size() != storage_count) {
    throw Error("kernel '" + name + "' takes " + std::to_string(storage_count) + " storage bindings, got " +
                std::to_string(storage.size()));
  }
  if (has_uniform && uniform.empty()) throw Error("kernel '" + name + "' needs a uniform block");
  if (storage_count > limits.max_storage_buffers_per_shader_stage) {
    throw Error("kernel '" + name + "' binds " + std::to_string(storage_count) +
                " storage buffers; the device allows maxStorageBuffersPerShaderStage = " +
                std::to_string(limits.max_storage_buffers_per_shader_stage));
  }
  for (uint32_t d : {groups.x, groups.y, groups.z}) {
    if (d == 0 || d > limits.max_compute_workgroups_per_dimension) {
      throw Error("kernel '" + name + "': grid dimension " + std::to_string(d) +
                  " outside 1..maxComputeWorkgroupsPerDimension (" +
                  std::to_string(limits.max_compute_workgroups_per_dimension) + ")");
    }
  }

  BoundDispatch out;
  out.pipeline_ = &pipeline;
  out.groups_ = groups;
  if (has_uniform) {
    out.uniform_ = device.create_buffer(uniform.size(), name + ".uniform", BufferUsage::Uniform);
    device.upload(*out.uniform_, 0, uniform);
  }

  std::vector<WGPUBindGroupEntry> entries;
  size_t next_storage = 0;
  for (size_t i = 0; i < kinds.size(); ++i) {
    WGPUBindGroupEntry e = {};
    e.binding = static_cast<uint32_t>(i);
    if (kinds[i] == BindingKind::Uniform) {
      e.buffer = out.uniform_->handle();
      e.offset = 0;
      e.size = out.uniform_->size();
    } else {
      const BufferSlice& s = storage[next_storage++];
      if (!s.buffer || !*s.buffer) {
        throw Error("kernel '" + name + "': storage binding " + std::to_string(i) + " has no buffer");
      }
      uint64_t size = s.resolved_size();
      if (s.offset % limits.min_storage_buffer_offset_alignment != 0) {
        throw Error("kernel '" + name + "': binding " + std::to_string(i) + " offset " +
                    std::to_string(s.offset) + " is not a multiple of minStorageBufferOffsetAlignment (" +
                    std::to_string(limits.min_storage_buffer_offset_alignment) + ")");
      }
      if (size > limits.max_storage_buffer_binding_size) {
        throw Error("kernel '" + name + "': binding " + std::to_string(i) + " of " + std::to_string(size) +
                    " bytes exceeds maxStorageBufferBindingSize (" +
                    std::to_string(limits.max_storage_buffer_binding_size) + ")");
      }
      if (size == 0 || size % 4 != 0 || s.offset + size > s.buffer->size()) {
        throw Error("kernel '" + name + "': binding " + std::to_string(i) + " range [" +
                    std::to_string(s.offset) + ", +" + std::to_string(size) +
                    ") is empty, unaligned or past the buffer's " + std::to_string(s.buffer->size()) +
                    " bytes");
      }
      e.buffer = s.buffer->handle();
      e.offset = s.offset;
      e.size = size;
    }
    entries.push_back(e);
  }
  WGPUBindGroupDescriptor desc = {};
  desc.label = to_string_view(name);
  desc.layout = pipeline.bind_group_layout();
  desc.entryCount = entries.size();
  desc.entries = entries.data();
  out.bind_group_ = wgpuDeviceCreateBindGroup(device.handle(), &desc);
  device.check_errors();
  return out;
}

CommandBatch::CommandBatch(Device& device) : device_(device) {}

CommandBatch::~CommandBatch() {
  if (pass_) {
    wgpuComputePassEncoderEnd(pass_);
    wgpuComputePassEncoderRelease(pass_);
  }
  if (encoder_) wgpuCommandEncoderRelease(encoder_);
}

void CommandBatch::begin_pass() {
  if (!encoder_) encoder_ = wgpuDeviceCreateCommandEncoder(device_.handle(), nullptr);
  if (!pass_) pass_ = wgpuCommandEncoderBeginComputePass(encoder_, nullptr);
}

void CommandBatch::end_pass() {
  if (pass_) {
    wgpuComputePassEncoderEnd(pass_);
    wgpuComputePassEncoderRelease(pass_);
    pass_ = nullptr;
  }
}

void CommandBatch::dispatch(const BoundDispatch& d) {
  begin_pass();
  wgpuComputePassEncoderSetPipeline(pass_, d.pipeline()->handle());
  wgpuComputePassEncoderSetBindGroup(pass_, 0, d.bind_group(), 0, nullptr);
  wgpuComputePassEncoderDispatchWorkgroups(pass_, d.groups().x, d.groups().y, d.groups().z);
}

void CommandBatch::dispatch_timed(const BoundDispatch& d, TimestampProfiler& profiler, uint32_t slot) {
  if (slot >= profiler.capacity())
    throw Error("timestamp slot " + std::to_string(slot) + " past the profiler's capacity");
  end_pass();
  if (!encoder_) encoder_ = wgpuDeviceCreateCommandEncoder(device_.handle(), nullptr);
  WGPUPassTimestampWrites writes = {};
  writes.querySet = profiler.query_set();
  writes.beginningOfPassWriteIndex = 2 * slot;
  writes.endOfPassWriteIndex = 2 * slot + 1;
  WGPUComputePassDescriptor desc = {};
  desc.timestampWrites = &writes;
  WGPUComputePassEncoder pass = wgpuCommandEncoderBeginComputePass(encoder_, &desc);
  wgpuComputePassEncoderSetPipeline(pass, d.pipeline()->handle());
  wgpuComputePassEncoderSetBindGroup(pass, 0, d.bind_group(), 0, nullptr);
  wgpuComputePassEncoderDispatchWorkgroups(pass, d.groups().x, d.groups().y, d.groups().z);
  wgpuComputePassEncoderEnd(pass);
  wgpuComputePassEncoderRelease(pass);
}

void CommandBatch::copy(const BufferSlice& source, const BufferSlice& destination) {
  uint64_t size = source.resolved_size();
  if (size != destination.resolved_size() || size % 4 != 0 || source.offset % 4 != 0 ||
      destination.offset % 4 != 0) {
    throw Error("buffer copy needs equal sizes and 4-byte aligned offsets and sizes");
  }
  end_pass();
  if (!encoder_) encoder_ = wgpuDeviceCreateCommandEncoder(device_.handle(), nullptr);
  wgpuCommandEncoderCopyBufferToBuffer(encoder_, source.buffer->handle(), source.offset,
                                       destination.buffer->handle(), destination.offset, size);
}

void CommandBatch::submit() {
  end_pass();
  if (!encoder_) return;
  WGPUCommandBuffer commands = wgpuCommandEncoderFinish(encoder_, nullptr);
  wgpuCommandEncoderRelease(encoder_);
  encoder_ = nullptr;
  wgpuQueueSubmit(device_.queue(), 1, &commands);
  wgpuCommandBufferRelease(commands);
  device_.check_errors();
}

}  // namespace wgi::gpu
