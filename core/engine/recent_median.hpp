// The median of the last 8 samples of a measured quantity (a pass time, a cost ratio). On
// a shared machine a timed call is sometimes descheduled and takes several times its cost;
// a running mean would carry such a sample for many rounds (a slow first 1-row pass makes
// every draft look cheap), the median ignores it while fewer than half the recent samples
// are such, and 8 samples follow a real drift (a longer context) within a few calls.
// Thread rule: one thread at a time.
#pragma once

#include <array>
#include <cstdint>

namespace specd {

class RecentMedian {
 public:
  void add(double x);
  void clear() { n_ = 0, median_ = 0; }
  double median() const { return median_; }  // 0 before any sample
  uint32_t count() const { return n_; }      // samples added since the last clear

 private:
  static constexpr uint32_t kWindow = 8;
  std::array<double, kWindow> recent_{};
  uint32_t n_ = 0;
  double median_ = 0;
};

}  // namespace specd
