// Presence, frequency and repeat penalties and logit_bias (sampling/penalties.hpp): a verified
// row's adjustment counts the draft tokens on its own path, with the bits plain decoding gives at
// that position; the formula; bad values refused.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "common/error.hpp"
#include "sampling/penalties.hpp"

using namespace specd;

namespace {

std::vector<float> random_row(uint32_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, 3.f);
  std::vector<float> row(vocab);
  for (float& x : row) x = n(rng);
  return row;
}

// On random rows of seeds 1..`seeds`, `spec` given `path` adjusts each row to the bits that
// `plain` (with the path's tokens committed) gives with no path.
void check_path_counts_as_committed(const Penalties& spec, const Penalties& plain,
                                    const std::vector<int32_t>& path, uint32_t vocab,
                                    uint32_t seeds) {
  for (uint32_t seed = 1; seed <= seeds; ++seed) {
    std::vector<float> a = random_row(vocab, seed), b = a;
    spec.apply(a, path);
    plain.apply(b, {});
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("penalties: a row's path counts as if its tokens were committed, bit for bit") {
  const uint32_t vocab = 64;
  const PenaltyParams params{0.7, 0.35, {{3, 2.5f}, {9, -100.f}, {12, 0.1f}}};
  const std::vector<int32_t> committed = {3, 5, 5, 12, 40};
  const std::vector<int32_t> path = {5, 3, 3, 63};
  // Speculation: the committed tokens counted, the path given with the row.
  Penalties spec(params, vocab);
  for (int32_t t : committed) spec.add(t);
  // Plain decoding at the same position: every token committed.
  Penalties plain(params, vocab);
  for (int32_t t : committed) plain.add(t);
  for (int32_t t : path) plain.add(t);
  check_path_counts_as_committed(spec, plain, path, vocab, 20);
  // The formula: z = (logit + bias) - (frequency * count + presence * (count > 0)).
  std::vector<float> row(vocab, 1.0f), want = row;
  plain.apply(row, {});
  want[3] = static_cast<float>(double(float(1.0 + 2.5)) - (0.35 * 3 + 0.7));
  want[5] = static_cast<float>(1.0 - (0.35 * 3 + 0.7));
  want[9] = static_cast<float>(1.0 - 100.0);
  want[12] = static_cast<float>(double(float(1.0 + double(0.1f))) - (0.35 * 1 + 0.7));
  want[40] = static_cast<float>(1.0 - (0.35 + 0.7));
  want[63] = static_cast<float>(1.0 - (0.35 + 0.7));
  CHECK(std::memcmp(row.data(), want.data(), row.size() * sizeof(float)) == 0);
  // No penalty for a token that is not on the path nor committed.
  CHECK(row[0] == 1.0f);
}

TEST_CASE("repeat penalty: the window spans prompt, output and path, bit for bit") {
  const uint32_t vocab = 64;
  for (int last_n : {3, 6, 64, -1}) {
    CAPTURE(last_n);
    const PenaltyParams params{0.2, 0.1, {}, 1.3, last_n};
    const std::vector<int32_t> prompt = {7, 8, 9, 7}, committed = {3, 5}, path = {5, 11, 3};
    Penalties spec(params, vocab), plain(params, vocab);
    for (int32_t t : prompt) spec.add_context(t), plain.add_context(t);
    for (int32_t t : committed) spec.add(t), plain.add(t);
    for (int32_t t : path) plain.add(t);
    check_path_counts_as_committed(spec, plain, path, vocab, 10);
  }
  // The formula: each distinct token of the window once, divided when positive, multiplied
  // otherwise; tokens outside the window untouched.
  Penalties p(PenaltyParams{0, 0, {}, 2.0, 3}, 16);
  for (int32_t t : {1, 2, 3, 4}) p.add_context(t);
  std::vector<float> row(16, 1.0f);
  row[3] = -1.0f;
  p.apply(row, std::vector<int32_t>{4});  // window: 3, 4, 4
  CHECK(row[1] == 1.0f);
  CHECK(row[2] == 1.0f);
  CHECK(row[3] == -2.0f);
  CHECK(row[4] == 0.5f);
  CHECK_FALSE(Penalties(PenaltyParams{0, 0, {}, 1.0, 64}, 10).active());
  CHECK_FALSE(Penalties(PenaltyParams{0, 0, {}, 1.5, 0}, 10).active());
  CHECK_THROWS_WITH_AS(Penalties(PenaltyParams{0, 0, {}, 0.0, 64}, 10),
                       doctest::Contains("repeat_penalty"), UsageError);
}

TEST_CASE("penalties: out-of-range values and tokens are refused, naming them") {
  CHECK_THROWS_WITH_AS(Penalties(PenaltyParams{2.5, 0, {}}, 10),
                       doctest::Contains("presence_penalty"), UsageError);
  CHECK_THROWS_WITH_AS(Penalties(PenaltyParams{0, -3, {}}, 10),
                       doctest::Contains("frequency_penalty"), UsageError);
  CHECK_THROWS_WITH_AS(Penalties(PenaltyParams{0, 0, {{10, 1.f}}}, 10),
                       doctest::Contains("token 10 is outside the vocabulary of 10"), UsageError);
  CHECK_THROWS_WITH_AS(Penalties(PenaltyParams{0, 0, {{1, 101.f}}}, 10),
                       doctest::Contains("[-100, 100]"), UsageError);
  CHECK_FALSE(Penalties(PenaltyParams{}, 10).active());
}
