#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "engine/adaptive_k.hpp"
#include "engine/recent_median.hpp"

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

TEST_CASE("adaptive k: first four plain rounds (one untimed), then the starting k") {
  AdaptiveKOptions o;
  o.k_start = 3;
  AdaptiveK a(o);
  CHECK(a.next_k() == 0);
  a.observe({0, 0, 0, 9e-3});               // warm-up
  for (double pass : {1e-3, 5e-3, 1e-3}) {  // three timed (one descheduled)
    CHECK(a.next_k() == 0);
    a.observe({0, 0, 0, pass});
  }
  CHECK(a.next_k() == 3);
  // The 1-row time is their median: the descheduled pass does not make rows look cheap.
  a.observe({3, 0, 3e-4, 2e-3});
  // One pass of 4 rows is not settled: the prior line (0.3 a row) is lower.
  CHECK(a.verify_cost(3) == doctest::Approx(1.9));
  a.observe({3, 0, 3e-4, 2e-3});
  a.observe({3, 0, 3e-4, 2e-3});
  CHECK(a.verify_cost(3) == doctest::Approx(2.0));
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

namespace {

// A synthetic pair run sequence by sequence the way Sequence drives the controller: each
// sequence has a prompt and a token budget (the horizon), and a draft round first catches
// up on the tokens the proposer has not seen (a chunked pass: `catch_up` 1-row times per
// token) before drafting k tokens (`draft` 1-row times each). A 1-row pass takes `t1` s,
// each extra row `row_cost` of it; a draft token is accepted when `accept` says so. Timing
// noise comes from `noise(i)`, a factor on every timed call (deterministic).
struct SyntheticPair {
  double t1 = 1e-3, row_cost = 0.4, draft = 0.3, catch_up = 0.03;
  std::function<bool(uint64_t)> accept = [](uint64_t) { return false; };
  std::function<double(uint64_t)> noise = [](uint64_t) { return 1.0; };
  uint64_t calls = 0;
  // Totals over the runs so far.
  uint64_t rounds = 0, draft_rounds = 0, cold_rounds = 0;
  double seconds = 0, plain_seconds = 0;

  void run(AdaptiveK& a, uint32_t prompt, uint32_t max_tokens) {
    uint32_t emitted = 0;
    size_t length = prompt, proposed_at = 0;
    while (emitted < max_tokens) {
      AdaptiveKHorizon h;
      h.remaining = max_tokens - emitted;
      h.proposer_lag = static_cast<uint32_t>(length - proposed_at);
      const uint32_t k = a.next_k(h);
      AdaptiveKRound r;
      r.drafted = k;
      r.proposer_lag = h.proposer_lag;
      if (k > 0) {
        proposed_at = length;
        const bool cold = h.proposer_lag > 10;
        r.draft_s = t1 * ((cold ? h.proposer_lag * catch_up : draft) + (k - 1) * draft);
        r.draft_s *= noise(calls++);
        while (r.accepted < k && accept(calls++)) ++r.accepted;
        ++draft_rounds;
        cold_rounds += cold;
      }
      r.verify_s = t1 * (1 + row_cost * k) * noise(calls++);
      a.observe(r);
      ++rounds;
      seconds += r.draft_s + r.verify_s;
      const uint32_t tokens = std::min(r.accepted + 1, max_tokens - emitted);
      emitted += tokens;
      length += r.accepted + 1;
      plain_seconds += tokens * t1;
    }
  }
};

// Accepts `tenths` of every 10 draft tokens, spread by a fixed hash of the call index.
std::function<bool(uint64_t)> accepts_tenths(uint64_t tenths) {
  return [tenths](uint64_t i) { return i * 2654435761u % 10 < tenths; };
}

// A pair with the given per-row, per-draft-token and per-catch-up-token costs (in 1-row
// times) whose draft is accepted `tenths` of the time.
SyntheticPair pair_costing(double row_cost, double draft, double catch_up, uint64_t tenths) {
  SyntheticPair pair;
  pair.row_cost = row_cost;
  pair.draft = draft;
  pair.catch_up = catch_up;
  pair.accept = accepts_tenths(tenths);
  return pair;
}

// Every 4th timed call descheduled (3 × its cost), and ±10% jitter.
double shared_machine(uint64_t i) {
  return (i % 4 == 3 ? 3.0 : 1.0) * (1.0 + 0.1 * double(int(i * 7919 % 21) - 10) / 10.0);
}

}  // namespace

TEST_CASE("recent median: ignores a minority of outliers and follows a drift") {
  RecentMedian m;
  CHECK(m.median() == 0);
  m.add(5);
  CHECK(m.median() == 5);
  m.add(1);
  CHECK(m.median() == 3);
  m.add(1);
  CHECK(m.median() == 1);  // one descheduled sample of three
  for (int i = 0; i < 8; ++i) m.add(i % 3 == 0 ? 9.0 : 2.0);
  CHECK(m.median() == 2);  // 3 of 8 outliers: the window's median is a typical sample
  CHECK(m.count() == 11u);
}

TEST_CASE("adaptive k: a short generation or few tokens to go never probe") {
  // Fresh controllers: only the prior is known, so the decision rests on the horizon.
  for (uint32_t max_tokens : {1u, 8u, 15u}) {
    AdaptiveK a;
    SyntheticPair pair;
    pair.accept = [](uint64_t) { return true; };  // even a perfect draft
    pair.run(a, 20, max_tokens);
    CAPTURE(max_tokens);
    CHECK(pair.draft_rounds == 0);
  }
  // A long prompt and 24 tokens to go: its catch-up (1000 tokens at the prior 1/32 of a
  // pass each) outweighs the most drafting could gain.
  AdaptiveK a;
  SyntheticPair pair;
  pair.run(a, 1000, 24);
  CHECK(pair.draft_rounds == 0);
  // The same controller and a short prompt with 64 tokens to go: it probes.
  pair.run(a, 20, 64);
  CHECK(pair.draft_rounds >= 1);
}

TEST_CASE("adaptive k: the catch-up is charged once, apart from the draft cost") {
  AdaptiveK a;
  for (int i = 0; i < 4; ++i) {
    CHECK(a.next_k({64, 100}) == 0);
    a.observe({0, 0, 0, 1e-3});
  }
  // The first draft catches up on 104 tokens: 104 × 0.03 ms, then one token.
  REQUIRE(a.next_k({60, 104}) == 1);
  a.observe({1, 0, 104 * 0.03e-3, 1.4e-3, 0, 104});
  CHECK(a.catch_up_cost() == doctest::Approx(0.03).epsilon(0.01));
  // Not 3.1 per drafted token: until a warm round is timed, c is only known to be at
  // least one token's share of the chunk.
  CHECK(a.draft_cost() == doctest::Approx(0.03).epsilon(0.01));
  // The next round is a warm k = 1 one that measures c.
  REQUIRE(a.next_k({59, 1}) == 1);
  a.observe({1, 0, 0.3e-3, 1.4e-3, 0, 1});
  CHECK(a.draft_cost() == doctest::Approx(0.3).epsilon(0.01));
  CHECK(a.catch_up_cost() == doctest::Approx(0.03).epsilon(0.01));
  // Two 2-row passes at 1.4: not settled, so the prior line (1.3) stands.
  CHECK(a.verify_cost(1) == doctest::Approx(1.3));
  // Drafting loses (E(1) ≈ 1.25 against 1.6): plain decoding for the rest.
  CHECK(a.best_k() == 0);
}

TEST_CASE("adaptive k: where drafting loses, the probes stop costing time") {
  // The shipped tiny pair on prose: β ≈ 0.3, a 2-row pass 1.4 × a 1-row one, a drafted
  // token 0.3 of one, the catch-up 0.03 per token; 80-token prompts, 64 tokens each, 24
  // sequences through one controller (as `specd ab` runs an arm), on a noisy machine.
  AdaptiveK a;
  SyntheticPair pair;
  pair.accept = accepts_tenths(3);
  pair.noise = shared_machine;
  for (int s = 0; s < 24; ++s) pair.run(a, 80, 64);
  // Of 1536 rounds, a handful draft, and the catch-up (80+ tokens, 2.4 passes) is paid at
  // most 3 times (probing every 16–128 plain rounds would pay it at least 12 times).
  CAPTURE(pair.draft_rounds);
  CHECK(pair.draft_rounds <= 6);
  CHECK(pair.cold_rounds <= 3);
  CHECK(a.best_k() == 0);
}

TEST_CASE("adaptive k: a memory-bound pair speculates from its first sequence on") {
  // Extra rows nearly free, a draft token 2% of a pass, the catch-up 0.002 per token,
  // β = 0.9: drafting pays about 3×. 64-token sequences behind 100-token prompts.
  AdaptiveK a;
  SyntheticPair pair = pair_costing(0.1, 0.02, 0.002, 9);
  pair.noise = shared_machine;
  pair.run(a, 100, 64);
  CHECK(pair.draft_rounds >= pair.rounds / 2);
  const uint64_t rounds = pair.rounds, drafting = pair.draft_rounds;
  for (int s = 0; s < 8; ++s) pair.run(a, 100, 64);
  // Every later sequence drafts from its first round (the catch-up is repaid).
  CHECK(pair.draft_rounds - drafting >= (pair.rounds - rounds) * 9 / 10);
  CHECK(a.best_k() >= 3);
  // Over 2× plain decoding's speed (the noise makes the arm's calls 1.5× slower on average).
  CHECK(pair.seconds < 1.5 * pair.plain_seconds / 2);
}

TEST_CASE("adaptive k: a busy spell in a plain stretch does not make drafting look cheap") {
  // Drafting loses (the tiny pair), then the machine gets 3× slower for a long plain
  // stretch: every pass slows alike, so the costs, kept relative to the 1-row time of
  // their moment, are unchanged and the controller stays plain.
  AdaptiveK a;
  SyntheticPair pair;
  pair.accept = accepts_tenths(3);
  pair.run(a, 80, 64);
  REQUIRE(a.best_k() == 0);
  const double before = a.predicted_speedup(1);
  pair.t1 = 3e-3;
  const uint64_t drafting = pair.draft_rounds;
  for (int s = 0; s < 4; ++s) pair.run(a, 80, 64);
  CHECK(a.best_k() == 0);
  CHECK(a.predicted_speedup(1) == doctest::Approx(before).epsilon(0.05));
  CHECK(pair.draft_rounds == drafting);
}

TEST_CASE("adaptive k: a 1-row time from a busy spell that ended is timed afresh") {
  AdaptiveK a;
  CHECK(a.next_k() == 0);
  a.observe({0, 0, 0, 9e-3});    // warm-up
  for (int i = 0; i < 3; ++i) {  // the machine is busy: 1-row passes take 5 ms, not 1
    CHECK(a.next_k() == 0);
    a.observe({0, 0, 0, 5e-3});
  }
  // The spell ends: a 2-row pass takes 1.4 ms, far under the 1-row time, which is stale.
  REQUIRE(a.next_k() == 1);
  a.observe({1, 0, 0.3e-3, 1.4e-3});
  CHECK(a.verify_cost(1) == doctest::Approx(1.3));  // the sample was not set against it
  CHECK(a.draft_cost() == 0);                       // nor was the draft time
  for (int i = 0; i < 3; ++i) {                     // three plain rounds time it afresh
    CHECK(a.next_k() == 0);
    a.observe({0, 0, 0, 1e-3});
  }
  a.observe({1, 0, 0.3e-3, 1.2e-3});
  CHECK(a.verify_cost(1) == doctest::Approx(1.2));  // counted now (under the prior line)
  CHECK(a.draft_cost() == doctest::Approx(0.3));
}

TEST_CASE("adaptive k: one slow pass or one early rejection does not rule a length out") {
  AdaptiveK a;
  a.observe({0, 0, 0, 9e-3});  // warm-up
  for (int i = 0; i < 3; ++i) a.observe({0, 0, 0, 1e-3});
  // k = 1 pays: 2-row passes at 1.15, the first token accepted 19 times in 20.
  for (int i = 0; i < 20; ++i) a.observe({1, i == 7 ? 0u : 1u, 0.1e-3, 1.15e-3});
  CHECK(a.verify_cost(1) == doctest::Approx(1.15));
  // One k = 2 round: its 3-row pass is slow (descheduled) and its second token rejected.
  a.observe({2, 1, 0.2e-3, 2.0e-3});
  // The slow pass stands against the settled 2-row line (1.3), not alone...
  CHECK(a.verify_cost(2) == doctest::Approx(1.3));
  // ...and the second position keeps the first's estimate as its prior: β_1 ≈ 0.6, not 1/3.
  const double beta0 = a.expected_tokens(1) - 1;
  const double beta1 = (a.expected_tokens(2) - a.expected_tokens(1)) / beta0;
  CHECK(beta1 > 0.55);
  CHECK(beta1 < beta0);
  // So k = 2 is tried again rather than k = 1 kept for good.
  CHECK(a.best_k() == 2);
  // Three slow 3-row passes settle it: k = 2 then loses to k = 1.
  a.observe({2, 2, 0.2e-3, 2.0e-3});
  a.observe({2, 2, 0.2e-3, 2.0e-3});
  CHECK(a.verify_cost(2) == doctest::Approx(2.0));
  CHECK(a.best_k() == 1);
}

TEST_CASE("adaptive k: drafting that pays still waits where a sequence cannot repay its catch-up") {
  // A pair where drafting pays about 1.5× but the draft's catch-up is dear (0.05 of a
  // pass per token): a new 2000-token prompt with 20 tokens to go decodes plainly, the
  // same prompt with 1000 tokens to go drafts from its first round.
  AdaptiveK a;
  SyntheticPair pair = pair_costing(0.2, 0.1, 0.05, 8);
  pair.run(a, 50, 200);
  REQUIRE(a.best_k() > 0);
  CHECK_FALSE(a.worth_catching_up({20, 2000}, false));
  CHECK(a.worth_catching_up({1000, 2000}, false));
  CHECK(a.worth_catching_up({20, 5}, false));  // warm: nothing to catch up on
  CHECK(a.next_k({20, 2000}) == 0);
}
