// A sequence's KV side when a scheduler batches it with other sequences: a Verifier whose
// begin() and verify() only record the rows to run. The scheduler gathers every sequence's
// entry() into one LlamaModel::forward_batch, which writes the logits (and features) into
// the buffers given to verify(); then it calls pass_done(). commit() runs at once. The
// scheduler holds the one object and the sequence uses it as its Verifier.
//
// The prompt (all but its last token) is prefilled in chunks of `chunk_rows` rows, one chunk
// per pass, so prefill interleaves with other sequences' rounds; the chunk size depends on
// nothing but this setting, and with chunk_rows <= the device's invariant_max_rows every row
// is batch invariant. The KV cache takes blocks from the model's pool as it grows (no copies),
// never beyond `max_rows`, which is also the context_length() this sequence sees.
//
// With `prefix_cache`, the prompt's full blocks that the pool has published are taken instead
// of prefilled (KvCache::adopt_prefix: at begin(), and by take_published() before a chunk
// while every row so far is shared), and the prompt's own full blocks are published as
// their chunks commit. A taken row has the bits a prefill would give it here: every row of a
// pass of at most invariant_max_rows rows per sequence is batch invariant, so its bits depend
// on its token, its position and the rows before it, never on how the prompt was cut into
// chunks (ARCHITECTURE.md, "Prefix caching"). Not when the proposer needs the prompt's hidden
// states (EAGLE, MTP): those sequences prefill in full.
//
// Thread rule: the scheduler's worker alone; the model outlives the verifier.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/verifier.hpp"
#include "models/llama_model.hpp"

namespace specd {

class BatchVerifier final : public Verifier {
 public:
  // `max_rows` is also the context_length() this sequence sees.
  // With `prefix_cache`, prompts share blocks within `prefix_partition` (kv_cache.hpp).
  BatchVerifier(LlamaModel& model, uint32_t max_rows, uint32_t chunk_rows,
                bool prefix_cache = false, uint64_t prefix_partition = 0);

  bool prefilling() const { return prefilled_ < prompt_.size(); }
  // The rows of the next prefill chunk (0 when the prompt is processed).
  uint32_t next_chunk_rows() const {
    return static_cast<uint32_t>(std::min<size_t>(chunk_rows_, prompt_.size() - prefilled_));
  }
  // Whether rows wait for the next pass (a prefill chunk or a recorded round).
  bool has_entry() const { return prefilling() || round_pending_; }
  // Those rows as one entry of forward_batch.
  ForwardEntry entry();
  // After the pass: a prefill chunk's rows are committed; a round's stay pending until the
  // sequence's commit().
  void pass_done();
  // Rows the cache's blocks hold now.
  uint32_t held_rows() const { return static_cast<uint32_t>(cache_->held_rows()); }
  // The prompt's rows taken from the prefix cache at begin() and by take_published().
  uint32_t prefix_hit_rows() const { return hit_rows_; }
  // Before its next chunk: takes the blocks of its prompt that other sequences published
  // since (a request that waited for its turn to prefill behind one with the same start).
  // Returns the rows taken.
  uint32_t take_published();

 private:
  void do_begin(std::span<const specd_token> prompt, float* hidden) override;
  void do_verify(specd_token root, const specd_draft_tree& tree, float* logits,
                 float* hidden) override;
  void do_commit(std::span<const int32_t> path) override;
  uint32_t cached_rows() const { return static_cast<uint32_t>(cache_->size()); }

  LlamaModel& model_;
  uint32_t max_rows_, chunk_rows_;
  bool prefix_cache_;
  uint32_t hit_rows_ = 0;
  std::unique_ptr<KvCache> cache_;
  std::vector<int32_t> prompt_;  // the tokens to prefill (the prompt less its last token)
  float* prompt_hidden_ = nullptr;
  size_t prefilled_ = 0;
  uint32_t chunk_ = 0;  // rows of the chunk in flight
  bool round_pending_ = false;
  std::vector<int32_t> tokens_, positions_, parents_, rows_;
  float* logits_ = nullptr;
  float* hidden_ = nullptr;
};

}  // namespace specd
