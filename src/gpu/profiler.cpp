#include "gpu/profiler.h"

#include <webgpu/webgpu.h>

#include <cstring>

#include "gpu/device.h"
#include "wgi/error.h"

namespace wgi::gpu {

TimestampProfiler::TimestampProfiler(Device& device, uint32_t max_dispatches)
    : device_(device), capacity_(std::max<uint32_t>(1, max_dispatches)) {
  if (!device.features().timestamp_query) {
    throw Error("this adapter (" + device.adapter_info().device + ") has no timestamp-query feature");
  }
  WGPUQuerySetDescriptor desc = {};
  desc.type = WGPUQueryType_Timestamp;
  desc.count = 2 * capacity_;
  query_set_ = wgpuDeviceCreateQuerySet(device.handle(), &desc);
  resolve_ = device.create_buffer(uint64_t{16} * capacity_, "wgi.timestamps", BufferUsage::QueryResolve);
  device.check_errors();
}

TimestampProfiler::~TimestampProfiler() {
  if (query_set_) {
    wgpuQuerySetDestroy(query_set_);
    wgpuQuerySetRelease(query_set_);
  }
}

std::vector<double> TimestampProfiler::read(uint32_t count) {
  count = std::min(count, capacity_);
  if (count == 0) return {};
  WGPUCommandEncoder encoder = wgpuDeviceCreateCommandEncoder(device_.handle(), nullptr);
  wgpuCommandEncoderResolveQuerySet(encoder, query_set_, 0, 2 * count, resolve_.handle(), 0);
  WGPUCommandBuffer commands = wgpuCommandEncoderFinish(encoder, nullptr);
  wgpuQueueSubmit(device_.queue(), 1, &commands);
  wgpuCommandBufferRelease(commands);
  wgpuCommandEncoderRelease(encoder);
  std::vector<uint64_t> ticks(2 * count);
  device_.download(resolve_, 0, std::as_writable_bytes(std::span<uint64_t>(ticks)));
  std::vector<double> ms(count);
  for (uint32_t i = 0; i < count; ++i) {
    ms[i] =
        ticks[2 * i + 1] >= ticks[2 * i] ? static_cast<double>(ticks[2 * i + 1] - ticks[2 * i]) * 1e-6 : 0.0;
  }
  return ms;
}

}  // namespace wgi::gpu
