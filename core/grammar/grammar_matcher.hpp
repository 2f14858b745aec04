// Runs a Grammar (gbnf_grammar.hpp) over UTF-8 bytes: a pushdown automaton whose state is
// the set of parses still alive, each a stack of grammar positions whose top is a character
// class (or the empty stack: the text so far is a complete match).
//
// GrammarState is the plain, copyable form a sequence keeps between rounds. GrammarMatcher
// works on an arena of shared stack nodes (a rule's continuation is shared by every
// alternative that expands it; a reference at the end of an alternative is a tail call, so
// `x*` over a long text does not deepen the stack), which makes advancing one character
// cheap enough to walk a whole vocabulary's token trie per verified row (allowed_tokens).
//
// A character split between tokens is kept as pending bytes; a token that ends inside a
// character is allowed when some alive class admits a code point with that prefix.
//
// Thread rule: a Grammar is read-only and may be shared; a GrammarMatcher is scratch for one
// thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/gbnf_grammar.hpp"
#include "grammar/token_trie.hpp"

namespace specd {

struct Utf8Pending {
  uint32_t bits = 0;   // the character's bits so far
  uint8_t left = 0;    // continuation bytes still to come (0: between characters)
  uint8_t length = 0;  // the character's length in bytes (valid while left > 0)
  bool operator==(const Utf8Pending&) const = default;
};

struct GrammarState {
  std::vector<std::vector<uint32_t>> stacks;  // bottom first; empty: a complete match
  Utf8Pending pending;
  bool operator==(const GrammarState&) const = default;
};

class GrammarMatcher {
 public:
  // Units of work in one call (advance, allowed_tokens; see spend): a JSON grammar's mask
  // inside a string over a 32,000-token vocabulary takes about 650,000 (15 ms on a Zen 3
  // core); a grammar built to keep thousands of parses alive would otherwise hold the
  // scheduler for minutes per row.
  static constexpr uint64_t kDefaultMaxWork = 40'000'000;

  // `max_work`: the units of work one call may take before it throws GrammarError ("too
  // ambiguous"); a smaller budget suits callers that make many calls per request.
  explicit GrammarMatcher(const Grammar& grammar, uint64_t max_work = kDefaultMaxWork);

  GrammarState initial();
  // The state after `bytes`; false (and `state` unchanged) when the grammar refuses them.
  bool advance(GrammarState& state, std::string_view bytes);
  // Whether the text so far is a complete match (end of sequence allowed).
  static bool can_end(const GrammarState& state);
  // The units of work the last call took (initial, advance or allowed_tokens).
  uint64_t work_done() const { return work_done_; }
  // Marks in `allowed` (one byte per token, set to 0/1) every token of `trie` whose bytes the
  // grammar accepts after `state`. Returns false when none is (end of sequence aside).
  bool allowed_tokens(const GrammarState& state, const TokenTrie& trie,
                      std::vector<uint8_t>& allowed);

 private:
  struct Node {
    uint32_t pos;    // an element index
    int32_t parent;  // the node to continue with after this alternative; -1: none
  };
  static constexpr int32_t kComplete = -1;  // the empty stack in a set

  int32_t node(uint32_t pos, int32_t parent);
  // Settles `start` (expands references, pops ends) into `out`.
  void expand(int32_t start, std::vector<int32_t>& out);
  // Sets live in sets_: [begin, end) ranges. Appends the set after `cp` and returns its end.
  size_t step(size_t begin, size_t end, uint32_t cp);
  void dedupe(size_t begin);
  bool same_stack(int32_t a, int32_t b);
  // Units of work (a node made, a stack level compared, a sort comparison) against
  // max_work_: GrammarError past it.
  void spend(uint64_t units = 1);
  void reset();          // at the start of a call: clear_scratch and no work done
  void clear_scratch();  // empties the arena and the sets
  // advance without starting a new call: the work counts against the current one.
  bool advance_within_call(GrammarState& state, std::string_view bytes);
  // One byte: pending's update, and a step when it completes a character ([begin, end)
  // becomes the new set). Returns false when the byte is refused: not UTF-8, no parse takes
  // the character, or no parse could take any character starting with the pending bytes.
  bool feed(unsigned char byte, Utf8Pending& pending, size_t& begin, size_t& end);
  bool feasible(size_t begin, size_t end, const Utf8Pending& pending) const;
  size_t load(const GrammarState& state);
  void store(size_t begin, size_t end, GrammarState& state) const;
  void walk(uint32_t trie_node, size_t begin, size_t end, Utf8Pending pending, int depth);

  const Grammar& grammar_;
  std::vector<Node> arena_;
  std::vector<int32_t> sets_;
  std::vector<int32_t> work_;
  uint64_t max_work_;
  uint64_t work_done_ = 0;  // since the current call began
  const TokenTrie* trie_ = nullptr;
  std::vector<uint8_t>* allowed_ = nullptr;
};

}  // namespace specd
