// The recurrent state of a hybrid model's gated DeltaNet layers on one device: for each such
// layer, a conv buffer and an SSM buffer of `slots()` rows, one sequence state per row (a
// slot; backend.h, specd_recurrent_rows). Sequences hold slots (KvCache): the state after
// their last committed row, and the states the rows of a pending pass left, from which a
// commit keeps the one its accepted path ends at (kv_cache.hpp).
//
// A slot is zeroed when taken: the empty state. The pool grows (doubling) when a slot is
// taken and none is free, copying the slots in use; that happens between passes, while a
// pass's rows are laid out (paged_batch.hpp), never inside one.
//
// Thread rule: the device's — one thread at a time. Caches share ownership of the pool
// through their KvPool; the device must outlive both.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.hpp"

namespace specd {

class RecurrentPool {
 public:
  // `n_layer` recurrent layers, each slot holding conv_width and ssm_width f32 values per layer.
  RecurrentPool(Device& device, int32_t n_layer, int64_t conv_width, int64_t ssm_width);

  int32_t slots() const { return static_cast<int32_t>(used_.size()); }
  int32_t used_slots() const { return slots() - static_cast<int32_t>(free_.size()); }
  // Bytes of one slot over every recurrent layer.
  uint64_t bytes_per_slot() const;

  // A free slot holding the empty state (zeroed in every layer); grows the pool when none.
  int32_t take();
  void release(int32_t slot);
  // Copies slot `from` into slot `to` in every layer.
  void copy(int32_t from, int32_t to);

  // Layer l's slots: conv [slots, conv_width], ssm [slots, ssm_width], f32.
  View conv(int32_t layer) const;
  View ssm(int32_t layer) const;
  Device& device() const { return *device_; }

 private:
  void resize(int32_t slots);

  Device* device_;
  int32_t n_layer_;
  int64_t conv_width_, ssm_width_;
  std::vector<Buffer> conv_, ssm_;  // per layer
  std::vector<bool> used_;          // per slot
  std::vector<int32_t> free_;       // free slots, taken from the back
  std::vector<float> zeros_;        // one slot's widest row of zeros
};

}  // namespace specd
