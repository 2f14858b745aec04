#include <cstdint>

#include "tokenizer/pretokenizer.hpp"
#include "tokenizer/text_units.hpp"

namespace specd {

namespace {

uint32_t ascii_lower(uint32_t cp) {
  return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
}

}  // namespace

std::vector<std::string_view> pretokenize_llama3(std::string_view text, size_t max_digits) {
  const std::vector<TextUnit> u = decode_text_units(text);
  const size_t n = u.size();
  auto cp_at = [&](size_t k) { return k < n ? u[k].cp : kInvalidCodepoint; };
  auto cls_at = [&](size_t k) { return k < n ? u[k].cls : CharClass::kOther; };
  auto offset_at = [&](size_t k) { return k < n ? u[k].offset : text.size(); };
  auto is_newline = [&](size_t k) { return cp_at(k) == '\r' || cp_at(k) == '\n'; };

  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < n) {
    size_t end = i;
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (cp_at(i) == '\'') {
      const uint32_t c1 = ascii_lower(cp_at(i + 1)), c2 = ascii_lower(cp_at(i + 2));
      if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
        end = i + 2;
      } else if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
        end = i + 3;
      }
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (end == i) {
      size_t start = i;
      if (cls_at(i) != CharClass::kLetter && cls_at(i) != CharClass::kNumber && !is_newline(i) &&
          cls_at(i + 1) == CharClass::kLetter && i + 1 < n) {
        start = i + 1;
      }
      if (cls_at(start) == CharClass::kLetter && start < n) {
        end = start;
        while (end < n && cls_at(end) == CharClass::kLetter) ++end;
      }
    }
    // \p{N}{1,max_digits}
    if (end == i && cls_at(i) == CharClass::kNumber) {
      while (end < n && end - i < max_digits && cls_at(end) == CharClass::kNumber) ++end;
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    if (end == i) {
      const size_t start =
          (cp_at(i) == ' ' && cls_at(i + 1) == CharClass::kOther && i + 1 < n) ? i + 1 : i;
      if (cls_at(start) == CharClass::kOther && start < n) {
        end = start;
        while (end < n && cls_at(end) == CharClass::kOther) ++end;
        while (end < n && is_newline(end)) ++end;
      }
    }
    if (end == i) {
      // Only whitespace is left: \s*[\r\n]+ ends after the run's last newline; otherwise
      // \s+(?!\S) leaves the last space to the next word, and \s+ takes the rest.
      size_t j = i;
      size_t last_newline = n;
      while (j < n && cls_at(j) == CharClass::kSpace) {
        if (is_newline(j)) last_newline = j;
        ++j;
      }
      if (last_newline < n) {
        end = last_newline + 1;
      } else {
        end = (j < n && j - i > 1) ? j - 1 : j;
      }
    }
    words.push_back(text.substr(offset_at(i), offset_at(end) - offset_at(i)));
    i = end;
  }
  return words;
}

}  // namespace specd
