#include "sampling/penalties.hpp"

#include <cmath>
#include <string>

#include "common/error.hpp"

namespace specd {

Penalties::Penalties(PenaltyParams params, uint32_t vocab) : params_(std::move(params)) {
  if (!(std::fabs(params_.presence) <= 2)) throw UsageError("presence_penalty must lie in [-2, 2]");
  if (!(std::fabs(params_.frequency) <= 2))
    throw UsageError("frequency_penalty must lie in [-2, 2]");
  for (const auto& [token, value] : params_.bias) {
    if (token < 0 || static_cast<uint32_t>(token) >= vocab)
      throw UsageError("logit_bias: token " + std::to_string(token) +
                       " is outside the vocabulary of " + std::to_string(vocab));
    if (!(std::fabs(value) <= 100))
      throw UsageError("logit_bias: the bias of token " + std::to_string(token) +
                       " must lie in [-100, 100]");
  }
}

void Penalties::apply(std::span<float> logits, std::span<const int32_t> path) const {
  for (const auto& [token, value] : params_.bias)
    logits[static_cast<size_t>(token)] =
        static_cast<float>(double(logits[static_cast<size_t>(token)]) + double(value));
  if (params_.presence == 0 && params_.frequency == 0) return;
  // Each token's count on this row's path, then one adjustment per token.
  row_ = counts_;
  for (int32_t t : path) ++row_[t];
  for (const auto& [token, count] : row_) {
    if (count == 0) continue;
    float& z = logits[static_cast<size_t>(token)];
    z = static_cast<float>(double(z) - (params_.frequency * count + params_.presence));
  }
}

}  // namespace specd
