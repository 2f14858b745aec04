#include "engine/recent_median.hpp"

#include <algorithm>
#include <utility>

namespace specd {

void RecentMedian::add(double x) {
  recent_[n_ % kWindow] = x;
  ++n_;
  const uint32_t m = std::min(n_, kWindow);
  // Insertion sort of at most kWindow values (std::sort's generic path draws a false
  // -Warray-bounds from GCC 12 on a fixed 8-element array).
  std::array<double, kWindow> sorted = recent_;
  for (uint32_t i = 1; i < m; ++i)
    for (uint32_t j = i; j > 0 && sorted[j] < sorted[j - 1]; --j)
      std::swap(sorted[j], sorted[j - 1]);
  median_ = m % 2 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);
}

}  // namespace specd
