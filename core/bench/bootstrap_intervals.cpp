#include "bench/bootstrap_intervals.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace specd::bench {

double median(std::vector<double> values) {
  return quantile(std::move(values), 0.5);
}

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double s = 0;
  for (double v : values) s += v;
  return s / double(values.size());
}

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(q, 0.0, 1.0) * double(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - double(lo));
}

std::pair<double, double> bootstrap_median_ci(const std::vector<double>& values, uint32_t resamples,
                                              uint64_t seed) {
  if (values.empty()) return {0, 0};
  if (values.size() == 1) return {values[0], values[0]};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
  std::vector<double> medians(resamples), sample(values.size());
  for (uint32_t r = 0; r < resamples; ++r) {
    for (double& s : sample) s = values[pick(rng)];
    medians[r] = median(sample);
  }
  return {quantile(medians, 0.025), quantile(medians, 0.975)};
}

std::pair<double, double> t_interval(const std::vector<double>& values) {
  const size_t n = values.size();
  if (n == 0) return {0, 0};
  const double m = mean(values);
  if (n == 1) return {m, m};
  double ss = 0;
  for (double v : values) ss += (v - m) * (v - m);
  const double se = std::sqrt(ss / double(n - 1) / double(n));
  // Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom, then normal.
  static const double kT[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                              2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                              2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                              2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  const double t = n - 1 <= 30 ? kT[n - 2] : 1.96;
  return {m - t * se, m + t * se};
}

}  // namespace specd::bench
