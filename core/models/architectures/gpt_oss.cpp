// gpt-oss: OpenAI's mixture of experts (gpt-oss-20b, gpt-oss-120b), llama.cpp's layout
// (src/models/openai-moe-iswa.cpp). Attention with q/k/v and output biases, NEOX RoPE with YaRN
// (rope.scaling.*), a head size of its own (attention.key_length) and attention sinks; the even
// layers attend a sliding window (attention.sliding_window), the odd ones every key. The FFN,
// after post_attention_norm, is experts with biases: the top expert_used_count by the router's
// biased logits, weighted by a softmax over those logits alone, each a clamped SwiGLU.
#include "models/architectures/architectures.hpp"
#include "specd/backend.h"

namespace specd::architectures {

extern const Architecture kGptOss = {
    .name = "gpt-oss",
    .rope_mode = SPECD_ROPE_NEOX,
    .qkv_bias = Presence::kRequired,
    .post_attention_norm = true,
    .output_bias = Presence::kRequired,
    .attention_sinks = Presence::kRequired,
    .sliding_window_period = 2,
    .experts = ExpertRouting::kSoftmaxOfChosen,
    .expert_activation = ExpertActivation::kSwigluOai,
    .expert_biases = true,
};

}  // namespace specd::architectures
