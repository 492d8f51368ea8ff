#include "core/parallel.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace wgi {

void parallel_for_ranges(int64_t count, int64_t min_per_thread,
                         const std::function<void(int64_t, int64_t)>& body, unsigned max_threads) {
  if (count <= 0) return;
#ifdef __EMSCRIPTEN__
  const int64_t cores = 1;  // the browser build has no threads
#else
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
#endif
  const int64_t threads = std::clamp<int64_t>(count / std::max<int64_t>(1, min_per_thread), 1,
                                              std::min<int64_t>(cores, std::max(1u, max_threads)));
  if (threads == 1) {
    body(0, count);
    return;
  }
  std::exception_ptr failure;
  std::mutex failure_mutex;
  std::vector<std::thread> workers;
  const int64_t per = (count + threads - 1) / threads;
  for (int64_t begin = 0; begin < count; begin += per) {
    const int64_t end = std::min(count, begin + per);
    workers.emplace_back([&, begin, end] {
      try {
        body(begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  }
  for (std::thread& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace wgi
