// A constructed DFlash block drafter in llama.cpp's layout (general.architecture "dflash") for
// a constructed target (constructed_model.hpp), so `specd ab` can measure DFlash drafting on a
// memory-bound pair: every row of its block predicts the root's next token under the planted
// map on a chosen fraction of the cycle, so its first drafted token is the one that counts
// (run it with k = 1).
//
// Construction, one layer: its fused features are zero (fc = 0), so the injected K and V
// rows are zero. The mask token (its own embedding, a fresh Gaussian) queries, in every
// head, a direction u that lives on the head's lowest-frequency rope pairs (so rope barely
// turns it over a block); the key of any cycle token is +u, the mask's -u (solved for exactly,
// so the width must exceed the cycle's 95 tokens), so each mask row
// attends to the root alone. v passes the normed embedding through, the output projection
// scales it into the mask row's residual, the FFN is zero, and the output rows of a draft
// agreeing on A map the root's embedding to its next token.
#pragma once

#include <string>

#include "bench/constructed_model.hpp"

namespace specd::bench {

// Writes the drafter for `target` agreeing with its map on `agreement` of the cycle ([0, 1];
// throws UsageError otherwise). Matrices in q8_0.
void write_constructed_dflash(const std::string& path, const ConstructedSpec& target,
                              double agreement);

}  // namespace specd::bench
