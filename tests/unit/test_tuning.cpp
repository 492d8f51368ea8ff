// GEMM tuning without a GPU: the JSON reader, the cache file (round trip, malformed and foreign files, the
// merge on save, adapter and kernel keys), where the cache lives, the planner's use of tuned entries (taken
// when valid, ignored when the device cannot run them, overridden by attributes) and the candidate list.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json.h"
#include "ops/gemm_tuning.h"
#include "ops/registry.h"
#include "runtime/gemm_tuner.h"
#include "runtime/tuning_cache.h"
#include "support/planner_devices.h"

namespace wgi {
namespace {

using ops::GemmBLayout;
using ops::GemmChoice;
using ops::GemmKernel;
using ops::GemmProblemKey;

// ---- JSON ----

std::string json_error(const std::string& text) {
  try {
    json::parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Json, ParsesValuesEscapesAndNumbers) {
  const json::Value v = json::parse(
      "{\"a\": [1, -2.5e3, 0.125, true, false, null], \"s\": \"q\\\"\\\\\\/\\n\\u00e9\\ud83d\\ude00\", "
      "\"a\": {\"x\": 3}}");
  ASSERT_TRUE(v.is(json::Value::Type::Object));
  // A repeated member: the last one counts.
  ASSERT_NE(v.find("a"), nullptr);
  EXPECT_TRUE(v.find("a")->is(json::Value::Type::Object));
  EXPECT_EQ(v.object.at(0).value.array.size(), 6u);
  EXPECT_EQ(v.object.at(0).value.array[1].number, -2500.0);
  EXPECT_EQ(v.object.at(0).value.array[2].number, 0.125);
  EXPECT_TRUE(v.object.at(0).value.array[3].boolean);
  EXPECT_TRUE(v.object.at(0).value.array[5].is(json::Value::Type::Null));
  EXPECT_EQ(v.find("s")->string, "q\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v.find("missing"), nullptr);
  EXPECT_EQ(json::quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(json::parse(json::quote("tab\there \xc3\xa9")).string, "tab\there \xc3\xa9");
  EXPECT_EQ(json::number(0.061), "0.061");
  EXPECT_EQ(json::number(4294967295.0), "4294967295");
  EXPECT_EQ(json::number(1.0 / 0.0), "null");
}

TEST(Json, RejectsMalformedTextWithItsPosition) {
  EXPECT_NE(json_error("").find("line 1, column 1: expected a value"), std::string::npos);
  EXPECT_NE(json_error("{\"a\": 1,\n \"b\" 2}").find("line 2, column 6: expected ':'"), std::string::npos);
  EXPECT_NE(json_error("[1, 2").find("expected ',' or ']'"), std::string::npos);
  EXPECT_NE(json_error("{\"a\": 1} x").find("unexpected text after the value"), std::string::npos);
  EXPECT_NE(json_error("\"abc").find("unterminated string"), std::string::npos);
  EXPECT_NE(json_error("\"a\nb\"").find("control character"), std::string::npos);
  EXPECT_NE(json_error("\"\\x\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(json_error("\"\\ud800\"").find("surrogate"), std::string::npos);
  EXPECT_NE(json_error("01").find("unexpected text"), std::string::npos);
  EXPECT_NE(json_error("1.").find("digits after '.'"), std::string::npos);
  EXPECT_NE(json_error("-").find("expected a value"), std::string::npos);
  EXPECT_NE(json_error("1e999").find("out of range"), std::string::npos);
  EXPECT_NE(json_error("tru").find("expected a value"), std::string::npos);
  // Deep nesting is refused, not a stack overflow.
  EXPECT_NE(json_error(std::string(100000, '[')).find("nested deeper than 64"), std::string::npos);
}

// ---- The cache file ----

std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("wgi_unit_tuning_" + name + "_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

runtime::AdapterKey h200() {
  return {"vulkan", 0x10de, 0x2335, "NVIDIA H200", "NVIDIA 580.159.04"};
}

runtime::TuningEntry entry(const GemmProblemKey& p, const GemmChoice& c,
                           const runtime::AdapterKey& adapter = h200(), const std::string& kernels = "k1") {
  runtime::TuningEntry e;
  e.adapter = adapter;
  e.kernels = kernels;
  e.problem = p;
  e.choice = c;
  e.record.tuned_ms = 0.0612;
  e.record.default_ms = 0.0751;
  e.record.default_choice = {GemmKernel::Fast64, 16, 2, 1, 0};
  e.record.candidates = 31;
  e.record.runs = 10;
  e.record.timer = "timestamps";
  return e;
}

GemmProblemKey problem(uint32_t m, uint32_t n, uint32_t k, GemmBLayout b = GemmBLayout::Packed) {
  GemmProblemKey p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.b = b;
  return p;
}

TEST(TuningCache, RoundTripsEveryField) {
  runtime::TuningCache cache;
  GemmProblemKey batched = problem(32, 32, 36864, GemmBLayout::NK);
  batched.batch = 4;
  batched.a_batched = batched.b_batched = true;
  batched.a_km = true;
  GemmProblemKey conv = problem(64, 3136, 256, GemmBLayout::KN);
  conv.splittable = false;
  conv.batch = 8;
  conv.b_batched = true;
  cache.set(entry(problem(196, 3072, 768), {GemmKernel::Fast64, 16, 2, 2, 0}));
  cache.set(entry(batched, {GemmKernel::Tiled, 0, 0, 64, 0}));
  cache.set(entry(conv, {GemmKernel::Fast128, 8, 1, 1, 0}));
  runtime::TuningEntry gemv = entry(problem(1, 51289, 768), {GemmKernel::Gemv, 0, 0, 1, 16},
                                    {"gles", 0, 0xffffffff, "llvmpipe \"x\" \\ \xc3\xa9", "Mesa\n22"}, "k2");
  cache.set(gemv);
  cache.set(entry(problem(1576, 3072, 768), {GemmKernel::Fast128, 8, 2, 1, 0, 1408}));  // a wave tail
  const std::string text = cache.serialize();
  // One entry per line, so that the file reads (and diffs) as a list.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 7) << text;
  const runtime::TuningCache back = runtime::TuningCache::parse(text);
  ASSERT_EQ(back.entries().size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const runtime::TuningEntry& a = cache.entries()[i];
    const runtime::TuningEntry& b = back.entries()[i];
    EXPECT_EQ(a.adapter, b.adapter) << i;
    EXPECT_EQ(a.kernels, b.kernels) << i;
    EXPECT_EQ(a.problem, b.problem) << i;
    EXPECT_EQ(a.choice, b.choice) << i;
    EXPECT_EQ(a.record.tuned_ms, b.record.tuned_ms) << i;
    EXPECT_EQ(a.record.default_ms, b.record.default_ms) << i;
    EXPECT_EQ(a.record.default_choice, b.record.default_choice) << i;
    EXPECT_EQ(a.record.candidates, b.record.candidates) << i;
    EXPECT_EQ(a.record.runs, b.record.runs) << i;
    EXPECT_EQ(a.record.timer, b.record.timer) << i;
  }
  EXPECT_EQ(back.serialize(), text);
}

TEST(TuningCache, TablesHoldOnlyThisAdaptersEntriesOnTheseKernels) {
  runtime::TuningCache cache;
  runtime::AdapterKey other_driver = h200();
  other_driver.driver = "NVIDIA 590.1";
  runtime::AdapterKey other_device = h200();
  other_device.device_id = 0x2330;
  cache.set(entry(problem(196, 3072, 768), {GemmKernel::Fast64, 16, 2, 2, 0}));
  cache.set(entry(problem(196, 768, 768), {GemmKernel::Fast64, 16, 1, 3, 0}, other_driver));
  cache.set(entry(problem(196, 768, 3072), {GemmKernel::Fast64, 16, 1, 6, 0}, other_device));
  cache.set(entry(problem(9216, 256, 256), {GemmKernel::Fast128, 16, 1, 1, 0}, h200(), "older kernels"));
  const ops::GemmTuningTable table = cache.table_for(h200(), "k1");
  ASSERT_EQ(table.size(), 1u);
  ASSERT_NE(table.find(problem(196, 3072, 768)), nullptr);
  EXPECT_EQ(table.find(problem(196, 3072, 768))->split_k, 2u);
  EXPECT_EQ(table.find(problem(196, 768, 768)), nullptr);                    // another driver
  EXPECT_EQ(table.find(problem(196, 3072, 768, GemmBLayout::NK)), nullptr);  // another layout
  EXPECT_EQ(cache.count_for(h200(), "k1"), 1u);
  EXPECT_EQ(cache.count_for(other_driver, "k1"), 1u);
  EXPECT_EQ(cache.table_for(h200(), "older kernels").size(), 1u);
  EXPECT_NE(cache.find(h200(), "k1", problem(196, 3072, 768)), nullptr);
  EXPECT_EQ(cache.find(h200(), "k2", problem(196, 3072, 768)), nullptr);
  // Setting an entry for the same adapter and problem replaces it, whatever kernels it was measured on.
  cache.set(entry(problem(9216, 256, 256), {GemmKernel::Fast64, 16, 2, 1, 0}));
  EXPECT_EQ(cache.entries().size(), 4u);
  EXPECT_EQ(cache.table_for(h200(), "older kernels").size(), 0u);
  EXPECT_EQ(cache.table_for(h200(), "k1").size(), 2u);
}

TEST(TuningCache, MissingMalformedAndForeignFilesAreIgnoredNeverThrown) {
  const auto dir = scratch_dir("ignore");
  runtime::TuningCache missing = runtime::TuningCache::load(dir / "none.json");
  EXPECT_FALSE(missing.loaded());
  EXPECT_TRUE(missing.problem().empty());
  EXPECT_TRUE(missing.entries().empty());

  runtime::TuningCache good;
  good.set(entry(problem(196, 3072, 768), {GemmKernel::Fast64, 16, 2, 2, 0}));
  const std::string valid = good.serialize();
  struct Case {
    std::string text, why;
  };
  std::string bad_kernel = valid, bad_lanes = valid, bad_split = valid, bad_layout = valid, bad_op = valid;
  bad_kernel.replace(bad_kernel.find("\"kernel\": \"fast64\""), 18, "\"kernel\": \"fast256\"");
  bad_lanes.replace(bad_lanes.find("\"gemv_lanes\": 0"), 15, "\"gemv_lanes\": 3");
  bad_split.replace(bad_split.find("\"split_k\": 2"), 12, "\"split_k\": -2");
  bad_layout.replace(bad_layout.find("\"b\": \"packed\""), 13, "\"b\": \"weird\"");
  bad_op.replace(bad_op.find("\"op\": \"gemm\""), 12, "\"op\": \"conv\"");
  std::string truncated = valid.substr(0, valid.size() / 2);
  std::string future = valid;
  future.replace(future.find("\"version\": 1"), 12, "\"version\": 2");
  for (const Case& c :
       {Case{truncated, "line 2"}, Case{"[]", "not a wgi tuning cache"},
        Case{"{\"format\": \"other\"}", "not a wgi tuning cache"},
        Case{future, "version 2 (this build reads version 1)"},
        Case{"{\"format\": \"wgi-tuning\", \"version\": 1}", "no \"entries\" array"},
        Case{bad_kernel, "entry 0: 'config.kernel' is 'fast256'"},
        Case{bad_lanes, "gemv_lanes applies to gemv only"},
        Case{bad_split, "'config.split_k' must be an integer"}, Case{bad_layout, "'problem.b' is 'weird'"},
        Case{bad_op, "'op' is 'conv'"}, Case{std::string("\xff\xfe{\0", 4), "line 1, column 1"}}) {
    const auto path = dir / "bad.json";
    write(path, c.text);
    runtime::TuningCache cache = runtime::TuningCache::load(path);
    EXPECT_FALSE(cache.loaded()) << c.why;
    EXPECT_TRUE(cache.entries().empty()) << c.why;
    EXPECT_NE(cache.problem().find(c.why), std::string::npos) << cache.problem();
  }
  // A hand-written entry may leave out the measurements, and one written before the wave tail its head_rows
  // (one launch).
  write(dir / "hand.json",
        "{\"format\": \"wgi-tuning\", \"version\": 1, \"entries\": [{\"op\": \"gemm\", \"adapter\": "
        "{\"backend\": \"vulkan\", \"vendor_id\": 4318, \"device_id\": 9013, \"device\": \"NVIDIA H200\", "
        "\"driver\": \"NVIDIA 580.159.04\"}, \"kernels\": \"k1\", \"problem\": {\"m\": 196, \"n\": 3072, "
        "\"k\": 768, \"batch\": 1, \"a\": \"mk\", \"b\": \"packed\", \"a_batched\": false, \"b_batched\": "
        "false, \"splittable\": true}, \"config\": {\"kernel\": \"fast64\", \"tile_k\": 16, \"stages\": 2, "
        "\"split_k\": 2, \"gemv_lanes\": 0}}]}");
  runtime::TuningCache hand = runtime::TuningCache::load(dir / "hand.json");
  EXPECT_TRUE(hand.loaded()) << hand.problem();
  const ops::GemmTuningTable hand_table = hand.table_for(h200(), "k1");
  const GemmChoice* hand_choice = hand_table.find(problem(196, 3072, 768));
  ASSERT_NE(hand_choice, nullptr);
  EXPECT_EQ(*hand_choice, (GemmChoice{GemmKernel::Fast64, 16, 2, 2, 0, 0}));
  std::filesystem::remove_all(dir);
}

TEST(TuningCache, SaveMergesWithTheFileAndNeverOverwritesAForeignOne) {
  const auto dir = scratch_dir("save");
  const auto path = dir / "sub" / "tuning.json";  // the directory is created
  runtime::TuningCache first = runtime::TuningCache::load(path);
  first.set(entry(problem(196, 3072, 768), {GemmKernel::Fast64, 16, 2, 2, 0}));
  first.save();
  ASSERT_TRUE(std::filesystem::exists(path));
  // Another process loaded the file before `first` saved a second entry, and adds one of its own.
  runtime::TuningCache second = runtime::TuningCache::load(path);
  first.set(entry(problem(196, 768, 768), {GemmKernel::Fast64, 16, 1, 3, 0}));
  first.save();
  second.set(entry(problem(9216, 256, 256), {GemmKernel::Fast128, 16, 1, 1, 0}));
  second.save();
  runtime::TuningCache all = runtime::TuningCache::load(path);
  EXPECT_EQ(all.entries().size(), 3u);
  EXPECT_EQ(second.entries().size(), 3u);
  for (const auto& f : std::filesystem::directory_iterator(path.parent_path()))
    EXPECT_EQ(f.path().filename(), "tuning.json") << "a temporary file was left behind";

  write(path, "{\"format\": \"wgi-tuning\", \"version\": 7, \"entries\": []}");
  runtime::TuningCache foreign = runtime::TuningCache::load(path);
  foreign.set(entry(problem(8, 8, 8), {GemmKernel::Tiled, 0, 0, 1, 0}));
  try {
    foreign.save();
    FAIL() << "saved over a foreign file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not overwriting it"), std::string::npos) << e.what();
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"version\": 7"), std::string::npos);
  std::filesystem::remove_all(dir);
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(TuningCache, DefaultLocation) {
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv cache("WGI_TUNING_CACHE", "/tmp/mine.json");
    EXPECT_EQ(runtime::default_tuning_cache_path(), "/tmp/mine.json");
  }
  {
    ScopedEnv cache("WGI_TUNING_CACHE", "");
    EXPECT_TRUE(runtime::default_tuning_cache_path().empty()) << "set but empty turns the cache off";
  }
  ScopedEnv cache("WGI_TUNING_CACHE", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/var/cache/me");
    EXPECT_EQ(runtime::default_tuning_cache_path(), "/var/cache/me/wgi/tuning.json");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/ignored");
    EXPECT_EQ(runtime::default_tuning_cache_path(), "/home/someone/.cache/wgi/tuning.json");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(runtime::default_tuning_cache_path(), "/home/someone/.cache/wgi/tuning.json");
}

// ---- The planner ----

using test::model_device;

struct Planned {
  std::vector<std::string> labels;
  std::vector<ops::GemmProblemUse> uses;
  Shape constant_shape;
};

// A MatMul x [M, K] @ W [K, N] (W constant, so prepacked), planned on `caps` with `table`.
Planned plan_matmul(int64_t m, int64_t n, int64_t k, const gpu::Capabilities& caps,
                    const ops::GemmTuningTable* table, const ops::Attributes& attributes = {}) {
  Planned out;
  ops::GemmTuning tuning;
  tuning.table = table;
  tuning.observe = [&out](const ops::GemmProblemUse& use) { out.uses.push_back(use); };
  ops::NodeInfo node{"mm", "MatMul", "", 13, attributes, {}, {}};
  const Tensor weight(DType::Float32, {k, n});
  ops::PlanContext ctx{node,
                       {ops::TensorDesc{DType::Float32, {m, k}}, ops::TensorDesc{DType::Float32, {k, n}}},
                       {nullptr, &weight},
                       caps,
                       &tuning};
  const ops::OpPlan plan = ops::builtin_registry().find("", "MatMul", 13)->handler.plan(ctx);
  for (const auto& launch : plan.launches) out.labels.push_back(launch.program.label);
  if (!plan.constants.empty()) out.constant_shape = plan.constants[0].shape();  // else bound as stored
  return out;
}

TEST(GemmTuningPlanner, TakesAValidEntryIgnoresAnImpossibleOneAndAttributesWin) {
  const gpu::Capabilities h200_caps = model_device(49152, 1024);
  const gpu::Capabilities web = gpu::default_capabilities();  // 16 KiB of workgroup memory
  const GemmProblemKey key = problem(196, 3072, 768);

  // Without a table: the rules (fast64, [N, K] weight, 192 tiles -> 5 chunks of 154, one buffer).
  Planned rules = plan_matmul(196, 3072, 768, h200_caps, nullptr);
  ASSERT_EQ(rules.labels.size(), 2u);
  EXPECT_EQ(rules.labels[0], "gemm_fast64_k16s1_bnk_splitk");
  EXPECT_EQ(rules.uses.at(0).planned, (GemmChoice{GemmKernel::Fast64, 16, 1, 5, 0}));

  // A valid entry is taken: a split on the 64 tile.
  ops::GemmTuningTable table;
  table.set(key, {GemmKernel::Fast64, 16, 1, 3, 0});
  Planned tuned = plan_matmul(196, 3072, 768, h200_caps, &table);
  ASSERT_EQ(tuned.labels.size(), 2u);
  EXPECT_EQ(tuned.labels[0], "gemm_fast64_k16s1_bnk_splitk");
  EXPECT_EQ(tuned.labels[1], "gemm_split_reduce");
  ASSERT_EQ(tuned.uses.size(), 1u) << "the prepack's probe must not report";
  EXPECT_TRUE(tuned.uses[0].from_table);
  EXPECT_EQ(tuned.uses[0].problem, key);
  EXPECT_EQ(tuned.uses[0].planned, (GemmChoice{GemmKernel::Fast64, 16, 1, 3, 0}));

  // An entry for the 128 tile without a split reads the weight [K, N], as the rules would: here as stored,
  // with no prepacked copy (the 64 tile above got one, transposed to [N, K]).
  EXPECT_EQ(tuned.constant_shape, (Shape{1, 3072, 768}));
  table.set(key, {GemmKernel::Fast128, 8, 1, 1, 0});
  Planned kn = plan_matmul(196, 3072, 768, h200_caps, &table);
  EXPECT_EQ(kn.labels.at(0), "gemm_fast128_k8s1_bkn");
  EXPECT_TRUE(kn.constant_shape.empty());

  // The same entry on a device whose workgroup memory cannot hold it is ignored: the rules, and why.
  table.set(key, {GemmKernel::Fast128, 16, 2, 1, 0});
  Planned ignored = plan_matmul(196, 3072, 768, web, &table);
  EXPECT_EQ(ignored.labels.at(0), "gemm_fast64_k16s1_bnk_splitk");
  ASSERT_EQ(ignored.uses.size(), 1u);
  EXPECT_FALSE(ignored.uses[0].from_table);
  EXPECT_NE(ignored.uses[0].ignored.find("needs 33792 bytes of workgroup memory; the device allows 16384"),
            std::string::npos)
      << ignored.uses[0].ignored;
  // Entries that no device runs: gemv on 196 rows, a split on vec4.
  table.set(key, {GemmKernel::Gemv, 0, 0, 1, 32});
  EXPECT_NE(plan_matmul(196, 3072, 768, h200_caps, &table).uses.at(0).ignored.find("M <= 8"),
            std::string::npos);
  table.set(key, {GemmKernel::Vec4, 0, 0, 2, 0});
  EXPECT_NE(
      plan_matmul(196, 3072, 768, h200_caps, &table).uses.at(0).ignored.find("tiled and fast kernels only"),
      std::string::npos);

  // Attributes win over a valid entry, and the table is not consulted.
  table.set(key, {GemmKernel::Fast64, 16, 1, 3, 0});
  ops::Attributes forced;
  forced.set("wgi.kernel", std::string("vec4"));
  Planned attr = plan_matmul(196, 3072, 768, h200_caps, &table, forced);
  EXPECT_EQ(attr.labels, std::vector<std::string>{"gemm_vec4_bnk"});
  EXPECT_TRUE(attr.uses.at(0).forced);
  EXPECT_FALSE(attr.uses.at(0).from_table);
  // Any forced knob, even one the rules would pick themselves (no split), keeps the table out.
  ops::Attributes knob;
  knob.set(ops::kGemmSplitKAttribute, int64_t{1});
  EXPECT_EQ(plan_matmul(196, 3072, 768, h200_caps, &table, knob).labels,
            std::vector<std::string>{"gemm_fast64_k16s2_bnk"});
  // Another problem (other K) has no entry: the rules.
  EXPECT_EQ(plan_matmul(196, 3072, 772, h200_caps, &table).labels.at(0), "gemm_fast64_k16s1_bnk_splitk");
}

// The rules' K slab and buffers for the 128 tile: slabs of 8 with two buffers (one barrier per slab) for any
// chunk of K of at least 256, split or not, where the device holds them (measured on the H200: 4096^3 1.22x,
// 2304x512x2048 in 3 chunks 1.08x against slabs of 16 with one buffer); shorter K keeps slabs of 16.
TEST(GemmRulesBuffers, TheLargeTileRunsSlabsOf8WithTwoBuffersFromAChunkOf256) {
  const gpu::Capabilities h200_caps = model_device(49152, 1024);
  const gpu::Capabilities web = gpu::default_capabilities();  // 16 KiB: two buffers of 8 need 16896 bytes
  EXPECT_EQ(plan_matmul(4096, 4096, 4096, h200_caps, nullptr).labels.at(0), "gemm_fast128_k8s2_bkn");
  EXPECT_EQ(plan_matmul(2304, 1536, 512, h200_caps, nullptr).labels.at(0), "gemm_fast128_k8s2_bkn");
  const Planned split = plan_matmul(2304, 512, 2048, h200_caps, nullptr);
  ASSERT_EQ(split.uses.size(), 1u);
  EXPECT_EQ(split.uses[0].planned, (GemmChoice{GemmKernel::Fast128, 8, 2, 3, 0}));
  EXPECT_EQ(split.labels.at(0), "gemm_fast128_k8s2_bkn_splitk");
  EXPECT_EQ(plan_matmul(36864, 384, 128, h200_caps, nullptr).labels.at(0), "gemm_fast128_k16s1_bkn");
  EXPECT_EQ(plan_matmul(4096, 4096, 4096, web, nullptr).labels.at(0), "gemm_fast128_k8s1_bkn");
}

TEST(GemmTuningPlanner, ChoicesAreCheckedLikeForcing) {
  const gpu::Capabilities h200_caps = model_device(49152, 1024);
  const ops::GemmLaunchSpec spec = ops::gemm_problem_spec(problem(196, 768, 3072));
  std::string why;
  auto planned = ops::plan_gemm_choice(spec, {GemmKernel::Fast64, 16, 2, 6, 0}, h200_caps, true, why);
  ASSERT_TRUE(planned) << why;
  EXPECT_EQ(planned->splits, 6u);
  EXPECT_EQ(planned->config.stages, 2u);
  EXPECT_FALSE(ops::plan_gemm_choice(spec, {GemmKernel::Fast64, 16, 2, 6, 0}, h200_caps, false, why));
  EXPECT_EQ(why, "this call site does not split K");
  EXPECT_FALSE(ops::plan_gemm_choice(spec, {GemmKernel::Fast64, 8, 1, 1, 0}, h200_caps, true, why));
  EXPECT_NE(why.find("has no configuration"), std::string::npos) << why;
  EXPECT_FALSE(ops::plan_gemm_choice(spec, {GemmKernel::Tiled, 16, 0, 1, 0}, h200_caps, true, why));
  EXPECT_NE(why.find("apply to fast128 and fast64 only"), std::string::npos) << why;
  EXPECT_FALSE(
      ops::plan_gemm_choice(spec, {GemmKernel::Fast64, 16, 1, 1, 0}, model_device(16384, 128), true, why));
  EXPECT_NE(why.find("needs 256 invocations per workgroup"), std::string::npos) << why;
  // Costly barriers do not stop a tuned choice: it was measured.
  gpu::Capabilities cpu = h200_caps;
  cpu.costly_barriers = true;
  EXPECT_TRUE(ops::plan_gemm_choice(spec, {GemmKernel::Fast64, 16, 1, 1, 0}, cpu, true, why)) << why;
  EXPECT_EQ(ops::to_string(GemmChoice{GemmKernel::Fast64, 16, 2, 6, 0}), "fast64 k16 s2 split 6");
  EXPECT_EQ(ops::to_string(GemmChoice{GemmKernel::Gemv, 0, 0, 1, 32}), "gemv 32 lanes");
  // The wave tail is part of a choice: the rules' default keeps it when tuning finds nothing faster.
  const ops::GemmLaunchSpec mlp_up = ops::gemm_problem_spec(problem(1576, 3072, 768));
  const GemmChoice with_tail{GemmKernel::Fast128, 8, 2, 1, 0, 1408};
  EXPECT_EQ(runtime::default_gemm_choice(problem(1576, 3072, 768), h200_caps), with_tail);
  EXPECT_EQ(ops::to_string(with_tail), "fast128 k8 s2 head 1408");
  auto tail = ops::plan_gemm_choice(mlp_up, with_tail, h200_caps, true, why);
  ASSERT_TRUE(tail) << why;
  EXPECT_EQ(tail->head_rows, 1408u);
  auto one_launch = ops::plan_gemm_choice(mlp_up, {GemmKernel::Fast128, 8, 2, 1, 0}, h200_caps, true, why);
  ASSERT_TRUE(one_launch) << why;
  EXPECT_EQ(one_launch->head_rows, 0u);
  EXPECT_FALSE(ops::plan_gemm_choice(mlp_up, {GemmKernel::Fast128, 8, 2, 1, 0, 100}, h200_caps, true, why));
  EXPECT_NE(why.find("needs a multiple of the fast128 kernel's 128 rows"), std::string::npos) << why;
  GemmProblemKey attention = problem(32, 32, 36864, GemmBLayout::NK);
  attention.batch = 4;
  attention.a_batched = true;
  attention.b_batched = true;
  EXPECT_EQ(ops::to_string(attention), "32x32x36864 batch 4 B=[N,K]");
  EXPECT_EQ(ops::to_string(problem(196, 768, 768)), "196x768x768 B=weight");
}

// ---- Candidates ----

TEST(GemmTuningCandidates, AFewDozenTheDeviceRunsDefaultFirst) {
  const gpu::Capabilities h200_caps = model_device(49152, 1024);
  const GemmProblemKey down = problem(196, 768, 3072);
  const std::vector<GemmChoice> c = runtime::gemm_candidates(down, h200_caps);
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front(), runtime::default_gemm_choice(down, h200_caps));
  // The rules: 48 tiles -> 8 chunks of 384, one buffer for so few slabs.
  EXPECT_EQ(c.front(), (GemmChoice{GemmKernel::Fast64, 16, 1, 8, 0}));
  EXPECT_GE(c.size(), 20u);
  EXPECT_LE(c.size(), 52u);
  const ops::GemmLaunchSpec spec = ops::gemm_problem_spec(down);
  for (size_t i = 0; i < c.size(); ++i) {
    std::string why;
    EXPECT_TRUE(ops::plan_gemm_choice(spec, c[i], h200_caps, true, why))
        << ops::to_string(c[i]) << ": " << why;
    for (size_t j = 0; j < i; ++j) EXPECT_FALSE(c[i] == c[j]) << "duplicate " << ops::to_string(c[i]);
  }
  auto has = [&c](const GemmChoice& x) { return std::find(c.begin(), c.end(), x) != c.end(); };
  EXPECT_TRUE(has({GemmKernel::Fast128, 32, 1, 1, 0}));
  EXPECT_TRUE(has({GemmKernel::Fast64, 16, 1, 4, 0}));
  EXPECT_TRUE(has({GemmKernel::Fast128x64, 16, 2, 1, 0}));
  EXPECT_TRUE(has({GemmKernel::Fast128x64, 16, 1, 3, 0}));
  EXPECT_FALSE(has({GemmKernel::Fast128x64, 8, 1, 1, 0})) << "a slab of 8 does not divide 64 columns";
  EXPECT_TRUE(has({GemmKernel::Tiled, 0, 0, 1, 0}));
  EXPECT_FALSE(has({GemmKernel::Fast128, 32, 2, 1, 0})) << "67 KiB of workgroup memory: not on the H200";
  EXPECT_FALSE(has({GemmKernel::Gemv, 0, 0, 1, 32})) << "196 rows";

  // A decoder step: GEMV lane counts, no fast tiles; a call site that cannot split gets no splits.
  const std::vector<GemmChoice> step = runtime::gemm_candidates(problem(1, 768, 768), h200_caps);
  EXPECT_TRUE(std::find(step.begin(), step.end(), GemmChoice{GemmKernel::Gemv, 0, 0, 1, 256}) != step.end());
  for (const GemmChoice& x : step) EXPECT_NE(x.kernel, GemmKernel::Fast64);
  GemmProblemKey conv = problem(64, 3136, 1024, GemmBLayout::KN);
  conv.splittable = false;
  for (const GemmChoice& x : runtime::gemm_candidates(conv, h200_caps)) EXPECT_EQ(x.split_k, 1u);
  // A runtime [K, N] B: no GEMV, no vec4.
  for (const GemmChoice& x : runtime::gemm_candidates(problem(4, 64, 64, GemmBLayout::KN), h200_caps)) {
    EXPECT_NE(x.kernel, GemmKernel::Gemv);
    EXPECT_NE(x.kernel, GemmKernel::Vec4);
  }
}

TEST(GemmTuningCandidates, KernelsFingerprintIsStable) {
  const std::string f = ops::gemm_kernels_fingerprint();
  EXPECT_EQ(f.size(), 16u);
  EXPECT_EQ(f, ops::gemm_kernels_fingerprint());
}

}  // namespace
}  // namespace wgi
