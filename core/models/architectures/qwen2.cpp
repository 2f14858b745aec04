// qwen2: Qwen2 and Qwen2.5. NEOX RoPE (pairs j, j + n_rot/2) and biases on the q, k and v
// projections; otherwise a llama block.
#include "models/architectures/architectures.hpp"
#include "specd/backend.h"

namespace specd::architectures {

extern const Architecture kQwen2 = {
    .name = "qwen2",
    .rope_mode = SPECD_ROPE_NEOX,
    .qkv_bias = Presence::kRequired,
};

}  // namespace specd::architectures
