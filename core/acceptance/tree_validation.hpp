// Host-side checks of what a proposer and a verifier hand to an acceptance rule. The engine
// runs them every round before calling the rule; the rule may then rely on them (see
// acceptance.h). Violations are the proposer's or verifier's bug: specd::Error naming `who`.
#pragma once

#include <cstdint>
#include <string_view>

#include "specd/draft.h"

namespace specd {

// Tolerance on the sum of a distribution row.
inline constexpr double kRowSumTolerance = 1e-6;

// Checks a draft tree against the target vocabulary:
//   - parents topological (0 <= parent(i) < i), tokens in [0, vocab), vocab_size == vocab;
//   - a known sibling scheme;
//   - when q is present: every row of a node with children is finite, >= 0 and sums to 1
//     within kRowSumTolerance;
//   - for sampled schemes (iid, without-replacement): q present, and every child token has
//     q[parent](token) > 0 (a token with q = 0 cannot have been drawn from q: accepting it
//     would break the exactness proofs, so it is refused rather than silently handled);
//   - for without-replacement: siblings carry distinct tokens.
void validate_tree(const specd_draft_tree& tree, uint32_t vocab, std::string_view who);

// Checks the target rows for `tree`: n_rows == N + 1, vocab_size == the tree's (when N > 0),
// every row finite, >= 0, summing to 1 within kRowSumTolerance.
void validate_target(const specd_target_dists& target, const specd_draft_tree& tree,
                     std::string_view who);

// Depth of the tree: the number of nodes on its longest root-to-leaf path (0 when empty).
uint32_t tree_depth(const specd_draft_tree& tree);

// True when no node has more than one child.
bool is_chain(const specd_draft_tree& tree);

// Checks one distribution row; throws Error "<who>: <what> ..." when it is not finite,
// non-negative and normalised within kRowSumTolerance.
void validate_row(const double* row, uint32_t vocab, std::string_view who, std::string_view what);

}  // namespace specd
