#include "support/test_device.h"

#include <iostream>
#include <memory>

namespace wgi::test {

gpu::Device& device() {
  static std::shared_ptr<gpu::Device> shared = [] {
    auto d = gpu::Device::create();
    std::cerr << "[wgi test device] " << gpu::to_string(d->backend()) << ": " << d->adapter_info().device
              << " (" << d->adapter_info().description << ")\n";
    return d;
  }();
  return *shared;
}

}  // namespace wgi::test
