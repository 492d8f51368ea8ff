// The device layer on a real adapter: selection, the ABI between our webgpu.h and the Dawn library, buffers,
// the pipeline cache, grid folding, and errors becoming exceptions.
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "gpu/commands.h"
#include "gpu/dispatch_grid.h"
#include "gpu/pipeline_cache.h"
#include "gpu/profiler.h"
#include "gpu/uniform.h"
#include "kernels/wgsl_library.h"
#include "support/test_device.h"
#include "wgi/error.h"

namespace wgi::gpu {
namespace {

using test::device;

template <class T>
std::vector<T> download_vector(Device& d, const Buffer& b, size_t count) {
  std::vector<T> out(count);
  d.download(b, 0, std::as_writable_bytes(std::span<T>(out)));
  return out;
}

template <class T>
Buffer upload_vector(Device& d, const std::vector<T>& v, const char* label) {
  Buffer b = d.create_buffer(v.size() * sizeof(T), label);
  d.upload(b, 0, std::as_bytes(std::span<const T>(v)));
  return b;
}

bool is_power_of_two(uint64_t v) {
  return v && !(v & (v - 1));
}

TEST(Device, SelectsARealBackendNeverNull) {
  Device& d = device();
  const auto& info = d.adapter_info();
  EXPECT_TRUE(info.backend == "Vulkan" || info.backend == "OpenGLES") << info.backend;
  EXPECT_EQ(info.compatibility_mode, d.backend() == BackendKind::Gles);
  ASSERT_FALSE(d.selection_log().empty());
  EXPECT_TRUE(d.selection_log().back().accepted);
}

// If our header's WGPULimits layout differed from the library's, these fields would hold each other's values.
TEST(DeviceAbi, LimitsReadBackSanely) {
  const Limits& l = device().limits();
  EXPECT_GE(l.max_compute_invocations_per_workgroup, 128u);
  EXPECT_LE(l.max_compute_invocations_per_workgroup, 4096u);
  EXPECT_GE(l.max_compute_workgroup_size_x, 128u);
  EXPECT_LE(l.max_compute_workgroup_size_x, l.max_compute_invocations_per_workgroup);
  EXPECT_GE(l.max_compute_workgroup_size_z, 1u);
  EXPECT_LE(l.max_compute_workgroup_size_z, l.max_compute_workgroup_size_x);
  EXPECT_GE(l.max_compute_workgroups_per_dimension, 65535u);
  EXPECT_LT(l.max_compute_workgroups_per_dimension, 1u << 31);
  EXPECT_GE(l.max_compute_workgroup_storage_size, 16384u);
  EXPECT_LE(l.max_compute_workgroup_storage_size, 1u << 20);
  EXPECT_GE(l.max_storage_buffer_binding_size, 128ull << 20);
  EXPECT_LE(l.max_storage_buffer_binding_size, l.max_buffer_size);
  EXPECT_GE(l.max_uniform_buffer_binding_size, 16384u);
  EXPECT_TRUE(is_power_of_two(l.min_storage_buffer_offset_alignment));
  EXPECT_LE(l.min_storage_buffer_offset_alignment, 256u);
  EXPECT_TRUE(is_power_of_two(l.min_uniform_buffer_offset_alignment));
  EXPECT_GE(l.max_bind_groups, 4u);
  EXPECT_LE(l.max_bind_groups, 64u);
  EXPECT_GE(l.max_storage_buffers_per_shader_stage, 4u);
  EXPECT_LE(l.max_storage_buffers_per_shader_stage, 1u << 20);
}

// HasFeature must agree with the enumerated list, and core adapters must list core-features-and-limits: with
// the library's feature numbering wrong (src/gpu/webgpu_abi.h) these names come out shifted.
TEST(DeviceAbi, FeatureNamesFollowTheLibrarysNumbering) {
  Device& d = device();
  const auto& names = d.granted_feature_names();
  auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  EXPECT_EQ(d.features().shader_f16, has("shader-f16"));
  EXPECT_EQ(d.features().subgroups, has("subgroups"));
  EXPECT_EQ(d.features().timestamp_query, has("timestamp-query"));
  EXPECT_EQ(has("core-features-and-limits"), !d.adapter_info().compatibility_mode);
  if (d.backend() == BackendKind::SwiftShader) {
    // What this SwiftShader offers through this Dawn (measured): timestamps and subgroups, no shader-f16.
    EXPECT_TRUE(d.features().timestamp_query);
    EXPECT_TRUE(d.features().subgroups);
    EXPECT_FALSE(d.features().shader_f16);
  }
}

// Each optional feature wgi asks for is checked by what it enables, not by its number.
TEST(DeviceAbi, GrantedFeaturesDoWhatTheyAreNamed) {
  Device& d = device();
  Buffer out = d.create_buffer(16, "feature_out");
  auto run_probe = [&](const char* label, const std::string& wgsl) {
    ProgramSource p;
    p.label = label;
    p.wgsl = wgsl;
    p.bindings = {BindingKind::Storage};
    BufferSlice slices[] = {{&out}};
    BoundDispatch dispatch = bind_dispatch(d, d.pipelines().get(p), slices, {}, {1, 1, 1});
    CommandBatch batch(d);
    batch.dispatch(dispatch);
    batch.submit();
    return download_vector<uint32_t>(d, out, 1)[0];
  };
  if (d.features().subgroups) {
    uint32_t size =
        run_probe("probe_subgroups",
                  "enable subgroups;\n"
                  "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
                  "@compute @workgroup_size(64) fn main(@builtin(local_invocation_index) i: u32) {\n"
                  "  let n = subgroupAdd(1u);\n"
                  "  if (i == 0u) { o[0] = n; }\n}\n");
    EXPECT_GE(size, std::max(1u, d.adapter_info().subgroup_min_size));
    EXPECT_LE(size, std::max(64u, d.adapter_info().subgroup_max_size));
  }
  if (d.features().shader_f16) {
    uint32_t bits = run_probe("probe_f16",
                              "enable f16;\n"
                              "@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n"
                              "@compute @workgroup_size(1) fn main() { o[0] = f32(f16(1.5) * f16(2.0)); }\n");
    float v;
    std::memcpy(&v, &bits, 4);
    EXPECT_EQ(v, 3.0f);
  }
  if (d.features().timestamp_query) {
    TimestampProfiler profiler(d, 1);
    ProgramSource p;
    p.label = "probe_timestamps";
    p.wgsl =
        "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
        "@compute @workgroup_size(1) fn main() { o[0] = 7u; }\n";
    p.bindings = {BindingKind::Storage};
    BufferSlice slices[] = {{&out}};
    BoundDispatch dispatch = bind_dispatch(d, d.pipelines().get(p), slices, {}, {1, 1, 1});
    CommandBatch batch(d);
    batch.dispatch_timed(dispatch, profiler, 0);
    batch.submit();
    std::vector<double> ms = profiler.read(1);
    ASSERT_EQ(ms.size(), 1u);
    EXPECT_GE(ms[0], 0.0);
    EXPECT_LT(ms[0], 1000.0);
    EXPECT_EQ(download_vector<uint32_t>(d, out, 1)[0], 7u);
  }
  EXPECT_NO_THROW(d.check_errors());
}

// Dawn's timestamp quantisation is off on wgi's devices (device.cpp): durations of a loop-heavy kernel are
// not all multiples of 65.536 µs, as every one of them was with it on.
TEST(Device, TimestampsAreNotQuantised) {
  Device& d = test::device();
  if (!d.features().timestamp_query) GTEST_SKIP() << "the adapter has no timestamp queries";
  constexpr uint32_t kRuns = 6;
  TimestampProfiler profiler(d, kRuns);
  ProgramSource p;
  p.label = "probe_timestamp_resolution";
  p.wgsl =
      "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
      "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
      "  var x = g.x;\n"
      "  for (var i = 0u; i < 2000u; i++) { x = x * 1664525u + 1013904223u; }\n"
      "  o[g.x] = x;\n}\n";
  p.bindings = {BindingKind::Storage};
  Buffer out = d.create_buffer(64 * 64 * 4, "timestamp_probe_out");
  BufferSlice slices[] = {{&out}};
  BoundDispatch dispatch = bind_dispatch(d, d.pipelines().get(p), slices, {}, {64, 1, 1});
  CommandBatch batch(d);
  for (uint32_t i = 0; i < kRuns; ++i) batch.dispatch_timed(dispatch, profiler, i);
  batch.submit();
  const std::vector<double> ms = profiler.read(kRuns);
  ASSERT_EQ(ms.size(), kRuns);
  int unquantised = 0;
  for (double t : ms) {
    const auto ns = static_cast<int64_t>(std::llround(t * 1e6));
    unquantised += ns % 65536 != 0;
  }
  EXPECT_GT(unquantised, 0) << "every duration is a multiple of 65536 ns: Dawn still quantises timestamps";
}

constexpr const char* kRoundTripWgsl = R"(
struct Params { count: u32, scale: f32, offset: f32, _pad: u32 }
@group(0) @binding(0) var<storage, read> in_u: array<u32>;
@group(0) @binding(1) var<storage, read> in_f: array<f32>;
@group(0) @binding(2) var<storage, read_write> out_u: array<u32>;
@group(0) @binding(3) var<storage, read_write> out_f: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;
override WG_SIZE: u32 = 64;
#include "common/dispatch_grid.wgsl"
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= params.count) { return; }
  out_u[i] = in_u[i] * 3u + i;
  out_f[i] = in_f[i] * params.scale + params.offset;
}
)";

