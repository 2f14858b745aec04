// Text as a sequence of codepoints classified for the pre-tokenizer regexes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace specd {

enum class CharClass : uint8_t { kLetter, kNumber, kSpace, kOther };

struct TextUnit {
  uint32_t cp;  // kInvalidCodepoint for an invalid byte, so it never equals a character
  size_t offset;
  CharClass cls;
};

constexpr uint32_t kInvalidCodepoint = 0xFFFFFFFFu;

// One unit per codepoint; each invalid UTF-8 byte is a unit of class kOther.
std::vector<TextUnit> decode_text_units(std::string_view text);

}  // namespace specd
