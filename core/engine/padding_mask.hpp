// Padding rows: models round their embedding up (to a multiple of 64, say), so ids from the
// tokenizer's size up to the embedding's have no token. Their logits are whatever the
// weights say; they must never be drawn, by the target or by a draft.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <span>

namespace specd {

// Sets the logits of ids >= n_tokens to -inf (masked: probability 0 after the transform).
inline void mask_padding(std::span<float> logits, size_t n_tokens) {
  if (n_tokens < logits.size())
    std::fill(logits.begin() + static_cast<std::ptrdiff_t>(n_tokens), logits.end(),
              -std::numeric_limits<float>::infinity());
}

}  // namespace specd
