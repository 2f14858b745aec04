// Where the output of one round stops. Plain decoding stops right after a stop token or when
// the token budget is spent; a speculative round emits several tokens at once, so the
// engine cuts them at the same place.
#pragma once

#include <cstddef>
#include <span>

#include "specd/types.h"

namespace specd {

// How many of `tokens` (the accepted draft tokens followed by the next token) to emit:
// up to and including the first token in `stop_ids`, and at most `remaining_budget`.
size_t cut_emitted(std::span<const specd_token> tokens, std::span<const specd_token> stop_ids,
                   size_t remaining_budget);

}  // namespace specd
