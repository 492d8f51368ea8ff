// Session::gather_rows: rows along axis 0 copied on the GPU (a beam search's key/value reordering), checked
// against the same gather done on the host copy of the source; repeated and dropped rows, an unaligned row
// length, a kept run output as the source, int64, several tensors in one submission; and the errors.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <vector>

#include "wgi/session.h"

namespace wgi {
namespace {

using Rows = std::vector<int64_t>;
const std::filesystem::path kModels = std::filesystem::path(WGI_TEST_DATA_DIR) / "models";

Tensor random_tensor(Shape shape, uint64_t seed) {
  Tensor t(DType::Float32, std::move(shape));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.data<float>()) v = dist(rng);
  return t;
}

// The host reference: row i of the result is row rows[i] of `source`, bytes as they are.
Tensor host_gather(const Tensor& source, const std::vector<int64_t>& rows) {
  Shape shape = source.shape();
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out(source.dtype(), shape);
  const size_t row_bytes = source.byte_size() / static_cast<size_t>(source.shape()[0]);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(out.bytes().data() + i * row_bytes,
                source.bytes().data() + static_cast<size_t>(rows[i]) * row_bytes, row_bytes);
  }
  return out;
}

void expect_same(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_GT(want.byte_size(), 0u);
  EXPECT_EQ(std::memcmp(got.bytes().data(), want.bytes().data(), want.byte_size()), 0);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(GatherRows, CopiesTheChosenRowsOnTheDevice) {
  Session s = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  // [3, 2, 5, 7]: rows of 70 floats (not a power of two); repeated, reordered and dropped rows.
  const Tensor source = random_tensor({3, 2, 5, 7}, 11);
  const DeviceTensor d = s.upload(source);
  for (const std::vector<int64_t>& rows :
       {std::vector<int64_t>{2, 0, 1}, {1, 1, 1}, {0, 2}, {2, 2, 0, 1, 0}, {1}}) {
    const DeviceTensor g = s.gather_rows(d, rows);
    EXPECT_FALSE(g.same_as(d));
    expect_same(g.download(), host_gather(source, rows));
  }
  expect_same(d.download(), source);  // the source is unchanged
  // int64 (32-bit words on the device), a 1-D tensor (rows of one element).
  const Tensor ids = Tensor::from_vector<int64_t>({4}, {-3, 9, 2147483647, 5});
  expect_same(s.gather_rows(s.upload(ids), Rows{3, 0, 0}).download(), host_gather(ids, {3, 0, 0}));
}

// Several tensors with the same rows in one submission (a decoder's pasts): each equals its host gather; a
// bad one among them (too few rows for the indices) fails before any is gathered.
TEST(GatherRows, SeveralTensorsAtOnce) {
  Session s = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  const std::vector<Tensor> sources = {random_tensor({3, 2, 5, 7}, 21), random_tensor({3, 4}, 22),
                                       random_tensor({3, 1, 9}, 23)};
  std::vector<DeviceTensor> on_device;
  for (const Tensor& t : sources) on_device.push_back(s.upload(t));
  const Rows rows = {2, 0, 2};
  const std::vector<DeviceTensor> gathered = s.gather_rows(on_device, rows);
  ASSERT_EQ(gathered.size(), sources.size());
  for (size_t i = 0; i < sources.size(); ++i)
    expect_same(gathered[i].download(), host_gather(sources[i], rows));
  on_device.push_back(s.upload(random_tensor({2, 4}, 24)));
  EXPECT_NE(error_of([&] { s.gather_rows(on_device, rows); }).find("DeviceTensor [2, 4]: row index 2 (at 0)"),
            std::string::npos);
}

TEST(GatherRows, ReordersAKeptRunOutputAfterTheRun) {
  Session s = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  const Tensor x = random_tensor({5, 20}, 12);
  RunOptions keep;
  keep.device_outputs = {"y"};
  // Not synchronised: the copy is ordered after the run on the queue.
  const DeviceTensor y = s.run({{"x", Value(x)}}, keep).at("y").device();
  const Tensor want = s.run({{"x", x}}).at("y");
  expect_same(s.gather_rows(y, Rows{4, 0, 3, 3, 1}).download(), host_gather(want, {4, 0, 3, 3, 1}));
}

TEST(GatherRows, ErrorsNameTheProblem) {
  Session s = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  Session other = Session::from_file(kModels / "gemm_chain" / "model.onnx");
  const DeviceTensor d = s.upload(random_tensor({3, 4}, 13));
  EXPECT_NE(error_of([&] {
              s.gather_rows(d, Rows{0, 3});
            }).find("row index 3 (at 1) is outside [0, 3)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s.gather_rows(d, Rows{-1}); }).find("row index -1"), std::string::npos);
  EXPECT_NE(error_of([&] { other.gather_rows(d, Rows{0}); }).find("belongs to a session on another device"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s.gather_rows(DeviceTensor(), Rows{0}); }).find("empty DeviceTensor"),
            std::string::npos);
  DeviceTensor released = s.upload(random_tensor({2, 2}, 14));
  released.release();
  EXPECT_NE(error_of([&] { s.gather_rows(released, Rows{0}); }).find("was released"), std::string::npos);
  Tensor half(DType::Float16, {2, 3});
  std::memset(half.bytes().data(), 0, half.byte_size());
  EXPECT_NE(error_of([&] { s.gather_rows(s.upload(half), Rows{1}); }).find("not a multiple of 4"),
            std::string::npos);
}

}  // namespace
}  // namespace wgi
