// The vocabulary shared by the tokenizer models: token strings, scores, types, lookups.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace specd {

// Values of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

enum class TokenizerModel { kBpe, kSpm };

struct Vocab {
  TokenizerModel model = TokenizerModel::kBpe;
  std::vector<std::string> text;
  std::vector<float> score;
  std::vector<TokenType> type;
  // Text of tokens plain text may produce (not control, unknown or byte tokens); the
  // highest id wins for duplicated strings, as in llama.cpp.
  std::unordered_map<std::string, int32_t> text_to_id;
  // BPE: "left right" (as stored in tokenizer.ggml.merges) -> rank.
  std::unordered_map<std::string, int32_t> merge_rank;
  // Token for each raw byte (BPE: the mapped character; SPM: "<0xXX>"), -1 if none.
  std::array<int32_t, 256> byte_to_id{};
  int32_t unk_id = -1;
  // BPE: a word that is a token as a whole is emitted without merging (Llama 3).
  bool ignore_merges = false;

  int32_t size() const { return static_cast<int32_t>(text.size()); }
  int32_t find(const std::string& s) const {
    auto it = text_to_id.find(s);
    return it == text_to_id.end() ? -1 : it->second;
  }
};

// Appends the tokens of one pre-tokenized word (raw bytes) using merge ranks.
void bpe_encode_word(const Vocab& vocab, std::string_view word, std::vector<int32_t>& out);
// Appends the tokens of text already escaped for SentencePiece (spaces as U+2581), merging
// the highest-scoring pairs first and falling back to byte tokens.
void spm_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);

}  // namespace specd
