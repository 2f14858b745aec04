// llama: Llama 1-3.x and the files converted as llama (Mistral 7B, ...). Adjacent-pair RoPE;
// llama.cpp also reads optional q/k/v biases, and rope_freqs.weight for Llama 3.1/3.2's
// frequency scaling. The output projection may be tied to token_embd (Llama 3.2 1B/3B).
#include "models/architectures/architectures.hpp"
#include "specd/backend.h"

namespace specd::architectures {

extern const Architecture kLlama = {
    .name = "llama",
    .rope_mode = SPECD_ROPE_NORMAL,
    .qkv_bias = Presence::kOptional,
    .rope_freqs = Presence::kOptional,
};

}  // namespace specd::architectures
