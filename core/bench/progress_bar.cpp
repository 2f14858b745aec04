#include "bench/progress_bar.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace specd::bench {

ProgressBar::ProgressBar(uint64_t total)
    : total_(total ? total : 1),
      enabled_(::isatty(STDERR_FILENO)),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
  finish();
}

void ProgressBar::step(const std::string& label) {
  ++done_;
  if (!enabled_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = done_ ? elapsed / double(done_) * double(total_ - std::min(done_, total_)) : 0;
  const int width = 30;
  const int filled = static_cast<int>(double(width) * double(done_) / double(total_));
  std::string bar(static_cast<size_t>(std::min(filled, width)), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "\r[%s] %3d%% ETA %4.0fs  %-40.40s", bar.c_str(),
               static_cast<int>(100.0 * double(done_) / double(total_)), eta, label.c_str());
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  std::fprintf(stderr, "\n");
}

}  // namespace specd::bench
