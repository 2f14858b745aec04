#include "models/kv_cache.hpp"

#include <string>

#include "common/error.hpp"

namespace specd {

KvCache::KvCache(std::shared_ptr<KvPool> pool, int32_t capacity)
    : pool_(std::move(pool)), capacity_(capacity) {
  if (!pool_) throw Error("KV cache: no pool");
  if (capacity_ <= 0) throw Error("KV cache: the capacity must be positive");
  pool_->promise(promised_blocks());
}

KvCache::~KvCache() {
  for (int32_t b : blocks_) pool_->release(b);
  pool_->unpromise(promised_blocks());
}

int32_t KvCache::promised_blocks() const {
  return (capacity_ + pool_->block_rows() - 1) / pool_->block_rows();
}

int32_t KvCache::held_rows() const {
  return static_cast<int32_t>(blocks_.size()) * pool_->block_rows();
}

void KvCache::hold(int32_t rows) {
  if (rows > capacity_)
    throw Error("KV cache: " + std::to_string(rows) + " rows exceed its capacity of " +
                std::to_string(capacity_));
  const int32_t B = pool_->block_rows();
  const size_t want = static_cast<size_t>((rows + B - 1) / B);
  while (blocks_.size() < want) blocks_.push_back(pool_->take());
}

int32_t KvCache::pool_row(int32_t r) const {
  const int32_t B = pool_->block_rows();
  return blocks_.at(static_cast<size_t>(r / B)) * B + r % B;
}

void KvCache::commit(std::span<const int32_t> kept) {
  const int32_t k = static_cast<int32_t>(kept.size());
  for (int32_t j = 0; j < k; ++j) {
    const int32_t r = kept[j];
    if (r < 0 || r >= pending())
      throw Error("commit: row " + std::to_string(r) + " is not a pending row (there are " +
                  std::to_string(pending()) + ")");
    const int32_t want_parent = j == 0 ? -1 : kept[j - 1];
    if (parents_[r] != want_parent)
      throw Error(
          "commit: row " + std::to_string(r) + " is not the child of " +
          (j == 0 ? std::string("the committed prefix") : "row " + std::to_string(want_parent)));
  }
  // Rows committed + kept[j] move to committed + j; kept rows increase (parents precede
  // children), so a path along the first branch moves nothing.
  std::vector<int32_t> from, to;
  for (int32_t j = 0; j < k; ++j) {
    if (kept[j] == j) continue;
    from.push_back(pool_row(committed_ + kept[j]));
    to.push_back(pool_row(committed_ + j));
  }
  pool_->move_rows(from, to);
  committed_ += k;
  parents_.clear();
}

void KvCache::truncate(int32_t n) {
  if (n < 0 || n > committed_)
    throw Error("truncate: " + std::to_string(n) + " is outside [0, " + std::to_string(committed_) +
                "]");
  committed_ = n;
  parents_.clear();
}

}  // namespace specd
