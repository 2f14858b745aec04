// Small statistics toolkit for checking distributions: total variation, the G-test of
// observed counts against exact probabilities, and a confidence interval for a measured TV.
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

// A confidence interval for TV(true, reference) from a plug-in estimate `measured_tv` =
// TV(empirical, reference) of `n` samples over at most `outcomes` possible outcomes.
// By the triangle inequality |measured - true| <= TV(empirical, true), and by the
// Bretagnolle-Huber-Carol inequality P(||empirical - true||_1 >= l) <= 2^K exp(-n l^2 / 2),
// so with probability >= level: |measured - true| <= l / 2, l = sqrt(2 (K ln 2 - ln(1 -
// level)) / n). Distribution-free and conservative; clipped to [0, 1].
std::pair<double, double> tv_interval(double measured_tv, uint64_t n, size_t outcomes,
                                      double level);

// P(X > x) for X noncentral chi-square with `dof` degrees of freedom and noncentrality
// `lambda` (a Poisson(lambda / 2) mixture of central chi-squares with dof + 2j).
double noncentral_chi2_survival(double x, double dof, double lambda);

// What a G-test of n samples against `probs` can detect. Cells are pooled as g_test pools
// them (expected count below min_expected). An alternative at total-variation distance d
// from `probs` moves at most the pooled mass `pooled` inside the pool, so it differs by at
// least d - pooled on the test's bins, where its Pearson divergence is at least
// 4 (d - pooled)^2 (Cauchy-Schwarz). Under such an alternative G is approximately noncentral
// chi-square with noncentrality n times that divergence, so every alternative with
//   d >= pooled + sqrt(lambda* / (4 n))
// is rejected at level `alpha` with probability >= `power`, where lambda* is the
// noncentrality at which the test's power is `power`. Returns that d (1 when nothing is
// detectable: fewer than two bins, or n = 0). An asymptotic statement, like the test's
// p-value.
struct Detectable {
  double tv = 1;      // the smallest TV detected with probability >= power
  double pooled = 0;  // the pooled mass (part of tv)
  size_t bins = 0;
};
Detectable detectable_tv(std::span<const double> probs, uint64_t n, double alpha, double power,
                         double min_expected = 5.0);

// The smallest n >= n_min (within 1%) at which detectable_tv(probs, n, ...) <= target_tv;
// 0 when more than n_max samples would be needed.
uint64_t samples_to_detect(std::span<const double> probs, double target_tv, double alpha,
                           double power, uint64_t n_min, uint64_t n_max);

}  // namespace specd