ProgramSource round_trip_program(uint32_t workgroup_size) {
  ProgramSource p;
  p.label = "test_round_trip";
  p.wgsl = kernels::preprocess_wgsl("test_round_trip", kRoundTripWgsl, {});
  p.constants = {{"WG_SIZE", workgroup_size}};
  p.bindings = {BindingKind::ReadOnlyStorage, BindingKind::ReadOnlyStorage, BindingKind::Storage,
                BindingKind::Storage, BindingKind::Uniform};
  return p;
}

// A compute round trip with exactly representable results: any struct or enum mismatch in the dispatch path
// (bind groups, uniforms, override constants, copies, mapping) shows up as a wrong value.
// A kernel's results through `d`: exact, and nothing written past the end.
void expect_exact_round_trip(Device& d) {
  const uint32_t n = 1000;  // not a multiple of the workgroup size: the bounds guard matters
  std::vector<uint32_t> in_u(n);
  std::vector<float> in_f(n);
  for (uint32_t i = 0; i < n; ++i) {
    in_u[i] = i * 7 + 1;
    in_f[i] = static_cast<float>(i) - 500.0f;
  }
  Buffer bu = upload_vector(d, in_u, "in_u");
  Buffer bf = upload_vector(d, in_f, "in_f");
  Buffer ou = upload_vector(d, std::vector<uint32_t>(n + 4, 0xDEADBEEF), "out_u");  // poisoned, incl. a tail
  Buffer of = upload_vector(d, std::vector<float>(n, -1.0f), "out_f");
  const ComputePipeline& pipeline = d.pipelines().get(round_trip_program(64));
  DispatchGrid grid = compute_dispatch_grid(n, 64, d.limits());
  auto uniform = UniformBuilder().u32(n).f32(0.5f).f32(2.0f).u32(0).bytes();
  BufferSlice slices[] = {{&bu}, {&bf}, {&ou}, {&of}};
  BoundDispatch dispatch = bind_dispatch(d, pipeline, slices, uniform, grid.groups);
  CommandBatch batch(d);
  batch.dispatch(dispatch);
  batch.submit();
  auto got_u = download_vector<uint32_t>(d, ou, n + 4);
  auto got_f = download_vector<float>(d, of, n);
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(got_u[i], in_u[i] * 3 + i) << i;
    ASSERT_EQ(got_f[i], in_f[i] * 0.5f + 2.0f) << i;
  }
  for (uint32_t i = n; i < n + 4; ++i) EXPECT_EQ(got_u[i], 0xDEADBEEFu) << "wrote past the end at " << i;
}

