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
// Replay (RecurrentRestore::kReplay): a pass keeps only the state after a chain's last row,
// and the inputs of the chain's rows to the DeltaNet op (qkv, alpha, beta per layer) in a
// replay store; a commit that ends earlier runs those rows again from the committed state
// (LlamaModel::commit). The store holds the rows of the last pass only.
//
// Thread rule: the device's — one thread at a time. Caches share ownership of the pool
// through their KvPool; the device must outlive both.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.hpp"

namespace specd {

// How a commit of a path that ends before a pass's last row gets that row's state: from a
// snapshot every row of the pass wrote (kSnapshot), or by running the path's rows again from
// the committed state (kReplay: one state written per pass instead of one per row).
enum class RecurrentRestore { kReplay, kSnapshot };

// One recurrent layer's widths (backend.h, gated_delta_net): channels C, value heads, their
// size S, convolution taps K.
struct RecurrentShape {
  int64_t channels = 0, value_heads = 0, head_dim = 0, conv_taps = 0;
  int64_t conv_width() const { return (conv_taps - 1) * channels; }
  int64_t ssm_width() const { return value_heads * head_dim * head_dim; }
};

class RecurrentPool {
 public:
  // `n_layer` recurrent layers of `shape`.
  RecurrentPool(Device& device, int32_t n_layer, const RecurrentShape& shape,
                RecurrentRestore restore);
  const RecurrentShape& shape() const { return shape_; }
  RecurrentRestore restore() const { return restore_; }

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

  // The replay store of the current pass: begin_pass() makes it hold `rows` rows (a new
  // pass's; the previous pass's rows are gone), pass() numbers the passes.
  void begin_pass(int32_t rows);
  uint64_t pass() const { return pass_; }
  // Layer l's stored rows: qkv [rows, C], alpha and beta [rows, H_v].
  View replay_qkv(int32_t layer, int32_t first, int32_t rows) const;
  View replay_alpha(int32_t layer, int32_t first, int32_t rows) const;
  View replay_beta(int32_t layer, int32_t first, int32_t rows) const;

 private:
  void resize(int32_t slots);

  Device* device_;
  int32_t n_layer_;
  RecurrentShape shape_;
  RecurrentRestore restore_;
  int64_t conv_width_, ssm_width_;
  std::vector<Buffer> replay_;  // per layer: [rows, C + 2 H_v]: qkv, then alpha, then beta
  int32_t replay_rows_ = 0;
  uint64_t pass_ = 0;
  std::vector<Buffer> conv_, ssm_;  // per layer
  std::vector<bool> used_;          // per slot
  std::vector<int32_t> free_;       // free slots, taken from the back
  std::vector<float> zeros_;        // one slot's widest row of zeros
};

}  // namespace specd
