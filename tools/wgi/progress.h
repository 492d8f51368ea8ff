// A one-line progress bar on stderr for work that takes more than a second. Silent when stderr is not a
// terminal (logs, CI) and for work that finishes quickly.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

namespace wgi::cli {

class ProgressBar {
 public:
  ProgressBar();
  ~ProgressBar();
  void update(size_t done, size_t total, const std::string& label);
  void finish();
  // Until stop_ticking(), shows "label  12.5 s" while no update() came for half a second: for long steps
  // that report no progress of their own (a model's run is one GPU submission).
  void start_ticking(const std::string& label);
  void stop_ticking();

 private:
  void clear_locked();
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::mutex mutex_;  // update() and the ticker draw from different threads
  std::condition_variable wake_;
  bool ticking_ = false;
  std::thread ticker_;
};

}  // namespace wgi::cli
