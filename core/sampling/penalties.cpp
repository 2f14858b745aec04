#include "sampling/penalties.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.hpp"

namespace specd {

Penalties::Penalties(PenaltyParams params, uint32_t vocab) : params_(std::move(params)) {
  if (!(std::fabs(params_.presence) <= 2)) throw UsageError("presence_penalty must lie in [-2, 2]");
  if (!(std::fabs(params_.frequency) <= 2))
    throw UsageError("frequency_penalty must lie in [-2, 2]");
  // Below 0.01 a positive logit divided by it overflows to infinity in f32.
  if (!(params_.repeat >= 0.01 && params_.repeat <= 10))
    throw UsageError("repeat_penalty must lie in [0.01, 10]");
  if (params_.repeat_last_n < -1) throw UsageError("repeat_last_n must be -1, 0 or more");
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
  if (params_.repeats()) {
    // The distinct tokens of the window: the last repeat_last_n of context + path.
    const size_t total = context_.size() + path.size();
    const size_t n = params_.repeat_last_n < 0
                         ? total
                         : std::min(total, static_cast<size_t>(params_.repeat_last_n));
    window_.clear();
    for (size_t i = total - n; i < total; ++i)
      window_.push_back(i < context_.size() ? context_[i] : path[i - context_.size()]);
    std::sort(window_.begin(), window_.end());
    window_.erase(std::unique(window_.begin(), window_.end()), window_.end());
    for (const int32_t token : window_) {
      float& z = logits[static_cast<size_t>(token)];
      z = static_cast<float>(z <= 0 ? double(z) * params_.repeat : double(z) / params_.repeat);
    }
  }
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
