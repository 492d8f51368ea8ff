// A one-line progress bar on stderr for work that takes more than a second. Silent when stderr is not a
// terminal (logs, CI) and for work that finishes quickly.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace wgi::cli {

class ProgressBar {
 public:
  ProgressBar();
  ~ProgressBar();
  void update(size_t done, size_t total, const std::string& label);
  void finish();

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace wgi::cli
