#include "acceptance/cut_emitted.hpp"

#include <algorithm>

namespace specd {

size_t cut_emitted(std::span<const specd_token> tokens, std::span<const specd_token> stop_ids,
                   size_t remaining_budget) {
  const size_t limit = std::min(tokens.size(), remaining_budget);
  for (size_t i = 0; i < limit; ++i)
    if (std::find(stop_ids.begin(), stop_ids.end(), tokens[i]) != stop_ids.end()) return i + 1;
  return limit;
}

}  // namespace specd
