#include "acceptance/tree_validation.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "acceptance/labels.hpp"
#include "common/error.hpp"

namespace specd {
namespace {

std::string prefix(std::string_view who) {
  return std::string(who) + ": ";
}

}  // namespace

void validate_row(const double* row, uint32_t vocab, std::string_view who, std::string_view what) {
  double total = 0;
  for (uint32_t i = 0; i < vocab; ++i) {
    if (!std::isfinite(row[i]) || row[i] < 0)
      throw Error(prefix(who) + std::string(what) + " has entry " + std::to_string(i) + " = " +
                  std::to_string(row[i]) + " (must be finite and >= 0)");
    total += row[i];
  }
  if (std::fabs(total - 1.0) > kRowSumTolerance)
    throw Error(prefix(who) + std::string(what) + " sums to " + std::to_string(total) +
                " (must be 1 within 1e-6)");
}

void validate_tree(const specd_draft_tree& tree, uint32_t vocab, std::string_view who) {
  if (tree.n_nodes == 0) return;
  if (tree.vocab_size != vocab)
    throw Error(prefix(who) + "draft tree has vocabulary " + std::to_string(tree.vocab_size) +
                ", the target has " + std::to_string(vocab));
  if (tree.tokens == nullptr || tree.parents == nullptr)
    throw Error(prefix(who) + "draft tree of " + std::to_string(tree.n_nodes) +
                " nodes has no tokens or parents");
  const specd_sibling_scheme scheme = tree.scheme;
  if (scheme != SPECD_SIBLINGS_DETERMINISTIC && scheme != SPECD_SIBLINGS_IID &&
      scheme != SPECD_SIBLINGS_WITHOUT_REPLACEMENT)
    throw Error(prefix(who) + "draft tree has unknown sibling scheme " + scheme_name(scheme));
  const bool sampled = scheme != SPECD_SIBLINGS_DETERMINISTIC;
  if (sampled && tree.q == nullptr)
    throw Error(prefix(who) + "draft tree says its tokens were drawn from q (scheme " +
                scheme_name(scheme) + ") but gives no q");

  std::vector<bool> has_children(tree.n_nodes + 1, false);
  for (uint32_t i = 1; i <= tree.n_nodes; ++i) {
    const int32_t parent = tree.parents[i - 1];
    const specd_token token = tree.tokens[i - 1];
    if (parent < 0 || static_cast<uint32_t>(parent) >= i)
      throw Error(prefix(who) + "node " + std::to_string(i) + " has parent " +
                  std::to_string(parent) + " (parents must come first: 0 <= parent < node)");
    if (token < 0 || static_cast<uint32_t>(token) >= vocab)
      throw Error(prefix(who) + "node " + std::to_string(i) + " has token " +
                  std::to_string(token) + ", outside the vocabulary of " + std::to_string(vocab));
    has_children[parent] = true;
  }
  if (tree.q != nullptr)
    for (uint32_t r = 0; r <= tree.n_nodes; ++r)
      if (has_children[r])
        validate_row(tree.q + static_cast<size_t>(r) * vocab, vocab, who,
                     "q row " + std::to_string(r));
  if (!sampled) return;
  for (uint32_t i = 1; i <= tree.n_nodes; ++i) {
    const int32_t parent = tree.parents[i - 1];
    const specd_token token = tree.tokens[i - 1];
    if (!(tree.q[static_cast<size_t>(parent) * vocab + token] > 0))
      throw Error(prefix(who) + "node " + std::to_string(i) + " has token " +
                  std::to_string(token) + " with q = 0 under scheme " + scheme_name(scheme) +
                  ": it cannot have been drawn from q");
    if (scheme == SPECD_SIBLINGS_WITHOUT_REPLACEMENT)
      for (uint32_t j = 1; j < i; ++j)
        if (tree.parents[j - 1] == parent && tree.tokens[j - 1] == token)
          throw Error(prefix(who) + "nodes " + std::to_string(j) + " and " + std::to_string(i) +
                      " are siblings with the same token " + std::to_string(token) +
                      " under scheme without-replacement");
  }
}

void validate_target(const specd_target_dists& target, const specd_draft_tree& tree,
                     std::string_view who) {
  if (target.n_rows != tree.n_nodes + 1)
    throw Error(prefix(who) + "target has " + std::to_string(target.n_rows) + " rows for " +
                std::to_string(tree.n_nodes) + " draft nodes (need nodes + 1)");
  if (target.vocab_size == 0 || target.p == nullptr)
    throw Error(prefix(who) + "target rows are empty");
  if (tree.n_nodes > 0 && tree.vocab_size != target.vocab_size)
    throw Error(prefix(who) + "target vocabulary " + std::to_string(target.vocab_size) +
                " differs from the draft's " + std::to_string(tree.vocab_size));
  for (uint32_t r = 0; r < target.n_rows; ++r)
    validate_row(target.p + static_cast<size_t>(r) * target.vocab_size, target.vocab_size, who,
                 "p row " + std::to_string(r));
}

uint32_t tree_depth(const specd_draft_tree& tree) {
  std::vector<uint32_t> depth(tree.n_nodes + 1, 0);
  uint32_t best = 0;
  for (uint32_t i = 1; i <= tree.n_nodes; ++i) {
    const int32_t parent = tree.parents[i - 1];
    depth[i] = (parent >= 0 && static_cast<uint32_t>(parent) < i ? depth[parent] : 0) + 1;
    best = std::max(best, depth[i]);
  }
  return best;
}

bool is_chain(const specd_draft_tree& tree) {
  std::vector<uint32_t> count(tree.n_nodes + 1, 0);
  for (uint32_t i = 1; i <= tree.n_nodes; ++i) {
    const int32_t parent = tree.parents[i - 1];
    if (parent >= 0 && static_cast<uint32_t>(parent) < i && ++count[parent] > 1) return false;
  }
  return true;
}

}  // namespace specd
