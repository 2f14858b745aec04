#include "tokenizer/text_units.hpp"

#include "tokenizer/unicode.hpp"

namespace specd {

std::vector<TextUnit> decode_text_units(std::string_view text) {
  std::vector<TextUnit> units;
  units.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Unit u = utf8_next(text, pos);
    CharClass cls = CharClass::kOther;
    uint32_t cp = kInvalidCodepoint;
    if (u.valid) {
      cp = u.cp;
      if (unicode_is_letter(cp)) {
        cls = CharClass::kLetter;
      } else if (unicode_is_number(cp)) {
        cls = CharClass::kNumber;
      } else if (unicode_is_whitespace(cp)) {
        cls = CharClass::kSpace;
      }
    }
    units.push_back({cp, pos, cls});
    pos += u.len;
  }
  return units;
}

}  // namespace specd
