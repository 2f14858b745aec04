// One sequence's KV cache: a block table into its model's KvPool (kv_pool.hpp). Logical row r
// of the sequence lives at pool row blocks[r / B] * B + r % B.
//
// Rows [0, size()) are committed: the sequence in order. A forward writes rows from size() on
// (pending; a LlamaModel forward replaces the pending rows, a head's forward adds to them, so
// a draft tree can grow one level per call); commit() keeps the pending rows of an accepted
// path, moved into sequence order right after the committed rows, and drops the rest.
// Blocks are taken from the pool as rows are first written and given back when the cache is
// destroyed, so a cache never copies its rows to grow.
//
// Prefix sharing: a fresh cache may start with blocks another cache published (adopt_prefix),
// and publish its own full committed blocks (publish_next). Both kinds are shared and
// read-only: the cache's leading `shared_blocks()` blocks are never written again, and
// truncate() refuses to cut into them except at a block boundary (which lets them go).
//
// Recurrent state (a hybrid model's pool has a RecurrentPool): the cache also holds the slot
// with the state after its last committed row, and a slot for each pending row whose state
// the pass kept (paged_batch.hpp). A commit keeps the slot of the row its path ends at; a path
// ending at a row whose state was not kept is run again from the committed state first
// (replay, LlamaModel::commit: the pass stored those rows' inputs). The state cannot go back,
// so truncate() keeps every committed row or none, and no prefix blocks are shared
// (adopt_prefix and publish_next do nothing).
//
// Sliding-window layers (the pool has a window pool): a second block table, of the same length,
// holds those layers' rows. Once a block's rows are all behind the window of every row that
// may still be written (the last window_keys() committed rows, and kWindowSlack more for a
// truncate), the cache gives it back and its entry names the window pool's hole block. A
// truncate can then go back kWindowSlack rows, or to 0. Blocks the cache may yet publish (rows
// before publish_limit()) are kept until they are published (the published block pins them).
//
// Thread rule: its model's (the device's) — one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/kv_pool.hpp"

namespace specd {

class KvCache {
 public:
  // A cache of at most `capacity` rows over `pool` (blocks are taken as rows are written).
  KvCache(std::shared_ptr<KvPool> pool, int32_t capacity);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  int32_t size() const { return committed_; }  // committed rows
  int32_t pending() const { return static_cast<int32_t>(parents_.size()); }
  int32_t capacity() const { return capacity_; }  // most rows, committed plus pending
  KvPool& pool() const { return *pool_; }
  const std::vector<int32_t>& blocks() const { return blocks_; }
  // Sliding-window layers: the window pool's block table (same length as blocks()), or empty.
  const std::vector<int32_t>& window_blocks() const { return window_blocks_; }
  // Rows a truncate may go back past the window: a draft model's rejected rows ([proposer] k
  // is at most 64), and a block to spare.
  static constexpr int32_t kWindowSlack = 80;
  // The most rows a round adds (k = 64 and its root): the window pool a cache promises holds
  // the window, the slack and a round.
  static constexpr int32_t kRoundRows = 65;
  // The sliding-window rows a cache holds at most between prefills, for a window of `keys`.
  static constexpr int32_t window_rows(int32_t keys) { return keys + kWindowSlack + kRoundRows; }
  // The first row whose sliding-window rows the cache still holds (0 without a window pool).
  int32_t window_from() const { return window_from_; }
  // Committed rows before this one may yet be published (publish_next): their window blocks
  // stay until they are. 0 (the default): none.
  void set_publish_limit(int32_t rows) { publish_limit_ = rows; }
  // Rows the cache's blocks hold now (a multiple of the block size).
  int32_t held_rows() const;

  // Makes the cache hold blocks for rows [0, rows) (rows <= capacity; throws otherwise).
  void hold(int32_t rows);
  // The pool row of logical row r (r < held_rows()), and its row in the window pool.
  int32_t pool_row(int32_t r) const;
  int32_t window_row(int32_t r) const;
  // Parents of the pending rows, as given to forward: -1 for a child of the committed prefix,
  // else the index of a pending row.
  const std::vector<int32_t>& pending_parents() const { return parents_; }
  void set_pending(std::vector<int32_t> parents) { parents_ = std::move(parents); }