TEST(DeviceAbi, ComputeRoundTripIsExact) {
  expect_exact_round_trip(device());
}

// Native devices run without Dawn's index clamps and workgroup-memory zeroing unless asked
// (docs/robustness_audit.md); a device that keeps them runs the same kernels to the same results.
TEST(Device, ShaderRobustnessIsOffUnlessAsked) {
  const char* env = std::getenv("WGI_SHADER_ROBUSTNESS");
  const bool asked_by_env = env != nullptr && std::string_view(env) == "1";
  EXPECT_EQ(device().shader_robustness(), asked_by_env);
  DeviceOptions options;
  options.backend = device().backend();
  options.shader_robustness = true;
  auto robust = Device::create(options);
  EXPECT_TRUE(robust->shader_robustness());
  expect_exact_round_trip(*robust);
}

TEST(Device, DownloadsUnalignedRanges) {
  Device& d = device();
  std::vector<uint8_t> bytes(64);
  std::iota(bytes.begin(), bytes.end(), 1);
  Buffer b = upload_vector(d, bytes, "bytes");
  std::vector<std::byte> out(13);
  d.download(b, 5, out);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(static_cast<uint8_t>(out[i]), bytes[5 + i]);
  EXPECT_THROW(d.download(b, 60, out), Error);
}

