// Draft trees of a fixed shape, either every possible one with its probability (for exact
// checks) or one sampled (for Monte-Carlo), from row functions that give q and p for any
// path. Used by `specd audit` and by the acceptance rules' exactness tests.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "plugin/host_services.hpp"
#include "specd/draft.h"

namespace specd {

// A distribution row given the tokens from the root (exclusive) down to a node (inclusive);
// the empty context is the root. Must return `vocab` entries summing to 1.
using RowFn = std::function<std::vector<double>(std::span<const specd_token> context)>;

// A draft tree with its own storage, plus the target rows for it.
struct OwnedDraft {
  uint32_t vocab = 0;
  specd_sibling_scheme scheme = SPECD_SIBLINGS_IID;
  bool with_q = true;               // false: tree().q is NULL (deterministic drafts)
  std::vector<specd_token> tokens;  // node i at i-1
  std::vector<int32_t> parents;
  std::vector<double> q;  // (N+1) * vocab
  std::vector<double> p;  // (N+1) * vocab

  uint32_t n_nodes() const { return static_cast<uint32_t>(tokens.size()); }
  specd_draft_tree tree() const;
  specd_target_dists target() const;
  // Tokens from the root (exclusive) to `node` (inclusive).
  std::vector<specd_token> context(uint32_t node) const;
};

// Shape of a draft: branching[d] children for every node at depth d (depth 0 = root).
// A chain of k tokens is {1, 1, ..., 1} (k entries).
struct DraftSpec {
  std::vector<uint32_t> branching;
  specd_sibling_scheme scheme = SPECD_SIBLINGS_IID;
  bool with_q = true;
  uint32_t vocab = 0;
};

// How children are drawn:
//   iid:                 each child ~ q[parent] independently (duplicates possible);
//   without-replacement: one after another from q[parent] renormalised without the tokens
//                        already drawn; a sibling is not created once q has no mass left;
//   deterministic:       the top-b tokens of q[parent] (largest first, lowest id on ties),
//                        probability 1.
// Nodes are numbered breadth-first, so parents precede children.
void enumerate_drafts(const DraftSpec& spec, const RowFn& q_row, const RowFn& p_row,
                      const std::function<void(const OwnedDraft&, double)>& visit);

OwnedDraft sample_draft(const DraftSpec& spec, const RowFn& q_row, const RowFn& p_row, Rng& rng);

}  // namespace specd
