// Checks what an acceptance rule returned: the engine must never commit a path that is not
// in the tree or a token outside the vocabulary, whoever wrote the rule.
#pragma once

#include <cstdint>
#include <string_view>

#include "specd/draft.h"

namespace specd {

// Throws specd::Error naming `plugin_id` unless `path[0..length)` is a chain of nodes of
// `tree` starting at a child of the root (each node the child of the previous one), with
// length <= tree_depth(tree), and 0 <= next_token < vocab.
void validate_accept_result(const int32_t* path, uint32_t length, specd_token next_token,
                            const specd_draft_tree& tree, uint32_t vocab,
                            std::string_view plugin_id);

}  // namespace specd
