// qwen35moe: Qwen3.5's mixture of experts (Qwen3.5-35B-A3B and its kin), llama.cpp's layout
// (src/models/qwen35moe.cpp): qwen35's hybrid trunk (gated DeltaNet layers and gated
// attention, MTP layers after it) with every layer's FFN, its MTP layer's too, a mixture of
// experts routed as qwen3moe's (softmax, the top k, weights normalized) beside a shared expert
// whose SwiGLU output is scaled by sigmoid(ffn_gate_inp_shexp . x).
#include "models/architectures/architectures.hpp"
#include "specd/backend.h"

namespace specd::architectures {

extern const Architecture kQwen35Moe = {
    .name = "qwen35moe",
    .rope_mode = SPECD_ROPE_NEOX,
    .qk_norm = Presence::kRequired,
    .hybrid = true,
    .post_attention_norm = true,
    .experts = ExpertRouting::kSoftmaxNormalized,
    .shared_expert = true,
};

}  // namespace specd::architectures
