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

PassCost measured_cost() {
  PassCost cost;
  for (uint32_t rows : {1u, 2u, 4u, 8u, 16u, 17u, 20u, 24u, 32u, 48u, 64u, 80u, 96u, 128u, 144u})
    cost.observe(rows, pass_ms(rows) * 1e-3);
  return cost;
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

TEST_CASE("pass cost: measured row counts, interpolation between them, extension beyond") {
  PassCost cost;
  CHECK(cost.time(4) == doctest::Approx(4.0));  // nothing measured: one unit per row
  cost.observe(1, 1.0);
  cost.observe(65, 3.0);
  CHECK(cost.measured(1));
  CHECK_FALSE(cost.measured(2));
  CHECK(cost.time(1) == doctest::Approx(1.0));
  CHECK(cost.time(33) == doctest::Approx(2.0));
  CHECK(cost.time(129) == doctest::Approx(5.0));  // the last slope, 1/32 per row
  cost.observe(1, 3.0);                           // decayed, not replaced
  CHECK(cost.time(1) > 1.0);
  CHECK(cost.time(1) < 3.0);
  cost.observe(0, 1.0);  // ignored
  cost.observe(7, -1.0);
  CHECK_FALSE(cost.measured(7));
}

TEST_CASE("adaptive k under load: drafts at batch 1, drafts nothing at batch 16") {
  const PassCost cost = measured_cost();
  AdaptiveK a;
  teach_acceptance(a);

  a.set_load({&cost, 0, 0});  // alone: extra rows are free up to 16
  const uint32_t alone = a.best_k();
  CHECK(alone >= 4);
  CHECK(a.verify_cost(4) == doctest::Approx(1.0));
  CHECK(a.predicted_speedup(alone) > 2.0);

  // 15 others at one row and one token each: 16 rows fill the memory-bound pass, so each
  // drafted row lengthens every sequence's step; 0.8 acceptance does not pay for it.
  a.set_load({&cost, 15, 15});
  CHECK(a.verify_cost(4) == doctest::Approx(20.0 / 16.0));
  CHECK(a.best_k() == 0);
  for (uint32_t k = 1; k <= 8; ++k) CHECK(a.predicted_speedup(k) < 1.0);

  // 3 others: rows are still free up to 16 in all, so drafting pays again.
  a.set_load({&cost, 3, 3});
  CHECK(a.best_k() > 0);
}

TEST_CASE("adaptive k under load keeps its pass times out of its own per-row estimates") {
  const PassCost cost = measured_cost();
  AdaptiveK a;
  a.set_load({&cost, 0, 0});
  CHECK(a.next_k() > 0);  // no plain round to time first: the scheduler's model has the times
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
