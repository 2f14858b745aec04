#include "engine/recent_median.hpp"

#include <algorithm>

namespace specd {

void RecentMedian::add(double x) {
  recent_[n_ % kWindow] = x;
  ++n_;
  const uint32_t m = std::min(n_, kWindow);
  std::array<double, kWindow> sorted = recent_;
  std::sort(sorted.begin(), sorted.begin() + m);
  median_ = m % 2 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);
}

}  // namespace specd
