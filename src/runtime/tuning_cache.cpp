#include "runtime/tuning_cache.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <system_error>

#include "core/json.h"
#include "wgi/error.h"

namespace wgi::runtime {

namespace {

using json::Value;

// Typed reads of one entry's members; errors name the entry and the member.
class EntryReader {
 public:
  explicit EntryReader(size_t index) : prefix_("entry " + std::to_string(index) + ": ") {}

  [[noreturn]] void fail(const std::string& what) const { throw Error(prefix_ + what); }

  const Value& member(const Value& object, const char* name, const char* where) const {
    const Value* v = object.find(name);
    if (!v) fail(std::string("'") + where + name + "' is missing");
    return *v;
  }
  const Value& object(const Value& parent, const char* name) const {
    const Value& v = member(parent, name, "");
    if (!v.is(Value::Type::Object)) fail(std::string("'") + name + "' must be an object");
    return v;
  }
  std::string string(const Value& object, const char* name, const char* where = "") const {
    const Value& v = member(object, name, where);
    if (!v.is(Value::Type::String)) fail(std::string("'") + where + name + "' must be a string");
    return v.string;
  }
  uint32_t u32(const Value& object, const char* name, const char* where = "") const {
    const Value& v = member(object, name, where);
    if (!v.is(Value::Type::Number) || v.number < 0 || v.number > 4294967295.0 ||
        std::floor(v.number) != v.number) {
      fail(std::string("'") + where + name + "' must be an integer from 0 to 4294967295");
    }
    return static_cast<uint32_t>(v.number);
  }
  bool boolean(const Value& object, const char* name, const char* where = "") const {
    const Value& v = member(object, name, where);
    if (!v.is(Value::Type::Bool)) fail(std::string("'") + where + name + "' must be true or false");
    return v.boolean;
  }
  double milliseconds(const Value& object, const char* name, const char* where) const {
    const Value& v = member(object, name, where);
    if (v.is(Value::Type::Null)) return 0;  // written for a time that was not finite
    if (!v.is(Value::Type::Number) || v.number < 0)
      fail(std::string("'") + where + name + "' must be a non-negative number");
    return v.number;
  }

  ops::GemmChoice choice(const Value& config, const char* where) const {
    ops::GemmChoice c;
    const std::string name = string(config, "kernel", where);
    auto kernel = ops::gemm_kernel_from_name(name);
    if (!kernel || *kernel == ops::GemmKernel::Auto)
      fail(std::string("'") + where + "kernel' is '" + name + "' (expected " + ops::gemm_kernel_names() +
           ")");
    c.kernel = *kernel;
    c.tile_k = u32(config, "tile_k", where);
    c.stages = u32(config, "stages", where);
    c.split_k = u32(config, "split_k", where);
    c.gemv_lanes = u32(config, "gemv_lanes", where);
    // Written since the wave tail (2026-12-06); entries from before it ran as one launch.
    if (config.find("head_rows")) c.head_rows = u32(config, "head_rows", where);
    const std::string why = ops::gemm_choice_problem(c);
    if (!why.empty()) fail(std::string("'") + where + "': " + why);
    return c;
  }

