#include "runtime/run_status.h"

#include <cstring>

#include "wgi/printable.h"

namespace wgi::runtime {

namespace {

constexpr uint32_t kIndexOutOfRange = 1;  // RUN_STATUS_INDEX_OUT_OF_RANGE in run_status.wgsl

}  // namespace

std::string describe_run_status(const RunStatusWords& words,
                                const std::function<const ops::NodeInfo*(uint32_t)>& node_of) {
  const ops::NodeInfo* node = words[1] != 0 ? node_of(words[1]) : nullptr;
  const std::string who = node ? node->describe() : std::string("a node");
  if (words[2] == kIndexOutOfRange && node) {
    const uint32_t input = words[3];
    const std::string name = input < node->input_names.size()
                                 ? "input '" + printable(node->input_names[input]) + "'"
                                 : "input " + std::to_string(input);
    int32_t index;
    std::memcpy(&index, &words[5], sizeof index);
    const int64_t bound = words[6];
    return who + ": " + name + " holds index " + std::to_string(index) + " at element " +
           std::to_string(words[4]) + ", out of range [" + std::to_string(-bound) + ", " +
           std::to_string(bound) + ") for an axis of " + std::to_string(bound) +
           " (ONNX makes an out-of-range index an error; the run's outputs are not valid)";
  }
  if (words[0] & kIndexOutOfRange) {
    return who +
           ": an index was out of range at run time (ONNX makes that an error; the run's outputs are "
           "not valid)";
  }
  return who + ": internal: the run status holds the unknown error bits " + std::to_string(words[0]);
}

RunStatus::RunStatus(gpu::Device& device)
    : device_(device), buffer_(device.create_buffer(sizeof(RunStatusWords), "wgi.run_status")) {
  const RunStatusWords zeros{};
  device_.upload(buffer_, 0, std::as_bytes(std::span<const uint32_t>(zeros)));
}

void RunStatus::check_downloaded(const std::function<const ops::NodeInfo*(uint32_t)>& node_of) {
  pending_ = false;
  if (words_[0] == 0) return;
  const RunStatusWords seen = words_;
  words_ = {};
  device_.upload(buffer_, 0, std::as_bytes(std::span<const uint32_t>(words_)));
  throw Error(describe_run_status(seen, node_of));
}

void RunStatus::synchronize(const std::function<const ops::NodeInfo*(uint32_t)>& node_of) {
  if (!pending_) return;
  const gpu::Device::DownloadRegion r = region();
  device_.download(std::span<const gpu::Device::DownloadRegion>(&r, 1));
  check_downloaded(node_of);
}

}  // namespace wgi::runtime
