// One llama decoder block (train/FORMATS.md, section 1) over the backend ops, for heads
// that carry a block of their own (EAGLE, MTP): pre-norm attention with RoPE and GQA over a
// KV cache, then a SwiGLU FFN, both residual. Same op sequence as LlamaModel's layers.
#pragma once

#include <cstdint>
#include <string>

#include "backend/backend.hpp"
#include "models/weight_loader.hpp"

namespace specd {

struct BlockShape {
  int32_t n_embd = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;
  int32_t n_ff = 0;
  int32_t n_rot = 0;
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  int64_t kv_dim() const { return static_cast<int64_t>(n_head_kv) * head_dim; }
  int64_t q_dim() const { return static_cast<int64_t>(n_head) * head_dim; }
};

struct BlockWeights {
  View attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
};

// Loads `prefix`attn_norm.weight ... `prefix`ffn_down.weight with the shapes of `shape`.
BlockWeights load_block(WeightLoader& loader, const std::string& prefix, const BlockShape& shape);

// Where a batch of m rows sits: cache rows, positions and the attention mask (int32 views).
struct BlockBatch {
  View k_cache, v_cache;  // [capacity, Hkv*hd]
  int64_t first_row = 0;  // the batch's K/V rows are written at first_row .. first_row+m-1
  View positions;         // [1, m]
  View prefix_len;        // [1, m]
  View extra_begin;       // [1, m + 1]
  const View* extra_slots = nullptr;  // [1, n] or nullptr
};

class DecoderBlock {
 public:
  DecoderBlock(Device& device, const BlockShape& shape, const BlockWeights& weights)
      : device_(&device), shape_(shape), w_(weights) {}
  const BlockShape& shape() const { return shape_; }

  // x: the residual stream f32 [m, d], updated in place.
  void run(const View& x, const BlockBatch& batch);

 private:
  void ensure_scratch(int64_t m);
  Device* device_;
  BlockShape shape_;
  BlockWeights w_;
  int64_t rows_ = 0;
  Buffer h_, q_, attn_, gate_, up_;
};

}  // namespace specd
