// The draft lengths of one scheduler step (k = "auto" under a batch): the k of every sequence
// that lets its strategy choose, jointly, to maximise the step's expected tokens per second.
//
// A step emits, per decoding sequence, its root's token plus the draft tokens accepted; it
// costs the target pass over all its rows, T(M) (PassTime: measured, far from a line), plus
// each proposer's call over its drafting sequences (DraftTime). The j-th draft token of a
// sequence adds one row and gain(j) = E(j) − E(j−1) expected tokens (from its acceptance
// estimates: non-increasing in j). So the plan takes the candidate tokens in order of gain,
// all sequences together, and keeps the prefix n whose
//
//   rate(n) = (fixed tokens + the n largest gains) / (T(fixed rows + n) + Σ draft calls)
//
// is highest (n = 0: nobody drafts), where a plan that drafts must beat plain decoding's rate
// by 10%: the pass curve's error at row counts the steps have not confirmed (the .cpp says
// what was measured). A sequence that starts drafting also brings its proposer's catch-up
// rows (tokens appended since it last drafted). Sequences with a fixed k and plain ones put
// fixed rows and tokens in the step.
//
// A hybrid target's rejected draft also costs a replay at commit (its recurrent state run
// again over the accepted rows: `restore_seconds`). A sequence drafting k tokens rejects one
// with probability 1 − P(all k accepted), so its j-th token adds restore_seconds × (P(first
// j − 1 accepted) − P(first j accepted)) to the step: that goes with its gain.
//
// Prefill chunks put rows in the pass but no tokens, and their seconds are not the drafts'
// to beat: the rate leaves out what the chunks add to the pass, T(fixed rows) − T(fixed rows
// without the chunks). A drafted row still costs the pass's slope where the chunks put it,
// but it is weighed against what decoding alone yields per second. Counted in the rate, a
// chunk's seconds would make any drafted token look cheap beside it: on a compute-bound CPU
// pass the plan then drafted while new requests prefilled, lengthening every step for fewer
// tokens than plain rows would have given (ARCHITECTURE.md, "Drafting under a batch").
//
// Thread rule: a pure function.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/step_cost.hpp"

namespace specd::batching {

struct PlanSequence {
  bool prefill = false;      // its rows are a prefill chunk (no tokens)
  uint32_t fixed_rows = 0;   // rows it puts in the pass whatever the plan
  double fixed_tokens = 0;   // tokens it emits whatever the plan
  int group = -1;            // its proposer (index into the draft costs); -1: none
  uint32_t fixed_draft = 0;  // a fixed k's draft (counts in its group's call)
  // k = "auto": the expected extra tokens of its j-th draft token (gains[j - 1], j = 1..),
  // at most as many as it may draft; empty: not planned.
  std::vector<double> gains;
  uint32_t catch_up = 0;  // draft rows its proposer runs first when it drafts at all
};

struct StepPlan {
  std::vector<uint32_t> k;   // per sequence (0 for those not planned)
  double tokens = 0;         // predicted tokens of the step
  double seconds = 0;        // predicted seconds (prefill chunks' share included)
  double plain_seconds = 0;  // predicted seconds had no planned sequence drafted
};

StepPlan plan_step(std::span<const PlanSequence> sequences, const PassTime& pass,
                   std::span<const DraftTime* const> drafts, double restore_seconds = 0.0);

}  // namespace specd::batching
