// Pre-tokenizers split text into words before BPE; BPE merges never cross word boundaries.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace specd {

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
