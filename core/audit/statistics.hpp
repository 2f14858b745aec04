// Small statistics toolkit for checking distributions: total variation, the G-test of
// observed counts against exact probabilities, and a bootstrap interval for a measured TV.
#pragma once

#include <cstdint>
#include <span>
#include <utility>

#include "plugin/host_services.hpp"

namespace specd {

// 0.5 * sum |a_i - b_i|.
double total_variation(std::span<const double> a, std::span<const double> b);

// Upper tail P(X >= x) of a chi-square variable with `dof` degrees of freedom
// (regularised upper incomplete gamma Q(dof/2, x/2)).
double chi2_survival(double x, double dof);

struct GTestResult {
  double g = 0;        // 2 * sum O ln(O / E)
  double dof = 0;      // bins - 1
  double p_value = 1;  // chi2_survival(g, dof); 0 when an impossible outcome was observed
  size_t bins = 0;     // after pooling
};

// G-test of `counts` against `probs` (same length, probs sum to 1). Categories whose expected
// count is below `min_expected` are pooled into one bin (the chi-square approximation needs
// expected counts of about 5 or more). Any count in a category of probability 0 gives p = 0.
GTestResult g_test(std::span<const double> probs, std::span<const uint64_t> counts,
                   double min_expected = 5.0);

// Percentile bootstrap interval (level, e.g. 0.95) of the plug-in TV between the empirical
// distribution of `counts` and `probs`: `resamples` multinomial resamples of the counts.
// The plug-in TV is biased upward by roughly sqrt(categories / n), so an exact rule shows a
// small positive TV whose interval reaches towards 0; the exact TV is the authoritative one.
std::pair<double, double> bootstrap_tv_interval(std::span<const double> probs,
                                                std::span<const uint64_t> counts, int resamples,
                                                double level, Rng& rng);

}  // namespace specd
