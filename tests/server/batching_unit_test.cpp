// The scheduler's pieces that need no model: the pass and draft time models, the step plan
// (k = "auto" under a batch: verification nearly free at batch 1, not at batch 16) and KV
// admission arithmetic.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "batching/kv_budget.hpp"
#include "batching/round_share.hpp"
#include "batching/step_planner.hpp"
#include "engine/adaptive_k.hpp"
#include "engine/step_cost.hpp"

using namespace specd;
using batching::plan_step;
using batching::PlanSequence;

namespace {

// A CPU's pass: bound by reading the weights up to 8 rows (10 ms, a little more per row),
// compute bound beyond (9 ms per row): the 1.5 B constructed model's shape on 2 cores.
double cpu_pass_s(uint32_t rows) {
  return (rows <= 8 ? 10.0 + 0.3 * rows : 12.4 + 9.0 * (rows - 8)) * 1e-3;
}

// A GPU's pass: reading the weights dominates up to 128 rows.
double gpu_pass_s(uint32_t rows) {
  return (rows <= 128 ? 10.0 + 0.01 * rows : 11.28 + 0.5 * (rows - 128)) * 1e-3;
}

PassTime calibrated(double (*pass)(uint32_t)) {
  PassTime t;
  const std::vector<uint32_t> rows = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  t.calibrate(rows, 1, [&](uint32_t r) { return pass(r); });
  return t;
}

// A draft model timed at 0.2 ms a step, one row a step.
DraftTime cheap_draft() {
  DraftTime draft;
  for (int i = 0; i < 50; ++i) draft.observe(1 + i % 4, 1 + i % 4, 0.2e-3 * (1 + i % 4));
  return draft;
}

// A sequence decoding with k = "auto" whose draft tokens are accepted with probability
// `alpha` each (gains alpha^j), at most `most` of them.
PlanSequence auto_seq(double alpha, uint32_t most = 8, int group = 0) {
  PlanSequence q;
  q.fixed_rows = 1;
  q.fixed_tokens = 1;
  q.group = group;
  double reach = 1;
  for (uint32_t j = 1; j <= most; ++j) q.gains.push_back(reach *= alpha);
  return q;
}

uint32_t total(const std::vector<uint32_t>& k) {
  uint32_t n = 0;
  for (uint32_t x : k) n += x;
  return n;
}

}  // namespace

TEST_CASE("pass time: the calibrated curve, interpolated, extended and scaled by what steps show") {
  PassTime t;
  CHECK(t.time(4) == doctest::Approx(4.0));  // nothing calibrated: one unit per row
  t = calibrated(&cpu_pass_s);
  CHECK(t.time(8) == doctest::Approx(cpu_pass_s(8)));
  CHECK(t.time(6) == doctest::Approx((cpu_pass_s(4) + cpu_pass_s(8)) / 2));  // interpolated
  CHECK(t.time(80) == doctest::Approx(cpu_pass_s(64) + 16 * 9e-3));          // extended
  // Steps twice as slow as calibrated (long contexts, a busy machine): the whole curve
  // follows, its shape kept.
  for (int i = 0; i < 200; ++i) t.observe(16, 2 * cpu_pass_s(16));
  CHECK(t.scale() == doctest::Approx(2.0).epsilon(0.01));
  CHECK(t.time(4) == doctest::Approx(2 * cpu_pass_s(4)).epsilon(0.01));
  t.observe(0, 1.0);  // ignored
  t.observe(4, -1.0);
  CHECK(t.scale() == doctest::Approx(2.0).epsilon(0.01));
  // A noisy calibration never makes more rows cheaper than fewer.
  PassTime noisy;
  const std::vector<uint32_t> rows = {1, 2, 4};
  noisy.calibrate(rows, 1, [](uint32_t r) { return r == 2 ? 0.5 : 1.0; });
  CHECK(noisy.time(2) >= noisy.time(1));
}

TEST_CASE("pass time: a slow spell during calibration is outvoted, not kept for a few counts") {
  // Passes run at their speed, except six calls in a row at 1.4 times: a spell of a shared
  // machine that timing each count's repeats back to back would put on all of 3 and 4 rows.
  const std::vector<uint32_t> rows = {1, 2, 3, 4, 6, 8};
  int call = 0;
  std::vector<uint32_t> order;
  PassTime t;
  t.calibrate(rows, 3, [&](uint32_t r) {
    order.push_back(r);
    const bool spell = call >= 6 && call < 12;
    ++call;
    return cpu_pass_s(r) * (spell ? 1.4 : 1.0);
  });
  CHECK(order.size() == 18);
  CHECK(order[0] == 1);
  CHECK(order[1] == 2);  // rounds over every count, not one count's repeats together
  for (uint32_t r : rows) CHECK(t.time(r) == doctest::Approx(cpu_pass_s(r)));
}

