// The scheduler's pieces that need no model: the pass-cost model, adaptive k under load
// (verification nearly free at batch 1, not at batch 16) and KV admission arithmetic.
#include <doctest/doctest.h>

#include <algorithm>

#include "engine/adaptive_k.hpp"
#include "engine/pass_cost.hpp"
#include "server/kv_admission.hpp"

using namespace specd;

namespace {

// A pass that is memory bound up to 16 rows (1 ms whatever the rows) and compute bound
// beyond (in proportion to the rows): the shape of a GPU or a CPU with a large model.
double pass_ms(uint32_t rows) {
  return std::max(1.0, rows / 16.0);
}

// Passes of the row counts a load gives (a batch of `batch` sequences drafting 0..4 each),
// enough of them that older loads are forgotten.
void observe_load(PassCost& cost, uint32_t batch) {
  for (int i = 0; i < 400; ++i) {
    const uint32_t rows = batch + static_cast<uint32_t>(i % 5) * batch;
    cost.observe(rows, pass_ms(rows) * 1e-3);
  }
}

// Rounds that accept each drafted token with probability about 0.8 (a fixed pattern).
void teach_acceptance(AdaptiveK& a) {
  for (int i = 0; i < 400; ++i) {
    AdaptiveKRound r;
    r.drafted = 4;
    r.accepted = i % 5 == 0 ? 1 : (i % 5 == 1 ? 2 : 4);
    r.draft_s = 4 * 0.01e-3;  // drafting: 1% of a 1-row pass per token
    r.verify_s = 1e-3;
    a.observe(r);
  }
}

}  // namespace

TEST_CASE("pass cost: a line through noisy pass times, forgetting old loads") {
  PassCost cost;
  CHECK(cost.time(4) == doctest::Approx(4.0));  // nothing measured: one unit per row
  cost.observe(8, 2.0);
  CHECK(cost.time(16) == doctest::Approx(4.0));  // one row count: in proportion
  cost.observe(1, 1.0);
  cost.observe(65, 3.0);
  cost.observe(33, 2.0);
  CHECK(cost.per_row_s() > 0.0);
  CHECK(cost.time(129) > cost.time(65));
  PassCost line;
  for (int i = 0; i < 200; ++i) {  // 1 + M/32 seconds, with +-10% alternating noise
    const uint32_t rows = 1 + static_cast<uint32_t>(i % 64);
    line.observe(rows, (1.0 + rows / 32.0) * (i % 2 ? 1.1 : 0.9));
  }
  CHECK(line.fixed_s() == doctest::Approx(1.0).epsilon(0.1));
  CHECK(line.per_row_s() == doctest::Approx(1.0 / 32).epsilon(0.1));
  CHECK(line.time(33) == doctest::Approx(2.0).epsilon(0.1));
  cost.observe(0, 1.0);  // ignored
  cost.observe(7, -1.0);
  CHECK(cost.observations() == 4u);
}

TEST_CASE("adaptive k under load: drafts at batch 1, drafts nothing at batch 16") {
  PassCost cost;
  AdaptiveK a;
  teach_acceptance(a);

  observe_load(cost, 1);  // alone: passes of 1..5 rows, all memory bound (1 ms)
  a.set_load({&cost, 0, 0});
  const uint32_t alone = a.best_k();
  CHECK(alone >= 4);
  CHECK(a.verify_cost(4) == doctest::Approx(1.0));
  CHECK(a.predicted_speedup(alone) > 2.0);

  // 16 sequences: passes of 16..80 rows, compute bound, so each drafted row lengthens every
  // sequence's step; 15 others at one row and one token each. 0.8 acceptance does not pay.
  observe_load(cost, 16);
  a.set_load({&cost, 15, 15});
  CHECK(a.verify_cost(4) == doctest::Approx(20.0 / 16.0).epsilon(0.01));
  CHECK(a.best_k() == 0);
  for (uint32_t k = 1; k <= 8; ++k) CHECK(a.predicted_speedup(k) < 1.0);

  // Back to a light load (4 sequences, memory bound again): drafting pays again.
  observe_load(cost, 4);
  a.set_load({&cost, 3, 3});
  CHECK(a.best_k() > 0);
}

