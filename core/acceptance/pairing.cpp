#include "acceptance/pairing.hpp"

#include "acceptance/labels.hpp"
#include "acceptance/tree_validation.hpp"
#include "common/error.hpp"

namespace specd {
namespace {

// Returns "" when the pairing is fine, else the reason.
std::string pairing_problem(const RuleInfo& rule, const DraftShape& draft) {
  const std::string r = "rule '" + rule.name + "'";
  const std::string p = "proposer '" + draft.proposer + "'";
  if ((rule.flags & SPECD_ACCEPT_NEEDS_Q) && !draft.has_q)
    return r + " needs the draft distributions q, but " + p +
           " drafts deterministically and gives none; use 'exact-match' or 'greedy' with it";
  if (draft.is_tree && !(rule.flags & SPECD_ACCEPT_SUPPORTS_TREES))
    return r + " works on chains only, but " + p +
           " drafts trees; use a tree rule (e.g. 'tree-rejection') or a chain proposer";
  if (!(rule.flags & SPECD_ACCEPT_SCHEME_BIT(draft.scheme)))
    return r + " has no exactness proof for sibling scheme '" + scheme_name(draft.scheme) +
           "' used by " + p + " (it supports: " + supported_schemes(rule.flags) + ")";
  return {};
}

}  // namespace

void check_pairing(const RuleInfo& rule, const DraftShape& draft) {
  const std::string problem = pairing_problem(rule, draft);
  if (!problem.empty()) throw UsageError(problem);
}

void check_tree_pairing(const RuleInfo& rule, const specd_draft_tree& tree,
                        const std::string& proposer) {
  if (tree.n_nodes == 0) return;
  DraftShape shape{proposer, tree.scheme, tree.q != nullptr, !is_chain(tree)};
  const std::string problem = pairing_problem(rule, shape);
  if (!problem.empty()) throw Error(problem);
}

void check_lossy_allowed(const RuleInfo& rule, bool allow_lossy) {
  if (rule.label == SPECD_LABEL_EXACT || rule.label == SPECD_LABEL_GREEDY_EXACT) return;
  if (allow_lossy) return;
  const std::string what = rule.label == SPECD_LABEL_LOSSY
                               ? " is lossy: it changes the output distribution"
                               : " declares an unknown lossless label (" + label_name(rule.label) +
                                     "), so it is treated as lossy";
  throw UsageError("rule '" + rule.name + "'" + what +
                   "; set [acceptance] allow_lossy = true to run it");
}

}  // namespace specd
