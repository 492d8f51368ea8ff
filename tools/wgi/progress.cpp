#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace wgi::cli {

ProgressBar::ProgressBar() : enabled_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
  stop_ticking();
  finish();
}

void ProgressBar::update(size_t done, size_t total, const std::string& label) {
  if (!enabled_ || total == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::seconds(1)) return;
  if (shown_ && now - last_draw_ < std::chrono::milliseconds(100) && done < total) return;
  last_draw_ = now;
  shown_ = true;
  const int width = 30;
  const int filled = static_cast<int>(width * done / total);
  std::fprintf(stderr, "\r%-12s [%.*s%*s] %zu/%zu", label.c_str(), filled, "##############################",
               width - filled, "", done, total);
  std::fflush(stderr);
}

void ProgressBar::clear_locked() {
  if (shown_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
  }
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  clear_locked();
}

void ProgressBar::start_ticking(const std::string& label) {
  if (!enabled_ || ticking_) return;
  ticking_ = true;
  ticker_ = std::thread([this, label] {
    const auto begin = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return !ticking_; })) {
      const auto now = std::chrono::steady_clock::now();
      if (now - begin < std::chrono::seconds(1)) continue;
      if (shown_ && now - last_draw_ < std::chrono::milliseconds(500)) continue;  // a bar is being drawn
      const double seconds = std::chrono::duration<double>(now - begin).count();
      std::fprintf(stderr, "\r\033[K%-12s %.1f s", label.c_str(), seconds);
      std::fflush(stderr);
      shown_ = true;
    }
  });
}

void ProgressBar::stop_ticking() {
  if (!ticker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ticking_ = false;
  }
  wake_.notify_all();
  ticker_.join();
}

}  // namespace wgi::cli
