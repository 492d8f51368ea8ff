#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace wgi::cli {

ProgressBar::ProgressBar() : enabled_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
  finish();
}

void ProgressBar::update(size_t done, size_t total, const std::string& label) {
  if (!enabled_ || total == 0) return;
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

void ProgressBar::finish() {
  if (shown_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
  }
}

}  // namespace wgi::cli
