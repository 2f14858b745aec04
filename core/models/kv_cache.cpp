#include "models/kv_cache.hpp"

#include <algorithm>
#include <string>

#include "common/error.hpp"

namespace specd {

KvCache::KvCache(std::shared_ptr<KvPool> pool, int32_t capacity)
    : pool_(std::move(pool)), capacity_(capacity) {
  if (!pool_) throw Error("KV cache: no pool");
  if (capacity_ <= 0) throw Error("KV cache: the capacity must be positive");
  pool_->promise(promised_blocks());
  if (KvPool* w = pool_->window()) w->promise(promised_window_blocks());
}

KvCache::~KvCache() {
  // Last block first: parked published blocks then age children before parents, so the
  // pool evicts a prefix's tail before its head.
  drop_blocks(0);
  pool_->unpromise(promised_blocks());
  if (KvPool* w = pool_->window()) w->unpromise(promised_window_blocks());
  if (RecurrentPool* r = pool_->recurrent()) {
    release_pending_states();
    if (state_ >= 0) r->release(state_);
  }
}

int32_t KvCache::state_slot() {
  RecurrentPool* r = pool_->recurrent();
  if (!r) throw Error("KV cache: the model has no recurrent state");
  if (state_ < 0) state_ = r->take();
  return state_;
}

void KvCache::release_pending_states() {
  RecurrentPool* r = pool_->recurrent();
  for (int32_t s : pending_states_)
    if (s >= 0) r->release(s);
  pending_states_.clear();
  replay_ = {};
}

void KvCache::set_pending_states(std::vector<int32_t> slots, Replay replay) {
  release_pending_states();
  pending_states_ = std::move(slots);
  replay_ = replay;
}

int32_t KvCache::replay_rows(std::span<const int32_t> kept) const {
  if (!recurrent() || kept.empty()) return 0;
  const int32_t last = kept.back();
  if (last >= 0 && static_cast<size_t>(last) < pending_states_.size() &&
      pending_states_[static_cast<size_t>(last)] >= 0)
    return 0;
  if (last < 0 || last >= replay_.rows)
    throw Error("commit: the pass kept no recurrent state at row " + std::to_string(last) +
                " (a hybrid model's commit ends at the last row or at a row with logits)");
  return last + 1;
}

int32_t KvCache::promised_blocks() const {
  return (capacity_ + pool_->block_rows() - 1) / pool_->block_rows();
}

// The window's rows, the slack, a round's rows and the blocks either end may straddle; a
// prefill chunk longer than that takes more for a pass (the window pool grows then, before the
// pass reads it).
int32_t KvCache::promised_window_blocks() const {
  const int32_t B = pool_->block_rows();
  const int32_t rows = window_rows(pool_->window_keys());
  return std::min((capacity_ + B - 1) / B, (rows + B - 1) / B + 2);
}

void KvCache::drop_blocks(size_t keep) {
  // Last block first: parked published blocks then age children before parents, so the
  // pool evicts a prefix's tail before its head.
  KvPool* w = pool_->window();
  while (blocks_.size() > keep) {
    pool_->release(blocks_.back());
    blocks_.pop_back();
    if (!w) continue;
    if (window_blocks_.back() != pool_->hole()) w->release(window_blocks_.back());
    window_blocks_.pop_back();
  }
}

void KvCache::trim_window() {
  KvPool* w = pool_->window();
  if (!w) return;
  const int32_t B = pool_->block_rows();
  // Every row that may still be written attends no key before `from`.
  const int32_t from = committed_ + 1 - pool_->window_keys() - kWindowSlack;
  for (int32_t b = window_from_ / B; (b + 1) * B <= from; ++b) {
    if (b >= shared_ && publishing_ && (b + 1) * B <= publish_limit_) break;  // publish first
    int32_t& entry = window_blocks_[static_cast<size_t>(b)];
    if (entry != pool_->hole()) w->release(entry);
    entry = pool_->hole();
    window_from_ = (b + 1) * B;
  }
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
  KvPool* w = pool_->window();
  while (blocks_.size() < want) {
    blocks_.push_back(pool_->take());
    if (w) window_blocks_.push_back(pool_->hole());  // taken below
  }
  if (!w) return;
  for (size_t b = static_cast<size_t>(window_from_ / B); b < want; ++b)
    if (window_blocks_[b] == pool_->hole()) window_blocks_[b] = pool_->take_window();
}

int32_t KvCache::pool_row(int32_t r) const {
  const int32_t B = pool_->block_rows();
  return blocks_.at(static_cast<size_t>(r / B)) * B + r % B;
}

int32_t KvCache::window_row(int32_t r) const {
  const int32_t B = pool_->block_rows();
  return window_blocks_.at(static_cast<size_t>(r / B)) * B + r % B;
}

void KvCache::commit(std::span<const int32_t> kept) {
  commit_rows(kept, false);
}

void KvCache::commit_replayed(std::span<const int32_t> kept) {
  commit_rows(kept, true);
}

void KvCache::commit_rows(std::span<const int32_t> kept, bool replayed) {
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
  KvPool* w = pool_->window();
  std::vector<int32_t> from, to, window_from, window_to;
  for (int32_t j = 0; j < k; ++j) {
    if (kept[j] == j) continue;
    from.push_back(pool_row(committed_ + kept[j]));
    to.push_back(pool_row(committed_ + j));
    if (!w) continue;
    window_from.push_back(window_row(committed_ + kept[j]));
    window_to.push_back(window_row(committed_ + j));
  }
  if (RecurrentPool* r = pool_->recurrent(); r && k > 0 && !replayed) {
    // The state after the path's last row becomes the committed one.
    const size_t last = static_cast<size_t>(kept[k - 1]);
    if (last >= pending_states_.size() || pending_states_[last] < 0)
      throw Error("commit: the pass kept no recurrent state at row " + std::to_string(last) +
                  " (a hybrid model's commit ends at the last row or at a row with logits)");
    if (state_ >= 0) r->release(state_);
    state_ = pending_states_[last];
    pending_states_[last] = -1;
  }
  pool_->move_rows(from, to);
  if (w) w->move_rows(window_from, window_to);
  committed_ += k;
  parents_.clear();
  if (pool_->recurrent()) release_pending_states();
  trim_window();
}

std::string KvCache::truncate_refusal(int32_t n) const {
  if (n == 0 || std::max(0, n + 1 - pool_->window_keys()) >= window_from_) return {};
  return "truncate: the sliding-window layers keep rows from " + std::to_string(window_from_) +
         " on, and row " + std::to_string(n) + " attends earlier ones (a cache goes back at most " +
         std::to_string(kWindowSlack) + " rows, or to 0)";
}

void KvCache::truncate(int32_t n) {
  if (n < 0 || n > committed_)
    throw Error("truncate: " + std::to_string(n) + " is outside [0, " + std::to_string(committed_) +
                "]");
  const int32_t B = pool_->block_rows();
  if (const std::string why = truncate_refusal(n); !why.empty()) throw Error(why);
  if (n < shared_ * B) {
    if (n % B != 0)
      throw Error("truncate: row " + std::to_string(n) +
                  " falls inside a shared KV block (rows are shared a block at a time)");
    drop_blocks(static_cast<size_t>(n / B));
    shared_ = n / B;
    publishing_ = true;
  }
  if (RecurrentPool* r = pool_->recurrent()) {
    if (n != committed_ && n != 0)
      throw Error("truncate: a recurrent model's state cannot go back to row " + std::to_string(n) +
                  " of " + std::to_string(committed_) + " (only all rows or none are kept)");
    release_pending_states();
    if (n == 0 && state_ >= 0) {
      r->release(state_);
      state_ = -1;
    }
  }
  if (n == 0) window_from_ = 0;  // hold() takes window blocks again as rows are written
  committed_ = n;
  parents_.clear();
}

int32_t KvCache::adopt_prefix(std::span<const int32_t> tokens, int32_t max_rows) {
  if (!parents_.empty()) throw Error("KV cache: adopting a prefix while rows are pending");
  if (recurrent()) return committed_;  // blocks hold no recurrent state: nothing to share
  const int32_t B = pool_->block_rows();
  if (committed_ != shared_ * B || shared_ != static_cast<int32_t>(blocks_.size()))
    return committed_;  // rows of its own (or a partial block): what follows is not shared
  const int32_t limit =
      std::min<int32_t>({static_cast<int32_t>(tokens.size()), max_rows, capacity_});
  int32_t parent = blocks_.empty() ? -1 : blocks_.back();
  KvPool* w = pool_->window();
  while ((committed_ + B) <= limit) {
    const int32_t b =
        pool_->find(parent, tokens.subspan(static_cast<size_t>(committed_), B), partition_);
    if (b < 0) break;
    pool_->retain(b);
    blocks_.push_back(b);
    if (w) {
      const int32_t pinned = pool_->pinned_window(b);
      w->retain(pinned);
      window_blocks_.push_back(pinned);
    }
    committed_ += B;
    parent = b;
  }
  shared_ = static_cast<int32_t>(blocks_.size());
  trim_window();
  return committed_;
}

bool KvCache::publish_next(std::span<const int32_t> tokens) {
  const int32_t B = pool_->block_rows();
  if (recurrent()) return false;
  const int32_t end = (shared_ + 1) * B;
  if (!publishing_ || end > committed_ || end > static_cast<int32_t>(tokens.size())) return false;
  const int32_t parent = shared_ ? blocks_[static_cast<size_t>(shared_ - 1)] : -1;
  const int32_t window_block = pool_->window() ? window_blocks_[static_cast<size_t>(shared_)] : -1;
  if ((pool_->window() && window_block == pool_->hole()) ||
      !pool_->publish(blocks_[static_cast<size_t>(shared_)], parent,
                      tokens.subspan(static_cast<size_t>(shared_) * B, B), partition_,
                      window_block)) {
    publishing_ = false;  // (its sliding rows were given back: no limit was set)
    trim_window();
    return false;
  }
  ++shared_;
  trim_window();  // the published block pins its window block now
  return true;
}

}  // namespace specd
