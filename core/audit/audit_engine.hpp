// `specd audit`: measures the lossless label of acceptance rules on Markov toy models.
//
// For one rule, one table and one sampling setting (a "case"):
//   - The target chain is T'(a, .) = transform(T(a, .)) and the draft D'(a, .) likewise (the
//     core's sampling transform applied to the log of each row). The first root token t0 is
//     drawn from `initial` (it stands for the prompt); then n tokens are generated.
//   - Exact: for every root token the round's distribution of emitted tokens (accepted path
//     tokens + next token) is computed by enumerating every draft with its probability and
//     the rule's `outcomes`. A dynamic program over prefixes chains rounds (truncating the
//     last round at n tokens, as the engine does) and gives the exact distribution of
//     (t0, t1..tn). exact_tv = TV to the target chain's distribution of (t0, t1..tn).
//   - Monte-Carlo: `samples` runs of the real sampler (`accept`, host RNG, fixed seed);
//     mc_tv is the plug-in TV of the empirical distribution (biased upward by about
//     sqrt(outcomes / samples); the exact TV is the authoritative number) with a
//     distribution-free 95% interval (distribution_tests.hpp, tv_interval), and p_value is a G-test
//     against the target's exact distribution (outcomes with expected count < 5 pooled).
//   - Verdict: a rule declared exact (or greedy-exact, at temperature 0) is "label-wrong"
//     when exact_tv > 1e-9 or p_value < alpha / (the rule's number of cases) (Bonferroni per
//     rule: alpha is the false-alarm rate over one rule's cases, and each rule draws its own
//     random stream, so a rule's verdict never depends on which other rules are audited with
//     it); otherwise "lossless" when the rule has
//     outcomes (the exact TV proves it), and "not-rejected" when it has none: the G-test
//     alone cannot prove a label, so the report says which TV it would have detected with
//     95% power (distribution_tests.hpp, detectable_tv); `detect_tv` raises the sample count of
//     such cases until that TV is reached. Lossy rules are "lossy" whatever they measure.
//     Greedy-exact rules at temperature > 0 make no claim: those cases are reported as not
//     applicable, and the audit adds temperature-0 cases. A case whose rule fails (an error
//     from the plugin, an invalid answer) is "error" with the message; the audit goes on.
// Constraints: every case also runs under each of `constraints` (path_rows.hpp): per-position
// masks on the target (and the draft, for a constraint-aware drafter) and penalties with a
// logit_bias, each row computed from its own path as the server computes a verified row.
// Drafts: a chain of k tokens, or the --tree shape for rules that support trees, drawn with
// EVERY sibling scheme the rule declares, each its own case: i.i.d. or without replacement
// from q, or deterministically (the top-b draft tokens; b = 1 is the draft's argmax; q is
// given only to rules that need it).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "acceptance/acceptance_rule.hpp"
#include "audit/markov_model.hpp"
#include "audit/path_rows.hpp"
#include "sampling/sampling_transform.hpp"

namespace specd {

// The audit enumerates every draft of a shape (and recurses once per node), so the work
// grows as vocab^nodes: a chain may have at most this many tokens and a tree as many nodes.
inline constexpr uint32_t kMaxAuditDraftNodes = 8;

// Nodes of a tree with `branching[d]` children per node at depth d, saturated at
// UINT64_MAX (so that any shape, however large, compares safely against a limit).
uint64_t audit_tree_nodes(const std::vector<uint32_t>& branching);

// Throws UsageError naming `option` (e.g. "--tree 2,2,2") when the shape has more than
// kMaxAuditDraftNodes nodes.
void check_audit_tree(const std::vector<uint32_t>& branching, const std::string& option);

struct AuditOptions {
  uint32_t tokens = 3;  // n: tokens generated after the prompt token
  uint32_t k = 2;       // chain length of a draft, 1..kMaxAuditDraftNodes
  // Branching per depth for rules that support trees (a rule wrong only where a node has
  // several children is caught here); empty = chains for every rule, and such rules'
  // summaries say they were verified on chains only. At most kMaxAuditDraftNodes nodes.
  std::vector<uint32_t> tree = {2, 2};
  SamplingParams sampling;  // applied to target and draft rows alike
  // Path-dependent adjustments, each its own set of cases (default: none, mask, all).
  std::vector<AuditConstraint> constraints = default_audit_constraints();
  uint64_t samples = 20000;  // Monte-Carlo runs per case (at least)
  uint64_t seed = 1;
  double alpha = 1e-3;  // family-wise significance per rule (over that rule's cases)
  // For rules without outcomes: raise a case's samples until every TV >= detect_tv would be
  // detected with probability kAuditPower (0 = keep `samples`). At most max_samples.
  double detect_tv = 0;
  uint64_t max_samples = 100000000;
};

// The power at which detectable distances are stated.
constexpr double kAuditPower = 0.95;

struct AuditCase {
  std::string table;
  std::string constraint = "none";
  double temperature = 1;
  std::string shape;       // "chain k=2" or "tree 2,2"
  std::string scheme;      // sibling scheme of the drafts
  bool applicable = true;  // the rule's label makes a claim here
  bool has_exact = false;  // the rule reports outcomes
  double exact_tv = 0;
  uint64_t samples = 0;  // Monte-Carlo runs of this case
  double mc_tv = 0;
  std::pair<double, double> mc_tv_ci{0, 0};
  double p_value = 1;
  double detectable_tv = 1;  // detected with probability kAuditPower at this sample count
  // For a rule with outcomes: G-test of its sampler's counts against its own outcomes'
  // distribution. Below the per-case significance the rule contradicts itself ("sampler
  // disagrees with its outcomes"): a wrong label for an exact rule, an error for a lossy one.
  double outcomes_p_value = 1;
  bool sampler_disagrees = false;
  // "lossless", "not-rejected", "lossy", "label-wrong", "not-applicable", "error"
  std::string verdict;
  std::string error;  // for "error": what went wrong
};

struct RuleAudit {
  std::string id, name, label;
  std::vector<AuditCase> cases;
  // Aggregate over the cases the label applies to (all cases for lossy rules): worst TVs,
  // smallest p-value.
  bool has_exact = false;
  double exact_tv = 0;
  double mc_tv = 0;
  std::pair<double, double> mc_tv_ci{0, 0};
  double p_value = 1;
  uint64_t samples = 0;       // smallest sample count among the cases
  double detectable_tv = 1;   // largest detectable TV among the cases (see AuditCase)
  double alpha_per_case = 0;  // alpha / cases.size(): the threshold of each p-value
  // "lossless", "not-rejected", "lossy", "label-wrong", "error" (the rule could not run)
  std::string verdict;
  std::string summary;  // human text, e.g. "lossless (verified)"
};

struct AuditReport {
  std::vector<RuleAudit> rules;
  size_t cases = 0;  // over all rules
  bool any_label_wrong() const;
  bool any_error() const;
};

// The row of a rule that could not even be created: verdict "error".
RuleAudit rule_error_row(const std::string& id, const std::string& name, const std::string& label,
                         const std::string& message);

// Audits every rule on every table. Throws UsageError for options that cannot work (e.g. a
// state space too large to enumerate); a rule that fails is reported in its row.
AuditReport run_audit(const std::vector<const AcceptanceRule*>& rules,
                      const std::vector<MarkovModel>& tables, const AuditOptions& options);

}  // namespace specd