 private:
  std::string prefix_;
};

TuningEntry read_entry(const Value& v, size_t index) {
  EntryReader r(index);
  if (!v.is(Value::Type::Object)) r.fail("must be an object");
  TuningEntry e;
  const std::string op = r.string(v, "op");
  if (op != "gemm") r.fail("'op' is '" + op + "' (this version tunes 'gemm' only)");
  const Value& adapter = r.object(v, "adapter");
  e.adapter.backend = r.string(adapter, "backend", "adapter.");
  e.adapter.vendor_id = r.u32(adapter, "vendor_id", "adapter.");
  e.adapter.device_id = r.u32(adapter, "device_id", "adapter.");
  e.adapter.device = r.string(adapter, "device", "adapter.");
  e.adapter.driver = r.string(adapter, "driver", "adapter.");
  e.kernels = r.string(v, "kernels");

  const Value& p = r.object(v, "problem");
  e.problem.m = r.u32(p, "m", "problem.");
  e.problem.n = r.u32(p, "n", "problem.");
  e.problem.k = r.u32(p, "k", "problem.");
  e.problem.batch = r.u32(p, "batch", "problem.");
  if (e.problem.batch == 0) r.fail("'problem.batch' must be at least 1");
  const std::string a = r.string(p, "a", "problem.");
  if (a != "mk" && a != "km") r.fail("'problem.a' is '" + a + "' (expected mk or km)");
  e.problem.a_km = a == "km";
  const std::string b = r.string(p, "b", "problem.");
  auto layout = ops::gemm_b_layout_from_name(b);
  if (!layout) r.fail("'problem.b' is '" + b + "' (expected kn, nk or packed)");
  e.problem.b = *layout;
  e.problem.a_batched = r.boolean(p, "a_batched", "problem.");
  e.problem.b_batched = r.boolean(p, "b_batched", "problem.");
  e.problem.splittable = r.boolean(p, "splittable", "problem.");

  e.choice = r.choice(r.object(v, "config"), "config.");
  // The measurements are for the record; a hand-written entry may leave them out.
  if (const Value* m = v.find("measured")) {
    if (!m->is(Value::Type::Object)) r.fail("'measured' must be an object");
    e.record.tuned_ms = r.milliseconds(*m, "tuned_ms", "measured.");
    e.record.default_ms = r.milliseconds(*m, "default_ms", "measured.");
    const Value& d = r.member(*m, "default", "measured.");
    if (!d.is(Value::Type::Object)) r.fail("'measured.default' must be an object");
    e.record.default_choice = r.choice(d, "measured.default.");
    e.record.candidates = r.u32(*m, "candidates", "measured.");
    e.record.runs = r.u32(*m, "runs", "measured.");
    e.record.timer = r.string(*m, "timer", "measured.");
  }
  return e;
}

std::string choice_json(const ops::GemmChoice& c) {
  return std::string("{\"kernel\": ") + json::quote(ops::gemm_kernel_name(c.kernel)) +
         ", \"tile_k\": " + std::to_string(c.tile_k) + ", \"stages\": " + std::to_string(c.stages) +
         ", \"split_k\": " + std::to_string(c.split_k) + ", \"gemv_lanes\": " + std::to_string(c.gemv_lanes) +
         ", \"head_rows\": " + std::to_string(c.head_rows) + "}";
}

std::string entry_json(const TuningEntry& e) {
  const AdapterKey& a = e.adapter;
  const ops::GemmProblemKey& p = e.problem;
  const TuningRecord& r = e.record;
  auto flag = [](bool b) { return b ? "true" : "false"; };
  return std::string("{\"op\": \"gemm\", \"adapter\": {\"backend\": ") + json::quote(a.backend) +
         ", \"vendor_id\": " + std::to_string(a.vendor_id) +
         ", \"device_id\": " + std::to_string(a.device_id) + ", \"device\": " + json::quote(a.device) +
         ", \"driver\": " + json::quote(a.driver) + "}, \"kernels\": " + json::quote(e.kernels) +
         ", \"problem\": {\"m\": " + std::to_string(p.m) + ", \"n\": " + std::to_string(p.n) +
         ", \"k\": " + std::to_string(p.k) + ", \"batch\": " + std::to_string(p.batch) +
         ", \"a\": " + (p.a_km ? "\"km\"" : "\"mk\"") +
         ", \"b\": " + json::quote(ops::gemm_b_layout_name(p.b)) + ", \"a_batched\": " + flag(p.a_batched) +
         ", \"b_batched\": " + flag(p.b_batched) + ", \"splittable\": " + flag(p.splittable) +
         "}, \"config\": " + choice_json(e.choice) +
         ", \"measured\": {\"tuned_ms\": " + json::number(r.tuned_ms) +
         ", \"default_ms\": " + json::number(r.default_ms) +
         ", \"default\": " + choice_json(r.default_choice) +
         ", \"candidates\": " + std::to_string(r.candidates) + ", \"runs\": " + std::to_string(r.runs) +
         ", \"timer\": " + json::quote(r.timer) + "}}";
}

std::string path_string(const std::filesystem::path& path) {
  return path.string();
}

// The whole file into `text`; false when it cannot be read.
bool read_text(const std::filesystem::path& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  if (in) out << in.rdbuf();
  text = out.str();
  return in && !in.bad();
}

// Puts `entry` into `entries`, replacing one for the same adapter and problem (whatever its kernels).
void replace_entry(std::vector<TuningEntry>& entries, TuningEntry entry) {
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [&entry](const TuningEntry& o) {
                                 return o.adapter == entry.adapter && o.problem == entry.problem;
                               }),
                entries.end());
  entries.push_back(std::move(entry));
}

}  // namespace

AdapterKey adapter_key(const gpu::Device& device) {
  AdapterKey key;
  key.backend = std::string(gpu::to_string(device.backend()));
  key.vendor_id = device.adapter_info().vendor_id;
  key.device_id = device.adapter_info().device_id;
  key.device = device.adapter_info().device;
  key.driver = device.adapter_info().description;
  return key;
}

std::string to_string(const AdapterKey& key) {
  char ids[32];
  std::snprintf(ids, sizeof ids, "%x:%x", key.vendor_id, key.device_id);
  return key.device + " [" + key.driver + "] on " + key.backend + " (" + ids + ")";
}

std::filesystem::path default_tuning_cache_path() {
  if (const char* explicit_path = std::getenv("WGI_TUNING_CACHE")) return explicit_path;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  // The XDG base directory specification: a relative path is invalid and must be ignored.
  if (xdg && *xdg && std::filesystem::path(xdg).is_absolute())
    return std::filesystem::path(xdg) / "wgi" / "tuning.json";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::filesystem::path(home) / ".cache" / "wgi" / "tuning.json";
  return {};
}

void warn_once(const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mutex);
  if (said.insert(message).second) std::cerr << "wgi: " << message << "\n";
}

