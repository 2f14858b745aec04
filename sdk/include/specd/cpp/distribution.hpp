// specd SDK — drawing from a probability row, for proposers that sample their drafts.
#pragma once

#include <cstdint>

#include "specd/types.h"

namespace specd::sdk {

// Inverse-CDF draw with one uniform u in [0, 1): the first index whose cumulative mass
// exceeds u · total. Zero entries are never returned; rounding at the top end falls back to
// the last positive entry. The row need not be normalised.
inline specd_token sample_index(const double* row, uint32_t n, double u) {
  double total = 0;
  for (uint32_t x = 0; x < n; ++x) total += row[x];
  double target = u * total, cumulative = 0;
  specd_token last = 0;
  for (uint32_t x = 0; x < n; ++x) {
    if (row[x] <= 0) continue;
    cumulative += row[x];
    last = static_cast<specd_token>(x);
    if (target < cumulative) return last;
  }
  return last;
}

// Index of the largest entry, the lowest index among ties (the core's greedy convention).
inline specd_token argmax_index(const double* row, uint32_t n) {
  uint32_t best = 0;
  for (uint32_t x = 1; x < n; ++x)
    if (row[x] > row[best]) best = x;
  return static_cast<specd_token>(best);
}

}  // namespace specd::sdk
