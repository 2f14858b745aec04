#include "batching/kv_budget.hpp"

#include <algorithm>

namespace specd::batching {

uint32_t KvBudget::reservation(size_t prompt, int max_tokens, bool drafts, uint32_t round_rows,
                               uint32_t context) const {
  uint64_t rows = static_cast<uint64_t>(prompt) + static_cast<uint64_t>(std::max(max_tokens, 0));
  if (drafts && round_rows > 1) rows += round_rows - 1;
  rows = std::min<uint64_t>({rows, context, budget_});
  return static_cast<uint32_t>(std::max<uint64_t>(rows, 1));
}

}  // namespace specd::batching
