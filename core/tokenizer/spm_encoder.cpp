#include <queue>
#include <string>
#include <vector>

#include "tokenizer/pair_merges.hpp"
#include "tokenizer/unicode.hpp"
#include "tokenizer/vocab.hpp"

namespace specd {

namespace {

struct Bigram {
  float score;
  int left;
  int right;
  size_t len;
};

// Highest score first, then leftmost (llama.cpp's llm_tokenizer_spm ordering).
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  }
};

class SpmSession {
 public:
  SpmSession(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void encode(std::vector<int32_t>& out) {
    for (size_t pos = 0; pos < text_.size();) {
      const size_t len = utf8_next(text_, pos).len;
      const int k = static_cast<int>(sym_.size());
      sym_.push_back({k - 1, -1, pos, len});
      if (k > 0) sym_[k - 1].next = k;
      pos += len;
    }
    merge_pairs(sym_, queue_, [this](int left, int right) { try_add(left, right); });
    for (int k = sym_.empty() ? -1 : 0; k >= 0; k = sym_[k].next) {
      resegment(text_.substr(sym_[k].start, sym_[k].len), out);
    }
  }

 private:
  void try_add(int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t len = sym_[left].len + sym_[right].len;
    const std::string piece(text_.substr(sym_[left].start, len));
    const int32_t id = vocab_.find(piece);
    if (id < 0) return;
    queue_.push({vocab_.score[id], left, right, len});
  }

  // Every merged symbol is a token by construction; a lone character without a token of
  // its own is spelled with byte tokens.
  void resegment(std::string_view piece, std::vector<int32_t>& out) {
    const int32_t id = vocab_.find(std::string(piece));
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    for (char c : piece) {
      const int32_t bid = vocab_.byte_to_id[static_cast<uint8_t>(c)];
      if (bid >= 0) {
        out.push_back(bid);
      } else if (vocab_.unk_id >= 0) {
        out.push_back(vocab_.unk_id);
      }
    }
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<MergeSymbol> sym_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

}  // namespace

void spm_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
  SpmSession(vocab, text).encode(out);
}

}  // namespace specd
