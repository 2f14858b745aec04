#include "engine/adaptive_k.hpp"

#include <algorithm>
#include <cmath>

namespace specd {
namespace {

// Before any pass with more than one row is timed, each extra row is assumed to cost this
// fraction of a 1-row pass (CPUs measure 0.1–0.7; a GPU less): pessimistic enough that
// long drafts are not tried blindly.
constexpr double kPriorRowCost = 0.3;
// Plain rounds timed before the first speculative one (after the untimed warm-up: the first
// pass after a prefill is often slow; three, so that the 1-row time, their median, is
// not one descheduled pass), plain samples after which the 1-row time counts as
// settled, the refresh gap until then, and the longest probe gap in multiples of
// probe_interval.
constexpr uint32_t kColdPlainRounds = 3;
constexpr uint32_t kSettledPlainRounds = 4;
constexpr uint32_t kEarlyRefresh = 8;
constexpr uint32_t kMaxProbeGap = 8;
// A pass over more rows timed under this fraction of the 1-row time says that the 1-row
// time is stale (from a busy spell): it is timed afresh over kColdPlainRounds rounds.
constexpr double kStaleRatio = 0.75;
// Catch-up (see the header): u before a cold round is timed (÷ a 1-row pass), the fewest
// tokens to go for a probe, how many times its cost the optimistic gain must be, and the
// share of the remaining time a check costs at most where even S⁺ says drafting loses.
constexpr double kPriorCatchUp = 1.0 / 32;
constexpr uint32_t kMinProbeHorizon = 16;
constexpr double kRepayFactor = 2;
constexpr double kCheckShare = 1.0 / 64;
// The optimism of S⁺: standard deviations of β above its mean.
constexpr double kOptimism = 1;
// A depth's acceptance prior: the estimate of the depth above, worth this many rounds (one
// early rejection then leaves a deep position plausible instead of ruling it out).
constexpr double kPriorRounds = 2;
// Passes of a row count timed before its median stands alone; until then the estimate is
// the lower of that median and what the settled row counts around it predict, so that one
// slow first pass does not rule a draft length out for good.
constexpr uint32_t kSettledSamples = 3;

}  // namespace

AdaptiveK::AdaptiveK(const AdaptiveKOptions& options) : options_(options) {
  options_.k_max = std::max<uint32_t>(1, options_.k_max);
  options_.k_start = std::clamp<uint32_t>(options_.k_start, 1, options_.k_max);
  tested_.assign(options_.k_max, 0);
  accepted_.assign(options_.k_max, 0);
  ratio_.assign(options_.k_max + 2, RecentMedian{});
  probe_gap_ = std::max<uint32_t>(1, options_.probe_interval);
}

uint32_t AdaptiveK::next_k(const AdaptiveKHorizon& horizon) {
  if (plan_) {
    if (*plan_ > 0) last_k_ = *plan_;
    return *plan_;
  }
  uint32_t k = 0;
  if (plain_seen_ < kColdPlainRounds) {
    k = 0;  // time plain passes first: every cost is relative to them
  } else if (retime_ > 0) {
    --retime_;  // plain rounds to time the 1-row pass afresh
  } else if (follow_up_) {
    // A cold round measured the catch-up, not c: one warm k = 1 round measures c (unless a
    // new sequence began in between: its first round is cold again).
    follow_up_ = false;
    if (!cold(horizon.proposer_lag)) k = 1;
  } else if (!draft_seen_) {
    // Then one speculative round to start the estimates, if the sequence can repay it.
    if (worth_catching_up(horizon, true)) k = options_.k_start;
  } else {
    k = best_k();
    if (k == 0) {
      if (++since_probe_ >= probe_gap_ && worth_catching_up(horizon, true)) {
        since_probe_ = 0;
        // Probe short: it measures β_0 (the one that matters most) at the least cost. Each
        // probe that leaves the prediction a loss doubles the gap to the next one.
        k = 1;
        probe_pending_ = true;
      }
    } else if (++since_refresh_ >= refresh_gap()) {
      since_refresh_ = 0;
      k = 0;
    } else if (cold(horizon.proposer_lag) && !worth_catching_up(horizon, false)) {
      k = 0;  // drafting pays, but not enough to repay this catch-up before the end
    }
  }
  if (k > 0) last_k_ = k;
  return k;
}

uint32_t AdaptiveK::refresh_gap() const {
  // Until the 1-row time rests on a few samples, refresh it more often.
  return plain_seen_ < kSettledPlainRounds
             ? std::min<uint32_t>(kEarlyRefresh, options_.refresh_interval)
             : options_.refresh_interval;
}

void AdaptiveK::observe(const AdaptiveKRound& round) {
  ++rounds_;
  const double keep = 1.0 - options_.decay;
  const uint32_t rows = std::min<uint32_t>(round.drafted + 1, options_.k_max + 1);
  // Costs are stored relative to the 1-row time of this moment (the step under load).
  double step = step_s();
  if (round.verify_s > 0 && !plan_) {
    const double overhead = std::clamp(round.overhead_s, 0.0, round.verify_s);
    const double compute = round.verify_s - overhead;
    // The first round's pass is a warm-up (caches, allocations after the prefill): untimed.
    if (rounds_ > 1) {
      if (rows == 1) {
        t1_.add(compute);
        ++plain_seen_;
      } else if (t1_.count() && t1_.median() > 0) {
        const double ratio = compute / t1_.median();
        if (ratio < kStaleRatio) {
          // More rows far faster than one: the 1-row time is from a busy spell that has
          // ended. Time it afresh before anything is set against it.
          t1_.clear();
          retime_ = kColdPlainRounds;
        } else {
          ratio_[rows].add(ratio);
        }
      }
      overhead_.add(overhead);
    }
  }
  if (retime_ > 0) step = 0;  // no 1-row time to set the draft against
  if (round.drafted == 0) {
    settle_probe();
    return;
  }
  if (!cold(round.proposer_lag)) {
    const double per_token = round.draft_s / round.drafted;
    draft_.add(per_token);
    if (step > 0) draft_ratio_.add(per_token / step);
  } else {
    // The catch-up is charged apart, per token of proposer lag: the chunked pass over them ends at
    // the root, so the round's other drafted tokens cost c each.
    const double steps = double(round.drafted - 1) * draft_.median();
    const double per_token = std::max(0.0, round.draft_s - steps) / round.proposer_lag;
    catch_up_.add(per_token);
    if (step > 0) catch_up_ratio_.add(per_token / step);
    if (!draft_.count()) follow_up_ = true;
  }
  draft_seen_ = true;
  // A chain tests depth d only when every node above it was accepted.
  const uint32_t tested = std::min<uint32_t>(round.drafted, round.accepted + 1);
  for (uint32_t d = 0; d < options_.k_max; ++d) {
    tested_[d] *= keep;
    accepted_[d] *= keep;
  }
  for (uint32_t d = 0; d < std::min<uint32_t>(tested, options_.k_max); ++d) {
    tested_[d] += 1;
    if (d < round.accepted) accepted_[d] += 1;
  }
  settle_probe();
}

void AdaptiveK::settle_probe() {
  // A probe's verdict comes once its follow-up (if any) is in.
  if (!probe_pending_ || follow_up_) return;
  probe_pending_ = false;
  const uint32_t base = std::max<uint32_t>(1, options_.probe_interval);
  probe_gap_ = best_k() == 0 ? std::min(probe_gap_ * 2, kMaxProbeGap * base) : base;
}

double AdaptiveK::expected_tokens(uint32_t k) const {
  return expected_tokens(k, 0);
}

double AdaptiveK::expected_tokens(uint32_t k, double z) const {
  // β_d ~ Beta with the mean of the depth above (β_0: 1/2) as its prior, worth
  // kPriorRounds rounds: its posterior mean, plus z standard deviations. An untested depth
  // takes the estimate above it.
  double e = 1, reach = 1, prior = 0.5;
  for (uint32_t d = 0; d < k && d < options_.k_max; ++d) {
    const double n = tested_[d] + kPriorRounds;
    const double m = (accepted_[d] + kPriorRounds * prior) / n;
    prior = m;
    reach *= std::min(1.0, m + z * std::sqrt(m * (1 - m) / (n + 1)));
    e += reach;
  }
  return e;
}

double AdaptiveK::row_time(uint32_t rows) const {
  const double t1 = t1_.count() ? t1_.median() : 1.0;
  return t1 * compute_ratio(rows) + overhead_.median();
}

double AdaptiveK::compute_ratio(uint32_t rows) const {
  if (rows <= 1) return 1;
  // More rows never cost less than one (a noisy sample may say so).
  auto at = [&](uint32_t r) { return r == 1 ? 1.0 : std::max(1.0, ratio_[r].median()); };
  auto settled = [&](uint32_t r) { return ratio_[r].count() >= kSettledSamples; };
  const bool timed = rows < ratio_.size() && ratio_[rows].count();
  if (timed && settled(rows)) return at(rows);
  // Interpolate between the nearest settled row counts; past the last one, extend its line
  // (from one row at kPriorRowCost while none is settled).
  uint32_t lo = 1, hi = 0;
  for (uint32_t r = 2; r < ratio_.size(); ++r) {
    if (!settled(r)) continue;
    if (r < rows) lo = r;
    if (r > rows && hi == 0) hi = r;
  }
  double estimate;
  if (hi) {
    estimate = at(lo) + std::max(0.0, at(hi) - at(lo)) * double(rows - lo) / double(hi - lo);
  } else {
    double slope = kPriorRowCost;
    if (lo > 1) slope = (at(lo) - 1) / double(lo - 1);
    estimate = at(lo) + slope * double(rows - lo);
  }
  return timed ? std::min(estimate, at(rows)) : estimate;
}

double AdaptiveK::verify_cost(uint32_t k) const {
  if (k == 0) return 1;
  return row_time(k + 1) / row_time(1);
}

double AdaptiveK::step_s() const {
  return t1_.count() ? row_time(1) : 0;
}

double AdaptiveK::draft_cost() const {
  if (draft_ratio_.count()) return draft_ratio_.median();
  // Only cold rounds so far: a drafted token costs at least one token's share of a chunk.
  return catch_up_ratio_.count() ? catch_up_ratio_.median() : 0;
}

double AdaptiveK::catch_up_cost() const {
  return catch_up_ratio_.count() ? catch_up_ratio_.median() : kPriorCatchUp;
}

double AdaptiveK::speedup(uint32_t k, double z) const {
  if (k == 0) return 1;
  return expected_tokens(k, z) / (verify_cost(k) + double(k) * draft_cost());
}

double AdaptiveK::predicted_speedup(uint32_t k) const {
  return speedup(k, 0);
}

double AdaptiveK::optimistic_speedup() const {
  double best = 1;
  for (uint32_t k = 1; k <= options_.k_max; ++k) best = std::max(best, speedup(k, kOptimism));
  return best;
}

bool AdaptiveK::worth_catching_up(const AdaptiveKHorizon& horizon, bool probe) const {
  if (horizon.remaining == UINT32_MAX) return true;  // an unbounded horizon repays anything
  if (probe && horizon.remaining < kMinProbeHorizon) return false;
  if (!t1_.count()) return true;  // nothing timed to weigh it with
  // In 1-row pass times: the catch-up, then the round's extra rows and draft (twice for a
  // probe whose follow-up measures c).
  const double round = std::max(0.0, verify_cost(1) - 1) + draft_cost();
  const double cost = (cold(horizon.proposer_lag) ? horizon.proposer_lag * catch_up_cost() : 0) +
                      round * (probe && !draft_.count() ? 2 : 1);
  const double remaining = horizon.remaining, s = optimistic_speedup();
  const double gain = remaining * (1 - 1 / s);
  return gain >= kRepayFactor * cost || (probe && cost <= kCheckShare * remaining);
}

uint32_t AdaptiveK::best_k() const {
  uint32_t best = 0;
  double best_s = options_.min_speedup;
  for (uint32_t k = 1; k <= options_.k_max; ++k) {
    double s = predicted_speedup(k);
    if (s > best_s) {
      best_s = s;
      best = k;
    }
  }
  return best;
}

}  // namespace specd
