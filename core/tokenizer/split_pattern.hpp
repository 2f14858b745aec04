// One of llama.cpp's pre-tokenizer split patterns, matched over codepoints the way llama.cpp's
// unicode_regex_split applies it with std::regex (ECMAScript: leftmost match, alternatives in
// order, greedy quantifiers with backtracking).
//
// Supported syntax, enough for every pattern of the pre-tokenizers specd knows:
//   alternatives a|b; groups (...) and (?:...); lookaheads (?=...) and (?!...); anchors ^ $;
//   quantifiers ? * + {n} {n,} {n,m} (greedy); classes [...] and [^...] with ranges;
//   \s \S \d \D, \p{L} \p{N} \p{P} \p{S} \p{M} (Unicode general categories), \r \n \t and
//   escaped punctuation; any other character, UTF-8 included, stands for itself.
// As in llama.cpp, whitespace outside ASCII matches \s but no literal character, and each
// invalid UTF-8 byte is one character of category S (it stands for U+FFFD there).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace specd {

class SplitPattern {
 public:
  // Throws specd::Error quoting the pattern for syntax outside the supported subset.
  explicit SplitPattern(std::string_view pattern);

  // Appends to out the pieces of text: each match and each stretch between matches (or before
  // the first / after the last), in order; they concatenate back to text. Empty matches are
  // skipped. Pieces are views into text.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

  const std::string& pattern() const { return pattern_; }

  struct Program;

 private:
  std::string pattern_;
  std::shared_ptr<const Program> program_;  // immutable, shared by copies
};

}  // namespace specd
