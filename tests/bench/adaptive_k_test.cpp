#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/adaptive_k.hpp"

using namespace specd;

namespace {

// Feeds rounds from a synthetic system: per-token acceptance alpha (i.i.d.), a 1-row pass
// of 1 ms, each extra row `row_cost` ms, drafting `draft_ms` per token. Deterministic:
// the accepted count is the expected one rounded from a fixed pattern.
void simulate(AdaptiveK& a, double alpha, double row_cost, double draft_ms, int rounds,
              double rtt_ms = 0) {
  uint64_t state = 12345;
  auto uniform = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return double(state >> 11) / double(1ull << 53);
  };
  for (int i = 0; i < rounds; ++i) {
    uint32_t k = a.next_k();
    uint32_t accepted = 0;
    while (accepted < k && uniform() < alpha) ++accepted;
    AdaptiveKRound r;
    r.drafted = k;
    r.accepted = accepted;
    r.draft_s = k * draft_ms * 1e-3;
    r.verify_s = (1.0 + row_cost * k + rtt_ms) * 1e-3;
    r.overhead_s = rtt_ms * 1e-3;
    a.observe(r);
  }
}

}  // namespace

TEST_CASE("adaptive k: first two plain rounds (one untimed), then the starting k") {
  AdaptiveKOptions o;
  o.k_start = 3;
  AdaptiveK a(o);
  CHECK(a.next_k() == 0);
  a.observe({0, 0, 0, 9e-3});  // warm-up
  CHECK(a.next_k() == 0);
  a.observe({0, 0, 0, 1e-3});
  CHECK(a.next_k() == 3);
  CHECK(AdaptiveK().next_k() == 0);
  CHECK(AdaptiveKOptions().k_start == 1);  // a blind first draft is short
}

TEST_CASE("adaptive k: when drafting always loses, few rounds from the start draft") {
  // The shipped tiny pair: a 5-row round costs ~2.6 plain rounds, drafting a token ~0.25 of
  // one, and acceptance is low. Counted from the very first round, over 64- and 1000-round
  // generations.
  for (int rounds : {64, 1000}) {
    AdaptiveK a;
    uint64_t state = 7;
    int drafting = 0, drafted = 0;
    for (int i = 0; i < rounds; ++i) {
      const uint32_t k = a.next_k();
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const uint32_t accepted = k > 0 && (state >> 40) % 5 == 0 ? 1 : 0;  // β ≈ 0.2
      a.observe({k, accepted, k * 0.25e-3, (1.0 + 0.4 * k) * 1e-3});
      drafting += k > 0;
      drafted += k;
    }
    CAPTURE(rounds);
    CHECK(drafting <= rounds / 10 + 1);
    CHECK(drafted <= rounds / 10 + 1);  // and the drafts that are tried are short
  }
}

TEST_CASE("adaptive k: a slow first plain pass does not make drafting look cheap") {
  // The first passes after a prefill take 3 and 2 ms, later ones 1 ms; a 2-row pass 1.3 ms. With
  // β = 0.3 and drafting at 0.3 per token, k = 1 loses ((1.3 / 1.6) < 1 plain speedup): the
  // 1-row time must come from the mean of its samples, not stick to the cold one.
  AdaptiveK a;
  int drafting = 0;
  for (int i = 0; i < 200; ++i) {
    const uint32_t k = a.next_k();
    const double pass = i == 0 ? 3e-3 : i == 1 ? 2e-3 : (1.0 + 0.3 * k) * 1e-3;
    a.observe({k, k > 0 && i % 10 < 3 ? 1u : 0u, k * 0.3e-3, pass});
    drafting += k > 0;
  }
  CHECK(a.best_k() == 0);
  CHECK(drafting <= 20);
}

TEST_CASE("adaptive k: probes back off while they keep losing, and reset when one wins") {
  AdaptiveKOptions o;
  o.probe_interval = 4;
  AdaptiveK a(o);
  std::vector<int> probes;
  for (int i = 0; i < 200; ++i) {
    const uint32_t k = a.next_k();
    if (k > 0) probes.push_back(i);
    a.observe({k, 0, k * 0.5e-3, (1.0 + 0.5 * k) * 1e-3});
  }
  REQUIRE(probes.size() >= 4);
  // Gaps between successive probes never shrink, and reach past the base interval.
  for (size_t i = 2; i < probes.size(); ++i)
    CHECK(probes[i] - probes[i - 1] >= probes[i - 1] - probes[i - 2]);
  CHECK(probes.back() - probes[probes.size() - 2] >= 8 * 4);
  // Acceptance turns perfect and drafting cheap: speculation resumes.
  int drafting = 0;
  for (int i = 0; i < 600; ++i) {
    const uint32_t k = a.next_k();
    a.observe({k, k, k * 0.01e-3, (1.0 + 0.05 * k) * 1e-3});
    if (i >= 500) drafting += k > 0;
  }
  CHECK(drafting >= 90);
  CHECK(a.best_k() >= 3);
}

