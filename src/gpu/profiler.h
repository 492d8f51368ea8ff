// Per-dispatch GPU time from timestamp queries (feature timestamp-query). Each timed dispatch gets its own
// compute pass whose beginning and end write a timestamp; read() resolves them into milliseconds.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/handles.h"

namespace wgi::gpu {

class Device;

class TimestampProfiler {
 public:
  // Throws wgi::Error if the device was not granted timestamp-query.
  TimestampProfiler(Device& device, uint32_t max_dispatches);
  ~TimestampProfiler();
  TimestampProfiler(const TimestampProfiler&) = delete;
  TimestampProfiler& operator=(const TimestampProfiler&) = delete;

  uint32_t capacity() const { return capacity_; }
  WGPUQuerySetImpl* query_set() const { return query_set_; }
  // GPU milliseconds of the first `count` timed dispatches of the last submission (waits for the GPU).
  std::vector<double> read(uint32_t count);

 private:
  Device& device_;
  uint32_t capacity_;
  WGPUQuerySetImpl* query_set_ = nullptr;
  Buffer resolve_;
};

}  // namespace wgi::gpu
