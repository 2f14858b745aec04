// specd SDK — drawing from a row of weights. This is the one sampling routine of specd: the
// core's sampler, the bundled acceptance rules (draws and exact enumeration alike) and the
// proposers all go through check_row / draw_index, so a row is drawn from, or refused, the
// same way everywhere. Header-only; no state; any thread.
//
// Weights need not sum to 1, but every entry must be a finite number >= 0 (-0 counts as 0).
// A row is refused, never silently repaired, when an entry is negative, NaN or infinite,
// when its total is zero, or when the total overflows: such a row is a bug upstream (the
// host refuses the same rows in proposers' q, see tree validation), and drawing from it
// anyway would hide it. Zero entries are never drawn.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "specd/types.h"

namespace specd::sdk {

// What check_row found: the total mass, or why the row cannot be drawn from.
struct RowCheck {
  double total = 0;     // sum of the weights (valid when ok())
  std::string problem;  // empty when the row can be drawn from, else e.g. "entry 3 is -0.25"
  bool ok() const { return problem.empty(); }
};

inline RowCheck check_row(std::span<const double> row) {
  RowCheck c;
  for (size_t i = 0; i < row.size(); ++i) {
    const double w = row[i];
    if (!std::isfinite(w) || w < 0) {
      c.problem = "entry " + std::to_string(i) + " is " + std::to_string(w) +
                  (std::isnan(w) ? " (not a number)"
                   : w < 0       ? " (negative)"
                                 : " (infinite)");
      return c;
    }
    c.total += w;
  }
  if (!std::isfinite(c.total))
    c.problem = "the total of the " + std::to_string(row.size()) + " entries overflows";
  else if (!(c.total > 0))
    c.problem = "all " + std::to_string(row.size()) + " entries are zero";
  return c;
}

// Inverse-CDF draw with one uniform u in [0, 1) from a row check_row accepted (`total` its
// total): the first index whose cumulative weight exceeds u * total. Rounding at the top end
// falls back to the last positive entry.
inline uint32_t draw_checked(std::span<const double> row, double total, double u) {
  const double target = u * total;
  double cumulative = 0;
  uint32_t last_positive = 0;
  for (uint32_t i = 0; i < row.size(); ++i) {
    if (!(row[i] > 0)) continue;
    cumulative += row[i];
    last_positive = i;
    if (target < cumulative) return i;
  }
  return last_positive;
}

// check_row, then draw_checked; throws std::invalid_argument naming the problem when the row
// is refused (inside a plugin the SDK's guard turns it into an error status).
inline uint32_t draw_index(std::span<const double> row, double u) {
  const RowCheck c = check_row(row);
  if (!c.ok()) throw std::invalid_argument("cannot draw from a row of weights: " + c.problem);
  return draw_checked(row, c.total, u);
}

// The same over a pointer and a length (kept for plugins written against ABI 0.1).
inline specd_token sample_index(const double* row, uint32_t n, double u) {
  return static_cast<specd_token>(draw_index(std::span<const double>(row, n), u));
}

// Index of the largest entry, the lowest index among ties (the core's greedy convention).
inline specd_token argmax_index(const double* row, uint32_t n) {
  uint32_t best = 0;
  for (uint32_t x = 1; x < n; ++x)
    if (row[x] > row[best]) best = x;
  return static_cast<specd_token>(best);
}

}  // namespace specd::sdk
