// qwen3moe: Qwen3's mixture of experts (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B): qwen3's attention
// (NEOX RoPE, per-head q/k RMSNorm) and an FFN of experts routed by softmax, the chosen
// experts' weights normalized to sum to 1, and no shared expert.
#include "models/architectures/architectures.hpp"
#include "specd/backend.h"

namespace specd::architectures {

extern const Architecture kQwen3Moe = {
    .name = "qwen3moe",
    .rope_mode = SPECD_ROPE_NEOX,
    .qk_norm = Presence::kRequired,
    .experts = ExpertRouting::kSoftmaxNormalized,
};

}  // namespace specd::architectures
