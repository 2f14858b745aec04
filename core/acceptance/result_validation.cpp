#include "acceptance/result_validation.hpp"

#include <string>

#include "acceptance/tree_validation.hpp"
#include "common/error.hpp"

namespace specd {

void validate_accept_result(const int32_t* path, uint32_t length, specd_token next_token,
                            const specd_draft_tree& tree, uint32_t vocab,
                            std::string_view plugin_id) {
  const std::string who = "acceptance rule '" + std::string(plugin_id) + "'";
  if (length > tree_depth(tree))
    throw Error(who + " returned a path of " + std::to_string(length) +
                " nodes, longer than the tree's depth " + std::to_string(tree_depth(tree)));
  int32_t previous = 0;
  for (uint32_t i = 0; i < length; ++i) {
    const int32_t node = path[i];
    if (node < 1 || static_cast<uint32_t>(node) > tree.n_nodes)
      throw Error(who + " returned node " + std::to_string(node) + " at path position " +
                  std::to_string(i) + ", not a node of the tree (1.." +
                  std::to_string(tree.n_nodes) + ")");
    if (tree.parents[node - 1] != previous)
      throw Error(who + " returned node " + std::to_string(node) + " after node " +
                  std::to_string(previous) + ", but its parent is " +
                  std::to_string(tree.parents[node - 1]) +
                  " (the path must be a root-to-leaf "
                  "chain)");
    previous = node;
  }
  if (next_token < 0 || static_cast<uint32_t>(next_token) >= vocab)
    throw Error(who + " returned next token " + std::to_string(next_token) +
                ", outside the vocabulary of " + std::to_string(vocab));
}

}  // namespace specd