  // Keeps the pending rows listed (indices into the pending rows, in order, each the child of
  // the previous, the first a child of the committed prefix) and drops the other pending rows;
  // the kept rows become committed, in that order. An empty list just drops the pending rows.
  void commit(std::span<const int32_t> kept);
  // The same after the path's state was brought into the committed slot by a replay.
  void commit_replayed(std::span<const int32_t> kept);
  // Keeps the first n committed rows (n <= size()); drops pending rows. Blocks past n are
  // given back when n falls inside the shared blocks (it must then be a block boundary).
  void truncate(int32_t n);
  // Why truncate(n) is refused because the sliding-window layers gave back rows it needs, or
  // empty when it is not.
  std::string truncate_refusal(int32_t n) const;

  // Takes the published blocks that hold `tokens` after the rows it holds, as far as they
  // match, whole blocks only, up to `max_rows` rows; they become committed rows. Only a cache
  // whose every row is in shared blocks (none yet, or blocks it adopted or published) takes
  // more: a prefill may adopt what other sequences published while it waited. Returns the
  // rows it holds. Throws when rows are pending.
  int32_t adopt_prefix(std::span<const int32_t> tokens, int32_t max_rows);
  // Publishes the cache's next unshared block if it is full of committed rows, whose tokens
  // (the sequence's, from row 0) are given; returns false when there is none to publish or
  // the pool has that prefix in another block (then nothing after it is published either).
  bool publish_next(std::span<const int32_t> tokens);
  int32_t shared_blocks() const { return shared_; }
  // The prefix-cache partition this cache adopts from and publishes to (0: the shared one;
  // a request's cache_salt gives it one of its own). Set before adopting or publishing.
  void set_prefix_partition(uint64_t partition) { partition_ = partition; }

  // Recurrent state (only when the pool has one). The slot of the state after the committed
  // rows (taken, empty, on first use); the slot each pending row's state was written to (-1
  // where the pass kept none).
  bool recurrent() const { return pool_->recurrent() != nullptr; }
  int32_t state_slot();
  const std::vector<int32_t>& pending_states() const { return pending_states_; }
  // Gives back the slots of the pending rows' states (a new pass replaces them).
  void release_pending_states();
  // After a pass: the slots its rows' states were written to (the cache owns them now), and
  // where the pass stored its rows for replay (`first` in the pool's replay store of pass
  // `pass`; rows 0; none).
  struct Replay {
    uint64_t pass = 0;
    int32_t first = 0, rows = 0;
  };
  void set_pending_states(std::vector<int32_t> slots, Replay replay);
  // The rows a commit of `kept` must run again before it (a path ending at a row whose state
  // was not kept: that row + 1), or 0; throws when the pass did not store them.
  int32_t replay_rows(std::span<const int32_t> kept) const;
  const Replay& replay() const { return replay_; }

 private:
  int32_t promised_blocks() const;
  int32_t promised_window_blocks() const;
  // Gives back the window blocks behind every row that may still be written.
  void trim_window();
  // Drops the table entries (both tables) from block `keep` on.
  void drop_blocks(size_t keep);
  std::shared_ptr<KvPool> pool_;
  int32_t capacity_;
  int32_t committed_ = 0;
  std::vector<int32_t> parents_;         // of the pending rows
  std::vector<int32_t> blocks_;          // block table
  int32_t shared_ = 0;                   // leading blocks adopted or published: read-only
  bool publishing_ = true;               // false once a block could not be published
  uint64_t partition_ = 0;               // the prefix-cache partition
  int32_t state_ = -1;                   // recurrent: the committed state's slot
  std::vector<int32_t> pending_states_;  // recurrent: per pending row, its state's slot or -1
  Replay replay_;                        // recurrent: where the pending rows were stored
  std::vector<int32_t> window_blocks_;   // sliding-window layers' table (hole() behind)
  int32_t window_from_ = 0;              // rows before it name the hole in window_blocks_
  int32_t publish_limit_ = 0;
  void commit_rows(std::span<const int32_t> kept, bool replayed);
};

}  // namespace specd
