#include "engine/pass_cost.hpp"

#include <algorithm>

namespace specd {

void PassCost::observe(uint32_t rows, double seconds) {
  if (rows == 0 || !(seconds > 0)) return;
  if (rows >= s_.size()) {
    s_.resize(rows + 1, 0);
    seen_.resize(rows + 1, false);
  }
  s_[rows] = seen_[rows] ? (1 - decay_) * s_[rows] + decay_ * seconds : seconds;
  seen_[rows] = true;
}

double PassCost::time(uint32_t rows) const {
  rows = std::max<uint32_t>(rows, 1);
  if (measured(rows)) return s_[rows];
  uint32_t lo = 0, hi = 0, below_lo = 0;
  for (uint32_t r = 1; r < seen_.size(); ++r) {
    if (!seen_[r]) continue;
    if (r < rows) {
      below_lo = lo;
      lo = r;
    } else if (hi == 0) {
      hi = r;
    }
  }
  if (lo && hi) return s_[lo] + (s_[hi] - s_[lo]) * double(rows - lo) / double(hi - lo);
  if (hi) return s_[hi] * double(rows) / double(hi);  // below every measurement: in proportion
  if (!lo) return double(rows);                       // nothing measured: one unit per row
  // Beyond the largest measurement: its slope from the one before, else in proportion.
  const double slope = below_lo ? std::max(0.0, (s_[lo] - s_[below_lo]) / double(lo - below_lo))
                                : s_[lo] / double(lo);
  return s_[lo] + slope * double(rows - lo);
}

}  // namespace specd
