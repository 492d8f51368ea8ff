// Dawn's blob cache on disk: compiled shaders and pipeline-cache data kept between processes, so that a
// model's second cold start skips Tint's WGSL compilation and the driver's pipeline builds. Dawn asks for
// entries by an opaque key (it already folds in the shader text, toggles, adapter and driver); wgi stores one
// file per key under the cache directory, named by a hash of the key, holding the key itself to rule out hash
// collisions. Writes go to a temporary file renamed into place, so concurrent processes (parallel tests)
// never read a torn entry. Native only (a browser has no Dawn cache hooks).
//   WGI_CACHE_DIR          the directory (default $XDG_CACHE_HOME/wgi, else ~/.cache/wgi); entries go to
//                          <dir>/pipelines/
//   WGI_PIPELINE_CACHE=0   disables it
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace wgi::gpu {

class PipelineDiskCache {
 public:
  // The cache directory the environment asks for, or nullopt when disabled or no home directory is known.
  static std::optional<std::filesystem::path> directory_from_environment();

  explicit PipelineDiskCache(std::filesystem::path directory);

  // Dawn's load contract: the size of the entry for `key` (0 if none); with `value`, copies it when
  // `value_size` matches.
  size_t load(const void* key, size_t key_size, void* value, size_t value_size) const;
  // Stores (replaces) the entry; failures (read-only disk, full disk) only lose the entry.
  void store(const void* key, size_t key_size, const void* value, size_t value_size) const;

  const std::filesystem::path& directory() const { return directory_; }

 private:
  std::filesystem::path path_of(const void* key, size_t key_size) const;
  std::filesystem::path directory_;
};

}  // namespace wgi::gpu
