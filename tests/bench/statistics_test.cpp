#include <doctest/doctest.h>

#include <cmath>

#include "bench/prediction.hpp"
#include "bench/bootstrap_intervals.hpp"

using namespace specd::bench;

TEST_CASE("median and quantiles") {
  CHECK(median({}) == 0);
  CHECK(median({3}) == 3);
  CHECK(median({5, 1, 3}) == 3);
  CHECK(median({4, 1, 3, 2}) == doctest::Approx(2.5));
  CHECK(quantile({0, 10}, 0.25) == doctest::Approx(2.5));
  CHECK(mean({1, 2, 3, 6}) == doctest::Approx(3));
}

TEST_CASE("bootstrap interval of the median brackets it and is deterministic") {
  std::vector<double> v = {1.1, 1.3, 0.9, 1.2, 1.25, 1.15, 1.05, 1.4};
  auto ci = bootstrap_median_ci(v);
  CHECK(ci.first <= median(v));
  CHECK(ci.second >= median(v));
  CHECK(ci.first >= 0.9);
  CHECK(ci.second <= 1.4);
  CHECK(bootstrap_median_ci(v) == ci);
  CHECK(bootstrap_median_ci({2.0}) == std::make_pair(2.0, 2.0));
  std::vector<double> same(6, 1.5);
  CHECK(bootstrap_median_ci(same) == std::make_pair(1.5, 1.5));
}

TEST_CASE("t interval") {
  auto ci = t_interval({1, 2, 3});
  // mean 2, s = 1, se = 1/sqrt(3), t(2) = 4.303
  CHECK(ci.first == doctest::Approx(2 - 4.303 / std::sqrt(3.0)).epsilon(1e-6));
  CHECK(ci.second == doctest::Approx(2 + 4.303 / std::sqrt(3.0)).epsilon(1e-6));
}

TEST_CASE("Leviathan prediction") {
  CHECK(expected_tokens(0, 4) == doctest::Approx(1));
  CHECK(expected_tokens(1, 4) == doctest::Approx(5));
  CHECK(expected_tokens(0.5, 2) == doctest::Approx(1.75));
  CHECK(predicted_speedup(0.8, 4, 1.0, 0.0) == doctest::Approx((1 - std::pow(0.8, 5)) / 0.2));
  CHECK(predicted_speedup(0.5, 2, 1.5, 0.1) == doctest::Approx(1.75 / 1.7));
}
