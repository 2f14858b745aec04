// Adaptive draft length ([proposer] k = "auto"): picks, before each round, the draft length
// k that maximises the predicted speedup E(k) / (v(k) + k·c) from running estimates, and
// drafts nothing (k = 0, plain decoding) when no k is predicted to beat plain decoding.
//
//   E(k)  expected tokens per round: 1 + Σ_{j=1..k} Π_{d<j} β_d, with β_d the measured
//         probability that the node at depth d is accepted given that its parent was (its
//         prior: the estimate of the depth above, worth two rounds)
//   v(k)  verify cost: time of a target pass over k+1 rows ÷ time of a 1-row pass
//   c     draft cost: proposer time per drafted token ÷ time of a 1-row pass
//
// A pass's time is its compute time plus the verifier's round trip: a round costs
// t_draft(k) + RTT + compute(k+1), a plain round RTT + compute(1). For a local verifier
// RTT = 0; a remote one reports each call's time outside computing (network, encoding,
// specd_verifier_info.last_overhead_s), kept as a median apart from the compute
// times, so that untried row counts are extrapolated from compute alone.
//
// Acceptance counts decay exponentially (weight `decay` per drafting round) so that they
// follow the text (code vs prose, a copied passage). Times are medians of their last 8
// samples (RecentMedian: a descheduled pass on a shared machine is ignored), and costs are
// kept as ratios to the 1-row time measured just before them (a row count timed fewer than
// three times counts as the lower of its median and what the settled counts around it
// predict, so one slow pass does not rule a length out): a (k+1)-row pass as
// pass ÷ 1-row time, a drafted token as seconds ÷ 1-row time. When the machine is busy for
// a while, every pass slows alike and the ratios hold; a 1-row time from a busy plain
// stretch set against pass times from a quiet one would make every draft look cheap. A
// pass over more rows timed well under the 1-row time shows that the 1-row time is from
// such a spell: the next three rounds are plain and time it afresh. More rows never count
// as cheaper than one. The verify time the engine reports includes the per-row work after
// the pass (logits → distributions, acceptance), which on small models costs as much as
// the pass.
//
// Cold start (no load model): four plain rounds (the first, a warm-up, is not timed: a
// first pass after a prefill is often slow), then one round at k_start (default 1: a
// short draft loses little when speculation does not pay), then best_k. While plain, it
// probes with k = 1 after `probe_interval` plain rounds; each probe that leaves the
// prediction a loss doubles the gap (up to 8 × probe_interval), one that wins resets it.
// While speculating, every `refresh_interval`-th round is plain to keep the 1-row time
// fresh (every 8th until four plain rounds are timed).
//
// Catch-up (the horizon, next_k's AdaptiveKHorizon): a proposer that keeps state (a draft
// model's KV cache) first catches up on the tokens appended since it last drafted — the
// whole prompt on a sequence's first draft — in one chunked pass. That is a one-time cost,
// u per token of proposer lag, kept apart from the per-round draft cost c: c comes from rounds that
// follow a draft round ("warm", a short proposer lag), u from the others ("cold"). After the
// first cold round, one warm k = 1 round follows to measure c. A cold round (a probe, or
// resuming a draft on a new sequence) is run only when the remaining tokens can repay it:
//
//   gain = R · (1 − 1/S⁺)  ≥  2 · (lag · u + v(1) − 1 + c)   (in 1-row pass times)
//
// with R the tokens the sequence may still emit (a probe needs 16) and S⁺ the optimistic
// prediction (each β_d at its posterior mean plus one standard deviation); or, where S⁺
// says drafting loses, when that cost is at most 1/64 of the remaining time (a rare check
// that nothing changed). Before any cold round is timed u is taken as 1/32 of a 1-row
// pass. So a short generation, or a long prompt with few tokens to go, never probes, and a
// sequence whose earlier probes showed that drafting loses decodes plainly.
//
// Planned (a scheduler batching many sequences, set_plan): the pass is shared, so the
// scheduler chooses every sequence's k together (core/batching/step_planner.hpp) from the
// measured cost of a pass by its rows and each sequence's acceptance estimates
// (expected_tokens), and next_k returns that choice. observe() then keeps acceptance and
// draft time only: a shared pass's time says nothing of this sequence's own rounds.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/recent_median.hpp"

