// What an Environment (include/wgi/environment.h) holds: the device its sessions share, and the tuning cache
// files they read, one copy per path.
#pragma once

#include <filesystem>
#include <map>
#include <memory>

#include "gpu/device.h"
#include "runtime/tuning_cache.h"
#include "wgi/environment.h"

namespace wgi {

struct Environment::Impl {
  EnvironmentOptions options;
  std::shared_ptr<gpu::Device> device;
  double device_ms = 0;
  std::map<std::filesystem::path, std::shared_ptr<runtime::TuningCache>> tuning_caches;

  // The cache file at `path`, read at its first use by a session of this environment.
  std::shared_ptr<runtime::TuningCache> tuning_cache(const std::filesystem::path& path);
};

}  // namespace wgi
