// Pre-tokenizers split text into words before BPE; BPE merges never cross word boundaries.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/split_pattern.hpp"

namespace specd {

// The split pattern families of llama.cpp's BPE pre-tokenizers (LLAMA_VOCAB_PRE_TYPE_*).
enum class PreTokenizer {
  kNone,           // SPM: no pre-tokenizer
  kDefault,        // BPE without tokenizer.ggml.pre, or "default"
  kGpt2,           // "gpt-2", "mpt", ...
  kLlama3,         // "llama3", "llama-bpe", ...
  kQwen2,          // "qwen2", ...
  kDeepseekLlm,    // "deepseek-llm"
  kDeepseekCoder,  // "deepseek-coder"
  kFalcon,         // "falcon"
  kStarcoder,      // "starcoder", "refact", "command-r", "smollm", ...
};

// What a tokenizer.ggml.pre value selects in llama.cpp.
struct PreTokenizerInfo {
  PreTokenizer type;
  bool ignore_merges;  // a word that is a token as a whole is not merged (Llama 3)
  bool add_bos;        // BOS is added unless tokenizer.ggml.add_bos_token says otherwise
};

// nullopt for a value llama.cpp does not know either.
std::optional<PreTokenizerInfo> pre_tokenizer_from_name(std::string_view name);
// The accepted tokenizer.ggml.pre values, comma-separated, for messages and docs.
std::string pre_tokenizer_names();

// llama.cpp's pre-tokenizer for one family: its split patterns applied in turn, each to the
// pieces the previous ones left. kNone splits nothing.
class WordSplitter {
 public:
  explicit WordSplitter(PreTokenizer type = PreTokenizer::kNone);
  // The words of text, views into it that concatenate back to it.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  enum class Fast { kNone, kGpt2, kLlama3 };
  struct Step {
    Fast fast;
    SplitPattern pattern;
  };
  std::vector<Step> steps_;
};

// The split patterns (llama.cpp's regex_exprs) of a family, in order.
std::vector<std::string_view> pre_tokenizer_patterns(PreTokenizer type);

// Splits exactly like the GPT-2 regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// evaluated over codepoints. Invalid UTF-8 bytes count as [^\s\p{L}\p{N}] characters.
// The pieces are views into text and concatenate back to it.
std::vector<std::string_view> pretokenize_gpt2(std::string_view text);

// Splits like the Llama 3 regex (llama.cpp's "llama3" / "llama-bpe" pre-tokenizer)
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
// with max_digits = 3; Qwen2's variant is the same with single digits (max_digits = 1).
// Contractions are matched case-insensitively for ASCII letters only.
std::vector<std::string_view> pretokenize_llama3(std::string_view text, size_t max_digits);

}  // namespace specd
