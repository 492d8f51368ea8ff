// Dawn's blob cache on disk (src/gpu/disk_cache.h): entries round-trip, a file whose stored key differs (a
// hash collision, a torn or foreign file) is no entry, size queries and size mismatches follow Dawn's load
// contract, and the environment picks or disables the directory.
#include "gpu/disk_cache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace wgi::gpu {
namespace {

std::filesystem::path fresh_directory(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("wgi_disk_cache_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(PipelineDiskCache, StoresAndLoadsEntriesByKey) {
  const auto dir = fresh_directory("round_trip");
  PipelineDiskCache cache(dir);
  const std::string key = "shader key \x01\x02";
  const std::vector<char> value = {'s', 'p', 'i', 'r', 'v', '\0', 'x'};
  EXPECT_EQ(cache.load(key.data(), key.size(), nullptr, 0), 0u);  // nothing yet
  cache.store(key.data(), key.size(), value.data(), value.size());
  ASSERT_EQ(cache.load(key.data(), key.size(), nullptr, 0), value.size());
  std::vector<char> out(value.size());
  EXPECT_EQ(cache.load(key.data(), key.size(), out.data(), out.size()), value.size());
  EXPECT_EQ(out, value);
  std::vector<char> wrong_size(value.size() + 1);
  EXPECT_EQ(cache.load(key.data(), key.size(), wrong_size.data(), wrong_size.size()), 0u);
  const std::string other = "another key";
  EXPECT_EQ(cache.load(other.data(), other.size(), nullptr, 0), 0u);
  // Replacing an entry.
  const std::vector<char> newer = {'n', 'e', 'w'};
  cache.store(key.data(), key.size(), newer.data(), newer.size());
  EXPECT_EQ(cache.load(key.data(), key.size(), nullptr, 0), newer.size());
  std::filesystem::remove_all(dir);
}

TEST(PipelineDiskCache, AFileHoldingAnotherKeyIsNoEntry) {
  const auto dir = fresh_directory("collision");
  PipelineDiskCache cache(dir);
  const std::string key = "key A";
  const std::vector<char> value = {'1', '2', '3'};
  cache.store(key.data(), key.size(), value.data(), value.size());
  // Overwrite the entry's file with one stored under a different key of the same length (what a hash
  // collision would leave), then with a truncated file.
  std::filesystem::path file;
  for (const auto& e : std::filesystem::directory_iterator(dir)) file = e.path();
  ASSERT_FALSE(file.empty());
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    const uint64_t size = key.size();
    out.write(reinterpret_cast<const char*>(&size), sizeof size);
    out << "key B"
        << "123";
  }
  EXPECT_EQ(cache.load(key.data(), key.size(), nullptr, 0), 0u);
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << "abc";
  }
  EXPECT_EQ(cache.load(key.data(), key.size(), nullptr, 0), 0u);
  std::filesystem::remove_all(dir);
}

TEST(PipelineDiskCache, AnUnwritableDirectoryOnlyLosesEntries) {
  const auto dir = fresh_directory("unwritable");
  std::filesystem::create_directories(dir.parent_path());
  { std::ofstream(dir) << "a file where the directory should be"; }
  PipelineDiskCache cache(dir / "pipelines");
  const std::string key = "k";
  cache.store(key.data(), key.size(), "v", 1);  // must not throw
  EXPECT_EQ(cache.load(key.data(), key.size(), nullptr, 0), 0u);
  std::filesystem::remove(dir);
}

TEST(PipelineDiskCache, DirectoryFromTheEnvironment) {
  const char* saved_dir = std::getenv("WGI_CACHE_DIR");
  const char* saved_switch = std::getenv("WGI_PIPELINE_CACHE");
  const std::string restore_dir = saved_dir ? saved_dir : "";
  const std::string restore_switch = saved_switch ? saved_switch : "";
  ::setenv("WGI_CACHE_DIR", "/some/where", 1);
  ::unsetenv("WGI_PIPELINE_CACHE");
  EXPECT_EQ(PipelineDiskCache::directory_from_environment(), std::filesystem::path("/some/where/pipelines"));
  ::setenv("WGI_PIPELINE_CACHE", "0", 1);
  EXPECT_EQ(PipelineDiskCache::directory_from_environment(), std::nullopt);
  if (saved_dir) {
    ::setenv("WGI_CACHE_DIR", restore_dir.c_str(), 1);
  } else {
    ::unsetenv("WGI_CACHE_DIR");
  }
  if (saved_switch) {
    ::setenv("WGI_PIPELINE_CACHE", restore_switch.c_str(), 1);
  } else {
    ::unsetenv("WGI_PIPELINE_CACHE");
  }
}

}  // namespace
}  // namespace wgi::gpu
