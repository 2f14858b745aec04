// The Leviathan bound from measured quantities: a round of draft length k with per-token
// acceptance α yields E = (1 − α^(k+1)) / (1 − α) tokens for the cost of v(k) + k·c target
// passes, so the predicted speedup is E / (v(k) + k·c).
//
// The bench measures, per arm and cell: α = accepted / drafted, k = mean drafted tokens per
// round (proposers may draft fewer than the configured k), v(k) = the arm's verify time per
// round ÷ plain decoding's verify time per round (a pass of k+1 rows vs 1 row), and
// c = the arm's draft time per drafted token ÷ plain decoding's time per token.
#pragma once

namespace specd::bench {

double expected_tokens(double alpha, double k);  // E(α, k); k may be fractional
double predicted_speedup(double alpha, double k, double verify_cost, double draft_cost);

}  // namespace specd::bench
