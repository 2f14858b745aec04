#include "sampling/sample_row.hpp"

#include <cmath>
#include <string>

#include "common/error.hpp"

namespace specd {

uint32_t sample_with_uniform(std::span<const double> row, double u) {
  double total = 0;
  for (double v : row) total += v > 0 ? v : 0.0;
  if (!(total > 0) || !std::isfinite(total))
    throw Error("sample: the row has no positive finite mass (total " + std::to_string(total) +
                ")");
  const double target = u * total;
  double cumulative = 0;
  uint32_t last_positive = 0;
  for (uint32_t i = 0; i < row.size(); ++i) {
    if (!(row[i] > 0)) continue;
    cumulative += row[i];
    last_positive = i;
    if (target < cumulative) return i;
  }
  return last_positive;  // u * total rounded up to (or past) the last cumulative sum
}

uint32_t sample(std::span<const double> row, Rng& rng) {
  return sample_with_uniform(row, rng.uniform());
}

}  // namespace specd