TEST_CASE("pass time: the steps correct a calibration's shape where they run") {
  // Calibrated on a busy moment: 48 rows 2.4 times 12 where the steps show 3.5 times.
  PassTime t;
  const std::vector<uint32_t> rows = {1, 4, 12, 24, 48, 64};
  t.calibrate(rows, 1, [](uint32_t r) {
    return r == 48 ? 0.204 : r == 64 ? 0.29 : r == 24 ? 0.16 : r == 12 ? 0.085 : 0.03;
  });
  CHECK(t.time(48) / t.time(12) == doctest::Approx(2.4).epsilon(0.01));
  for (int i = 0; i < 300; ++i) {
    t.observe(12, 0.055);
    if (i % 4 == 0) t.observe(48, 0.19);  // the plan's occasional large step
  }
  CHECK(t.time(12) == doctest::Approx(0.055).epsilon(0.03));
  CHECK(t.time(48) == doctest::Approx(0.19).epsilon(0.03));
  // Between and beyond them the curve keeps rising.
  CHECK(t.time(24) >= t.time(12));
  CHECK(t.time(64) >= t.time(48));
  CHECK(t.time(80) > t.time(64));
}

TEST_CASE("draft time: a fixed cost per draft step and a cost per row, fitted") {
  DraftTime d;
  CHECK(d.time(4, 16) == 0.0);  // nothing timed yet
  for (int i = 0; i < 100; ++i) {
    const uint32_t steps = 1 + i % 6, rows = steps * (1 + i % 5);
    d.observe(steps, rows, 2e-3 * steps + 0.1e-3 * rows);
  }
  CHECK(d.time(4, 16) == doctest::Approx(2e-3 * 4 + 0.1e-3 * 16).epsilon(0.01));
  CHECK(d.time(0, 0) == 0.0);
}

TEST_CASE("step plan: drafts long alone, short or not at all under a compute-bound batch") {
  const PassTime t = calibrated(&cpu_pass_s);
  const DraftTime draft = cheap_draft();
  const std::vector<const DraftTime*> drafts = {&draft};
  // Alone at 0.9 acceptance: a pass stays near 10 ms up to 8 rows, so a long draft pays.
  const std::vector<PlanSequence> one = {auto_seq(0.9)};
  const batching::StepPlan alone = plan_step(one, t, drafts);
  CHECK(alone.k[0] >= 6);
  CHECK(alone.tokens / alone.seconds > 2.5 / cpu_pass_s(1));
  CHECK(alone.plain_seconds == doctest::Approx(cpu_pass_s(1)));  // what it weighed against
  // 16 sequences: 16 rows are compute bound already; a drafted row costs 9 ms and adds 0.9
  // tokens against a step of ~87 ms for 16: drafting loses.
  const std::vector<PlanSequence> sixteen(16, auto_seq(0.9));
  CHECK(total(plan_step(sixteen, t, drafts).k) == 0);
  // Nor would it were every draft token accepted: the scheduler then stops probing their
  // acceptance (the probes' catch-up would only cost).
  const std::vector<PlanSequence> sure(16, auto_seq(1.0));
  CHECK(total(plan_step(sure, t, drafts).k) == 0);
  // 4 sequences: 4 rows, memory bound; 4 more rows (one each) are nearly free.
  const std::vector<PlanSequence> four(4, auto_seq(0.9));
  const batching::StepPlan p4 = plan_step(four, t, drafts);
  CHECK(total(p4.k) >= 4);
  CHECK(total(p4.k) <= 8);  // past 8 rows compute bound: no more than that
  // Sequences that accept more get the draft tokens first.
  std::vector<PlanSequence> mixed(4, auto_seq(0.3));
  mixed[2] = auto_seq(0.95);
  const batching::StepPlan pm = plan_step(mixed, t, drafts);
  CHECK(pm.k[2] > pm.k[0]);
}

