#include "grammar/token_trie.hpp"

#include <algorithm>

#include "tokenizer/tokenizer.hpp"

namespace specd {

TokenTrie::TokenTrie(const Tokenizer& tokenizer) {
  pieces_.reserve(static_cast<size_t>(tokenizer.n_tokens()));
  for (int32_t id = 0; id < tokenizer.n_tokens(); ++id)
    pieces_.push_back(tokenizer.token_to_piece(id));
  build();
}

TokenTrie::TokenTrie(const std::vector<std::string>& pieces) : pieces_(pieces) {
  build();
}

void TokenTrie::build() {
  nodes_.assign(1, Node{});
  for (size_t id = 0; id < pieces_.size(); ++id) {
    const std::string& piece = pieces_[id];
    if (piece.empty()) continue;
    if (piece.size() > static_cast<size_t>(kMaxDepth)) {
      long_tokens_.push_back(static_cast<int32_t>(id));
      continue;
    }
    uint32_t at = 0;
    for (const char ch : piece) {
      const auto byte = static_cast<unsigned char>(ch);
      auto& children = nodes_[at].children;
      const auto it = std::lower_bound(children.begin(), children.end(), byte,
                                       [](const auto& c, unsigned char b) { return c.first < b; });
      if (it != children.end() && it->first == byte) {
        at = it->second;
      } else {
        const auto next = static_cast<uint32_t>(nodes_.size());
        children.insert(it, {byte, next});
        nodes_.emplace_back();
        at = next;
      }
    }
    nodes_[at].tokens.push_back(static_cast<int32_t>(id));
  }
}

}  // namespace specd