TEST(PipelineCache, ReusesIdenticalProgramsAndKeysOnConstants) {
  Device& d = device();
  size_t misses = d.pipelines().misses();
  size_t hits = d.pipelines().hits();
  const ComputePipeline& a = d.pipelines().get(round_trip_program(32));
  ProgramSource renamed = round_trip_program(32);
  renamed.label = "same text, other label";
  const ComputePipeline& b = d.pipelines().get(renamed);
  EXPECT_EQ(&a, &b);
  const ComputePipeline& c = d.pipelines().get(round_trip_program(16));
  EXPECT_NE(&a, &c);
  EXPECT_EQ(d.pipelines().misses() - misses, 2u);
  EXPECT_EQ(d.pipelines().hits() - hits, 1u);
}

TEST(PipelineCache, PrefetchCreatesEveryMissingProgramOnce) {
  Device& d = device();
  ProgramSource a = round_trip_program(8), b = round_trip_program(4), a_again = round_trip_program(8);
  const ProgramSource* programs[] = {&a, &b, &a_again};
  const size_t before = d.pipelines().size();
  d.pipelines().prefetch(programs);
  EXPECT_EQ(d.pipelines().size(), before + 2);
  const size_t hits = d.pipelines().hits();
  const ComputePipeline& pa = d.pipelines().get(a);
  EXPECT_EQ(d.pipelines().hits(), hits + 1) << "a prefetched program must be a cache hit";
  EXPECT_EQ(&pa, &d.pipelines().get(a_again));
  // A broken program among good ones: the error names it, the good ones are still created.
  ProgramSource broken = round_trip_program(2);
  broken.label = "broken_prefetch";
  broken.wgsl = broken.wgsl.str() + "\nfn oops() -> u32 { return nope; }\n";
  ProgramSource good = round_trip_program(16);
  const ProgramSource* mixed[] = {&broken, &good};
  try {
    d.pipelines().prefetch(mixed);
    FAIL() << "expected a compile error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken_prefetch"), std::string::npos) << e.what();
  }
  const size_t hits2 = d.pipelines().hits();
  d.pipelines().get(good);
  EXPECT_EQ(d.pipelines().hits(), hits2 + 1);
  EXPECT_NO_THROW(d.check_errors());
}