TEST_CASE("step plan: fixed rows (prefill, fixed k) and a dear draft model weigh in") {
  const PassTime t = calibrated(&cpu_pass_s);
  DraftTime cheap, dear;
  for (int i = 0; i < 50; ++i) {
    cheap.observe(1 + i % 4, 1 + i % 4, 0.1e-3 * (1 + i % 4));
    dear.observe(1 + i % 4, 1 + i % 4, 8e-3 * (1 + i % 4));  // a draft step as dear as a pass
  }
  // Six sequences drafting a fixed k = 3 put 24 rows in the step: past the knee, a drafted
  // row of the two planned ones (0.9 tokens for 9 ms) no longer repays its time.
  std::vector<PlanSequence> with_fixed(8, auto_seq(0.9));
  for (size_t i = 2; i < 8; ++i) {
    with_fixed[i].gains.clear();
    with_fixed[i].fixed_rows = 4;
    with_fixed[i].fixed_draft = 3;
    with_fixed[i].fixed_tokens = 1 + 3 * 0.8;
  }
  const std::vector<const DraftTime*> cheap_only = {&cheap};
  const batching::StepPlan pf = plan_step(with_fixed, t, cheap_only);
  CHECK(total(pf.k) == 0);
  CHECK(pf.seconds >= cpu_pass_s(26));
  // A prefill chunk makes the step long, but its seconds are not the drafts' to beat: eight
  // decoding sequences beside a 64-row chunk draft no more than without it (a drafted row
  // still costs 9 ms for 0.9 tokens, against 8 tokens in 12.4 ms for the plain rows).
  PlanSequence prefill;
  prefill.prefill = true;
  prefill.fixed_rows = 64;
  std::vector<PlanSequence> with_prefill(8, auto_seq(0.9));
  CHECK(total(plan_step(with_prefill, t, cheap_only).k) == 0);
  with_prefill.push_back(prefill);
  const batching::StepPlan pp = plan_step(with_prefill, t, cheap_only);
  CHECK(total(pp.k) == 0);
  CHECK(pp.seconds == doctest::Approx(cpu_pass_s(72)));  // the chunk's share is in the step
  // Where the chunk leaves the pass bound by reading the weights (a GPU's pass up to 128
  // rows), drafted rows are still nearly free and the plan takes them.
  const PassTime gpu = calibrated(&gpu_pass_s);
  const std::vector<PlanSequence> chunk_and_one = {prefill, auto_seq(0.9)};
  CHECK(plan_step(chunk_and_one, gpu, cheap_only).k[1] >= 6);
  // Alone with a draft model whose steps cost as much as a pass: at 0.5 acceptance a
  // drafted token (0.5, 0.25, ... tokens) does not repay 8 ms.
  const std::vector<PlanSequence> one = {auto_seq(0.5)};
  const std::vector<const DraftTime*> dear_only = {&dear};
  CHECK(plan_step(one, t, dear_only).k[0] == 0);
  CHECK(plan_step(one, t, cheap_only).k[0] > 0);
}

TEST_CASE("step plan: a draft that promises less than 10% over plain decoding is not taken") {
  // A pass of 50 ms plus 10 ms a row and a free draft, 8 sequences: plain decoding makes 8
  // tokens in 130 ms. Drafting 2 tokens each at a gain of 0.65 makes 18.4 in 290 ms, 3% more:
  // within the curve's error, so plain. At 0.9 it makes 22.4, 26% more: drafted.
  PassTime t;
  const std::vector<uint32_t> rows = {1, 2, 4, 8, 16, 32, 64};
  t.calibrate(rows, 1, [](uint32_t r) { return 0.05 + 0.01 * r; });
  const std::vector<const DraftTime*> none = {};
  auto seqs = [](double gain) {
    std::vector<PlanSequence> v(8);
    for (PlanSequence& q : v) {
      q.fixed_rows = 1;
      q.fixed_tokens = 1;
      q.gains = {gain, gain};
    }
    return v;
  };
  CHECK(total(plan_step(seqs(0.65), t, none).k) == 0);
  const batching::StepPlan worth = plan_step(seqs(0.9), t, none);
  CHECK(total(worth.k) == 16);
  CHECK(worth.tokens / worth.seconds > 1.2 * 8 / worth.plain_seconds);
}

