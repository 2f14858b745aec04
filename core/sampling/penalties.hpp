// OpenAI's presence and frequency penalties and logit_bias, applied to a row of the target's
// logits before the sampling transform (sampling_transform.hpp):
//
//   z[t] = (logit[t] + bias[t]) - (frequency * c[t] + presence * (c[t] > 0))
//
// where c[t] counts token t among the tokens generated so far on the row's own path: the
// committed output and, for a verified row of a draft, the draft's tokens from the root down
// to that row's node. So a row of a verification pass sees exactly the counts that plain
// decoding would see at that position, and a token's adjustment is computed from (its logit,
// its bias, its count) alone, by the same operations in the same order: the same bits
// whichever way the row was reached. The prompt's tokens are not counted (OpenAI's and
// vLLM's definition).
//
// llama.cpp's repeat penalty comes between the two: each distinct token among the last
// `repeat_last_n` tokens of the row's context (prompt included, then the committed output
// and the row's path; -1: all of it) has its logit divided by `repeat` when positive and
// multiplied by it otherwise.
//
// Only the target's rows are adjusted; a proposer's q stays the distribution it drew from,
// which is all the exact rules need (a draft unaware of the penalties is rejected more).
//
// Thread rule: one sequence's, one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace specd {

struct PenaltyParams {
  double presence = 0;                          // OpenAI presence_penalty, -2..2
  double frequency = 0;                         // OpenAI frequency_penalty, -2..2
  std::vector<std::pair<int32_t, float>> bias;  // OpenAI logit_bias: token id, -100..100
  double repeat = 1;                            // llama.cpp repeat_penalty, [0.01, 10]; 1 = off
  int repeat_last_n = 64;  // its window in tokens; 0 = off, -1 = the whole context
  bool repeats() const { return repeat != 1 && repeat_last_n != 0; }
  bool active() const { return presence != 0 || frequency != 0 || !bias.empty() || repeats(); }
};

class Penalties {
 public:
  // Throws UsageError for a bias token outside [0, vocab) or a value out of range.
  Penalties(PenaltyParams params, uint32_t vocab);
  bool active() const { return params_.active(); }
  // A prompt token (the repeat penalty's window only).
  void add_context(int32_t token) {
    if (params_.repeats()) context_.push_back(token);
  }
  // One more generated token.
  void add(int32_t token) {
    ++counts_[token];
    add_context(token);
  }
  // Adjusts `logits` for a row whose path below the committed tokens is `path` (draft tokens,
  // root's child first).
  void apply(std::span<float> logits, std::span<const int32_t> path) const;

 private:
  PenaltyParams params_;
  std::unordered_map<int32_t, uint32_t> counts_;       // generated token -> count
  std::vector<int32_t> context_;                       // prompt and output (repeat penalty)
  mutable std::vector<int32_t> window_;                // apply's scratch
  mutable std::unordered_map<int32_t, uint32_t> row_;  // apply's scratch
};

}  // namespace specd
