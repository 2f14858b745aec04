#include "engine/adaptive_k.hpp"

#include <algorithm>

#include "engine/pass_cost.hpp"

namespace specd {
namespace {

// Before any pass with more than one row is timed, each extra row is assumed to cost this
// fraction of a 1-row pass (CPUs measure 0.1–0.7; a GPU less): pessimistic enough that
// long drafts are not tried blindly.
constexpr double kPriorRowCost = 0.3;
// Plain rounds timed before the first speculative one (after the untimed warm-up) (the first pass
// after a prefill is often slow), plain samples after which the 1-row time counts as settled, the
// refresh gap until then, and the longest probe gap in multiples of probe_interval.
constexpr uint32_t kColdPlainRounds = 1;
constexpr uint32_t kSettledPlainRounds = 4;
constexpr uint32_t kEarlyRefresh = 8;
constexpr uint32_t kMaxProbeGap = 8;

}  // namespace

AdaptiveK::AdaptiveK(const AdaptiveKOptions& options) : options_(options) {
  options_.k_max = std::max<uint32_t>(1, options_.k_max);
  options_.k_start = std::clamp<uint32_t>(options_.k_start, 1, options_.k_max);
  tested_.assign(options_.k_max, 0);
  accepted_.assign(options_.k_max, 0);
  pass_s_.assign(options_.k_max + 2, 0);
  samples_.assign(options_.k_max + 2, 0);
  probe_gap_ = std::max<uint32_t>(1, options_.probe_interval);
}

uint32_t AdaptiveK::next_k() {
  uint32_t k;
  if (plain_seen_ < kColdPlainRounds && !loaded()) {
    k = 0;  // time plain passes first: every cost is relative to them
  } else if (!draft_seen_) {
    k = options_.k_start;  // then one speculative round to start the estimates
  } else {
    k = best_k();
    if (k == 0) {
      if (++since_probe_ >= probe_gap_) {
        since_probe_ = 0;
        // Probe short: it measures β_0 (the one that matters most) at the least cost. Each
        // probe that leaves the prediction a loss doubles the gap to the next one.
        k = 1;
        probe_pending_ = true;
      }
    } else if (!loaded() && ++since_refresh_ >= refresh_gap()) {
      since_refresh_ = 0;
      k = 0;
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
  // A running mean: the plain mean of the first 1/decay samples, then exponential decay, so
  // that one slow first pass (cold caches) does not weigh for the rest of a generation.
  auto update = [&](double& mean, uint32_t& n, double x) {
    ++n;
    const double w = std::max(options_.decay, 1.0 / double(n));
    mean = (1.0 - w) * mean + w * x;
  };
  const uint32_t rows = std::min<uint32_t>(round.drafted + 1, options_.k_max + 1);
  if (round.verify_s > 0 && !loaded()) {
    const double overhead = std::clamp(round.overhead_s, 0.0, round.verify_s);
    const double compute = round.verify_s - overhead;
    // The first round's pass is a warm-up (caches, allocations after the prefill): untimed.
    if (rounds_ > 1) {
      update(pass_s_[rows], samples_[rows], compute);
      update(overhead_s_, overhead_n_, overhead);
      if (rows == 1) ++plain_seen_;
    }
  }
  if (round.drafted == 0) return;
  update(draft_per_token_s_, draft_n_, round.draft_s / round.drafted);
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
  if (probe_pending_) {
    probe_pending_ = false;
    const uint32_t base = std::max<uint32_t>(1, options_.probe_interval);
    probe_gap_ = best_k() == 0 ? std::min(probe_gap_ * 2, kMaxProbeGap * base) : base;
  }
}

double AdaptiveK::expected_tokens(uint32_t k) const {
  double e = 1, reach = 1, beta = 0.5;
  for (uint32_t d = 0; d < k && d < options_.k_max; ++d) {
    // Depths never tested borrow the deepest estimate above them.
    if (tested_[d] > 0.5) beta = (accepted_[d] + 1) / (tested_[d] + 2);
    reach *= beta;
    e += reach;
  }
  return e;
}

double AdaptiveK::row_time(uint32_t rows) const {
  return compute_time(rows) + overhead_s_;
}

double AdaptiveK::compute_time(uint32_t rows) const {
  const double t1 = samples_[1] ? pass_s_[1] : 1.0;
  if (rows <= 1) return t1;
  if (rows < samples_.size() && samples_[rows]) return std::max(t1, pass_s_[rows]);
  // Interpolate between the nearest timed row counts; past the last one, extend its line.
  uint32_t lo = 1, hi = 0;
  for (uint32_t r = 1; r < samples_.size(); ++r) {
    if (!samples_[r]) continue;
    if (r < rows) lo = r;
    if (r > rows && hi == 0) hi = r;
  }
  // More rows never cost less than one (a noisy sample may say so).
  const double t_lo = lo == 1 ? t1 : std::max(t1, pass_s_[lo]);
  if (hi) return t_lo + std::max(0.0, pass_s_[hi] - t_lo) * double(rows - lo) / double(hi - lo);
  double slope = kPriorRowCost * t1;
  if (lo > 1) slope = std::max(0.0, (t_lo - t1) / double(lo - 1));
  return t_lo + slope * double(rows - lo);
}

double AdaptiveK::verify_cost(uint32_t k) const {
  if (k == 0) return 1;
  if (loaded()) {
    const uint32_t base = load_.other_rows + 1;
    return load_.cost->time(base + k) / load_.cost->time(base);
  }
  return row_time(k + 1) / row_time(1);
}

double AdaptiveK::draft_cost() const {
  if (loaded()) {
    const double t = load_.cost->time(load_.other_rows + 1);
    return draft_seen_ && t > 0 ? draft_per_token_s_ / t : 0;
  }
  if (!draft_seen_ || !samples_[1] || row_time(1) <= 0) return 0;
  return draft_per_token_s_ / row_time(1);
}

double AdaptiveK::predicted_speedup(uint32_t k) const {
  if (k == 0) return 1;
  const double r = loaded() ? std::max(0.0, load_.other_tokens) : 0.0;
  return (r + expected_tokens(k)) / (r + 1) / (verify_cost(k) + double(k) * draft_cost());
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
