// The sampling transform: one code path for target and draft rows.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/error.hpp"
#include "sampling/sampling_transform.hpp"

using specd::SamplingParams;
using specd::transform_logits;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> run(std::vector<double> logits, SamplingParams params) {
  return transform_logits(std::span<const double>(logits), params);
}

void check_row(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-12));
}

}  // namespace

TEST_CASE("temperature 1 is the softmax") {
  const std::vector<double> logits = {1.0, 2.0, 0.5, -1.0};
  double z = 0;
  for (double v : logits) z += std::exp(v);
  std::vector<double> want;
  for (double v : logits) want.push_back(std::exp(v) / z);
  check_row(run(logits, {}), want);
}

TEST_CASE("temperature scales the logits") {
  const std::vector<double> logits = {1.0, 2.0};
  SamplingParams p;
  p.temperature = 0.5;
  const double a = std::exp(2.0), b = std::exp(4.0);
  check_row(run(logits, p), {a / (a + b), b / (a + b)});
}

TEST_CASE("temperature 0 is one-hot argmax with ties to the lowest id") {
  SamplingParams p;
  p.temperature = 0;
  check_row(run({0.1, 3.0, 3.0, -kInf}, p), {0, 1, 0, 0});
  check_row(run({-kInf, -kInf, 2.0}, p), {0, 0, 1});
}

TEST_CASE("top-k keeps exactly k, ties at the boundary to the lowest ids") {
  SamplingParams p;
  p.top_k = 2;
  const auto row = run({1.0, 2.0, 2.0, 2.0}, p);
  check_row(row, {0, 0.5, 0.5, 0});
  p.top_k = 10;  // larger than the vocabulary: off
  CHECK(run({1.0, 1.0}, p)[0] == doctest::Approx(0.5));
}

TEST_CASE("top-p keeps the smallest most-probable set reaching the mass") {
  SamplingParams p;
  p.top_p = 0.7;
  // probabilities 0.5, 0.3, 0.2 (from their logs)
  const auto row = run({std::log(0.5), std::log(0.3), std::log(0.2)}, p);
  check_row(row, {0.5 / 0.8, 0.3 / 0.8, 0});
  p.top_p = 0.4;  // the top token alone
  check_row(run({std::log(0.5), std::log(0.3), std::log(0.2)}, p), {1, 0, 0});
}

TEST_CASE("min-p drops tokens below min_p times the top probability") {
  SamplingParams p;
  p.min_p = 0.5;
  const auto row = run({std::log(0.5), std::log(0.3), std::log(0.2)}, p);
  check_row(row, {0.5 / 0.8, 0.3 / 0.8, 0});
}

TEST_CASE("order: top-k, then top-p on the survivors, then min-p") {
  SamplingParams p;
  p.top_k = 3;
  p.top_p = 0.9;
  p.min_p = 0.3;
  // probs 0.4 0.3 0.2 0.1 -> top-k: 0.4 0.3 0.2 (renorm /0.9: .444 .333 .222)
  // -> top-p 0.9: .444+.333 = .777 < .9, add .222 -> all three kept
  // -> min-p 0.3 * .444 = .133: all kept -> 4/9 3/9 2/9
  const auto row = run({std::log(0.4), std::log(0.3), std::log(0.2), std::log(0.1)}, p);
  check_row(row, {4.0 / 9, 3.0 / 9, 2.0 / 9, 0});
}

TEST_CASE("large and masked logits stay finite") {
  const auto row = run({1000.0, 999.0, -kInf, -1000.0}, {});
  const double e = std::exp(-1.0);
  CHECK(row[0] == doctest::Approx(1 / (1 + e + std::exp(-2000.0))));
  CHECK(row[2] == 0.0);
  double total = 0;
  for (double v : row) {
    CHECK(std::isfinite(v));
    total += v;
  }
  CHECK(total == doctest::Approx(1.0));
}

