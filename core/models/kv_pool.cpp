#include "models/kv_pool.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "common/error.hpp"
#include "models/kv_layout.hpp"

namespace specd {

KvPool::KvPool(Device& device, int32_t n_layer, int64_t kv_dim, int32_t block_rows,
               specd_dtype dtype)
    : device_(&device),
      n_layer_(n_layer),
      kv_dim_(kv_dim),
      block_rows_(block_rows),
      dtype_(dtype),
      row_stride_(kv_row_bytes(kv_dim, dtype)) {
  if (n_layer <= 0 || kv_dim <= 0 || block_rows <= 0)
    throw Error("KV pool: layers, row width and block rows must be positive");
}

uint64_t KvPool::bytes_per_token() const {
  return 2ull * static_cast<uint64_t>(n_layer_) * static_cast<uint64_t>(row_stride_);
}

void KvPool::reserve(int32_t want) {
  if (want > blocks()) resize(want);
}

void KvPool::promise(int32_t blocks) {
  // Pool rows are int32 indices in the ops.
  if ((promised_ + blocks) * block_rows_ > INT32_MAX)
    throw Error("KV cache: " + std::to_string((promised_ + blocks) * block_rows_) +
                " rows in one pool, more than its int32 row indices reach");
  // Grown by half again at least, so that caches arriving one by one copy the pool's rows a
  // logarithmic number of times.
  const int64_t want = promised_ + blocks;
  if (want > this->blocks())
    resize(static_cast<int32_t>(std::min<int64_t>(
        std::max<int64_t>(want, this->blocks() + this->blocks() / 2), INT32_MAX / block_rows_)));
  promised_ = want;
}

void KvPool::resize(int32_t want) {
  const int32_t have = blocks();
  const uint64_t rows = static_cast<uint64_t>(want) * static_cast<uint64_t>(block_rows_);
  const uint64_t bytes = rows * static_cast<uint64_t>(row_stride_);
  // Only the blocks up to the last one in use hold rows worth keeping (copying untouched
  // memory would fault in and zero pages for nothing).
  int32_t in_use = have;
  while (in_use > 0 && refs_[static_cast<size_t>(in_use - 1)] == 0 && !prefix_.parked(in_use - 1))
    --in_use;
  const uint64_t kept = static_cast<uint64_t>(in_use) * block_rows_ * row_stride_;
  std::vector<Buffer> k, v;
  k.reserve(n_layer_);
  v.reserve(n_layer_);
  try {
    for (int32_t l = 0; l < n_layer_; ++l) {
      k.push_back(device_->alloc(bytes));
      v.push_back(device_->alloc(bytes));
      if (kept == 0) continue;
      device_->copy_bytes(k.back(), 0, k_[l], 0, kept);
      device_->copy_bytes(v.back(), 0, v_[l], 0, kept);
    }
  } catch (const Error& e) {
    throw Error(std::string("KV cache: cannot grow to ") + std::to_string(rows) + " rows (" +
                std::to_string(bytes * 2 * n_layer_ >> 20) + " MiB): " + e.what());
  }
  if (kept) device_->synchronize();
  k_ = std::move(k);
  v_ = std::move(v);
  refs_.resize(static_cast<size_t>(want), 0);
  pins_.resize(static_cast<size_t>(want), -1);
  // Free blocks are taken from the back: the new ones lowest first.
  std::vector<int32_t> fresh;
  for (int32_t b = want - 1; b >= have; --b) fresh.push_back(b);
  free_.insert(free_.begin(), fresh.begin(), fresh.end());
}

void KvPool::evict_oldest() {
  // Blocks published under it lose their prefix: the parked ones are freed, the held ones stay
  // with their caches, unpublished. Each gives back the window block it pinned.
  std::vector<int32_t> removed;
  prefix_.erase(prefix_.oldest_parked(), removed);
  for (int32_t b : removed) {
    unpin(b);
    if (refs_[static_cast<size_t>(b)] == 0) free_.push_back(b);
  }
  ++evictions_;
}

int32_t KvPool::take() {
  if (free_.empty() && prefix_.parked_count() > 0) evict_oldest();
  if (free_.empty()) resize(std::max(2 * blocks(), 4));
  const int32_t b = free_.back();
  free_.pop_back();
  refs_[static_cast<size_t>(b)] = 1;
  return b;
}

void KvPool::retain(int32_t block) {
  int32_t& r = refs_.at(static_cast<size_t>(block));
  if (r == 0 && prefix_.parked(block)) {
    prefix_.unpark(block);
  } else if (r <= 0) {
    throw Error("KV pool: retaining block " + std::to_string(block) + ", which is free");
  }
  ++r;
}

void KvPool::release(int32_t block) {
  int32_t& r = refs_.at(static_cast<size_t>(block));
  if (r <= 0) throw Error("KV pool: releasing block " + std::to_string(block) + ", which is free");
  if (--r > 0) return;
  if (prefix_.indexed(block))
    prefix_.park(block);
  else
    free_.push_back(block);
}

bool KvPool::publish(int32_t block, int32_t parent, std::span<const int32_t> tokens,
                     uint64_t partition, int32_t window_block) {
  if (static_cast<int32_t>(tokens.size()) != block_rows_)
    throw Error("KV pool: a published block holds " + std::to_string(block_rows_) + " tokens");
  if (refs_.at(static_cast<size_t>(block)) <= 0)
    throw Error("KV pool: publishing block " + std::to_string(block) + ", which is free");
  if (window_ && (window_block < 0 || window_block == hole_))
    throw Error("KV pool: publishing block " + std::to_string(block) +
                " without the sliding-window layers' rows of it");
  if (!prefix_.insert(block, parent, tokens, partition)) return false;
  if (window_) {
    window_->promise(1);  // the pin's, so that a pass does not grow the window pool for it
    window_->retain(window_block);
    pins_[static_cast<size_t>(block)] = window_block;
  }
  return true;
}

int32_t KvPool::take_window() {
  if (!window_) throw Error("KV pool: the model has no sliding-window layers");
  // Cached prefixes' window rows go before the window pool grows (no cache holds a parked
  // block, so evicting one frees the window block it pinned).
  while (window_->free_.empty() && prefix_.parked_count() > 0) evict_oldest();
  return window_->take();
}

int32_t KvPool::pinned_window(int32_t block) const {
  return pins_.at(static_cast<size_t>(block));
}

void KvPool::unpin(int32_t block) {
  int32_t& pin = pins_[static_cast<size_t>(block)];
  if (pin < 0) return;
  window_->release(pin);
  window_->unpromise(1);
  pin = -1;
}

void KvPool::set_window(std::unique_ptr<KvPool> pool, int32_t keys) {
  if (!pool || keys <= 0) throw Error("KV pool: a window pool needs a positive window");
  if (pool->block_rows() != block_rows_)
    throw Error("KV pool: the window pool's blocks differ in size from the pool's");
  window_ = std::move(pool);
  window_keys_ = keys;
  window_->promise(1);
  hole_ = window_->take();  // held for good: never written, never read
}

void KvPool::move_rows(std::span<const int32_t> from, std::span<const int32_t> to) {
  if (from.size() != to.size()) throw Error("KV pool: move_rows lists differ in length");
  const int64_t n = static_cast<int64_t>(from.size());
  if (n == 0) return;
  std::vector<int32_t> idx(from.begin(), from.end());
  idx.insert(idx.end(), to.begin(), to.end());
  if (!move_index_ || move_index_.size() < idx.size() * 4)
    move_index_ = device_->alloc(idx.size() * 4 * 2);
  move_index_.upload(idx.data(), idx.size() * 4);
  const uint64_t bytes = static_cast<uint64_t>(n) * row_stride_;
  if (!move_rows_ || move_rows_.size() < bytes) move_rows_ = device_->alloc(bytes * 2);
  const View src = move_index_.view(SPECD_DTYPE_I32, 1, n, 0);
  const View dst = move_index_.view(SPECD_DTYPE_I32, 1, n, static_cast<uint64_t>(n) * 4);
  const View transit = move_rows_.view(dtype_, n, kv_dim_, 0, row_stride_);
  for (int32_t l = 0; l < n_layer_; ++l) {
    for (const View& rows : {k(l), v(l)}) {
      device_->copy_rows(rows, src, transit);
      device_->set_rows(transit, dst, rows);
    }
  }
  device_->synchronize();  // the index buffer is rewritten by the next move
}

View KvPool::k(int32_t layer) const {
  return k_.at(static_cast<size_t>(layer))
      .view(dtype_, static_cast<int64_t>(blocks()) * block_rows_, kv_dim_, 0, row_stride_);
}

View KvPool::v(int32_t layer) const {
  return v_.at(static_cast<size_t>(layer))
      .view(dtype_, static_cast<int64_t>(blocks()) * block_rows_, kv_dim_, 0, row_stride_);
}

}  // namespace specd
