// Whether an acceptance rule may run with a proposer's drafts, and whether a lossy rule may
// run at all. Checked once when the engine is configured (from what the proposer declares)
// and again per round from the actual tree (check_tree_pairing), so a proposer that sends
// something other than what it declared is caught too.
#pragma once

#include <cstdint>
#include <string>

#include "specd/acceptance.h"
#include "specd/draft.h"

namespace specd {

// What the engine knows about a loaded rule.
struct RuleInfo {
  std::string id;    // e.g. "org.specd.accept.rejection"
  std::string name;  // e.g. "rejection"
  specd_lossless_label label = 0;
  uint64_t flags = 0;
};

// What a proposer produces.
struct DraftShape {
  std::string proposer;  // its id or name, for messages
  specd_sibling_scheme scheme = SPECD_SIBLINGS_DETERMINISTIC;
  bool has_q = false;    // it gives q rows
  bool is_tree = false;  // some node may have more than one child
};

// Throws UsageError naming rule and proposer when:
//   - the rule needs q and the proposer gives none;
//   - the proposer drafts trees and the rule works on chains only;
//   - the rule has no proof for the proposer's sibling scheme.
void check_pairing(const RuleInfo& rule, const DraftShape& draft);

// Same checks on one actual tree (is_tree from its shape); throws specd::Error, since a
// mismatch here means the proposer broke what it declared.
void check_tree_pairing(const RuleInfo& rule, const specd_draft_tree& tree,
                        const std::string& proposer);

// Throws UsageError when the rule is lossy and allow_lossy is false:
//   "rule 'typical' is lossy: it changes the output distribution; set [acceptance]
//    allow_lossy = true to run it".
// Greedy-exact rules are allowed (they are lossless at temperature 0, and their label says
// so); callers that sample at temperature > 0 may warn.
void check_lossy_allowed(const RuleInfo& rule, bool allow_lossy);

}  // namespace specd
