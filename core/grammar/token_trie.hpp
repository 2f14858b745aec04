// A vocabulary's token bytes as a byte trie, so that a grammar can reject every token that
// starts with a refused prefix at once (grammar_matcher.hpp). Tokens with no bytes (control
// and unused tokens) are not in it: a grammar never allows them.
//
// Thread rule: read-only after construction; may be shared.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace specd {

class Tokenizer;

class TokenTrie {
 public:
  struct Node {
    std::vector<std::pair<unsigned char, uint32_t>> children;  // byte -> node, sorted
    std::vector<int32_t> tokens;                               // tokens ending here
  };

  // Every token's bytes (Tokenizer::token_to_piece).
  explicit TokenTrie(const Tokenizer& tokenizer);
  // For tests: the given pieces, token i = pieces[i].
  explicit TokenTrie(const std::vector<std::string>& pieces);

  // Tokens longer than this are kept out of the trie (long_tokens), so walking it stays
  // shallow whatever a vocabulary holds.
  static constexpr int kMaxDepth = 1024;

  const std::vector<Node>& nodes() const { return nodes_; }  // node 0 is the root
  const std::vector<int32_t>& long_tokens() const { return long_tokens_; }
  const std::string& piece(int32_t token) const { return pieces_[static_cast<size_t>(token)]; }
  uint32_t vocab() const { return static_cast<uint32_t>(pieces_.size()); }

 private:
  void build();
  std::vector<std::string> pieces_;
  std::vector<Node> nodes_;
  std::vector<int32_t> long_tokens_;
};

}  // namespace specd
