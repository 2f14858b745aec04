// The one sampling transform of specd: temperature, top-k, top-p and min-p turn a row of
// logits into the probability row an acceptance rule sees. The core applies it to target and
// draft logits alike (same code, same parameters), so p and q are always comparable.
//
// Order (documented contract, as in llama.cpp's default chain and vLLM's top-k/top-p path):
//   1. scale:  z = logits / temperature  (temperature 0: one-hot argmax, lowest id on ties;
//              the filters below are then irrelevant and skipped)
//   2. top-k:  keep the k largest z (exactly k; ties at the boundary go to the lowest ids)
//   3. top-p:  on the softmax of the survivors, keep the smallest set of most probable tokens
//              (descending probability, lowest id first on ties) whose mass reaches top_p
//   4. min-p:  on the softmax of the survivors, keep tokens with prob >= min_p * max prob
//   5. renormalise the survivors with a log-sum-exp softmax; everything else is exactly 0.
// Every filter keeps at least the most probable token, so a row with one finite logit
// always yields a valid distribution.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace specd {

struct SamplingParams {
  double temperature = 1.0;  // 0 = greedy (one-hot argmax); else finite, >= 1e-6
  int64_t top_k = 0;         // 0 = off; otherwise keep the k most likely tokens
  double top_p = 1.0;        // 1 = off; in (0, 1]
  double min_p = 0.0;        // 0 = off; in [0, 1)
};

// Throws UsageError naming the bad field (ranges: sampling/sampling_ranges.hpp).
void validate_sampling_params(const SamplingParams& params);

// Applies the transform to one row of logits. -inf logits are masked tokens; NaN or +inf
// logits, and a row where every token is masked, throw specd::Error. `out` has the row's
// size and receives probabilities that sum to 1 (within rounding), with no NaN.
void transform_logits(std::span<const float> logits, const SamplingParams& params,
                      std::span<double> out);
void transform_logits(std::span<const double> logits, const SamplingParams& params,
                      std::span<double> out);
std::vector<double> transform_logits(std::span<const double> logits, const SamplingParams& params);

// Applies the transform to a probability row (as log-probabilities; zero becomes -inf).
// Used by the Markov audit, whose tables are probabilities.
std::vector<double> transform_probs(std::span<const double> probs, const SamplingParams& params);

}  // namespace specd
