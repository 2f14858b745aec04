// A constructed EAGLE-3 head in llama.cpp's layout (general.architecture "eagle3") for a
// constructed target (constructed_model.hpp): it drafts the target's planted map on a
// chosen fraction of the cycle's tokens, so `specd ab` can measure EAGLE-3 drafting on a
// memory-bound pair as it measures a draft model.
//
// Construction: the head ignores the fused features (fc and attn_norm_2 are zero, and
// norm_before_residual puts the normed, zero feature on the residual); q and k project the
// normed token embedding scaled so that attention falls on the element's own token, v and
// the output projection pass that embedding through, and the FFN is zero. The state is then
// about the embedding of the element's token, and the head's own output rows (those of a
// constructed draft agreeing on `agreement`) give that token's next token. It borrows the
// target's token_embd, as heads converted for Llama 3.1 8B do.
#pragma once

#include <string>

#include "bench/constructed_model.hpp"

namespace specd::bench {

// Writes the head for `target` agreeing with its map on `agreement` of the cycle ([0, 1];
// throws UsageError otherwise). Weights in f16.
void write_constructed_eagle3(const std::string& path, const ConstructedSpec& target,
                              double agreement);

}  // namespace specd::bench
