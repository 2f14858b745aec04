// Inverse-CDF sampling with the host RNG.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "common/error.hpp"
#include "sampling/sample_row.hpp"

TEST_CASE("inverse CDF picks the first index whose cumulative mass exceeds u") {
  const std::vector<double> row = {0.25, 0.0, 0.5, 0.25};
  CHECK(specd::sample_with_uniform(row, 0.0) == 0);
  CHECK(specd::sample_with_uniform(row, 0.2499) == 0);
  CHECK(specd::sample_with_uniform(row, 0.25) == 2);
  CHECK(specd::sample_with_uniform(row, 0.7499) == 2);
  CHECK(specd::sample_with_uniform(row, 0.75) == 3);
  CHECK(specd::sample_with_uniform(row, 0.9999999999999999) == 3);
}

TEST_CASE("zero-probability entries are never drawn, even at the top end") {
  const std::vector<double> row = {0.5, 0.5, 0.0};
  CHECK(specd::sample_with_uniform(row, 0.9999999999999999) == 1);
  specd::Rng rng(7);
  for (int i = 0; i < 1000; ++i) CHECK(specd::sample(row, rng) != 2);
}

TEST_CASE("frequencies follow the row") {
  const std::vector<double> row = {0.1, 0.6, 0.3};
  specd::Rng rng(12345);
  std::vector<int> count(3, 0);
  const int n = 100000;
  for (int i = 0; i < n; ++i) ++count[specd::sample(row, rng)];
  // 6 standard deviations: a false failure has probability below 1e-8.
  for (size_t i = 0; i < 3; ++i) {
    const double sd = std::sqrt(n * row[i] * (1 - row[i]));
    CHECK(std::abs(count[i] - n * row[i]) < 6 * sd);
  }
}

TEST_CASE("a row without mass is an error") {
  const std::vector<double> row = {0.0, 0.0};
  CHECK_THROWS_AS(specd::sample_with_uniform(row, 0.5), specd::Error);
}
