// Tokenizer built from GGUF metadata (llama.cpp conventions):
//   tokenizer.ggml.model "gpt2": byte-level BPE with merge ranks after the pre-tokenizer
//     llama.cpp picks for tokenizer.ggml.pre (its default one when the key is absent);
//   tokenizer.ggml.model "llama": SentencePiece-style highest-score merging with byte fallback.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pretokenizer.hpp"
#include "tokenizer/vocab.hpp"

namespace specd {

class GgufFile;

class Tokenizer {
 public:
  // Throws specd::Error("<path>: ...") for missing or inconsistent tokenizer metadata.
  static Tokenizer from_gguf(const GgufFile& file);

  TokenizerModel model() const { return vocab_.model; }
  PreTokenizer pre_tokenizer() const { return pre_; }
  // tokenizer.ggml.pre as the file gives it ("" when absent).
  const std::string& pre_tokenizer_name() const { return pre_name_; }
  int32_t n_tokens() const { return vocab_.size(); }
  const Vocab& vocab() const { return vocab_; }
  // Throw specd::Error for ids outside [0, n_tokens()).
  const std::string& token_text(int32_t id) const;
  TokenType token_type(int32_t id) const;
  float token_score(int32_t id) const;
  bool is_control(int32_t id) const { return token_type(id) == TokenType::kControl; }

  // Special ids, -1 when the vocabulary has none.
  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t unk_id() const { return vocab_.unk_id; }
  int32_t pad_id() const { return pad_id_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }

  // add_special: prepend BOS / append EOS as the vocabulary asks. parse_special: text that
  // spells a control token becomes that token; otherwise control tokens never come out of
  // plain text. User-defined tokens are always matched as whole strings. continuation: the
  // text goes on from earlier text, so a SentencePiece vocabulary adds no space prefix.
  std::vector<int32_t> encode(std::string_view text, bool add_special = true,
                              bool parse_special = false, bool continuation = false) const;

  // The bytes of one token. Control, unknown and unused tokens give "" unless render_special.
  std::string token_to_piece(int32_t id, bool render_special = false) const;
  // Concatenated pieces; may be invalid UTF-8 when a token sequence ends mid-character. With a
  // space prefix (SPM) the space encode() inserted before the first text is removed again.
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

 private:
  void encode_text(std::string_view text, bool after_special, std::vector<int32_t>& out) const;

  Vocab vocab_;
  PreTokenizer pre_ = PreTokenizer::kNone;
  std::string pre_name_;
  WordSplitter splitter_;
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  int32_t pad_id_ = -1;
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool add_space_prefix_ = false;
  std::vector<int32_t> special_by_length_;  // control/user-defined ids, longest text first
};

// Decodes a token stream incrementally and only ever returns complete, valid UTF-8, for
// printing while generating. Bytes that can never become valid are shown as U+FFFD.
// The text of a stream that continues `context` is decode(context + stream) minus
// decode(context), with invalid UTF-8 shown as U+FFFD: the space decode() strips from the
// first text of a SentencePiece sequence is only stripped when the context has no text.
// A context is assumed to end on a character boundary.
class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool render_special = false,
                                std::span<const int32_t> context = {});

  // Text that became printable with this token (possibly empty).
  std::string push(int32_t id);
  // Whatever is still held back, incomplete sequences replaced by U+FFFD.
  std::string flush();

 private:
  std::string take(bool final);

  const Tokenizer& tok_;
  bool render_special_;
  bool at_start_ = true;
  std::string pending_;
};

// Whether a and b assign the same meaning to every id either model may produce: same
// tokenizer model, same token strings for every id below the shorter size, and the same BOS
// and EOS ids. Extra trailing tokens of the larger vocabulary are tolerated when they are
// padding: type control, unused or undefined, or text starting with "[PAD" or "<pad" (models
// round vocabulary sizes up for efficiency). On false, *why (if given) names the first
// difference.
bool same_vocabulary(const Tokenizer& a, const Tokenizer& b, std::string* why = nullptr);

}  // namespace specd
