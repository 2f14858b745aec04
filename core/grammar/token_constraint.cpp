#include "grammar/token_constraint.hpp"

#include <algorithm>
#include <limits>

#include "common/memory_release.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd {

TokenConstraint::TokenConstraint(const std::string& gbnf, const Tokenizer& tokenizer)
    : grammar_(parse_gbnf(gbnf)),
      trie_(std::make_unique<TokenTrie>(tokenizer)),
      matcher_(grammar_),
      state_(matcher_.initial()),
      eos_(tokenizer.eos_id()) {}

// A grammar's trie, masks and matcher are megabytes that glibc would otherwise keep.
TokenConstraint::~TokenConstraint() {
  release_freed_memory();
}

namespace {

uint64_t hash_state(const GrammarState& s) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t{s.pending.bits} << 8) ^ s.pending.left;
  const auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (const auto& stack : s.stacks) {
    mix(stack.size());
    for (const uint32_t pos : stack) mix(pos);
  }
  return h;
}

}  // namespace

const TokenConstraint::CachedMask& TokenConstraint::mask_for(const GrammarState& state) {
  const uint64_t h = hash_state(state);
  ++clock_;
  for (CachedMask& c : cache_)
    if (c.valid && c.hash == h && c.state == state) {
      c.used = clock_;
      return c;
    }
  CachedMask* slot = nullptr;
  if (cache_.size() < kCachedMasks) {
    slot = &cache_.emplace_back();
  } else {
    slot = &*std::min_element(cache_.begin(), cache_.end(),
                              [](const auto& a, const auto& b) { return a.used < b.used; });
  }
  // Filled before it is marked valid: a mask that throws (a grammar too ambiguous) must not
  // be found again as a half-written one, which would say no token can continue.
  slot->valid = false;
  slot->any = matcher_.allowed_tokens(state, *trie_, slot->allowed);
  slot->hash = h;
  slot->state = state;
  slot->used = clock_;
  slot->valid = true;
  return *slot;
}

TokenConstraint::Row TokenConstraint::apply(std::span<float> logits,
                                            std::span<const int32_t> path) {
  row_ = state_;
  for (const int32_t token : path) {
    if (token == eos_ || token < 0 || static_cast<uint32_t>(token) >= trie_->vocab())
      return Row::kUnreachable;
    const std::string& piece = trie_->piece(token);
    if (piece.empty() || !matcher_.advance(row_, piece)) return Row::kUnreachable;
  }
  const CachedMask& mask = mask_for(row_);
  const std::vector<uint8_t>& allowed = mask.allowed;
  const bool any = mask.any;
  const bool can_end = GrammarMatcher::can_end(row_) && eos_ >= 0;
  if (!any && !can_end) return Row::kDead;
  constexpr float kOff = -std::numeric_limits<float>::infinity();
  const bool eos_in_row = can_end && static_cast<size_t>(eos_) < logits.size();
  const float eos_logit = eos_in_row ? logits[static_cast<size_t>(eos_)] : kOff;
  const size_t n = std::min(logits.size(), allowed.size());
  for (size_t t = 0; t < n; ++t)
    if (!allowed[t]) logits[t] = kOff;
  for (size_t t = n; t < logits.size(); ++t) logits[t] = kOff;
  if (eos_in_row) logits[static_cast<size_t>(eos_)] = eos_logit;
  return Row::kMasked;
}

void TokenConstraint::commit(int32_t token) {
  if (token == eos_) return;
  const std::string& piece = trie_->piece(token);
  if (piece.empty() || !matcher_.advance(state_, piece))
    throw Error("grammar: the generated token " + std::to_string(token) +
                " is not allowed at this point of the output");
}

}  // namespace specd
