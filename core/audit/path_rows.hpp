// The rows of an audit case at any position of a sequence, with the path-dependent
// adjustments a server applies to a constrained, penalised request: a per-position mask (what
// a grammar does: which tokens may come next depends on the whole output so far), and
// presence/frequency/repeat penalties with a logit_bias (sampling/penalties.hpp). Every row is
// computed as the engine computes a verified row: the table's row after the previous token
// as logits, the penalties for the committed output plus the row's own draft path, the mask
// for that full path, then the sampling transform. So a rule audited under a constraint is
// checked against exactly the distributions plain decoding would use at each position, and
// the audit's exact TV also covers the host's per-path penalty bookkeeping.
//
// The audit's mask bans token y after the output g (t1..ti, prompt token t0) when
//   (y + i + last token) % 3 == 0, or y already occurs twice in g;
// a mask that would leave a row without mass is dropped for that row (a grammar never
// leaves a row without a continuation). The draft is masked too only for a constraint that
// says so (a constraint-aware drafter); penalties apply to the target alone, as in the
// server. Thread rule: one thread per object.
#pragma once

#include <string>
#include <vector>

#include "audit/draft_enumeration.hpp"
#include "audit/markov_model.hpp"
#include "sampling/penalties.hpp"
#include "sampling/sampling_transform.hpp"

namespace specd {

struct AuditConstraint {
  std::string name = "none";  // as the report and --constraints name it
  bool mask_target = false;
  bool mask_draft = false;
  PenaltyParams penalties;  // target rows only
  bool path_dependent() const { return mask_target || mask_draft || penalties.active(); }
};

// The constraints `--constraints` accepts: none, mask (target and draft masked), mask-target
// (a drafter unaware of the grammar), penalties, all (mask-target with penalties).
// Throws UsageError naming the unknown one.
AuditConstraint audit_constraint(const std::string& name);
std::vector<std::string> audit_constraint_names();
// What `specd audit` runs without --constraints: none, mask, all.
std::vector<AuditConstraint> default_audit_constraints();

class PathRows {
 public:
  PathRows(const MarkovModel& model, const SamplingParams& sampling, AuditConstraint constraint);

  // Row functions for a round whose committed sequence is `committed` (t0 first; not empty).
  // They keep references to this object.
  RowFn target(const std::vector<specd_token>& committed) const;
  RowFn draft(const std::vector<specd_token>& committed) const;
  // What a round's rows depend on: the whole committed sequence for a path-dependent
  // constraint, else its last token. Rounds with the same key have the same rows.
  std::vector<specd_token> key(const std::vector<specd_token>& committed) const;
  // A two-vocabulary table's constraint-aware drafter: the target tokens the mask allows
  // after `committed` and the draft path `path` (target tokens), as the host's token filter
  // tells the draft-model proposer; all of them where the constraint does not mask the draft
  // or where the mask is dropped (it would leave the target's row without mass).
  std::vector<bool> draft_allowed(const std::vector<specd_token>& committed,
                                  std::span<const specd_token> path) const;

 private:
  std::vector<double> row(const std::vector<std::vector<double>>& table, bool mask,
                          const Penalties* penalties, const std::vector<specd_token>& committed,
                          std::span<const specd_token> path) const;

  const MarkovModel& model_;
  SamplingParams sampling_;
  AuditConstraint constraint_;
  std::vector<std::vector<double>> plain_p_, plain_q_;  // transformed rows (no constraint)
};

}  // namespace specd
