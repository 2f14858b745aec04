// KV admission for the scheduler: a budget of cache rows shared by the running sequences.
// Each admitted sequence reserves the rows it may ever hold (reservation()); its cache then
// grows in blocks of kKvBlockRows up to that reservation (BatchVerifier), so the running
// sequences never hold more than the budget and a request that does not fit waits instead
// of failing mid-generation. The budget is [server] kv_budget tokens, or, when that is 0,
// max_sequences times the context.
#pragma once

#include <cstddef>
#include <cstdint>

namespace specd::server {

inline constexpr uint32_t kKvBlockRows = 64;

class KvAdmission {
 public:
  explicit KvAdmission(uint64_t budget_rows) : budget_(budget_rows) {}

  // The rows a request reserves: its prompt and max_tokens, plus room for one round's draft
  // (round_rows - 1 rows, when it drafts), at most the context and the whole budget.
  uint32_t reservation(size_t prompt, int max_tokens, bool drafts, uint32_t round_rows,
                       uint32_t context) const;
  bool fits(uint32_t rows) const { return used_ + rows <= budget_; }
  void take(uint32_t rows) { used_ += rows; }
  void release(uint32_t rows) { used_ -= rows; }
  uint64_t used() const { return used_; }
  uint64_t budget() const { return budget_; }

 private:
  uint64_t budget_;
  uint64_t used_ = 0;
};

}  // namespace specd::server