TuningCache TuningCache::parse(std::string_view text) {
  const Value doc = json::parse(text);
  if (!doc.is(Value::Type::Object)) throw Error("not a wgi tuning cache (the top level is not an object)");
  const Value* format = doc.find("format");
  if (!format || !format->is(Value::Type::String) || format->string != "wgi-tuning")
    throw Error("not a wgi tuning cache (no \"format\": \"wgi-tuning\")");
  const Value* version = doc.find("version");
  if (!version || !version->is(Value::Type::Number))
    throw Error("no \"version\" number (this build reads version " + std::to_string(kTuningCacheVersion) +
                ")");
  if (version->number != kTuningCacheVersion) {
    throw Error("version " + json::number(version->number) + " (this build reads version " +
                std::to_string(kTuningCacheVersion) + ")");
  }
  const Value* entries = doc.find("entries");
  if (!entries || !entries->is(Value::Type::Array)) throw Error("no \"entries\" array");
  TuningCache cache;
  for (size_t i = 0; i < entries->array.size(); ++i) {
    replace_entry(cache.entries_, read_entry(entries->array[i], i));  // a repeated key keeps the later
  }
  return cache;
}

std::string TuningCache::serialize() const {
  std::string out = "{\"format\": \"wgi-tuning\", \"version\": " + std::to_string(kTuningCacheVersion) +
                    ", \"entries\": [\n";
  for (size_t i = 0; i < entries_.size(); ++i)
    out += entry_json(entries_[i]) + (i + 1 < entries_.size() ? ",\n" : "\n");
  return out + "]}\n";
}

TuningCache TuningCache::load(const std::filesystem::path& path) {
  TuningCache cache;
  cache.path_ = path;
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return cache;
  std::string text;
  const bool read = read_text(path, text);
  if (std::filesystem::is_directory(path, ec)) {
    cache.problem_ = "it is a directory";
  } else if (!read) {
    cache.problem_ = "cannot read it";
  } else {
    try {
      TuningCache parsed = parse(text);
      cache.entries_ = std::move(parsed.entries_);
      cache.loaded_ = true;
    } catch (const Error& e) {
      cache.problem_ = e.what();
    }
  }
  if (!cache.problem_.empty()) {
    warn_once("ignoring the tuning cache " + path_string(path) + ": " + cache.problem_ +
              " (the shipped defaults apply; remove the file or re-run `wgi tune`)");
  }
  return cache;
}

const TuningEntry* TuningCache::find(const AdapterKey& adapter, std::string_view kernels,
                                     const ops::GemmProblemKey& problem) const {
  for (const TuningEntry& e : entries_) {
    if (e.adapter == adapter && e.kernels == kernels && e.problem == problem) return &e;
  }
  return nullptr;
}

ops::GemmTuningTable TuningCache::table_for(const AdapterKey& adapter, std::string_view kernels) const {
  ops::GemmTuningTable table;
  for (const TuningEntry& e : entries_) {
    if (e.adapter == adapter && e.kernels == kernels) table.set(e.problem, e.choice);
  }
  return table;
}

size_t TuningCache::count_for(const AdapterKey& adapter, std::string_view kernels) const {
  size_t n = 0;
  for (const TuningEntry& e : entries_) n += e.adapter == adapter && e.kernels == kernels ? 1 : 0;
  return n;
}

void TuningCache::set(TuningEntry entry) {
  replace_entry(entries_, entry);
  replace_entry(added_, std::move(entry));
}

void TuningCache::create_directory() const {
  if (!path_.has_parent_path()) return;
  std::error_code ec;
  std::filesystem::create_directories(path_.parent_path(), ec);
  if (ec) {
    throw Error("cannot create the directory of the tuning cache " + path_string(path_) + ": " +
                ec.message());
  }
}

void TuningCache::save() {
  if (path_.empty()) throw Error("no tuning cache path (set WGI_TUNING_CACHE or HOME, or give a path)");
  const std::string where = "the tuning cache " + path_string(path_);
  // Merge with the file as it is now: another process may have tuned other problems meanwhile.
  TuningCache merged;
  std::error_code ec;
  if (std::filesystem::exists(path_, ec)) {
    std::string text;
    if (!read_text(path_, text)) throw Error("cannot read " + where + " to update it");
    try {
      merged = parse(text);
    } catch (const Error& e) {
      throw Error(where + " is not a tuning cache this build can update (" + e.what() +
                  "); not overwriting it: remove it, or use another path");
    }
  }
  for (const TuningEntry& e : added_) merged.set(e);
  create_directory();
  // Written next to the file and renamed over it, so that a reader never sees half a file.
  std::filesystem::path temporary = path_;
  temporary += ".tmp-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << merged.serialize();
    out.close();
    if (!out) {
      std::filesystem::remove(temporary, ec);
      throw Error("cannot write " + where + " (" + path_string(temporary) + ")");
    }
  }
  std::filesystem::rename(temporary, path_, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(temporary, ec);
    throw Error("cannot write " + where + ": " + why);
  }
  entries_ = std::move(merged.entries_);
  added_.clear();
  loaded_ = true;
  problem_.clear();
}

}  // namespace wgi::runtime
