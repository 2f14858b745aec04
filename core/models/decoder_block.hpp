// One decoder block of the llama family (train/FORMATS.md, section 1) over the backend ops:
// pre-norm attention with RoPE and GQA over a KV cache, then a SwiGLU FFN, both residual.
// The op sequence is written once (DecoderBlock::run); the steps some architectures add
// (q/k/v biases, per-head q/k RMSNorm, NEOX RoPE, rope frequency factors and scaling, a gated
// attention output) are optional parts of it, chosen by the Architecture the weights were
// loaded with. A hybrid model's recurrent layers are DecoderBlocks whose mixer is a gated
// DeltaNet over recurrent state (run_delta) instead of attention. The layers of LlamaModel
// and the blocks of the EAGLE and MTP heads are all DecoderBlocks.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "backend/backend.hpp"
#include "models/architecture.hpp"
#include "models/model_info.hpp"
#include "models/moe_ffn.hpp"
#include "models/paged_batch.hpp"
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
  uint32_t rope_mode = SPECD_ROPE_NORMAL;  // the architecture's pairing
  float rope_freq_scale = 1.0f;            // 1 / rope.scaling.factor (linear or YaRN)
  Yarn yarn;                               // YaRN (ext_factor 0: none)
  int32_t window = 0;   // a sliding-window layer: each row attends its last `window` keys
  int32_t attn_in = 0;  // width of the q/k/v projections' input; 0 = n_embd (EAGLE-3: 2 n_embd)
  // Gated attention (qwen35): attn_q gives [q | gate] for each head, and the attention output
  // is multiplied by sigmoid(gate) before attn_output.
  bool gated_attention = false;
  // A hybrid model's gated DeltaNet layers (0 when it has none): key heads, value heads, their
  // size and the convolution's taps (backend.h, specd_delta_net_params).
  int32_t dn_key_heads = 0, dn_value_heads = 0, dn_head_dim = 0, dn_conv = 0;
  MoeShape moe = {};  // a mixture-of-experts FFN in place of the dense one, when active
  int64_t dn_channels() const {
    return (2 * static_cast<int64_t>(dn_key_heads) + dn_value_heads) * dn_head_dim;
  }
  int64_t dn_value_dim() const { return static_cast<int64_t>(dn_value_heads) * dn_head_dim; }
  int64_t attn_in_dim() const { return attn_in ? attn_in : n_embd; }
  int64_t kv_dim() const { return static_cast<int64_t>(n_head_kv) * head_dim; }
  int64_t q_dim() const { return static_cast<int64_t>(n_head) * head_dim; }
};

// A gated DeltaNet mixer's weights (llama.cpp's blk.N.attn_qkv, attn_gate, ssm_*).
struct DeltaNetWeights {
  View qkv;      // [C, d]: q, k, v of every head before the convolution
  View gate;     // [H_v S, d]: z, the output gate
  View beta;     // [H_v, d]
  View alpha;    // [H_v, d]
  View conv;     // f32 [C, K]: the causal convolution's taps
  View dt_bias;  // [1, H_v]
  View a;        // [1, H_v]: -exp(A_log)
  View norm;     // [1, S]: RMSNorm of each value head's output
  View out;      // [d, H_v S]
};

struct BlockWeights {
  View attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
  DeltaNetWeights dn;  // a hybrid model's recurrent layer: its mixer (else empty)
  MoeWeights experts;  // a mixture-of-experts FFN (then w_gate, w_up, w_down are empty)
  bool recurrent() const { return !dn.qkv.empty(); }
  // Optional steps: an empty view (View::empty) skips the step.
  View bq, bk, bv;      // biases [1, H*hd], [1, Hkv*hd], [1, Hkv*hd]
  View bo;              // [1, d]: added after the output projection
  View sinks;           // [1, H]: attention sinks (backend.h)
  View q_norm, k_norm;  // per-head RMSNorm weights [1, hd]
  View rope_factors;    // [1, n_rot / 2]: the model's rope_freqs, shared by its layers
  // Whether running the block needs ABI 0.2 ops; `what` gets the features, comma-separated.
  bool needs_abi_0_2(const BlockShape& shape, std::string* what = nullptr) const;
  // The same for ABI 0.8 (sliding windows, sinks, YaRN, the clamped SwiGLU).
  bool needs_abi_0_8(const BlockShape& shape, std::string* what = nullptr) const;
};

// Loads `prefix`attn_norm.weight ... `prefix`ffn_down.weight with the shapes of `shape` and
// the optional tensors `arch` has (biases, q/k norms, sinks; fused qkv and gate/up tensors as
// row views; with shape.moe active, the router and experts in place of the dense FFN).
// rope_factors is the caller's to set (it is not a per-block tensor).
BlockWeights load_block(WeightLoader& loader, const std::string& prefix, const BlockShape& shape,
                        const Architecture& arch);
