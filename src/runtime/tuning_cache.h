// The GEMM tuning cache on disk (docs/tuning.md): the configuration measured fastest per exact GEMM problem,
// per adapter (backend, vendor and device id, device name, driver) and per version of the GEMM kernels' WGSL
// sources. A small JSON file, one entry per line:
//
//   {"format": "wgi-tuning", "version": 1, "entries": [
//   {"adapter": {...}, "kernels": "<hash>", "problem": {...}, "config": {...}, "measured": {...}},
//   ...]}
//
// Reading never throws: a missing file is an empty cache; a malformed one, or one of another format version,
// is reported once on stderr and ignored (and never overwritten: save() refuses, naming the file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/device.h"
#include "ops/gemm_tuning.h"

namespace wgi::runtime {

inline constexpr int kTuningCacheVersion = 1;

// Which device an entry was measured on. The ids alone do not tell GL ES adapters apart (Dawn reports vendor
// 0 and device 0xffffffff for every one of them), hence the name; the driver description carries its version.
struct AdapterKey {
  std::string backend;  // "vulkan", "swiftshader", "gles", "browser"
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  std::string device;  // the adapter's name
  std::string driver;  // the driver description
  bool operator==(const AdapterKey&) const = default;
};
AdapterKey adapter_key(const gpu::Device& device);
// "NVIDIA H200 [NVIDIA 580.159.04] on vulkan (10de:2335)".
std::string to_string(const AdapterKey& key);

// What tuning measured, kept for the record (the planner reads only the choice).
struct TuningRecord {
  double tuned_ms = 0;    // the winner's median time
  double default_ms = 0;  // the planner's rules' median time
  ops::GemmChoice default_choice;
  uint32_t candidates = 0;  // configurations timed
  uint32_t runs = 0;        // timed runs per configuration
  std::string timer;        // "timestamps" or "wall clock"
};

struct TuningEntry {
  AdapterKey adapter;
  std::string kernels;  // ops::gemm_kernels_fingerprint() of the build that measured it
  ops::GemmProblemKey problem;
  ops::GemmChoice choice;
  TuningRecord record;
};

// $WGI_TUNING_CACHE if set (set but empty: no cache), else $XDG_CACHE_HOME/wgi/tuning.json (an absolute
// XDG_CACHE_HOME), else $HOME/.cache/wgi/tuning.json; empty when none applies.
std::filesystem::path default_tuning_cache_path();

// Prints "wgi: <message>" on stderr, once per process for the same message.
void warn_once(const std::string& message);

class TuningCache {
 public:
  TuningCache() = default;
  // Reads `path` (see the file comment). A file that was ignored says why in problem() and is reported once
  // on stderr.
  static TuningCache load(const std::filesystem::path& path);
  // Throws wgi::Error("line L, column C: ..." or "entry N: ...") for anything but a cache of this version.
  static TuningCache parse(std::string_view text);
  std::string serialize() const;

  const std::filesystem::path& path() const { return path_; }
  bool loaded() const { return loaded_; }                  // the file existed and was read
  const std::string& problem() const { return problem_; }  // why the file was ignored; empty if it was not
  const std::vector<TuningEntry>& entries() const { return entries_; }

  // The entry for this adapter, kernel sources and problem; nullptr if there is none.
  const TuningEntry* find(const AdapterKey& adapter, std::string_view kernels,
                          const ops::GemmProblemKey& problem) const;
  // The planner's table: the entries of this adapter measured on these kernel sources.
  ops::GemmTuningTable table_for(const AdapterKey& adapter, std::string_view kernels) const;
  size_t count_for(const AdapterKey& adapter, std::string_view kernels) const;
  // Adds `entry`, replacing one for the same adapter and problem (whatever its kernels), and remembers it
  // for save().
  void set(TuningEntry entry);
  // Writes the file at path() (creating its directory): what is on disk now (another process may have added
  // entries) with this cache's set() entries on top, through a temporary file renamed over it. Throws
  // wgi::Error naming the file when it cannot be written, or when the file on disk is not a cache of this
  // version (it is left as it is).
  void save();
  // Creates the directory save() will write into; throws wgi::Error naming the file when it cannot.
  void create_directory() const;

 private:
  std::filesystem::path path_;
  bool loaded_ = false;
  std::string problem_;
  std::vector<TuningEntry> entries_;
  std::vector<TuningEntry> added_;  // set() since load, for save()'s merge
};

}  // namespace wgi::runtime