TEST_CASE("invalid rows are clear errors") {
  CHECK_THROWS_AS(run({-kInf, -kInf}, {}), specd::Error);
  CHECK_THROWS_AS(run({0.0, std::nan("")}, {}), specd::Error);
  CHECK_THROWS_AS(run({0.0, kInf}, {}), specd::Error);
  try {
    run({-kInf}, {});
  } catch (const specd::Error& e) {
    CHECK(std::string(e.what()).find("masked") != std::string::npos);
  }
}

TEST_CASE("temperature 0 refuses what the other temperatures refuse, float rows alike") {
  SamplingParams greedy;
  greedy.temperature = 0;
  CHECK_THROWS_WITH_AS(run({-kInf, -kInf}, greedy), doctest::Contains("masked"), specd::Error);
  CHECK_THROWS_WITH_AS(run({0.0, std::nan("")}, greedy), doctest::Contains("logit 1 is NaN"),
                       specd::Error);
  CHECK_THROWS_WITH_AS(run({kInf, 0.0}, greedy), doctest::Contains("logit 0 is +inf"),
                       specd::Error);
  // A NaN after the maximum is still found (the one pass reads the whole row).
  CHECK_THROWS_AS(run({5.0, 1.0, std::nan("")}, greedy), specd::Error);
  const std::vector<float> f = {-std::numeric_limits<float>::infinity(), 2.5f, 2.5f, -1.0f};
  std::vector<double> out(4);
  transform_logits(std::span<const float>(f), greedy, std::span<double>(out));
  check_row(out, {0, 1, 0, 0});
  const std::vector<float> nan_row = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  std::vector<double> two(2);
  CHECK_THROWS_AS(transform_logits(std::span<const float>(nan_row), greedy, std::span<double>(two)),
                  specd::Error);
}

TEST_CASE("temperature 0 finds the first maximum and the first bad logit in any row") {
  // Rows of 1 to 1100 logits (blocks of 256 and vectors of 4 cut anywhere), drawn from a few
  // values so that maxima tie, with masked entries; then one NaN or +inf put in.
  SamplingParams greedy;
  greedy.temperature = 0;
  std::mt19937 rng(5);
  const std::vector<float> values = {
      -1.5f, 0.0f, -0.0f, 2.0f, 2.0f, 3.25f, -std::numeric_limits<float>::infinity()};
  for (int trial = 0; trial < 400; ++trial) {
    const size_t n = 1 + rng() % 1100;
    std::vector<float> row(n);
    for (float& v : row) v = values[rng() % values.size()];
    row[rng() % n] = 1.0f;  // at least one finite logit
    size_t want = 0;
    for (size_t i = 1; i < n; ++i)
      if (row[i] > row[want]) want = i;
    std::vector<double> out(n);
    transform_logits(std::span<const float>(row), greedy, std::span<double>(out));
    INFO("trial " << trial << ", " << n << " logits");
    CHECK(out[want] == 1.0);
    CHECK(std::count(out.begin(), out.end(), 0.0) == static_cast<long>(n - 1));
    const size_t at = rng() % n;
    row[at] = trial % 2 ? std::numeric_limits<float>::quiet_NaN()
                        : std::numeric_limits<float>::infinity();
    const std::string named = "logit " + std::to_string(at) + " is";
    CHECK_THROWS_WITH_AS(
        transform_logits(std::span<const float>(row), greedy, std::span<double>(out)),
        doctest::Contains(named.c_str()), specd::Error);
  }
}

TEST_CASE("float logits take the same path") {
  const std::vector<float> f = {0.5f, 1.5f, -2.0f};
  std::vector<double> out(3);
  transform_logits(std::span<const float>(f), SamplingParams{}, std::span<double>(out));
  const std::vector<double> d = {0.5, 1.5, -2.0};
  check_row(out, run(d, {}));
}

TEST_CASE("transform_probs works on probability rows, zeros stay zero") {
  SamplingParams p;
  p.temperature = 0.5;
  const std::vector<double> probs = {0.2, 0.0, 0.8};
  const auto row = specd::transform_probs(probs, p);
  check_row(row, {0.04 / 0.68, 0, 0.64 / 0.68});
}