namespace specd {

struct AdaptiveKOptions {
  uint32_t k_max = 8;              // the longest draft ever asked for
  uint32_t k_start = 1;            // the first speculative round's k
  uint32_t probe_interval = 16;    // plain rounds between probes when speculation loses
  uint32_t refresh_interval = 64;  // speculative rounds between plain rounds (1-row time)
  double decay = 0.02;             // weight of one drafting round in the acceptance counts
  double min_speedup = 1.0;        // below this prediction, decode plainly
};

// What one round did, as the engine measured it.
struct AdaptiveKRound {
  uint32_t drafted = 0;       // chain length proposed (0 = a plain round)
  uint32_t accepted = 0;      // draft nodes accepted (≤ drafted)
  double draft_s = 0;         // proposer time
  double verify_s = 0;        // target pass over drafted + 1 rows (wall time, round trip included)
  double overhead_s = 0;      // the part of verify_s spent outside computing (a remote round trip)
  uint32_t proposer_lag = 0;  // tokens the proposer caught up on (AdaptiveKHorizon::proposer_lag)
};

// Where the sequence stands before a round (Sequence::prepare_round says it).
struct AdaptiveKHorizon {
  uint32_t remaining = UINT32_MAX;  // tokens it may still emit (max_tokens, context room)
  uint32_t proposer_lag = 0;  // tokens appended since the proposer last drafted in this sequence
                              // (all of it before its first draft): its catch-up if it drafts now
};

class AdaptiveK {
 public:
  explicit AdaptiveK(const AdaptiveKOptions& options = {});

  // The draft length for the next round: 0 = plain decoding, else 1..k_max. The default
  // horizon (unbounded, nothing to catch up on) never holds a draft back.
  uint32_t next_k(const AdaptiveKHorizon& horizon = {});
  void observe(const AdaptiveKRound& round);
  // The scheduler's choice for the next round (see above); nullopt: choose alone.
  void set_plan(std::optional<uint32_t> k) { plan_ = k; }

  // The model behind the choice (for reports, tests and the scheduler's plan).
  double expected_tokens(uint32_t k) const;
  // E(k) with each β_d at its posterior mean plus z standard deviations.
  double expected_tokens(uint32_t k, double z) const;
  double verify_cost(uint32_t k) const;  // v(k); 1 at k = 0
  double draft_cost() const;             // c
  double catch_up_cost() const;  // u ÷ time of a 1-row pass (the prior before a cold round)
  double round_trip_s() const { return overhead_.median(); }  // the round trip
  double predicted_speedup(uint32_t k) const;
  // The optimistic prediction S⁺ (β at its posterior mean + one standard deviation), at
  // the best k.
  double optimistic_speedup() const;
  // Whether a round that catches up on `horizon.proposer_lag` tokens is repaid (see above); a
  // probe also needs 16 tokens to go and, before c is measured, pays for its follow-up.
  bool worth_catching_up(const AdaptiveKHorizon& horizon, bool probe) const;
  // The k with the highest prediction (0 when none beats min_speedup).
  uint32_t best_k() const;
  uint64_t rounds() const { return rounds_; }  // rounds observed

 private:
  uint32_t refresh_gap() const;
  double row_time(uint32_t rows) const;        // estimated seconds of a pass, round trip included
  double compute_ratio(uint32_t rows) const;   // the same without it, ÷ the 1-row time
  double step_s() const;                       // a 1-row pass
  double speedup(uint32_t k, double z) const;  // the prediction, β at mean + z·sd
  void settle_probe();
  bool cold(uint32_t proposer_lag) const { return proposer_lag > options_.k_max + 2; }

  AdaptiveKOptions options_;
  // β_d as decayed counts: accepted_[d] / tested_[d], with a Beta(1, 1) prior.
  std::vector<double> tested_, accepted_;
  // Times are medians of recent samples (RecentMedian). Costs relative to the 1-row pass
  // are kept as ratios to the 1-row time of their moment (see above).
  RecentMedian t1_;                   // seconds of a 1-row pass, round trip excluded
  std::vector<RecentMedian> ratio_;   // [rows ≥ 2]: pass time ÷ the 1-row time
  RecentMedian overhead_;             // seconds of round trip per verify call
  RecentMedian draft_, draft_ratio_;  // c: seconds per drafted token (warm rounds); ÷ step
  RecentMedian catch_up_,
      catch_up_ratio_;  // u: seconds per token of proposer lag (cold rounds); ÷ step
  bool draft_seen_ = false;
  uint32_t retime_ = 0;         // plain rounds still to run to time the 1-row pass afresh
  bool follow_up_ = false;      // a cold round left c unmeasured: the next round drafts k = 1
  uint32_t plain_seen_ = 0;     // plain rounds timed
  uint32_t probe_gap_ = 1;      // plain rounds between probes now (backs off)
  bool probe_pending_ = false;  // the round in flight is a probe
  uint64_t rounds_ = 0;
  uint32_t since_probe_ = 0;    // plain rounds since the last probe
  uint32_t since_refresh_ = 0;  // speculative rounds since the last plain round
  uint32_t last_k_ = 0;
  std::optional<uint32_t> plan_;
};

}  // namespace specd
