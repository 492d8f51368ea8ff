// Device-resident inputs and outputs through the public API (wgi::DeviceTensor, Session::run with
// wgi::Value and RunOptions): round trips, device inputs bound in place or copied, kept outputs that later
// runs do not change, the plan cache bound and node plan reuse, and the errors a user can cause.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "core/npy.h"
#include "runtime/device_tensor.h"
#include "wgi/session.h"

namespace wgi {
namespace {

const std::filesystem::path kModels = std::filesystem::path(WGI_TEST_DATA_DIR) / "models";

Tensor random_tensor(Shape shape, uint64_t seed) {
  Tensor t(DType::Float32, std::move(shape));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.data<float>()) v = dist(rng);
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.byte_size() == b.byte_size() &&
         (a.byte_size() == 0 || std::memcmp(a.bytes().data(), b.bytes().data(), a.byte_size()) == 0);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(DeviceTensor, UploadAndDownloadRoundTripEveryType) {
  Session s = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  const Tensor f = random_tensor({3, 70}, 1);  // more than 64 elements: read back from the device
  const Tensor i64 = Tensor::from_vector<int64_t>({2, 3}, {-5, 0, 7, 2147483647, -2147483648LL, 42});
  const Tensor i32 = Tensor::from_vector<int32_t>({4}, {1, -2, 3, -4});
  const Tensor u8 = Tensor::from_vector<uint8_t>({5}, {0, 1, 128, 255, 7});
  for (const Tensor* t : {&f, &i64, &i32, &u8}) {
    DeviceTensor d = s.upload(*t);
    EXPECT_TRUE(d.valid());
    EXPECT_EQ(d.dtype(), t->dtype());
    EXPECT_EQ(d.shape(), t->shape());
    EXPECT_GE(d.device_bytes(), static_cast<uint64_t>(4 * t->element_count()));
    EXPECT_TRUE(same_bytes(d.download(), *t)) << dtype_name(t->dtype());
  }
  // Large float tensor: a download really reads the device (no host copy is kept past 64 elements).
  const Tensor big = random_tensor({1000}, 2);
  EXPECT_TRUE(same_bytes(s.upload(big).download(), big));
  EXPECT_NE(error_of([&] { s.upload(Tensor::from_vector<int64_t>({1}, {int64_t{1} << 40})); }).find("32-bit"),
            std::string::npos);
}

TEST(DeviceTensor, DeviceInputsGiveTheHostResultsWhetherBoundOrCopied) {
  Session s = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  const Tensor a = random_tensor({5, 20}, 3), b = random_tensor({5, 20}, 4);
  const Tensor want_a = s.run({{"x", a}}).at("y"), want_b = s.run({{"x", b}}).at("y");
  ASSERT_FALSE(same_bytes(want_a, want_b));
  // A new session plans with `da` bound where it is; then `da` again (nothing copied), `db` (the input moves
  // to a buffer of the plan, copied), `db` again (copy skipped), a host tensor, and `da` (copied) again.
  Session d = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  DeviceTensor da2 = d.upload(a), db2 = d.upload(b);
  const std::vector<std::pair<Value, const Tensor*>> sequence = {
      {da2, &want_a}, {da2, &want_a}, {db2, &want_b}, {db2, &want_b},
      {a, &want_a},   {da2, &want_a}, {b, &want_b}};
  for (size_t k = 0; k < sequence.size(); ++k) {
    auto out = d.run({{"x", sequence[k].first}}, RunOptions{});
    ASSERT_FALSE(out.at("y").on_device());
    EXPECT_TRUE(same_bytes(out.at("y").host(), *sequence[k].second)) << "run " << k;
  }
  EXPECT_EQ(d.stats().plans.made, 1u);
}

TEST(DeviceTensor, KeptOutputsStayUnchangedByLaterRuns) {
  Session s = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  const Tensor a = random_tensor({5, 20}, 5), b = random_tensor({5, 20}, 6);
  const Tensor want_a = s.run({{"x", a}}).at("y");
  RunOptions keep;
  keep.device_outputs = {"y"};
  auto first = s.run({{"x", a}}, keep);
  ASSERT_TRUE(first.at("y").on_device());
  const DeviceTensor kept = first.at("y").device();
  EXPECT_EQ(kept.shape(), (Shape{5, 8}));
  // Same plan, same activation buffers: the kept copy must not see these runs.
  for (int i = 0; i < 3; ++i) {
    s.run({{"x", b}});
    s.run({{"x", Value(s.upload(b))}}, keep);
  }
  EXPECT_TRUE(same_bytes(kept.download(), want_a));
  // A kept output is checked like any input (gemm_chain's output is [5, 8], its input [5, 20]).
  EXPECT_NE(error_of([&] {
              s.run({{"x", kept}}, RunOptions{});
            }).find("dim 1 must be 20"),
            std::string::npos);
}

TEST(DeviceTensor, StartedDownloadsGiveTheTensorWithWorkSubmittedInBetween) {
  Session s = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  const Tensor a = random_tensor({5, 20}, 15), b = random_tensor({5, 20}, 16);
  const Tensor want_a = s.run({{"x", a}}).at("y"), want_b = s.run({{"x", b}}).at("y");
  RunOptions keep;
  keep.device_outputs = {"y"};
  const DeviceTensor ya = s.run({{"x", a}}, keep).at("y").device();
  ya.start_download();
  ya.start_download();  // already started: nothing more
  // More work submitted after the start (runs that download nothing), one of them downloading its own.
  const DeviceTensor yb = s.run({{"x", b}}, keep).at("y").device();
  yb.start_download();
  s.run({{"x", Value(s.upload(a))}}, keep);
  EXPECT_TRUE(same_bytes(yb.download(), want_b));
  EXPECT_TRUE(same_bytes(ya.download(), want_a));
  EXPECT_TRUE(same_bytes(ya.download(), want_a));  // again, without a started download
  // Released with a download in flight: the copy is waited for, the memory pooled.
  const DeviceTensor released = s.run({{"x", b}}, keep).at("y").device();
  released.start_download();
  DeviceTensor(released).release();
  EXPECT_NE(error_of([&] { released.download(); }).find("was released"), std::string::npos);
  EXPECT_NE(error_of([&] { released.start_download(); }).find("was released"), std::string::npos);
  // Small tensors keep their value on the host: starting a download changes nothing.
  const DeviceTensor small = s.upload(Tensor::from_vector<float>({2}, {1.5f, -2.0f}));
  small.start_download();
  EXPECT_EQ(small.download().data<float>()[1], -2.0f);
}

TEST(DeviceTensor, AllOutputsOnDeviceAndHandlesOutliveTheSession) {
  DeviceTensor kept;
  Tensor want;
  {
    Session s = Session::from_file(kModels / "odd_names" / "model.onnx");
    const Tensor x = random_tensor({2, 3}, 7);
    auto host = s.run({{"in:0", x}});
    RunOptions all;
    all.all_outputs_on_device = true;
    auto out = s.run({{"in:0", x}}, all);
    ASSERT_EQ(out.size(), 2u);
    for (const auto& [name, value] : out) {
      ASSERT_TRUE(value.on_device()) << name;
      EXPECT_TRUE(same_bytes(value.to_host(), host.at(name))) << name;
    }
    s.synchronize();
    kept = out.at("neg output").device();
    want = host.at("neg output");
    EXPECT_GT(s.stats().memory.device_tensor_bytes, 0u);
  }
  EXPECT_TRUE(kept.valid());
  EXPECT_TRUE(same_bytes(kept.download(), want));
}

TEST(DeviceTensor, ReleaseFreesForEveryCopyAndPoolsTheMemory) {
  Session s = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  const Tensor x = random_tensor({5, 20}, 8);
  const uint64_t before = s.stats().memory.device_tensor_bytes;
  DeviceTensor d = s.upload(x);
  DeviceTensor copy = d;
  EXPECT_TRUE(copy.same_as(d));
  EXPECT_GT(s.stats().memory.device_tensor_bytes, before);
  const uint64_t created = s.stats().device.buffers_created;
  copy.release();
  EXPECT_FALSE(d.valid());
  EXPECT_EQ(d.device_bytes(), 0u);
  EXPECT_EQ(d.shape(), x.shape()) << "the description stays readable";
  EXPECT_EQ(s.stats().memory.device_tensor_bytes, before);
  EXPECT_NE(error_of([&] { d.download(); }).find("was released"), std::string::npos);
  d.release();  // harmless
  // The released buffer is reused for a tensor of the same size class.
  DeviceTensor again = s.upload(random_tensor({5, 20}, 9));
  EXPECT_EQ(s.stats().device.buffers_created, created);
  EXPECT_EQ(runtime::pooled_size_class(400), 416u);  // steps of 256 / 8 from 256 to 512
  EXPECT_EQ(runtime::pooled_size_class(4096), 4096u);
  EXPECT_EQ(runtime::pooled_size_class(4097), 4608u);
  EXPECT_EQ(runtime::pooled_size_class(1), 256u);
}

TEST(DeviceTensor, ErrorsNameTheInputAndWhatIsWrong) {
  Session s = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  Session other = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  const Tensor x = random_tensor({5, 20}, 10);
  auto run = [&](Value v) { return error_of([&] { s.run({{"x", std::move(v)}}, RunOptions{}); }); };

  DeviceTensor released = s.upload(x);
  released.release();
  EXPECT_EQ(run(released), "input 'x': its DeviceTensor [5, 20] was released");
  EXPECT_EQ(
      run(other.upload(x)),
      "input 'x': its DeviceTensor belongs to a session on another device (sessions share DeviceTensors "
      "only when made on one wgi::Environment: download it, or upload it with this session)");
  EXPECT_EQ(run(DeviceTensor()), "input 'x' is an empty DeviceTensor (default-constructed or moved from)");
  EXPECT_EQ(run(s.upload(Tensor::from_vector<int32_t>({5, 20}, std::vector<int32_t>(100, 1)))),
            "input 'x' has type int32; the model expects float32");
  EXPECT_EQ(run(s.upload(random_tensor({100}, 11))),
            "input 'x' has shape [100] (rank 1); the model expects rank 2");
  EXPECT_EQ(run(s.upload(random_tensor({5, 21}, 12))), "input 'x' has shape [5, 21]; dim 1 must be 20");
  EXPECT_EQ(error_of([&] {
              s.run({{"x", Value(x)}, {"nope", Value(x)}}, RunOptions{});
            }),
            "the model has no input 'nope' (its inputs: x)");
  RunOptions bad;
  bad.device_outputs = {"z"};
  EXPECT_EQ(error_of([&] {
              s.run({{"x", Value(x)}}, bad);
            }),
            "RunOptions::device_outputs names 'z', which is not an output of the model (its outputs: y)");
  EXPECT_EQ(error_of([] { Value(Tensor()).device(); }), "the value is a host Tensor, not a DeviceTensor");
  EXPECT_NE(error_of([&] { Value(s.upload(x)).host(); }).find("not a host Tensor"), std::string::npos);
  EXPECT_NE(error_of([] { DeviceTensor().shape(); }).find("empty DeviceTensor"), std::string::npos);
  SessionOptions zero;
  zero.max_cached_plans = 0;
  EXPECT_EQ(error_of([&] { Session::from_file(kModels / "gemm_chain" / "model.onnx", zero); }),
            "SessionOptions::max_cached_plans must be at least 1");
  // Nothing above broke the session.
  EXPECT_EQ(s.run({{"x", Value(s.upload(x))}}, RunOptions{}).at("y").host().shape(), (Shape{5, 8}));
}

// tiny_transformer has symbolic batch and token dims: every token count is a new signature (and new node
// plans for every node, whose inputs all have a token dim).
TEST(DeviceTensor, PlanCacheKeepsAtMostItsCapacity) {
  // Full plans only (some of these token counts would respecialize: tests/gpu/test_plan_respecialize.cpp).
  SessionOptions options;
  options.max_cached_plans = 2;
  options.respecialize_plans = false;
  SessionOptions defaults;
  defaults.respecialize_plans = false;
  Session s = Session::from_file(kModels / "tiny_transformer_opset17" / "model.onnx", options);
  Session reference = Session::from_file(kModels / "tiny_transformer_opset17" / "model.onnx", defaults);
  std::vector<Tensor> first_results;
  const std::vector<int64_t> tokens = {3, 4, 5, 6, 3, 7, 4};
  for (size_t k = 0; k < tokens.size(); ++k) {
    const Tensor x = random_tensor({1, tokens[k], 16}, 100 + static_cast<uint64_t>(tokens[k]));
    const Tensor y = s.run({{"x", x}}).at("y");
    EXPECT_LE(s.stats().plans.cached, 2u);
    EXPECT_TRUE(same_bytes(y, reference.run({{"x", x}}).at("y"))) << "tokens " << tokens[k];
  }
  // Capacity 2: every run is a new plan (3 and 4 come back after eviction). The default capacity (4) keeps 3
  // (used again before 7 evicts 4), then plans 4 again: 6 plans.
  EXPECT_EQ(s.stats().plans.made, 7u);
  EXPECT_EQ(s.stats().plans.cached, 2u);
  EXPECT_EQ(reference.stats().plans.made, 6u);
  EXPECT_EQ(reference.stats().plans.cached, 4u);
}

TEST(DeviceTensor, PlansForOtherShapesShareIdenticalPrepackedWeights) {
  // tiny_transformer's projections prepack their weights; 3 and 4 tokens plan them separately (their inputs
  // differ) into the same bytes, which the session then holds once. (Full plans: 4 tokens would otherwise
  // respecialize 3's plan.)
  SessionOptions options;
  options.respecialize_plans = false;
  Session s = Session::from_file(kModels / "tiny_transformer_opset17" / "model.onnx", options);
  s.run({{"x", random_tensor({1, 3, 16}, 20)}});
  const uint64_t one_plan = s.stats().memory.weight_bytes;
  s.run({{"x", random_tensor({1, 4, 16}, 21)}});
  EXPECT_EQ(s.stats().plans.made, 2u);
  EXPECT_EQ(s.stats().last_plan.reused_nodes, 0u);
  EXPECT_EQ(s.stats().memory.weight_bytes, one_plan);
}

}  // namespace
}  // namespace wgi
