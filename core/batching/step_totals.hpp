// The scheduler's counters over its steps, read by the server's /metrics.
#pragma once

#include <cstdint>

namespace specd::batching {

// The scheduler's steps so far (Scheduler::steps()): how their time divides between drafting,
// the target pass and the per-sequence work after it, and the rows they ran.
struct StepTotals {
  uint64_t steps = 0, rows = 0, prefill_rows = 0, drafted_sequences = 0;
  double seconds = 0, draft_seconds = 0, pass_seconds = 0, rounds_seconds = 0;
  // The prefix cache: prompt rows of admitted sequences (the prompt less its last token) and
  // how many were taken from cached blocks; the target's KV pool now (blocks of
  // kv_block_rows rows).
  uint64_t prompt_rows = 0, prefix_hit_rows = 0;
  uint64_t kv_blocks = 0, kv_blocks_free = 0, kv_blocks_cached = 0, kv_evictions = 0;
  uint64_t kv_block_rows = 0;
  // Its window pool (sliding-window layers, kv_pool.hpp): blocks, and of them those in use.
  uint64_t kv_window_blocks = 0, kv_window_blocks_used = 0;
};

}  // namespace specd::batching
