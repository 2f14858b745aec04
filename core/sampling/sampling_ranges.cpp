#include "sampling/sampling_ranges.hpp"

#include <cmath>

namespace specd {

std::string temperature_range(double t) {
  return t == 0 || (std::isfinite(t) && t >= kMinTemperature)
             ? ""
             : "0 = greedy, else a finite number >= 1e-06";
}

std::string top_k_range(int64_t k) {
  return k >= 0 ? "" : "0 = off, else >= 1";
}

std::string top_p_range(double p) {
  return p > 0 && p <= 1 ? "" : "0 < top_p <= 1; 1 = off";
}

std::string min_p_range(double p) {
  // min_p = 1 would keep only tokens as likely as the most likely one: not a filter.
  return p >= 0 && p < 1 ? "" : "0 <= min_p < 1; 0 = off";
}

}  // namespace specd
