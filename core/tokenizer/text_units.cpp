#include "tokenizer/text_units.hpp"

#include "tokenizer/unicode.hpp"

namespace specd {

namespace {

CharClass classify(uint32_t cp) {
  if (unicode_is_letter(cp)) return CharClass::kLetter;
  if (unicode_is_number(cp)) return CharClass::kNumber;
  if (unicode_is_whitespace(cp)) return CharClass::kSpace;
  return CharClass::kOther;
}

// ASCII dominates real text; skip the range searches for it.
struct AsciiClasses {
  CharClass cls[128];
  AsciiClasses() {
    for (uint32_t c = 0; c < 128; ++c) cls[c] = classify(c);
  }
};

}  // namespace

std::vector<TextUnit> decode_text_units(std::string_view text) {
  static const AsciiClasses ascii;
  std::vector<TextUnit> units;
  units.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Unit u = utf8_next(text, pos);
    if (!u.valid) {
      units.push_back({kInvalidCodepoint, pos, CharClass::kOther});
    } else {
      units.push_back({u.cp, pos, u.cp < 128 ? ascii.cls[u.cp] : classify(u.cp)});
    }
    pos += u.len;
  }
  return units;
}

}  // namespace specd
