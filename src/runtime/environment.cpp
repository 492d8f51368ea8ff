#include "runtime/environment.h"

#include <chrono>

namespace wgi {

std::shared_ptr<runtime::TuningCache> Environment::Impl::tuning_cache(const std::filesystem::path& path) {
  std::shared_ptr<runtime::TuningCache>& cache = tuning_caches[path];
  if (!cache) cache = std::make_shared<runtime::TuningCache>(runtime::TuningCache::load(path));
  return cache;
}

Environment::Environment(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Environment Environment::create(const EnvironmentOptions& options) {
  auto impl = std::make_shared<Impl>();
  impl->options = options;
  gpu::DeviceOptions device_options;
  if (!options.backend.empty()) device_options.backend = gpu::parse_backend(options.backend);
  if (!options.adapter.empty()) device_options.adapter_filter = options.adapter;
  device_options.shader_robustness = options.shader_robustness;
  const auto start = std::chrono::steady_clock::now();
  impl->device = gpu::Device::create(device_options);
  impl->device_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return Environment(std::move(impl));
}

const EnvironmentOptions& Environment::options() const {
  return impl_->options;
}

std::string Environment::adapter_description() const {
  return impl_->device->adapter_info().device + " on " +
         std::string(gpu::to_string(impl_->device->backend()));
}

size_t Environment::pipelines() const {
  return impl_->device->pipelines().size();
}

double Environment::device_ms() const {
  return impl_->device_ms;
}

}  // namespace wgi