TEST_CASE("adaptive k: where drafting pays it converges to drafting from a cold start") {
  // A memory-bound pair: extra rows nearly free, drafting cheap, β = 0.85.
  AdaptiveK a;
  simulate(a, 0.85, 0.05, 0.03, 100);
  int drafting = 0;
  for (int i = 0; i < 100; ++i) {
    const uint32_t k = a.next_k();
    a.observe({k, k > 0 && i % 7 ? k : 0u, k * 0.03e-3, (1.0 + 0.05 * k) * 1e-3});
    drafting += k > 0;
  }
  CHECK(a.best_k() >= 3);
  CHECK(drafting >= 85);
}

TEST_CASE("adaptive k: high acceptance and cheap verification choose long drafts") {
  AdaptiveKOptions o;
  o.k_max = 8;
  AdaptiveK a(o);
  simulate(a, 0.95, 0.02, 0.01, 400);
  CHECK(a.best_k() >= 6);
  CHECK(a.predicted_speedup(a.best_k()) > 3);
}

TEST_CASE("adaptive k: costly verification (CPU-like) chooses short drafts") {
  AdaptiveK a;
  simulate(a, 0.7, 0.5, 0.02, 400);
  const uint32_t k = a.best_k();
  CHECK(k >= 1);
  CHECK(k <= 3);
  CHECK(a.verify_cost(2) == doctest::Approx(2.0).epsilon(0.05));
}

TEST_CASE("adaptive k: low acceptance falls back to plain decoding and re-probes") {
  AdaptiveKOptions o;
  o.probe_interval = 10;
  AdaptiveK a(o);
  simulate(a, 0.05, 0.4, 0.05, 300);
  CHECK(a.best_k() == 0);
  int plain = 0, probes = 0;
  for (int i = 0; i < 100; ++i) {
    uint32_t k = a.next_k();
    (k == 0 ? plain : probes)++;
    a.observe({k, 0, k * 5e-5, (1.0 + 0.4 * k) * 1e-3});
  }
  CHECK(plain >= 90);
  CHECK(probes >= 1);  // the gap backs off to at most 8 × probe_interval
}

TEST_CASE("adaptive k: the estimates follow a change in acceptance") {
  AdaptiveK a;
  simulate(a, 0.05, 0.3, 0.02, 300);
  CHECK(a.best_k() == 0);
  simulate(a, 0.98, 0.3, 0.02, 1500);
  CHECK(a.best_k() >= 2);
}

TEST_CASE("adaptive k: expected tokens follow the per-position estimates") {
  AdaptiveK a;
  a.observe({0, 0, 0, 1e-3});
  for (int i = 0; i < 200; ++i) a.observe({4, 4, 4e-5, 2e-3});  // everything accepted
  CHECK(a.expected_tokens(4) > 4.5);
  CHECK(a.expected_tokens(0) == 1);
}

TEST_CASE("adaptive k: a remote verifier's round trip is a per-round term") {
  // The same system locally and behind a 5 ms round trip: the round trip is paid once per
  // round whatever k is, so it makes verification relatively cheaper and drafts longer.
  AdaptiveK local, remote;
  simulate(local, 0.7, 0.5, 0.05, 400);
  simulate(remote, 0.7, 0.5, 0.05, 400, 5.0);
  CHECK(local.round_trip_s() == 0);
  CHECK(remote.round_trip_s() == doctest::Approx(5e-3));
  // v(k) = (RTT + compute(k+1)) / (RTT + compute(1)): 1 + 0.5k over 6 ms.
  CHECK(remote.verify_cost(2) == doctest::Approx(7.0 / 6.0).epsilon(0.02));
  CHECK(local.verify_cost(2) == doctest::Approx(2.0).epsilon(0.05));
  CHECK(remote.best_k() > local.best_k());
  CHECK(remote.predicted_speedup(remote.best_k()) > local.predicted_speedup(local.best_k()));
  // Untried lengths are extrapolated from compute alone (the prior slope is a fraction of
  // the 1-row compute time, not of the round trip): one plain round behind 50 ms.
  AdaptiveK fresh;
  fresh.observe({0, 0, 0, 51e-3, 50e-3});  // the warm-up round, untimed
  fresh.observe({0, 0, 0, 51e-3, 50e-3});
  CHECK(fresh.verify_cost(4) < 1.05);
}
