// The int32 inputs of one batched pass over paged KV caches (LlamaModel and the EAGLE/MTP
// heads), gathered host-side into one array so that a pass uploads them once:
//
//   tokens [M], positions [M], prefix_len [M], extra_begin [M + 1], extra_slots [X],
//   table_begin [M], block tables [T], write_rows [M]
//   and for a hybrid model's caches (recurrent state): state_in [M], state_out [M],
//   replay_rows [R] (the rows whose DeltaNet inputs the pass stores for a replay)
//   and for a pool with sliding-window layers: window tables [T], window write_rows [M] (the
//   same tables and rows in the window pool, kv_pool.hpp)
//
// Row i of the pass belongs to one sequence; its attention mask is that sequence's
// (batch_mask.hpp: the committed prefix, then its ancestors among the pending rows), in the
// sequence's logical rows, and its table is the sequence's block table. The M new K/V rows
// go to the pool rows write_rows (each sequence's next logical rows).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "models/kv_cache.hpp"

namespace specd {

// One sequence's rows in a pass.
struct PagedRows {
  KvCache* cache = nullptr;
  std::span<const int32_t> tokens, positions;
  // parents[i]: -1 for a child of the last committed row, else the index of a pending row:
  // with `append` (heads) the rows pending from earlier calls come first, then these; without
  // it (llama models) the pending rows are replaced by these.
  std::span<const int32_t> parents;
  bool append = false;
  // Every row attends to the committed rows and to all of these rows, later ones included
  // (a DFlash block); the rows must be a chain after the committed rows, none pending before.
  bool bidirectional = false;
  // Recurrent state (hybrid models): rows from this one on, and the last row, keep the state
  // they leave (a commit may end there); earlier rows keep none (a prefill's rows are
  // committed together, so only its last state is wanted).
  int32_t keep_states_from = 0;
};

// Views of the uploaded inputs, as the decoder block's batched pass reads them.
struct PagedBatch {
  View positions, prefix_len, extra_begin, extra_slots, table_begin, block_table, write_rows;
  View state_in, state_out;              // recurrent models only (backend.h, specd_recurrent_rows)
  View replay_rows;                      // recurrent, replay restore: rows to store, in store order
  View window_table, window_write_rows;  // sliding-window layers' (a window pool's) tables
  int32_t block_rows = 0;
  bool has_extra() const { return !extra_slots.empty(); }
  // The batch as the sliding-window layers read it: their tables and rows in the window pool.
  PagedBatch sliding() const {
    PagedBatch b = *this;
    b.block_table = window_table;
    b.write_rows = window_write_rows;
    return b;
  }
};

class PagedBatchInputs {
 public:
  // Builds the inputs of `seqs` (no two share a cache, all in one pool) and makes each cache
  // hold blocks for its new rows. Throws specd::Error for bad parents or a full cache.
  explicit PagedBatchInputs(std::span<const PagedRows> seqs);
  // Gives back the recurrent state slots taken for a pass that did not finish.
  ~PagedBatchInputs();
  PagedBatchInputs(const PagedBatchInputs&) = delete;
  PagedBatchInputs& operator=(const PagedBatchInputs&) = delete;

  const std::vector<int32_t>& ints() const { return ints_; }
  int64_t rows() const { return m_; }
  // Rows the pass stores for replay (the recurrent pool's store must hold them).
  int64_t replay_rows() const { return n_replay_; }
  // The views into `buffer`, where ints() was uploaded at byte `offset`.
  PagedBatch views(const Buffer& buffer, uint64_t offset = 0) const;
  View tokens(const Buffer& buffer, uint64_t offset = 0) const;
  // After the pass: each cache records its pending rows' parents (and recurrent state slots).
  void finish();

 private:
  // A recurrent cache's rows: where each reads its state from and writes it to (slots taken
  // into `kept`, one per row or -1).
  // With replay (recurrent_pool.hpp) a chain keeps only its last row's state and its rows go
  // to the replay store (their pass rows appended to `replay_rows`, from pass row `row0`).
  void add_states(const PagedRows& in, KvCache& cache, int32_t row0, std::vector<int32_t>& kept,
                  KvCache::Replay& replay, std::vector<int32_t>& state_in,
                  std::vector<int32_t>& state_out, std::vector<int32_t>& replay_rows);

  void release_states();

  std::span<const PagedRows> seqs_;
  std::vector<std::vector<int32_t>> pending_;  // each cache's pending parents after the pass
  std::vector<std::vector<int32_t>> states_;   // recurrent: each cache's pending rows' slots
  std::vector<KvCache::Replay> replays_;       // recurrent: where each cache's rows were stored
  std::vector<int32_t> ints_;
  int64_t m_ = 0, n_extra_ = 0, n_table_ = 0, n_replay_ = 0;
  int32_t block_rows_ = 0;
  bool recurrent_ = false;
  bool window_ = false;
  bool finished_ = false;
};

}  // namespace specd
