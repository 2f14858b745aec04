// The numbers of one audit case: the exact distribution of the first tokens under
// speculative decoding with a rule (from its `outcomes`), the target's, and Monte-Carlo
// counts from the rule's sampler. See audit_engine.hpp for the method.
#pragma once

#include <cstdint>
#include <vector>

#include "acceptance/acceptance_rule.hpp"
#include "audit/draft_enumeration.hpp"
#include "audit/markov_model.hpp"
#include "audit/path_rows.hpp"
#include "audit/translated_drafts.hpp"
#include "sampling/sampling_transform.hpp"

namespace specd {

struct CaseSetup {
  const MarkovModel* model = nullptr;
  SamplingParams sampling;
  DraftSpec spec;              // vocab filled in by measure_case
  AuditConstraint constraint;  // masks and penalties of every row (path_rows.hpp)
  uint32_t tokens = 3;         // generated after the prompt token
  // Two-vocabulary tables: how drafts cross (translated_drafts.hpp); spec.branching is then
  // a chain whose length is the draft's k.
  Translation translation = Translation::kText;
};

// Distributions over sequences (t0, t1..tn), indexed in base vocab (t0 most significant).
struct CaseNumbers {
  bool has_exact = false;
  std::vector<double> exact;     // speculative, from outcomes (empty without outcomes)
  std::vector<double> target;    // plain sampling from the transformed, constrained target
  std::vector<uint64_t> counts;  // Monte-Carlo counts from accept
};

// Number of sequences (t0..tn); throws UsageError when above `limit`.
size_t sequence_space(uint32_t vocab, uint32_t tokens, size_t limit);

// The target's distribution of (t0..tn) alone (CaseNumbers::target).
std::vector<double> target_distribution(const CaseSetup& setup);

CaseNumbers measure_case(const AcceptanceRule& rule, const CaseSetup& setup, uint64_t samples,
                         Rng& rng);

}  // namespace specd
