// The run status (runtime/run_status.h): an index out of range that only the data shows (a Gather's indices
// computed at run time, more than 64 of them so that wgi does not plan with their values) is an error of the
// run, as in ONNX and onnxruntime, naming the node, the input, the element and the value; never a silently
// zero row. Negative indices in range are valid. A run whose outputs stay on the device reports it at the
// next download or at synchronize(), and the runs after a reported error are clean.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "onnxruntime_reference.h"
#include "support/run_node.h"
#include "wgi/session.h"

namespace wgi {
namespace {

using test::run_error;

namespace fs = std::filesystem;
const fs::path kModel = fs::path(WGI_TEST_DATA_DIR) / "robustness" / "gather_rows.onnx";

Tensor table() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(64 * 3);
  for (float& x : v) x = u(rng);
  return Tensor::from_vector<float>({64, 3}, v);
}

// 70 indices in [-64, 64), negative ones among them; `bad` replaces element 5.
Tensor ids(int64_t bad = 0, bool with_bad = false) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < 70; ++i) v.push_back((i * 37) % 128 - 64);
  v[0] = -64;
  v[1] = 63;
  if (with_bad) v[5] = bad;
  return Tensor::from_vector<int64_t>({70}, v);
}

// Relu(table[ids]) on the host.
Tensor expected(const Tensor& t, const Tensor& idx) {
  std::vector<float> out;
  for (int64_t i : idx.data<int64_t>()) {
    const int64_t row = i < 0 ? i + 64 : i;
    for (int64_t k = 0; k < 3; ++k)
      out.push_back(std::max(0.0f, t.data<float>()[static_cast<size_t>(row * 3 + k)]));
  }
  return Tensor::from_vector<float>({70, 3}, out);
}

bool same(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin());
}

TEST(RunStatus, GatherIndexOutOfRangeAtRunTimeIsAnError) {
  Session s = Session::from_file(kModel);
  const Tensor t = table();
  // Valid indices, negative ones included: the rows, as onnxruntime gives them.
  const auto good = s.run({{"table", t}, {"ids", ids()}});
  EXPECT_TRUE(same(good.at("y"), expected(t, ids())));
  const auto ort = test::run_onnxruntime(kModel, {{"table", t}, {"ids", ids()}}, {"y"});
  EXPECT_TRUE(same(good.at("y"), ort.at("y")));

  for (int64_t bad : {int64_t{64}, int64_t{70}, int64_t{-65}, int64_t{2147483647}}) {
    const std::string m = run_error(s, {{"table", t}, {"ids", ids(bad, true)}});
    EXPECT_NE(m.find("node 'embed' (Gather, opset 13): input 'ids' holds index " + std::to_string(bad) +
                     " at element 5, out of range [-64, 64)"),
              std::string::npos)
        << m;
    // onnxruntime refuses it too (once: each call starts node).
    if (bad == 70) {
      EXPECT_THROW(test::run_onnxruntime(kModel, {{"table", t}, {"ids", ids(bad, true)}}, {"y"}), Error);
    }
    // The error was reported once: the next run is clean.
    EXPECT_TRUE(same(s.run({{"table", t}, {"ids", ids()}}).at("y"), expected(t, ids())));
  }
}

TEST(RunStatus, DeviceOutputRunsReportAtTheNextSyncPoint) {
  Session s = Session::from_file(kModel);
  const Tensor t = table();
  RunOptions on_device;
  on_device.all_outputs_on_device = true;
  // No download: nothing waits for the GPU, so the error comes at synchronize().
  s.run({{"table", Value(t)}, {"ids", Value(ids(70, true))}}, on_device);
  try {
    s.synchronize();
    ADD_FAILURE() << "synchronize() did not report the index error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'ids' holds index 70 at element 5"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(s.synchronize());
  // Or at the next run that downloads an output, even with valid indices of its own.
  s.run({{"table", Value(t)}, {"ids", Value(ids(-65, true))}}, on_device);
  const std::string m = run_error(s, {{"table", t}, {"ids", ids()}});
  EXPECT_NE(m.find("input 'ids' holds index -65 at element 5"), std::string::npos) << m;
  EXPECT_TRUE(same(s.run({{"table", t}, {"ids", ids()}}).at("y"), expected(t, ids())));
}

}  // namespace
}  // namespace wgi
