// A grammar over a sequence's generated tokens, for the sampling transform: each verified
// row of a round is masked by the grammar's state after that row's own path (the committed
// output, then the draft's tokens from the root down to the row's node), so that a row sees
// exactly what plain decoding would see at that position and greedy speculative output is
// plain greedy output token for token (ARCHITECTURE.md, "Constraints under speculation").
//
// A row whose path the grammar refuses can never be reached (its node has probability 0 in
// its parent's masked row) and is left as it is. A row after which no token can continue is
// dead: using it is an error, raised only if the round uses it, as plain decoding would.
// The end-of-sequence token is allowed exactly when the output so far is a complete match;
// every other token without bytes (control tokens) never is.
//
// Thread rule: one sequence's, one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "grammar/gbnf_grammar.hpp"
#include "grammar/grammar_matcher.hpp"
#include "grammar/token_trie.hpp"

namespace specd {

class Tokenizer;

class TokenConstraint {
 public:
  enum class Row { kMasked, kUnreachable, kDead };

  // Throws GrammarError for a grammar that does not parse.
  TokenConstraint(const std::string& gbnf, const Tokenizer& tokenizer);
  ~TokenConstraint();

  // Sets the logits of the tokens the grammar refuses after `path` to -infinity.
  Row apply(std::span<float> logits, std::span<const int32_t> path);
  // One more generated token (the end-of-sequence token ends the output: nothing to do).
  // Throws specd::Error when the grammar refuses it (a token no masked row could give).
  void commit(int32_t token);
  bool complete() const { return GrammarMatcher::can_end(state_); }

 private:
  Grammar grammar_;
  std::unique_ptr<TokenTrie> trie_;
  GrammarMatcher matcher_;
  GrammarState state_;  // after the committed tokens
  GrammarState row_;    // apply's scratch
  // Masks of recent states: a grammar revisits the same state often (every character
  // inside a JSON string leaves it where it was), and a mask depends on the state alone.
  struct CachedMask {
    uint64_t hash = 0;
    GrammarState state;
    std::vector<uint8_t> allowed;
    bool any = false;
    bool valid = false;  // filled by a call that returned
    uint64_t used = 0;
  };
  static constexpr size_t kCachedMasks = 32;
  std::vector<CachedMask> cache_;
  uint64_t clock_ = 0;
  const CachedMask& mask_for(const GrammarState& state);
  int32_t eos_ = -1;
};

}  // namespace specd
