#include "batching/step_planner.hpp"

#include <algorithm>

namespace specd::batching {
namespace {

// A plan that drafts must predict this much more than plain decoding's rate. Its rows' time
// comes from the pass curve at row counts the steps may not have run yet, whose error is of
// this order: on a mixture of experts at 12 sequences, 32-row passes ran 8-11% above the
// curve, and a plan that promised 3% more than plain decoding delivered 13% less.
constexpr double kDraftHurdle = 0.10;

struct Candidate {
  double gain;
  size_t sequence;
  uint32_t j;  // its j-th draft token
};

// The step's seconds with sequence s drafting k[s] (the plan's) tokens.
double step_seconds(std::span<const PlanSequence> seqs, const std::vector<uint32_t>& k,
                    uint32_t rows, const PassTime& pass, std::span<const DraftTime* const> drafts) {
  double t = pass.time(rows);
  std::vector<uint32_t> steps(drafts.size(), 0), draft_rows(drafts.size(), 0);
  for (size_t s = 0; s < seqs.size(); ++s) {
    const PlanSequence& q = seqs[s];
    if (q.group < 0 || static_cast<size_t>(q.group) >= drafts.size()) continue;
    const uint32_t n = q.fixed_draft + k[s];
    if (n == 0) continue;
    steps[q.group] = std::max(steps[q.group], n);
    draft_rows[q.group] += n + (k[s] > 0 ? q.catch_up : 0);
  }
  for (size_t g = 0; g < drafts.size(); ++g)
    if (drafts[g] && steps[g] > 0) t += drafts[g]->time(steps[g], draft_rows[g]);
  return t;
}

}  // namespace

StepPlan plan_step(std::span<const PlanSequence> seqs, const PassTime& pass,
                   std::span<const DraftTime* const> drafts, double restore_seconds) {
  StepPlan plan;
  plan.k.assign(seqs.size(), 0);
  uint32_t rows = 0, prefill_rows = 0;
  double tokens = 0;
  std::vector<Candidate> candidates;
  for (size_t s = 0; s < seqs.size(); ++s) {
    rows += seqs[s].fixed_rows;
    if (seqs[s].prefill) prefill_rows += seqs[s].fixed_rows;
    tokens += seqs[s].fixed_tokens;
    for (size_t j = 0; j < seqs[s].gains.size(); ++j)
      candidates.push_back({seqs[s].gains[j], s, static_cast<uint32_t>(j + 1)});
  }
  // By gain, the larger first; a sequence's own in order (its gains do not increase), and
  // between sequences the earlier one first on ties.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.gain > b.gain; });
  // What the prefill chunks add to the pass (header): not in the rate.
  const double prefill_s = prefill_rows == 0
                               ? 0.0
                               : pass.time(std::max<uint32_t>(rows, 1)) -
                                     pass.time(std::max<uint32_t>(rows - prefill_rows, 1));
  std::vector<uint32_t> k(seqs.size(), 0);
  double best_rate = -1, restore = 0, plain_rate = 0;
  for (size_t n = 0;; ++n) {
    if (n > 0) {
      const Candidate& c = candidates[n - 1];
      if (c.j != k[c.sequence] + 1) break;  // out of order (rising gains): stop here
      k[c.sequence] = c.j;
      tokens += c.gain;
      ++rows;
      // Its share of the expected restore: the chance of a rejection it adds.
      const std::vector<double>& g = seqs[c.sequence].gains;
      restore += restore_seconds * ((c.j == 1 ? 1.0 : g[c.j - 2]) - g[c.j - 1]);
    }
    const double seconds =
        step_seconds(seqs, k, std::max<uint32_t>(rows, 1), pass, drafts) + restore;
    if (n == 0) plan.plain_seconds = seconds;
    const double decoding_s = seconds - prefill_s;
    const double rate = decoding_s > 0 ? tokens / decoding_s : 0;
    if (n == 0) plain_rate = rate;
    // strictly better (ties keep fewer rows), and a draft clears the hurdle
    if (rate > best_rate && (n == 0 || rate >= plain_rate * (1 + kDraftHurdle))) {
      best_rate = rate;
      plan.k = k;
      plan.tokens = tokens;
      plan.seconds = seconds;
    }
    if (n == candidates.size()) break;
  }
  return plan;
}

}  // namespace specd::batching
