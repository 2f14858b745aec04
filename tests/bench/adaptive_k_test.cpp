#include <doctest/doctest.h>

#include <cmath>

#include "engine/adaptive_k.hpp"

using namespace specd;

namespace {

// Feeds rounds from a synthetic system: per-token acceptance alpha (i.i.d.), a 1-row pass
// of 1 ms, each extra row `row_cost` ms, drafting `draft_ms` per token. Deterministic:
// the accepted count is the expected one rounded from a fixed pattern.
void simulate(AdaptiveK& a, double alpha, double row_cost, double draft_ms, int rounds) {
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
    r.verify_s = (1.0 + row_cost * k) * 1e-3;
    a.observe(r);
  }
}

}  // namespace

TEST_CASE("adaptive k: first a plain round, then the starting k") {
  AdaptiveKOptions o;
  o.k_start = 3;
  AdaptiveK a(o);
  CHECK(a.next_k() == 0);
  a.observe({0, 0, 0, 1e-3});
  CHECK(a.next_k() == 3);
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
  for (int i = 0; i < 40; ++i) {
    uint32_t k = a.next_k();
    (k == 0 ? plain : probes)++;
    a.observe({k, 0, k * 5e-5, (1.0 + 0.4 * k) * 1e-3});
  }
  CHECK(plain >= 30);
  CHECK(probes >= 2);  // every probe_interval plain rounds
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
