// qwen35: Qwen3.5 (dense), llama.cpp's layout (src/models/qwen35.cpp). A hybrid: three of
// every four layers (qwen35.full_attention_interval) are gated DeltaNet layers, linear
// attention over a recurrent state (qkv and gate projections, a causal convolution, the delta
// rule; decoder_block.hpp), and the rest are gated attention with per-head q/k RMSNorm and
// NEOX RoPE over the first rope.dimension_count values of each head (its interleaved MRoPE is
// that for text, whose positions are the same in every section). Every layer's FFN is SwiGLU
// after post_attention_norm. MTP layers (blk.N.nextn.*, qwen35.nextn_predict_layers) follow the
// trunk; the model skips them and the mtp proposer runs them.
#include "models/architectures/architectures.hpp"
#include "specd/backend.h"

namespace specd::architectures {

extern const Architecture kQwen35 = {
    .name = "qwen35",
    .rope_mode = SPECD_ROPE_NEOX,
    .qk_norm = Presence::kRequired,
    .hybrid = true,
    .post_attention_norm = true,
};

}  // namespace specd::architectures