TEST_CASE("parameters are validated") {
  SamplingParams p;
  CHECK_NOTHROW(specd::validate_sampling_params(p));
  p.temperature = -1;
  CHECK_THROWS_AS(specd::validate_sampling_params(p), specd::UsageError);
  p = {};
  p.top_p = 0;
  CHECK_THROWS_AS(specd::validate_sampling_params(p), specd::UsageError);
  p = {};
  p.min_p = 1.5;
  CHECK_THROWS_AS(specd::validate_sampling_params(p), specd::UsageError);
  p = {};
  p.top_k = -1;
  CHECK_THROWS_AS(specd::validate_sampling_params(p), specd::UsageError);
  // Subnormal and infinite temperatures overflow the division by T; min_p = 1 filters
  // nothing meaningful.
  for (double t : {1e-310, 1e-7, HUGE_VAL, std::nan("")}) {
    CAPTURE(t);
    p = {};
    p.temperature = t;
    CHECK_THROWS_AS(specd::validate_sampling_params(p), specd::UsageError);
  }
  p = {};
  p.temperature = 1e-6;
  CHECK_NOTHROW(specd::validate_sampling_params(p));
  p = {};
  p.min_p = 1;
  CHECK_THROWS_AS(specd::validate_sampling_params(p), specd::UsageError);
}

namespace {

// The transform as its contract states it, with a full stable sort of the row: the filters
// of the implementation select instead of sorting a large vocabulary, and must give these
// bits exactly.
std::vector<double> reference(std::vector<double> z, const SamplingParams& p) {
  for (double& v : z)
    if (v != -kInf) v /= p.temperature;
  auto softmax = [](const std::vector<double>& x) {
    double m = -kInf, total = 0;
    for (double v : x) m = std::max(m, v);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      total += out[i] = x[i] == -kInf ? 0.0 : std::exp(x[i] - m);
    for (double& v : out) v /= total;
    return out;
  };
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < z.size(); ++i)
    if (z[i] != -kInf) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return z[a] > z[b]; });
  size_t keep = order.size();
  if (p.top_k > 0) keep = std::min(keep, static_cast<size_t>(p.top_k));
  for (size_t j = keep; j < order.size(); ++j) z[order[j]] = -kInf;
  order.resize(keep);
  if (p.top_p < 1.0 || p.min_p > 0.0) {
    std::vector<double> prob = softmax(z);
    if (p.top_p < 1.0) {
      double mass = 0;
      size_t j = 0;
      while (j < order.size()) {
        mass += prob[order[j++]];
        if (mass >= p.top_p) break;
      }
      for (size_t r = j; r < order.size(); ++r) z[order[r]] = -kInf;
      order.resize(j);
      prob = softmax(z);
    }
    if (p.min_p > 0.0) {
      const double floor = p.min_p * prob[order.front()];
      for (uint32_t i : order)
        if (prob[i] < floor) z[i] = -kInf;
    }
  }
  return softmax(z);
}

}  // namespace

TEST_CASE("a large vocabulary's filters select without sorting, with the sorted contract's bits") {
  std::mt19937 rng(5);
  std::normal_distribution<double> logit(0.0, 3.0);
  for (const uint32_t vocab : {300u, 32000u, 151936u}) {
    std::vector<double> row(vocab);
    for (double& v : row) v = std::round(logit(rng) * 4) / 4;  // many ties
    for (uint32_t i = 0; i < vocab; i += 97) row[i] = -kInf;   // masked tokens
    const SamplingParams cases[] = {{0.8, 0, 1.0, 0.0},    {0.8, 40, 1.0, 0.0},
                                    {0.8, 0, 0.95, 0.0},   {1.3, 0, 0.999, 0.0},
                                    {0.7, 50, 0.9, 0.05},  {1.0, 0, 1.0, 0.1},
                                    {2.0, 0, 0.9999, 0.0}, {0.5, vocab + 10, 0.8, 0.0}};
    for (const SamplingParams& p : cases) {
      CAPTURE(vocab);
      CAPTURE(p.temperature);
      CAPTURE(p.top_k);
      CAPTURE(p.top_p);
      CAPTURE(p.min_p);
      const std::vector<double> got = run(row, p), want = reference(row, p);
      CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(double)) == 0);
    }
  }
}