TEST(PipelineCache, InvalidWgslNamesKernelAndLine) {
  ProgramSource p;
  p.label = "broken_kernel";
  p.wgsl =
      "@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n"
      "@compute @workgroup_size(1)\n"
      "fn main() {\n"
      "  o[0] = undefined_name;\n"
      "}\n";
  p.bindings = {BindingKind::Storage};
  try {
    device().pipelines().get(p);
    FAIL() << "expected a compile error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("broken_kernel"), std::string::npos) << msg;
    EXPECT_NE(msg.find("line 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("undefined_name"), std::string::npos) << msg;
  }
  // The device stays usable after a failed pipeline.
  EXPECT_NO_THROW(device().check_errors());
}

// A 70000x1 grid exceeds 65535 workgroups per dimension: folded into 2-D, every index visited exactly once.
TEST(DispatchGrid, FoldedGridVisitsEveryIndexOnce) {
  Device& d = device();
  const char* wgsl = R"(
@group(0) @binding(0) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(1) var<uniform> total: vec4<u32>;
override WG_SIZE: u32 = 1;
#include "common/dispatch_grid.wgsl"
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_invocation_index(wid, nwg, lid, WG_SIZE);
  if (i >= total.x) { return; }
  atomicAdd(&counts[i], 1u);
}
)";
  for (auto [invocations, wg] : {std::pair<uint32_t, uint32_t>{70000, 1}, {131073, 1}, {70000 * 3 + 5, 3}}) {
    ProgramSource p;
    p.label = "test_visit_count";
    p.wgsl = kernels::preprocess_wgsl("test_visit_count", wgsl, {});
    p.bindings = {BindingKind::Storage, BindingKind::Uniform};
    DispatchGrid grid = compute_dispatch_grid(invocations, wg, d.limits());
    p.constants = {{"WG_SIZE", grid.workgroup_size}};
    ASSERT_GT(grid.groups.y, 1u) << "the case must actually fold";
    Buffer counts = upload_vector(d, std::vector<uint32_t>(invocations, 0), "counts");
    auto uniform = UniformBuilder().vec4u({invocations, 0, 0, 0}).bytes();
    BufferSlice slices[] = {{&counts}};
    BoundDispatch dispatch = bind_dispatch(d, d.pipelines().get(p), slices, uniform, grid.groups);
    CommandBatch batch(d);
    batch.dispatch(dispatch);
    batch.submit();
    auto got = download_vector<uint32_t>(d, counts, invocations);
    size_t wrong = 0;
    for (uint32_t i = 0; i < invocations; ++i) wrong += got[i] != 1;
    EXPECT_EQ(wrong, 0u) << invocations << " invocations, grid " << grid.groups.x << "x" << grid.groups.y
                         << "x" << grid.groups.z;
  }
}

TEST(DeviceErrors, BindingMistakesAreCaughtBeforeWebGpu) {
  Device& d = device();
  const ComputePipeline& pipeline = d.pipelines().get(round_trip_program(64));
  Buffer b = d.create_buffer(64, "b");
  BufferSlice too_few[] = {{&b}, {&b}};
  auto uniform = UniformBuilder().u32(1).bytes();
  try {
    bind_dispatch(d, pipeline, too_few, uniform, {1, 1, 1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("takes 4 storage bindings, got 2"), std::string::npos) << e.what();
  }
  BufferSlice misaligned[] = {{&b, 4, 16}, {&b}, {&b}, {&b}};
  EXPECT_THROW(bind_dispatch(d, pipeline, misaligned, uniform, {1, 1, 1}), Error);
  BufferSlice ok[] = {{&b}, {&b}, {&b}, {&b}};
  EXPECT_THROW(
      bind_dispatch(d, pipeline, ok, uniform, {d.limits().max_compute_workgroups_per_dimension + 1, 1, 1}),
      Error);
}

// A mistake only WebGPU's validation sees (one buffer bound both read-only and writable in the same dispatch)
// becomes an exception carrying Dawn's message, and the device stays usable.
TEST(DeviceErrors, WebGpuValidationErrorsBecomeExceptions) {
  Device& d = device();
  const ComputePipeline& pipeline = d.pipelines().get(round_trip_program(64));
  Buffer b = d.create_buffer(4096, "aliased");
  BufferSlice aliased[] = {{&b}, {&b}, {&b}, {&b}};
  auto uniform = UniformBuilder().u32(16).f32(1).f32(0).u32(0).bytes();
  try {
    BoundDispatch dispatch = bind_dispatch(d, pipeline, aliased, uniform, {1, 1, 1});
    CommandBatch batch(d);
    batch.dispatch(dispatch);
    batch.submit();
    d.wait_idle();
    FAIL() << "aliasing writable storage bindings must be a validation error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("WebGPU"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(d.check_errors());
  EXPECT_NO_THROW(d.wait_idle());
}

TEST(Device, RefusesBuffersPastTheDeviceLimit) {
  Device& d = device();
  try {
    d.create_buffer(d.limits().max_buffer_size + 1, "huge");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("maxBufferSize"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wgi::gpu
