// The run status: how a kernel reports what ONNX makes an error but only the data shows (an index out of
// range computed at run time), instead of writing a silently wrong answer. One 32-byte storage buffer per
// session (src/kernels/common/run_status.wgsl), bound by the kernels that check (PlanContext::status_tag
// names the node), read back together with a run's outputs and turned into a wgi::Error naming the node, the
// input, the element and the value. Sticky: errors of runs whose outputs all stayed on the device are
// reported by the next run that downloads an output, or by a sync point (Session::synchronize).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "gpu/buffer.h"
#include "gpu/device.h"
#include "ops/op.h"

namespace wgi::runtime {

inline constexpr size_t kRunStatusWords = 8;
using RunStatusWords = std::array<uint32_t, kRunStatusWords>;

// The message for a non-zero status; `node_of(tag)` is the node that tag names (null if none).
std::string describe_run_status(const RunStatusWords& words,
                                const std::function<const ops::NodeInfo*(uint32_t)>& node_of);

class RunStatus {
 public:
  explicit RunStatus(gpu::Device& device);
  gpu::BufferSlice slice() const { return {&buffer_}; }
  // A submitted run bound the buffer: it may hold an error nobody has read yet.
  void mark_pending() { pending_ = true; }
  bool pending() const { return pending_; }
  // Where the words go in a combined download (Device::download of several regions).
  gpu::Device::DownloadRegion region() {
    return {&buffer_, 0, std::as_writable_bytes(std::span<uint32_t>(words_))};
  }
  // After `region()` was downloaded: clears the pending mark and, if an error was recorded, zeroes the
  // buffer (so the next run starts clean) and throws it.
  void check_downloaded(const std::function<const ops::NodeInfo*(uint32_t)>& node_of);
  // Downloads the words (waiting for the submitted work) and checks them, if pending.
  void synchronize(const std::function<const ops::NodeInfo*(uint32_t)>& node_of);

 private:
  gpu::Device& device_;
  gpu::Buffer buffer_;
  RunStatusWords words_{};
  bool pending_ = false;
};

}  // namespace wgi::runtime
