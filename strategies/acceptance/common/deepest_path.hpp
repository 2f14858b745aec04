// The accepted path of a criterion-based (lossy) rule: the longest root-to-node path whose
// every node passes `passes(parent, node)`, as Medusa picks the candidate with the longest
// accepted prefix. Ties go to the path whose nodes have the smallest ids (depth-first in
// index order, first found wins), so the choice is deterministic.
#pragma once

#include <vector>

#include "common/round.hpp"

namespace specd::accept {

template <class Pred>
std::vector<uint32_t> deepest_passing_path(const Round& round, Pred&& passes) {
  std::vector<uint32_t> best, current;
  auto dfs = [&](auto&& self, uint32_t r) -> void {
    if (current.size() > best.size()) best = current;
    for (uint32_t child : round.children(r)) {
      if (!passes(r, child)) continue;
      current.push_back(child);
      self(self, child);
      current.pop_back();
    }
  };
  dfs(dfs, 0);
  return best;
}

// Accepts `path`, then draws the next token from p at its end.
template <class C>
void accept_path_then_sample(C& c, const Round& round, const std::vector<uint32_t>& path) {
  for (uint32_t node : path) c.enter(node);
  finish_from_p(c, round, path.empty() ? 0 : path.back());
  for (size_t i = 0; i < path.size(); ++i) c.leave();
}

}  // namespace specd::accept
