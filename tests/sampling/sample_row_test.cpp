// Inverse-CDF sampling with the host RNG: the core's sample() is the SDK's draw_index, the
// one routine the plugins use too, with the same answers and the same refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "sampling/sample_row.hpp"
#include "specd/cpp/distribution.hpp"

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

TEST_CASE("negative, NaN and infinite weights, and zero or overflowing totals, are refused") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const double big = std::numeric_limits<double>::max();
  struct Bad {
    std::vector<double> row;
    const char* why;
  };
  const Bad bad[] = {
      {{0.5, -0.25, 0.75}, "entry 1 is -0.250000 (negative)"},
      {{0.5, nan}, "entry 1 is nan (not a number)"},
      {{inf, 0.5}, "entry 0 is inf (infinite)"},
      {{0.5, -inf}, "entry 1 is -inf (negative)"},
      {{0.0, 0.0}, "all 2 entries are zero"},
      {{}, "all 0 entries are zero"},
      {{big, big}, "the total of the 2 entries overflows"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.why);
    CHECK_FALSE(specd::sdk::check_row(b.row).ok());
    CHECK(specd::sdk::check_row(b.row).problem == b.why);
    try {
      specd::sample_with_uniform(b.row, 0.5);
      FAIL("the core drew from a refused row");
    } catch (const specd::Error& e) {
      CHECK(std::string(e.what()).find(b.why) != std::string::npos);
    }
    CHECK_THROWS_AS(specd::sdk::draw_index(b.row, 0.5), std::invalid_argument);
    CHECK_THROWS_AS(
        specd::sdk::sample_index(b.row.data(), static_cast<uint32_t>(b.row.size()), 0.5),
        std::invalid_argument);
  }
  // Negative zero is zero: accepted, never drawn.
  const std::vector<double> neg_zero = {-0.0, 1.0};
  CHECK(specd::sample_with_uniform(neg_zero, 0.0) == 1);
}

TEST_CASE("the core and the SDK draw the same index for every row and uniform") {
  std::mt19937_64 gen(99);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<double> row(1 + gen() % 9);
    for (double& w : row) w = gen() % 3 == 0 ? 0.0 : unit(gen);
    if (specd::sdk::check_row(row).ok() == false) continue;
    const double u = unit(gen);
    const uint32_t core = specd::sample_with_uniform(row, u);
    CHECK(core == specd::sdk::draw_index(row, u));
    CHECK(row[core] > 0);
  }
}
