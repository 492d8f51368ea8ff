#include "gpu/disk_cache.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace wgi::gpu {

namespace {

uint64_t fnv1a(const void* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// File layout: u64 key size, the key, the value.
bool read_entry(const std::filesystem::path& path, const void* key, size_t key_size,
                std::vector<char>& value) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  uint64_t stored_key_size = 0;
  if (!in.read(reinterpret_cast<char*>(&stored_key_size), sizeof stored_key_size) ||
      stored_key_size != key_size) {
    return false;
  }
  std::vector<char> stored_key(key_size);
  if (!in.read(stored_key.data(), static_cast<std::streamsize>(key_size)) ||
      std::memcmp(stored_key.data(), key, key_size) != 0) {
    return false;
  }
  value.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

std::optional<std::filesystem::path> PipelineDiskCache::directory_from_environment() {
  if (const char* off = std::getenv("WGI_PIPELINE_CACHE"); off != nullptr && std::string(off) == "0") {
    return std::nullopt;
  }
  if (const char* dir = std::getenv("WGI_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    return std::filesystem::path(dir) / "pipelines";
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::filesystem::path(xdg) / "wgi" / "pipelines";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::filesystem::path(home) / ".cache" / "wgi" / "pipelines";
  }
  return std::nullopt;
}

PipelineDiskCache::PipelineDiskCache(std::filesystem::path directory) : directory_(std::move(directory)) {}

std::filesystem::path PipelineDiskCache::path_of(const void* key, size_t key_size) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bin", static_cast<unsigned long long>(fnv1a(key, key_size)));
  return directory_ / name;
}

size_t PipelineDiskCache::load(const void* key, size_t key_size, void* value, size_t value_size) const {
  std::vector<char> stored;
  if (!read_entry(path_of(key, key_size), key, key_size, stored)) return 0;
  if (value == nullptr) return stored.size();
  if (value_size != stored.size()) return 0;
  std::memcpy(value, stored.data(), stored.size());
  return stored.size();
}

void PipelineDiskCache::store(const void* key, size_t key_size, const void* value, size_t value_size) const {
  std::error_code ec;
  std::filesystem::create_directories(directory_, ec);
  if (ec) return;
  static std::atomic<uint64_t> counter{0};
  const std::filesystem::path final_path = path_of(key, key_size);
  std::filesystem::path temp = final_path;
  temp += ".tmp" + std::to_string(static_cast<long long>(getpid())) + "_" + std::to_string(counter++);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    const uint64_t size = key_size;
    out.write(reinterpret_cast<const char*>(&size), sizeof size);
    out.write(static_cast<const char*>(key), static_cast<std::streamsize>(key_size));
    out.write(static_cast<const char*>(value), static_cast<std::streamsize>(value_size));
    if (!out) {
      out.close();
      std::filesystem::remove(temp, ec);
      return;
    }
  }
  std::filesystem::rename(temp, final_path, ec);
  if (ec) std::filesystem::remove(temp, ec);
}

}  // namespace wgi::gpu
