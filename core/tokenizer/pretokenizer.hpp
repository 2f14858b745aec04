// Pre-tokenizers split text into words before BPE; BPE merges never cross word boundaries.
#pragma once

#include <string_view>
#include <vector>

namespace specd {

// Splits exactly like the GPT-2 regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// evaluated over codepoints. Invalid UTF-8 bytes count as [^\s\p{L}\p{N}] characters.
// The pieces are views into text and concatenate back to it.
std::vector<std::string_view> pretokenize_gpt2(std::string_view text);

}  // namespace specd
