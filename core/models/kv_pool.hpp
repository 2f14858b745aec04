// The KV cache memory of one model on one device: for each layer a K and a V buffer of
// blocks × block_rows rows (kv_layout.hpp gives a row's size and stride). Sequences hold
// block tables into it (KvCache, HeadCache); attention reads each sequence's rows through its
// table (backend.h, attention_paged) and new rows are scattered into their blocks (set_rows).
//
// Why blocks: a sequence's cache grows a block at a time without copying the rows it holds,
// freed blocks are reused by the next sequence (their pages stay mapped: no page faults or
// zeroing on the next request), and the rows of every sequence of a batched pass sit in one
// pair of buffers per layer, so one attention call serves them all.
//
// Blocks carry a reference count (a block shared by several tables is released when its last
// holder lets go). Full blocks of a sequence's prefix may be published in the pool's prefix
// index (prefix_index.hpp): another cache that starts with the same tokens then holds the same
// blocks instead of computing their rows again. A published block no cache holds stays parked
// with its rows until a block is needed and none is free: then the least recently parked one
// is evicted. Caches promise the blocks their capacity may need when they are made, and
// the pool grows (by half again at least) to hold every live promise, so a pass never finds it
// full. Growing allocates larger buffers and copies the blocks in use (their ids stay the
// same); it happens when a cache is made, between passes, a logarithmic number of times
// before the pool reaches the size its traffic needs, and never after.
//
// Sliding-window layers (gpt-oss's even layers) keep their rows in a second pool, window(),
// with a block table of its own in each cache: a cache gives those blocks back once they fall
// behind the window (kv_cache.hpp), so they hold about the window's rows per sequence, not the
// context's. A published block pins the window block of the same rows (a cache adopting the
// prefix needs the sliding layers' rows before it too) until it is evicted.
//
// Thread rule: the device's — one thread at a time. Caches share ownership of the pool, so a
// cache released after its model still returns its blocks safely; the device must outlive
// both.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "models/prefix_index.hpp"
#include "models/recurrent_pool.hpp"

namespace specd {

class KvPool {
 public:
  // n_layer pairs of buffers for rows of kv_dim values of `dtype` (f32 today).
  KvPool(Device& device, int32_t n_layer, int64_t kv_dim, int32_t block_rows,
         specd_dtype dtype = SPECD_DTYPE_F32);

  int32_t block_rows() const { return block_rows_; }
  int32_t blocks() const { return static_cast<int32_t>(refs_.size()); }
  // Blocks a take() can have: free ones and parked ones (published, held by no cache).
  int32_t free_blocks() const {
    return static_cast<int32_t>(free_.size() + prefix_.parked_count());
  }
  int32_t parked_blocks() const { return static_cast<int32_t>(prefix_.parked_count()); }
  uint64_t evictions() const { return evictions_; }
  int32_t used_blocks() const { return blocks() - free_blocks(); }
  int64_t kv_dim() const { return kv_dim_; }
  specd_dtype dtype() const { return dtype_; }
  // Bytes one row takes in one layer's K (or V) buffer.
  int64_t row_stride() const { return row_stride_; }
  // Bytes of KV one token takes in every layer, K and V.
  uint64_t bytes_per_token() const;

  // Grows the pool to at least `blocks` blocks (never shrinks).
  void reserve(int32_t blocks);
  // Caches promise the blocks their capacity may come to need (KvCache does); the pool grows
  // to hold every live promise at once, so a pass does not grow it.
  void promise(int32_t blocks);
  void unpromise(int32_t blocks) { promised_ -= blocks; }
  // A free block with one reference: a free one, else the least recently parked one
  // (evicted, with every block published under it); grows the pool (doubling) when neither.
  int32_t take();
  // A free block of the window pool; parked blocks of this pool are evicted (their window
  // blocks unpinned) before the window pool grows.
  int32_t take_window();
  // One more reference to a block in use, or to a parked one (which a cache takes again).
  void retain(int32_t block);
  // Drops one reference; a block without any is parked when published, else freed.
  void release(int32_t block);

  // The prefix index (prefix_index.hpp), per partition. find: the published block holding
  // `tokens` (block_rows of them) after block `parent` (-1: the start), or -1. publish:
  // publishes a block in use, full with `tokens` after `parent` (a published block or -1);
  // false when that prefix is published already (in another block) or `parent` is not.
  int32_t find(int32_t parent, std::span<const int32_t> tokens, uint64_t partition = 0) const {
    return prefix_.find(parent, tokens, partition);
  }
  // With a window pool, `window_block` is the window pool's block of the same rows: the
  // published block pins it (one reference) until it leaves the index.
  bool publish(int32_t block, int32_t parent, std::span<const int32_t> tokens,
               uint64_t partition = 0, int32_t window_block = -1);
  // The window block a published block pins, or -1.
  int32_t pinned_window(int32_t block) const;
  bool published(int32_t block) const { return prefix_.indexed(block); }
  // The prefix index's chain hashes and listener (prefix_index.hpp).
  std::vector<uint64_t> published_hashes() const { return prefix_.hashes(); }
  void set_prefix_listener(PrefixListener* listener) { prefix_.set_listener(listener); }
  int32_t refs(int32_t block) const { return refs_.at(static_cast<size_t>(block)); }

  // Copies pool rows from[i] to to[i] in every layer's K and V (all reads before any write,
  // so the two lists may overlap). For committing a path of a draft tree that is not the
  // first branch.
  void move_rows(std::span<const int32_t> from, std::span<const int32_t> to);

  // Layer l's K or V rows [blocks × block_rows, kv_dim].
  View k(int32_t layer) const;
  View v(int32_t layer) const;
  Device& device() const { return *device_; }

  // A hybrid model's recurrent state (its gated DeltaNet layers), beside the attention layers'
  // rows: null for models without recurrent layers. Caches of this pool hold its slots.
  RecurrentPool* recurrent() const { return recurrent_.get(); }
  void set_recurrent(std::unique_ptr<RecurrentPool> pool) { recurrent_ = std::move(pool); }

  // The sliding-window layers' pool (null for models without such layers) and their window in
  // keys. Its block hole() is never handed out: table entries behind the window name it (the
  // window keeps attention from reading it).
  KvPool* window() const { return window_.get(); }
  int32_t window_keys() const { return window_keys_; }
  int32_t hole() const { return hole_; }
  void set_window(std::unique_ptr<KvPool> pool, int32_t keys);

 private:
  void resize(int32_t blocks);
  void unpin(int32_t block);
  void evict_oldest();

  Device* device_;
  int32_t n_layer_;
  int64_t kv_dim_;
  int32_t block_rows_;
  specd_dtype dtype_;
  int64_t row_stride_;
  std::vector<Buffer> k_, v_;  // per layer
  std::vector<int32_t> refs_;  // per block
  std::vector<int32_t> free_;  // free block ids, taken from the back
  PrefixIndex prefix_;
  uint64_t evictions_ = 0;
  int64_t promised_ = 0;
  Buffer move_index_, move_rows_;  // move_rows' indices and the rows in transit
  std::unique_ptr<RecurrentPool> recurrent_;
  std::unique_ptr<KvPool> window_;
  int32_t window_keys_ = 0, hole_ = -1;
  std::vector<int32_t> pins_;  // per block: the window block it pins, or -1
};

}  // namespace specd
