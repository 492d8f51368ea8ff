// Host parallelism: every index once, across threads, errors rethrown; and the parallel weight transpose of
// the GEMM prepack against a plain one.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/parallel.h"
#include "ops/gemm_launch.h"

namespace wgi {
namespace {

TEST(ParallelForRanges, CoversEveryIndexOnceAcrossThreads) {
  for (int64_t count : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
    std::mutex mutex;
    std::set<std::thread::id> threads;
    parallel_for_ranges(count, 100, [&](int64_t begin, int64_t end) {
      ASSERT_LE(0, begin);
      ASSERT_LE(begin, end);
      ASSERT_LE(end, count);
      for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
      std::lock_guard<std::mutex> lock(mutex);
      threads.insert(std::this_thread::get_id());
    });
    for (int64_t i = 0; i < count; ++i)
      ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << count << " " << i;
    if (count >= 1000 && std::thread::hardware_concurrency() > 1) {
      EXPECT_GT(threads.size(), 1u) << count
                                    << " elements in ranges of >= 100 should use more than one thread";
    }
  }
}

TEST(ParallelForRanges, RethrowsAnErrorFromAnyRange) {
  EXPECT_THROW(parallel_for_ranges(10000, 10,
                                   [](int64_t begin, int64_t end) {
                                     if (begin <= 9999 && 9999 < end)
                                       throw std::runtime_error("last range failed");
                                   }),
               std::runtime_error);
}

// Large enough that the transpose runs on several threads, with rows and columns not multiples of its 32x32
// blocks, and two matrices.
TEST(PrepackB, ParallelTransposeMatchesAPlainOne) {
  const int64_t k = 1003, n = 517, matrices = 2;
  Tensor b(DType::Float32, {matrices, k, n});
  auto src = b.data<float>();
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i % 9973) - 17.5f;
  for (bool stored_nk : {false, true}) {
    const int64_t rows = stored_nk ? n : k, cols = stored_nk ? k : n;
    const Tensor packed = ops::prepack_b(b, k, n, stored_nk, !stored_nk);
    auto dst = packed.data<float>();
    for (int64_t m = 0; m < matrices; ++m) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          ASSERT_EQ(dst[static_cast<size_t>(m * k * n + c * rows + r)],
                    src[static_cast<size_t>(m * k * n + r * cols + c)])
              << "matrix " << m << " row " << r << " column " << c << " stored_nk " << stored_nk;
        }
      }
    }
  }
}

}  // namespace
}  // namespace wgi
