// wgi::Environment (include/wgi/environment.h): sessions on one Environment share its device and compiled
// pipelines. Their results must be bit-identical to those of sessions with devices of their own (the same
// kernels on the same adapter), and right against the models' float64 references; a second session of the
// same model compiles no pipeline; the device lives as long as any session or handle, in any order; a
// DeviceTensor of one session is an input of the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "core/npy.h"
#include "support/model_reference.h"
#include "support/tensor_check.h"
#include "wgi/environment.h"
#include "wgi/session.h"

namespace wgi {
namespace {

const std::filesystem::path kModels = std::filesystem::path(WGI_TEST_DATA_DIR) / "models";

// Two small models, each with one input and one output: a GEMM chain and a conv net (batch 2, 3x3 convs).
struct ModelCase {
  std::string model, input, output, input_file, expected_file;
  int64_t terms;  // the longest dot product, for the fp32 tolerance
};
const ModelCase kGemmChain{"gemm_chain", "x", "y", "input_x.npy", "expected_y.npy", 24};
const ModelCase kConvNet{
    "conv_bn_relu", "image", "probabilities", "input_image.npy", "expected_probabilities.npy", 8 * 9};

Tensor run(Session& session, const ModelCase& c) {
  return session.run({{c.input, npy::load(kModels / c.model / c.input_file)}}).at(c.output);
}

::testing::AssertionResult matches_reference(const Tensor& got, const ModelCase& c) {
  const test::Float64Array want = test::load_float64_npy(kModels / c.model / c.expected_file);
  return test::all_close(got, want.shape, want.values, test::fp32_tolerance(c.terms));
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end());
}

std::filesystem::path model_file(const ModelCase& c) {
  return kModels / c.model / "model.onnx";
}

TEST(Environment, SharedSessionsMatchSeparateOnesBitForBit) {
  Session gemm_alone = Session::from_file(model_file(kGemmChain));
  Session conv_alone = Session::from_file(model_file(kConvNet));
  const Tensor gemm_want = run(gemm_alone, kGemmChain), conv_want = run(conv_alone, kConvNet);
  ASSERT_TRUE(matches_reference(gemm_want, kGemmChain));
  ASSERT_TRUE(matches_reference(conv_want, kConvNet));

  Environment env = Environment::create();
  Session gemm = Session::from_file(model_file(kGemmChain), env);
  Session conv = Session::from_file(model_file(kConvNet), env);
  EXPECT_EQ(gemm.adapter_description(), gemm_alone.adapter_description());
  EXPECT_TRUE(same_bytes(run(gemm, kGemmChain), gemm_want));
  EXPECT_TRUE(same_bytes(run(conv, kConvNet), conv_want));
  // Interleaved with the other session's runs and plans: still the same bytes.
  EXPECT_TRUE(same_bytes(run(gemm, kGemmChain), gemm_want));
  EXPECT_EQ(gemm.stats().plans.made, 1u);
  EXPECT_EQ(env.pipelines(), gemm.stats().device.pipelines_compiled + conv.stats().device.pipelines_compiled);
  EXPECT_EQ(gemm.stats().device.pipelines, env.pipelines())
      << "SessionStats::device.pipelines counts the device's";
}

TEST(Environment, DeviceTensorsPassBetweenItsSessions) {
  const Tensor x = npy::load(kModels / kGemmChain.model / kGemmChain.input_file);
  Environment env = Environment::create();
  Session b = Session::from_file(model_file(kGemmChain), env);
  const Tensor want = run(b, kGemmChain);
  ASSERT_TRUE(matches_reference(want, kGemmChain));
  DeviceTensor from_a, gathered;
  {
    Session a = Session::from_file(model_file(kGemmChain), env);
    from_a = a.upload(x);
    RunOptions keep;
    keep.device_outputs = {kGemmChain.output};
    // a's upload as b's input, b's kept output downloaded; rows of a's tensor gathered by b.
    const DeviceTensor y = b.run({{kGemmChain.input, from_a}}, keep).at(kGemmChain.output).device();
    EXPECT_TRUE(same_bytes(y.download(), want));
    gathered = b.gather_rows(from_a, std::vector<int64_t>{1, 0});
  }
  // The handle outlives the session that made it and still feeds the other.
  EXPECT_TRUE(
      same_bytes(b.run({{kGemmChain.input, from_a}}, RunOptions{}).at(kGemmChain.output).host(), want));
  const Tensor rows = gathered.download();
  const size_t row_bytes = x.byte_size() / static_cast<size_t>(x.shape()[0]);
  EXPECT_TRUE(std::equal(rows.bytes().begin(), rows.bytes().begin() + static_cast<std::ptrdiff_t>(row_bytes),
                         x.bytes().begin() + static_cast<std::ptrdiff_t>(row_bytes)));
}

TEST(Environment, SessionsMadeOneAfterAnotherEachGetADevice) {
  // Each session without an Environment makes and drops a device of its own. On the NVIDIA driver the
  // process ran out of static TLS after a few dozen (the driver unloaded and loaded again each time) and
  // found no adapter; wgi keeps the driver loaded (gpu/device.cpp, keep_driver_loaded). 40 in a row, each
  // correct.
  const Tensor x = npy::load(kModels / kGemmChain.model / kGemmChain.input_file);
  for (int i = 0; i < 40; ++i) {
    SCOPED_TRACE("session " + std::to_string(i));
    Session s = Session::from_file(model_file(kGemmChain));
    ASSERT_TRUE(matches_reference(s.run({{kGemmChain.input, x}}).at(kGemmChain.output), kGemmChain));
  }
}

TEST(Environment, ASecondSessionOfTheSameModelCompilesNoPipeline) {
  Environment env = Environment::create();
  Session first = Session::from_file(model_file(kConvNet), env);
  const Tensor want = run(first, kConvNet);
  EXPECT_TRUE(matches_reference(want, kConvNet));
  EXPECT_GT(first.stats().device.pipelines_compiled, 0u);
  EXPECT_EQ(first.stats().device.pipelines_compiled, env.pipelines());
  const size_t compiled = env.pipelines();

  Session second = Session::from_file(model_file(kConvNet), env);
  EXPECT_EQ(second.stats().load.device_ms, 0.0) << "no device of its own";
  EXPECT_TRUE(same_bytes(run(second, kConvNet), want));
  EXPECT_EQ(second.stats().plans.made, 1u);
  EXPECT_EQ(second.stats().device.pipelines_compiled, 0u);
  EXPECT_EQ(env.pipelines(), compiled);
}

TEST(Environment, SessionsOutliveEachOtherInEitherOrder) {
  for (const bool first_goes_first : {true, false}) {
    SCOPED_TRACE(first_goes_first ? "first session destroyed first" : "second session destroyed first");
    Environment env = Environment::create();
    std::optional<Session> first = Session::from_file(model_file(kGemmChain), env);
    std::optional<Session> second = Session::from_file(model_file(kGemmChain), env);
    const Tensor want = run(*first, kGemmChain);
    EXPECT_TRUE(matches_reference(want, kGemmChain));
    // The session left runs on, its plan and weights untouched by the other's destruction.
    std::optional<Session>& gone = first_goes_first ? first : second;
    std::optional<Session>& kept = first_goes_first ? second : first;
    const Tensor before = run(*kept, kGemmChain);
    gone.reset();
    EXPECT_TRUE(same_bytes(run(*kept, kGemmChain), want));
    EXPECT_TRUE(same_bytes(before, want));
  }
}

TEST(Environment, TheDeviceLivesWhileASessionHoldsIt) {
  std::optional<Environment> env = Environment::create();
  EXPECT_GT(env->device_ms(), 0.0);
  std::optional<Session> first = Session::from_file(model_file(kGemmChain), *env);
  env.reset();  // the handle is gone; the session holds the environment
  const Tensor want = run(*first, kGemmChain);
  EXPECT_TRUE(matches_reference(want, kGemmChain));
  // A session's environment makes more sessions on the same device.
  Session second = Session::from_file(model_file(kGemmChain), first->environment());
  const Environment shared = first->environment();
  first.reset();
  EXPECT_TRUE(same_bytes(run(second, kGemmChain), want));
  EXPECT_EQ(second.stats().device.pipelines_compiled, 0u);
  EXPECT_EQ(shared.pipelines(), second.stats().device.pipelines);
}

TEST(Environment, ASessionWithoutOneHasAPrivateEnvironment) {
  Session session = Session::from_file(model_file(kGemmChain));
  EXPECT_TRUE(matches_reference(run(session, kGemmChain), kGemmChain));
  EXPECT_EQ(session.environment().pipelines(), session.stats().device.pipelines_compiled);
  EXPECT_GT(session.stats().load.device_ms, 0.0);
}

TEST(Environment, SessionOptionsThatChooseAnotherDeviceAreRefused) {
  Environment env = Environment::create();
  SessionOptions other_backend, other_adapter, robust;
  other_backend.backend = "gles";
  other_adapter.adapter = "no such adapter";
  robust.shader_robustness = true;
  for (const auto& [field, options] : {std::pair<std::string, SessionOptions>{"backend", other_backend},
                                       {"adapter", other_adapter},
                                       {"shader_robustness", robust}}) {
    try {
      Session::from_file(model_file(kGemmChain), env, options);
      ADD_FAILURE() << field << ": no error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("made on an Environment"), std::string::npos) << field << ": " << message;
      EXPECT_NE(message.find("EnvironmentOptions"), std::string::npos) << field << ": " << message;
    }
  }
  // The environment's own choice is accepted.
  SessionOptions same;
  same.backend = env.options().backend;
  EXPECT_NO_THROW(Session::from_file(model_file(kGemmChain), env, same));
}

}  // namespace
}  // namespace wgi
