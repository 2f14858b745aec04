// KV admission for the scheduler: a budget of cache rows shared by the running sequences and
// the open verify sessions. Each admitted sequence reserves the rows it may ever hold
// (reservation()), counted in whole KV blocks (a cache takes its rows from the target's block
// pool a block at a time, models/kv_pool.hpp), so the running sequences never hold more
// than the budget and a request that does not fit waits instead of failing mid-generation.
// The budget is [server] kv_budget tokens, or, when that is 0, max_sequences times the
// context, rounded up to whole blocks.
#pragma once

#include <cstddef>
#include <cstdint>

namespace specd::batching {

class KvBudget {
 public:
  explicit KvBudget(uint64_t budget_rows, uint32_t block_rows = 1)
      : block_(block_rows ? block_rows : 1), budget_(blocks_of(budget_rows) * block_) {}

  // The rows a request reserves: its prompt and max_tokens, plus room for one round's draft
  // (round_rows - 1 rows, when it drafts), at most the context and the whole budget.
  uint32_t reservation(size_t prompt, int max_tokens, bool drafts, uint32_t round_rows,
                       uint32_t context) const;
  // Whether `rows` more (in whole blocks) fit beside what is held.
  bool fits(uint32_t rows) const { return used_ + blocks_of(rows) * block_ <= budget_; }
  void take(uint32_t rows) { used_ += blocks_of(rows) * block_; }
  void release(uint32_t rows) { used_ -= blocks_of(rows) * block_; }
  // Rows held and the budget, both in whole blocks of rows.
  uint64_t used() const { return used_; }
  uint64_t budget() const { return budget_; }
  uint32_t block_rows() const { return block_; }

 private:
  uint64_t blocks_of(uint64_t rows) const { return (rows + block_ - 1) / block_; }
  uint32_t block_;
  uint64_t budget_;
  uint64_t used_ = 0;
};

}  // namespace specd::batching
