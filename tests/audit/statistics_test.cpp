// The statistics behind the audit's p-values and intervals.
#include <doctest/doctest.h>

#include <vector>

#include "audit/distribution_tests.hpp"

TEST_CASE("chi-square upper tail matches tables") {
  CHECK(specd::chi2_survival(3.841458820694124, 1) == doctest::Approx(0.05).epsilon(1e-6));
  CHECK(specd::chi2_survival(18.307038053275146, 10) == doctest::Approx(0.05).epsilon(1e-6));
  CHECK(specd::chi2_survival(124.34211340400407, 100) == doctest::Approx(0.05).epsilon(1e-6));
  CHECK(specd::chi2_survival(0.0, 4) == 1.0);
  CHECK(specd::chi2_survival(1000.0, 2) < 1e-200);
}

TEST_CASE("G-test: perfect agreement, clear disagreement, impossible outcomes") {
  const std::vector<double> p = {0.5, 0.25, 0.25};
  CHECK(specd::g_test(p, std::vector<uint64_t>{500, 250, 250}).p_value == doctest::Approx(1.0));
  CHECK(specd::g_test(p, std::vector<uint64_t>{700, 150, 150}).p_value < 1e-10);
  const std::vector<double> q = {0.5, 0.5, 0.0};
  CHECK(specd::g_test(q, std::vector<uint64_t>{10, 10, 1}).p_value == 0.0);
  // Rare categories are pooled: 1000 categories of expected 0.1 form one bin.
  std::vector<double> many(1001, 0.0001);
  many[0] = 0.9;
  std::vector<uint64_t> counts(1001, 0);
  counts[0] = 900;
  for (int i = 1; i <= 100; ++i) counts[i] = 1;
  const auto g = specd::g_test(many, counts);
  CHECK(g.bins == 2);
  CHECK(g.p_value > 0.5);
}

TEST_CASE("TV and its interval") {
  const std::vector<double> a = {0.5, 0.5}, b = {1.0, 0.0};
  CHECK(specd::total_variation(a, b) == doctest::Approx(0.5));
  const auto ci = specd::tv_interval(0.05, 10000, 16, 0.95);
  CHECK(ci.first < 0.05);  // half-width sqrt(2 (16 ln 2 + ln 20) / 10000) / 2 = 0.0265
  CHECK(ci.first == doctest::Approx(0.05 - 0.02654).epsilon(1e-3));
  CHECK(ci.second > 0.05);
  CHECK(ci.second < 0.2);
  const auto wide = specd::tv_interval(0.9, 100, 16, 0.95);
  CHECK(wide.second == 1.0);
}
