#include <queue>
#include <string>
#include <vector>

#include "tokenizer/pair_merges.hpp"
#include "tokenizer/unicode.hpp"
#include "tokenizer/vocab.hpp"

namespace specd {

namespace {

struct Bigram {
  int32_t rank;
  int left;
  int right;
  size_t len;
};

// Lowest rank first, then leftmost.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  }
};

}  // namespace

void bpe_encode_word(const Vocab& vocab, std::string_view word, std::vector<int32_t>& out) {
  if (word.empty()) return;
  // The word in GPT-2's mapped characters, and where each original byte starts in it.
  std::string m;
  m.reserve(word.size() * 2);
  std::vector<size_t> at(word.size() + 1);
  for (size_t k = 0; k < word.size(); ++k) {
    at[k] = m.size();
    utf8_append(m, gpt2_byte_to_codepoint(static_cast<uint8_t>(word[k])));
  }
  at[word.size()] = m.size();
  auto text_of = [&](size_t start, size_t len) {
    return std::string_view(m).substr(at[start], at[start + len] - at[start]);
  };
  std::string key;  // reused so lookups do not allocate

  if (vocab.ignore_merges) {
    const int32_t id = vocab.find(m);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<MergeSymbol> sym;
  sym.reserve(word.size());
  for (size_t k = 0; k < word.size(); ++k) {
    sym.push_back(
        {static_cast<int>(k) - 1, k + 1 < word.size() ? static_cast<int>(k) + 1 : -1, k, 1});
  }
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const MergeSymbol& l = sym[left];
    const MergeSymbol& r = sym[right];
    key.assign(text_of(l.start, l.len));
    key += ' ';
    key.append(text_of(r.start, r.len));
    auto it = vocab.merge_rank.find(key);
    if (it != vocab.merge_rank.end()) queue.push({it->second, left, right, l.len + r.len});
  };
  merge_pairs(sym, queue, try_add);

  for (int k = 0; k >= 0; k = sym[k].next) {
    const MergeSymbol& s = sym[k];
    key.assign(text_of(s.start, s.len));
    const int32_t id = vocab.find(key);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // A merge result missing from the vocabulary: spell it with byte tokens.
    for (char c : word.substr(s.start, s.len)) {
      const int32_t bid = vocab.byte_to_id[static_cast<uint8_t>(c)];
      if (bid >= 0) {
        out.push_back(bid);
      } else if (vocab.unk_id >= 0) {
        out.push_back(vocab.unk_id);
      }
    }
  }
}

}  // namespace specd
