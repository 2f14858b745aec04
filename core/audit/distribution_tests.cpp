#include "audit/distribution_tests.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace specd {
namespace {

// Regularised lower incomplete gamma P(a, x) by its series (converges fast for x < a + 1).
double gamma_p_series(double a, double x) {
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < 10000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * 1e-16) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Regularised upper incomplete gamma Q(a, x) by its continued fraction (x >= a + 1),
// modified Lentz's method.
double gamma_q_fraction(double a, double x) {
  const double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

}  // namespace

double total_variation(std::span<const double> a, std::span<const double> b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::fabs(a[i] - b[i]);
  return 0.5 * s;
}

double chi2_survival(double x, double dof) {
  if (dof <= 0) return 1.0;
  if (x <= 0) return 1.0;
  const double a = dof / 2, h = x / 2;
  if (h < a + 1) return std::clamp(1.0 - gamma_p_series(a, h), 0.0, 1.0);
  return std::clamp(gamma_q_fraction(a, h), 0.0, 1.0);
}

GTestResult g_test(std::span<const double> probs, std::span<const uint64_t> counts,
                   double min_expected) {
  GTestResult r;
  uint64_t n = 0;
  for (uint64_t c : counts) n += c;
  if (n == 0) return r;
  double pooled_e = 0, pooled_o = 0;
  std::vector<std::pair<double, double>> bins;  // (observed, expected)
  for (size_t i = 0; i < probs.size(); ++i) {
    const double e = probs[i] * static_cast<double>(n);
    if (!(probs[i] > 0)) {
      if (counts[i] > 0) {  // an outcome of probability 0 happened: certainly wrong
        r.p_value = 0;
        r.g = INFINITY;
        return r;
      }
      continue;
    }
    if (e < min_expected) {
      pooled_e += e;
      pooled_o += static_cast<double>(counts[i]);
    } else {
      bins.push_back({static_cast<double>(counts[i]), e});
    }
  }
  if (pooled_e > 0) bins.push_back({pooled_o, pooled_e});
  for (const auto& [o, e] : bins)
    if (o > 0) r.g += 2 * o * std::log(o / e);
  r.g = std::max(r.g, 0.0);
  r.bins = bins.size();
  r.dof = bins.size() > 1 ? static_cast<double>(bins.size() - 1) : 0.0;
  r.p_value = chi2_survival(r.g, r.dof);
  return r;
}

double noncentral_chi2_survival(double x, double dof, double lambda) {
  if (!(lambda > 0)) return chi2_survival(x, dof);
  // Poisson weights w_j = e^(-m) m^j / j!, m = lambda / 2, summed outward from the mode so
  // that neither end underflows before it matters.
  const double m = lambda / 2;
  const int64_t mode = static_cast<int64_t>(std::floor(m));
  const double log_w_mode =
      -m + static_cast<double>(mode) * std::log(m) - std::lgamma(static_cast<double>(mode) + 1);
  double total = 0, weight_seen = 0;
  double w = std::exp(log_w_mode);
  for (int64_t j = mode; j >= 0 && w > 1e-18; --j) {
    total += w * chi2_survival(x, dof + 2.0 * static_cast<double>(j));
    weight_seen += w;
    w *= static_cast<double>(j) / m;
  }
  w = std::exp(log_w_mode) * m / static_cast<double>(mode + 1);
  for (int64_t j = mode + 1; w > 1e-18; ++j) {
    total += w * chi2_survival(x, dof + 2.0 * static_cast<double>(j));
    weight_seen += w;
    w *= m / static_cast<double>(j + 1);
  }
  return std::clamp(total / std::max(weight_seen, 1e-300), 0.0, 1.0);
}

namespace {

// The x with chi2_survival(x, dof) = alpha.
double chi2_critical(double dof, double alpha) {
  double lo = 0, hi = dof + 10;
  while (chi2_survival(hi, dof) > alpha) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-9 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (chi2_survival(mid, dof) > alpha ? lo : hi) = mid;
  }
  return hi;
}

// The noncentrality at which a level-alpha test with `dof` degrees of freedom has `power`.
double noncentrality_for_power(double dof, double alpha, double power) {
  const double crit = chi2_critical(dof, alpha);
  double lo = 0, hi = 1;
  while (noncentral_chi2_survival(crit, dof, hi) < power) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-6 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (noncentral_chi2_survival(crit, dof, mid) < power ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace

Detectable detectable_tv(std::span<const double> probs, uint64_t n, double alpha, double power,
                         double min_expected) {
  Detectable d;
  if (n == 0) return d;
  size_t bins = 0;
  double pooled = 0;
  for (double p : probs) {
    if (!(p > 0)) continue;
    if (p * static_cast<double>(n) < min_expected)
      pooled += p;
    else
      ++bins;
  }
  if (pooled > 0) ++bins;
  d.bins = bins;
  d.pooled = pooled;
  if (bins < 2) return d;
  const double lambda = noncentrality_for_power(static_cast<double>(bins - 1), alpha, power);
  d.tv = std::min(1.0, pooled + std::sqrt(lambda / (4.0 * static_cast<double>(n))));
  return d;
}

uint64_t samples_to_detect(std::span<const double> probs, double target_tv, double alpha,
                           double power, uint64_t n_min, uint64_t n_max) {
  auto good = [&](uint64_t n) { return detectable_tv(probs, n, alpha, power).tv <= target_tv; };
  uint64_t hi = std::max<uint64_t>(n_min, 1);
  if (good(hi)) return hi;
  uint64_t lo = hi;
  while (!good(hi)) {
    if (hi >= n_max) return 0;
    lo = hi;
    hi = std::min(n_max, hi * 2);
  }
  // detectable_tv falls with n except where a cell leaves the pool (a small step); the
  // bisection finds a good n within 1% of the smallest.
  while (hi - lo > std::max<uint64_t>(1, lo / 100)) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (good(mid) ? hi : lo) = mid;
  }
  return hi;
}

std::pair<double, double> tv_interval(double measured_tv, uint64_t n, size_t outcomes,
                                      double level) {
  if (n == 0) return {0.0, 1.0};
  const double k = static_cast<double>(std::max<size_t>(outcomes, 1));
  const double l =
      std::sqrt(2.0 * (k * std::log(2.0) - std::log(1.0 - level)) / static_cast<double>(n));
  return {std::max(0.0, measured_tv - l / 2), std::min(1.0, measured_tv + l / 2)};
}

}  // namespace specd
