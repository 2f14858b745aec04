// Drafting across vocabularies: the pieces a proposer needs when its draft model's tokenizer
// differs from the target's. Header-only; used by the draft-model proposer and by
// `specd audit`'s two-vocabulary cases, which check the exactness argument below.
//
// Two ways across (ARCHITECTURE.md, "Drafts across vocabularies"):
//   text:         the draft drafts freely in its own vocabulary; its tokens' bytes are
//                 re-tokenized by the target's tokenizer (as a continuation) and proposed as
//                 a chain with a one-hot q at each node. Rejection with a one-hot q accepts a
//                 token x with probability p(x) and else draws from p without x: the
//                 emitted token has law p for ANY fixed proposal, so any proposal that does
//                 not look at the verifier's coins is exact.
//   intersection: the draft draws only among its tokens whose bytes are exactly one target
//                 token (q restricted there and renormalised), each mapped to that target
//                 token, with q carried across (summed where several draft ids spell one
//                 target token): standard speculative sampling with the q the token was
//                 drawn from, so exact, and it accepts more than one-hot q at temperature > 0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "specd/types.h"

namespace specd::sdk {

// Draft id -> target id for the draft tokens whose bytes are exactly those of one target token
// (the token-level intersection), -1 elsewhere. pieces[i] is the bytes id i stands for; ""
// (control tokens, padding) never maps. Where several target ids spell the same bytes the
// lowest wins.
inline std::vector<specd_token> intersect_vocabularies(
    const std::vector<std::string>& draft_pieces, const std::vector<std::string>& target_pieces) {
  std::unordered_map<std::string_view, specd_token> target_id;
  target_id.reserve(target_pieces.size());
  for (size_t t = 0; t < target_pieces.size(); ++t)
    if (!target_pieces[t].empty()) target_id.emplace(target_pieces[t], static_cast<specd_token>(t));
  std::vector<specd_token> map(draft_pieces.size(), -1);
  for (size_t d = 0; d < draft_pieces.size(); ++d) {
    if (draft_pieces[d].empty()) continue;
    const auto it = target_id.find(draft_pieces[d]);
    if (it != target_id.end()) map[d] = it->second;
  }
  return map;
}

// The draft's distribution from its logits at `temperature` (0: one-hot on the argmax, lowest
// id on ties); -inf logits get probability 0. False when no logit is finite.
inline bool softmax_at(std::span<const float> logits, double temperature, std::span<double> out) {
  size_t best = logits.size();
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isfinite(logits[i]) && (best == logits.size() || logits[i] > logits[best])) best = i;
  std::fill(out.begin(), out.end(), 0.0);
  if (best == logits.size()) return false;
  if (temperature <= 0) {
    out[best] = 1.0;
    return true;
  }
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isfinite(logits[i]))
      total += out[i] = std::exp((static_cast<double>(logits[i]) - logits[best]) / temperature);
  for (double& v : out) v /= total;
  return true;
}

// Draft logits outside the intersection (`map` < 0) set to -inf: softmax_at then gives the
// draft's distribution restricted to the intersection (its argmax there at temperature 0).
inline void mask_outside_intersection(std::span<float> logits, std::span<const specd_token> map) {
  for (size_t d = 0; d < logits.size(); ++d)
    if (d >= map.size() || map[d] < 0) logits[d] = -std::numeric_limits<float>::infinity();
}

// The same distribution over target ids: q_target[map[d]] = sum of q[d] (q_target is
// overwritten; draft ids outside the intersection must have no mass).
inline void map_to_target(std::span<const double> q, std::span<const specd_token> map,
                          std::span<double> q_target) {
  std::fill(q_target.begin(), q_target.end(), 0.0);
  for (size_t d = 0; d < q.size() && d < map.size(); ++d)
    if (q[d] > 0 && map[d] >= 0 && static_cast<size_t>(map[d]) < q_target.size())
      q_target[static_cast<size_t>(map[d])] += q[d];
}

// The draft model's tokens for a text that grows (the target's committed text), re-tokenizing
// only its end: tokens ending inside the part of the text that did not change are kept, less
// kMargin of them (the new bytes may merge with their last ones), and the rest is encoded
// again as a continuation. How the text is split only changes how well the draft guesses,
// never what is emitted.
class DraftTokens {
 public:
  // encode(text, start): the draft tokenizer's ids for `text`; `start` when the text begins
  // the sequence (BOS and space prefix as the draft's vocabulary asks), else a continuation.
  using Encode = std::function<std::vector<specd_token>(std::string_view text, bool start)>;
  static constexpr size_t kMargin = 2;

  // `pieces`: the bytes of each draft id; must outlive this object.
  DraftTokens(Encode encode, const std::vector<std::string>& pieces)
      : encode_(std::move(encode)), pieces_(&pieces) {}

  // The draft ids for `text`.
  const std::vector<specd_token>& update(std::string_view text) {
    size_t common = 0;
    while (common < text_.size() && common < text.size() && text_[common] == text[common]) ++common;
    size_t keep = 0;
    while (keep < ends_.size() && ends_[keep] <= common) ++keep;
    keep = keep > kMargin ? keep - kMargin : 0;
    if (keep > 0 && ends_[keep - 1] == 0) keep = 0;  // only BOS: read the text as a start
    tokens_.resize(keep);
    ends_.resize(keep);
    const size_t from = keep ? ends_.back() : 0;
    const std::string_view rest = text.substr(from);
    const std::vector<specd_token> more = encode_(rest, keep == 0);
    // A start's space prefix makes the pieces longer than the text: ends are shifted back by
    // the excess so that they stay within it.
    size_t total = 0;
    for (specd_token t : more) total += piece(t).size();
    const size_t excess = total > rest.size() ? total - rest.size() : 0;
    size_t at = 0;
    for (specd_token t : more) {
      at += piece(t).size();
      tokens_.push_back(t);
      ends_.push_back(from + (at > excess ? at - excess : 0));
    }
    text_.assign(text);
    return tokens_;
  }

  const std::vector<specd_token>& tokens() const { return tokens_; }
  void reset() {
    text_.clear();
    tokens_.clear();
    ends_.clear();
  }

 private:
  std::string_view piece(specd_token t) const {
    return t >= 0 && static_cast<size_t>(t) < pieces_->size()
               ? std::string_view((*pieces_)[static_cast<size_t>(t)])
               : std::string_view();
  }

  Encode encode_;
  const std::vector<std::string>* pieces_;
  std::string text_;
  std::vector<specd_token> tokens_;
  std::vector<size_t> ends_;  // byte end of each token in text_
};

}  // namespace specd::sdk
