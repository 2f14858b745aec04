#include <cstdint>

#include "tokenizer/pretokenizer.hpp"
#include "tokenizer/text_units.hpp"

namespace specd {

std::vector<std::string_view> pretokenize_gpt2(std::string_view text) {
  const std::vector<TextUnit> u = decode_text_units(text);
  const size_t n = u.size();
  auto cp_at = [&](size_t k) { return k < n ? u[k].cp : kInvalidCodepoint; };
  auto cls_at = [&](size_t k) { return k < n ? u[k].cls : CharClass::kOther; };
  auto offset_at = [&](size_t k) { return k < n ? u[k].offset : text.size(); };

  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < n) {
    size_t end = i;
    // 's|'t|'re|'ve|'m|'ll|'d (case-sensitive, as in GPT-2)
    if (cp_at(i) == '\'') {
      const uint32_t c1 = cp_at(i + 1), c2 = cp_at(i + 2);
      if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
        end = i + 2;
      } else if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
        end = i + 3;
      }
    }
    if (end == i) {
      // ' ?X+' for X in letters, numbers, other: the optional space only counts when the
      // class run follows it.
      const size_t start =
          (cp_at(i) == ' ' && i + 1 < n && cls_at(i + 1) != CharClass::kSpace) ? i + 1 : i;
      const CharClass cls = cls_at(start);
      if (cls != CharClass::kSpace) {
        end = start;
        while (end < n && cls_at(end) == cls) ++end;
      }
    }
    if (end == i) {
      // \s+(?!\S) then \s+: a whitespace run leaves its last character to the next word
      // when a non-space follows.
      size_t j = i;
      while (j < n && cls_at(j) == CharClass::kSpace) ++j;
      end = (j < n && j - i > 1) ? j - 1 : j;
    }
    words.push_back(text.substr(offset_at(i), offset_at(end) - offset_at(i)));
    i = end;
  }
  return words;
}

}  // namespace specd
