#include "engine/generation_stats.hpp"

namespace specd {

std::vector<double> GenerationStats::per_position() const {
  std::vector<double> rates(drafted_at.size(), 0.0);
  for (size_t d = 0; d < drafted_at.size(); ++d)
    rates[d] = drafted_at[d] ? double(accepted_at[d]) / double(drafted_at[d]) : 0;
  return rates;
}

}  // namespace specd
