// Adaptive draft length ([proposer] k = "auto"): picks, before each round, the draft length
// k that maximises the predicted speedup E(k) / (v(k) + k·c) from running estimates, and
// drafts nothing (k = 0, plain decoding) when no k is predicted to beat plain decoding.
//
//   E(k)  expected tokens per round: 1 + Σ_{j=1..k} Π_{d<j} β_d, with β_d the measured
//         probability that the node at depth d is accepted given that its parent was
//   v(k)  verify cost: time of a target pass over k+1 rows ÷ time of a 1-row pass
//   c     draft cost: proposer time per drafted token ÷ time of a 1-row pass
//
// A pass's time is its compute time plus the verifier's round trip: a round costs
// t_draft(k) + RTT + compute(k+1), a plain round RTT + compute(1). For a local verifier
// RTT = 0; a remote one reports each call's time outside computing (network, encoding,
// specd_verifier_info.last_overhead_s), kept as a running mean apart from the compute
// times, so that untried row counts are extrapolated from compute alone.
//
// Estimates are plain means over their first 1/decay samples, then decay exponentially so
// they follow the text (code vs prose, a copied passage); a slow first pass (cold caches)
// thus weighs 1/n, not for the rest of a generation. More rows never count as cheaper than
// one. The verify time the engine reports includes the per-row work after the pass
// (logits → distributions, acceptance), which on small models costs as much as the pass.
//
// Cold start (no load model): two plain rounds (the first, a warm-up, is not timed: a
// first pass after a prefill is often slow), then one round at k_start (default 1: a
// short draft loses little when speculation does not pay), then best_k. While plain, it
// probes with k = 1 after `probe_interval` plain rounds; each probe that leaves the
// prediction a loss doubles the gap (up to 8 × probe_interval), one that wins resets it.
// While speculating, every `refresh_interval`-th round is plain to keep the 1-row time
// fresh (every 8th until four plain rounds are timed).
//
// Under load (a scheduler batching many sequences, set_load): the pass is shared, so the
// costs come from the scheduler's measured pass time by total rows, T(M) (PassCost), with
// o rows and R tokens per step from the other sequences. The prediction becomes the step's
// throughput relative to this sequence drafting nothing:
//
//   S(k) = (R + E(k)) / (R + 1) · T(o + 1) / (T(o + 1 + k) + k·d)
//
// d the draft seconds per token (drafting runs on the scheduler's one thread, inside the
// step). At batch 1 (o = R = 0) it is E(k) / (v(k) + k·c) again; at batch 16 extra rows slow
// every sequence's step, so k falls, down to 0, unless acceptance pays for them.
#pragma once

#include <cstdint>
#include <vector>

namespace specd {

struct AdaptiveKOptions {
  uint32_t k_max = 8;              // the longest draft ever asked for
  uint32_t k_start = 1;            // the first speculative round's k
  uint32_t probe_interval = 16;    // plain rounds between probes when speculation loses
  uint32_t refresh_interval = 64;  // speculative rounds between plain rounds (1-row time)
  double decay = 0.02;             // weight of one new observation in the running estimates
  double min_speedup = 1.0;        // below this prediction, decode plainly
};

// What one round did, as the engine measured it.
struct AdaptiveKRound {
  uint32_t drafted = 0;   // chain length proposed (0 = a plain round)
  uint32_t accepted = 0;  // draft nodes accepted (≤ drafted)
  double draft_s = 0;     // proposer time
  double verify_s = 0;    // target pass over drafted + 1 rows (wall time, round trip included)
  double overhead_s = 0;  // the part of verify_s spent outside computing (a remote round trip)
};

class PassCost;

// The load around one sequence in a batched step (see above).
struct AdaptiveKLoad {
  const PassCost* cost = nullptr;  // the scheduler's pass times by rows; null = no load model
  uint32_t other_rows = 0;         // rows the other sequences put in a step
  double other_tokens = 0;         // tokens the other sequences emit per step
};

class AdaptiveK {
 public:
  explicit AdaptiveK(const AdaptiveKOptions& options = {});

  // The draft length for the next round: 0 = plain decoding, else 1..k_max.
  uint32_t next_k();
  void observe(const AdaptiveKRound& round);
  // Sets the load for the next choices (a scheduler calls it before each round). With a
  // load model, observe() keeps only acceptance and draft time: pass times are the model's.
  void set_load(const AdaptiveKLoad& load) { load_ = load; }

  // The model behind the choice (for reports and tests).
  double expected_tokens(uint32_t k) const;
  double verify_cost(uint32_t k) const;                // v(k); 1 at k = 0
  double draft_cost() const;                           // c
  double round_trip_s() const { return overhead_s_; }  // running mean of the round trip
  double predicted_speedup(uint32_t k) const;
  // The k with the highest prediction (0 when none beats min_speedup).
  uint32_t best_k() const;

 private:
  uint32_t refresh_gap() const;
  double row_time(uint32_t rows) const;      // estimated seconds of a pass, round trip included
  double compute_time(uint32_t rows) const;  // the same without the round trip
  bool loaded() const { return load_.cost != nullptr; }

  AdaptiveKOptions options_;
  // β_d as decayed counts: accepted_[d] / tested_[d], with a Beta(1, 1) prior.
  std::vector<double> tested_, accepted_;
  // Mean pass time per row count (index = rows); samples_[rows] = how many were timed.
  std::vector<double> pass_s_;
  std::vector<uint32_t> samples_;
  double overhead_s_ = 0;  // mean round trip per verify call
  uint32_t overhead_n_ = 0;
  double draft_per_token_s_ = 0;
  uint32_t draft_n_ = 0;
  bool draft_seen_ = false;
  uint32_t plain_seen_ = 0;     // plain rounds timed
  uint32_t probe_gap_ = 1;      // plain rounds between probes now (backs off)
  bool probe_pending_ = false;  // the round in flight is a probe
  uint64_t rounds_ = 0;
  uint32_t since_probe_ = 0;    // plain rounds since the last probe
  uint32_t since_refresh_ = 0;  // speculative rounds since the last plain round
  uint32_t last_k_ = 0;
  AdaptiveKLoad load_;
};

}  // namespace specd
