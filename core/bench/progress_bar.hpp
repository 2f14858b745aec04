// A one-line progress bar with an ETA on stderr, drawn only when stderr is a terminal (so
// logs and CI output stay clean).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace specd::bench {

class ProgressBar {
 public:
  explicit ProgressBar(uint64_t total);
  ~ProgressBar();
  void step(const std::string& label);  // one unit done; `label` says what runs now
  void finish();

 private:
  uint64_t total_, done_ = 0;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace specd::bench