TEST_CASE("adaptive k under load keeps its pass times out of its own per-row estimates") {
  PassCost cost;
  observe_load(cost, 1);
  AdaptiveK a;
  a.set_load({&cost, 0, 0});
  CHECK(a.next_k() > 0);  // no plain round to time first: the scheduler's model has the times
}

TEST_CASE("pass cost: steady rows on a noisy machine do not make an extra row look free") {
  // 4 sequences on a CPU: a step costs 0.38 + 0.27·M ms, almost always over 4 rows; one in
  // ten is over 5 (a sequence drafted); ±25% noise in a fixed pattern, and the 5-row
  // steps happened to land on fast moments. The plain fit's slope comes out below 0.
  PassCost cost;
  for (int i = 0; i < 200; ++i) {
    const uint32_t rows = i % 10 == 9 ? 5 : 4;
    const double noise = rows == 5 ? 0.9 : 1.0 + 0.25 * double(int(i * 7919 % 21) - 10) / 10.0;
    cost.observe(rows, (0.38 + 0.27 * rows) * noise * 1e-3);
  }
  // The fitted slope alone says a fifth row is free or cheaper; with its error it costs
  // a share of a row (truly 0.27 ms, a 4-row step 1.46 ms: v(1) ≈ 1.18).
  CHECK(cost.per_row_s() > 0.08e-3);
  CHECK(cost.time(5) / cost.time(4) > 1.05);
  // Never dearer than in proportion to the rows (a line through the origin).
  CHECK(cost.time(5) / cost.time(4) <= 5.0 / 4.0 + 1e-9);
  // Exact times over varied rows: the line itself, no margin.
  PassCost exact;
  for (int i = 0; i < 100; ++i) exact.observe(1 + i % 8, (0.38 + 0.27 * (1 + i % 8)) * 1e-3);
  CHECK(exact.per_row_s() == doctest::Approx(0.27e-3).epsilon(1e-6));
  CHECK(exact.fixed_s() == doctest::Approx(0.38e-3).epsilon(1e-6));
}

TEST_CASE("adaptive k under load: a check every sequence waits out is split between them") {
  // Drafting loses even optimistically (nothing accepted), so a probe is only a rare check, allowed
  // while it costs at most 1/64 of the time to go. Under load every sequence in the step
  // waits out its draft, and each runs its own checks: with 16 sequences each may spend a
  // sixteenth of that.
  PassCost cost;
  for (int i = 0; i < 100; ++i) cost.observe(1 + i % 8, (0.38 + 0.27 * (1 + i % 8)) * 1e-3);
  AdaptiveK a;
  a.set_load({&cost, 0, 0, 0});
  for (int i = 0; i < 400; ++i) {
    AdaptiveKRound r;
    r.drafted = 1;
    r.accepted = 0;
    r.draft_s = 0.05e-3;
    a.observe(r);
  }
  // A probe with nothing to catch up on, 40 tokens to go: its draft and extra row cost
  // 0.07 of a 16-row step, under 40/64 alone, over it 16 times.
  const AdaptiveKHorizon horizon{40, 1};
  for (uint32_t others : {0u, 15u}) {
    // The same step either way: `others` sequences at one row and one token, plus rows
    // that keep the step at 16 (so only the sharing differs, not the prices).
    a.set_load({&cost, 15, double(others), others});
    CAPTURE(others);
    REQUIRE(a.optimistic_speedup() <= 1.0);
    CHECK(a.worth_catching_up(horizon, true) == (others == 0));
  }
  // Alone (batch 1) the same check is allowed, as before.
  a.set_load({&cost, 0, 0, 0});
  CHECK(a.worth_catching_up(horizon, true));
}

TEST_CASE("KV admission: reservations, capped by the context and the budget") {
  using server::KvAdmission;
  KvAdmission kv(100);
  CHECK(kv.reservation(10, 20, false, 64, 1000) == 30u);
  CHECK(kv.reservation(10, 20, true, 64, 1000) == 93u);     // room for one round's draft
  CHECK(kv.reservation(10, 20, true, 64, 50) == 50u);       // the context
  CHECK(kv.reservation(10, 200, false, 64, 1000) == 100u);  // the whole budget
  CHECK(kv.fits(100));
  kv.take(60);
  CHECK_FALSE(kv.fits(41));
  CHECK(kv.fits(40));
  kv.release(60);
  CHECK(kv.used() == 0u);
}
