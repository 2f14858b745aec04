// qwen3: Qwen3 (dense). NEOX RoPE, no biases, and an RMSNorm over each head of q and k (one
// [head_dim] weight each) between the projection and RoPE. Its head dim
// (attention.key_length) may differ from embedding_length / head_count.
#include "models/architectures/architectures.hpp"
#include "specd/backend.h"

namespace specd::architectures {

extern const Architecture kQwen3 = {
    .name = "qwen3",
    .rope_mode = SPECD_ROPE_NEOX,
    .qk_norm = Presence::kRequired,
};

}  // namespace specd::architectures