// A hybrid model's recurrent layer: `prefix`attn_norm.weight, the DeltaNet mixer's tensors and
// the FFN (post_attention_norm; dense or experts, as load_block's).
BlockWeights load_delta_block(WeightLoader& loader, const std::string& prefix,
                              const BlockShape& shape, const Architecture& arch);

// The activations of one block's pass, reused by every block of a model (one pass runs at
// a time): h [m, d], q and attn [m, H*hd], gate and up [m, F], k and v [m, Hkv*hd]; with gated
// attention qg [m, 2 H*hd]; with DeltaNet layers qkv [m, C], z and o [m, H_v S], alpha and
// beta [m, H_v]; with experts, the MoE FFN's (moe_ffn.hpp).
class BlockScratch {
 public:
  // Grows the buffers to hold m rows of `shape` on `device` (never shrinks).
  void ensure(Device& device, const BlockShape& shape, int64_t m);
  int64_t rows() const { return rows_; }
  Buffer h, q, attn, gate, up, k, v, qg, qkv, z, o, alpha, beta;
  MoeScratch moe;

 private:
  int64_t rows_ = 0;
};

class DecoderBlock {
 public:
  DecoderBlock(Device& device, const BlockShape& shape, const BlockWeights& weights)
      : device_(&device), shape_(shape), w_(weights) {}
  const BlockShape& shape() const { return shape_; }
  const BlockWeights& weights() const { return w_; }

  // x: the residual stream f32 [M, d] of every row of a pass, updated in place; `b` where
  // those rows sit (paged_batch.hpp), k_pool / v_pool this layer's rows of the KV pool.
  // Row-wise ops (norms, matmuls, biases, rope, FFN) run over the rows in pieces of at most
  // `piece` rows (the device's invariant_max_rows when rows of several sequences share the
  // pass: each row's bits then do not depend on the other rows); the new K and V rows are
  // scattered into their pool rows and attention runs once over every row, each through its
  // own sequence's block table and mask. `scratch` holds M rows (ensure).
  // `attn_input` [M, attn_in_dim()], when given, is what q, k and v are projected from in
  // place of the normed residual stream (EAGLE-3 feeds its normed embedding and feature
  // there); the attention norm is then the caller's.
  void run(const View& x, const PagedBatch& b, const View& k_pool, const View& v_pool,
           int64_t piece, BlockScratch& scratch, const View* attn_input = nullptr) const;
  // Only the K and V rows of `input` [M, n_embd] (projected as attn_input is, no attention
  // norm; per-head k norm and rope at b.positions), scattered into their pool rows: a DFlash
  // layer's K/V of target features. Nothing else runs.
  void write_kv(const View& input, const PagedBatch& b, const View& k_pool, const View& v_pool,
                int64_t piece, BlockScratch& scratch) const;
  // A recurrent layer's state (recurrent_pool.hpp): its slots and its replay store's rows.
  struct DeltaState {
    View conv, ssm;                           // [slots, ...] of this layer
    View store_qkv, store_alpha, store_beta;  // the pass's replay rows, when it stores any
  };
  // A recurrent layer (weights().recurrent()): run() with a gated DeltaNet mixer over this
  // layer's recurrent state slots (each row's slots in b.state_in and b.state_out) in place of
  // attention. The DeltaNet op runs once over every row; the rows b.replay_rows lists have
  // their op inputs copied into the replay store.
  void run_delta(const View& x, const PagedBatch& b, const DeltaState& state, int64_t piece,
                 BlockScratch& scratch) const;
  // Runs stored rows (state.store_*: a chain's first `rows`) through the DeltaNet op again,
  // from the slot of state_in [1, rows] to that of state_out [1, rows]: a replay (the
  // outputs, in scratch, are not used).
  void replay_delta(const DeltaState& state, const View& state_in, const View& state_out,
                    BlockScratch& scratch) const;

 private:
  // The ops before attention on m rows: attention norm of x into h (or `in` as given), the
  // q/k/v projections (biases, per-head q/k norm), rope at `positions` [1, m].
  void project(const View& x, const View* in, const View& positions, const View& h, const View& q,
               const View& k, const View& v, const View& qg) const;
  // The ops after the mixer on m rows: output projection of `mixed` by `w_out` and residual,
  // FFN norm, SwiGLU FFN (or the experts') and residual, x updated in place; h, gate, up and
  // moe are scratch.
  void finish(const View& x, const View& mixed, const View& w_out, const View& h, const View& gate,
              const View& up, MoeScratch& moe) const;

  Device* device_;
  BlockShape shape_;
  BlockWeights w_;
};

}  // namespace specd