TEST_CASE("adaptive k with a plan: the scheduler's k, its pass times kept out of its own") {
  AdaptiveK a;
  a.set_plan(3);
  CHECK(a.next_k() == 3);  // no plain rounds first: the plan has the costs
  AdaptiveKRound r;
  r.drafted = 3;
  r.accepted = 3;
  r.verify_s = 1.0;  // a shared step's time: not this sequence's own pass
  for (int i = 0; i < 20; ++i) a.observe(r);
  CHECK(a.expected_tokens(3) > 3.0);  // acceptance learnt
  a.set_plan(std::nullopt);
  CHECK(a.next_k() == 0);  // alone again: it times its own plain rounds first
}

TEST_CASE("KV admission: reservations, capped by the context and the budget") {
  using batching::KvBudget;
  KvBudget kv(100);
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

TEST_CASE("step plan: a hybrid target's restore cost shortens the drafts it prices") {
  // Alone on the memory-bound curve at 0.7 acceptance: free of restore costs a long draft
  // pays; when a rejection costs a replay as dear as a pass, the plan drafts less, and when
  // it costs three passes, not at all.
  const PassTime t = calibrated(&cpu_pass_s);
  const DraftTime draft = cheap_draft();
  const std::vector<const DraftTime*> drafts = {&draft};
  const std::vector<PlanSequence> one = {auto_seq(0.7)};
  const uint32_t free_k = plan_step(one, t, drafts).k[0];
  const batching::StepPlan priced = plan_step(one, t, drafts, cpu_pass_s(1));
  CHECK(free_k >= 3);
  CHECK(priced.k[0] < free_k);
  CHECK(priced.seconds > cpu_pass_s(1 + priced.k[0]));  // the expected replay is in the step
  CHECK(plan_step(one, t, drafts, 3 * cpu_pass_s(1)).k[0] == 0);
}

TEST_CASE("round share: costly rounds beside a cheap sequence take turns, one a step") {
  using specd::batching::hold_costly_rounds;
  using specd::batching::RoundCost;
  const double pass = 0.005;
  // Nobody costly, or everybody: nobody is held.
  std::vector<RoundCost> cheap(4, RoundCost{0.001, 0});
  const std::vector<bool> held_cheap = hold_costly_rounds(cheap, pass);
  CHECK(std::count(held_cheap.begin(), held_cheap.end(), true) == 0);
  std::vector<RoundCost> all_costly(4, RoundCost{0.05, 0});
  const std::vector<bool> none = hold_costly_rounds(all_costly, pass);
  CHECK(std::count(none.begin(), none.end(), true) == 0);
  // Eight grammar-heavy choices (40 ms of masks a round) beside one cheap request: one of
  // them a step, each in turn, so every one runs once in eight steps.
  std::vector<RoundCost> seqs(9, RoundCost{0.04, 0});
  seqs[8] = RoundCost{0.0005, 0};
  std::vector<int> ran(9, 0);
  for (int step = 0; step < 16; ++step) {
    const std::vector<bool> held = hold_costly_rounds(seqs, pass);
    CHECK(std::count(held.begin(), held.end(), true) == 7);
    CHECK_FALSE(held[8]);
    for (size_t i = 0; i < seqs.size(); ++i) {
      seqs[i].waited = held[i] ? seqs[i].waited + 1 : 0;
      ran[i] += held[i] ? 0 : 1;
    }
  }
  for (size_t i = 0; i < 8; ++i) CHECK(ran[i] == 2);
  CHECK(ran[8] == 16);
  // Costly ones just past the floor: still one a step; under the floor none is costly.
  std::vector<RoundCost> small = {{0.006, 0}, {0.006, 3}, {0.006, 1}, {0.0001, 0}};
  const std::vector<bool> held_small = hold_costly_rounds(small, 0.001);
  CHECK(held_small == std::vector<bool>{true, false, true, false});
  std::vector<RoundCost> hiccups = {{0.004, 0}, {0.004, 0}, {0.0001, 0}};
  const std::vector<bool> held_hiccups = hold_costly_rounds(hiccups, 0.001);
  CHECK(std::count(held_hiccups.begin(), held_hiccups.end(), true) == 0);
  // A round under the pass's time is not costly, however slow in itself.
  std::vector<RoundCost> under = {{0.02, 0}, {0.02, 0}, {0.0001, 0}};
  const std::vector<bool> held_under = hold_costly_rounds(under, 0.03);
  CHECK(std::count(held_under.begin(), held_under.end(), true) == 0);
}
